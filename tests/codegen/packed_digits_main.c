/* A firmware author's main for the digits model built with -interface-api=packed
 * -link-params=0: the model's main is found in the function registry by name and called
 * with one DLTensor per argument, shaped by the header's macros. argv: the image, then
 * the weights (each parameter's bytes, in argument order). Prints the ten probabilities. */
#include <stdio.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include "tvmgen_digits.h"

static uint8_t workspace[TVMGEN_DIGITS_WORKSPACE_SIZE];
static float x[TVMGEN_DIGITS_X_SIZE / sizeof(float)];
static float bn1_bias[TVMGEN_DIGITS_BN1_BIAS_SIZE / sizeof(float)];
static float bn1_weight[TVMGEN_DIGITS_BN1_WEIGHT_SIZE / sizeof(float)];
static float conv2_b[TVMGEN_DIGITS_CONV2_B_SIZE / sizeof(float)];
static float conv2_w[TVMGEN_DIGITS_CONV2_W_SIZE / sizeof(float)];
static float fc_b[TVMGEN_DIGITS_FC_B_SIZE / sizeof(float)];
static float fc_w[TVMGEN_DIGITS_FC_W_SIZE / sizeof(float)];
static float probs[TVMGEN_DIGITS_PROBS_SIZE / sizeof(float)];

static int64_t x_shape[] = TVMGEN_DIGITS_X_SHAPE;
static int64_t bn1_bias_shape[] = TVMGEN_DIGITS_BN1_BIAS_SHAPE;
static int64_t bn1_weight_shape[] = TVMGEN_DIGITS_BN1_WEIGHT_SHAPE;
static int64_t conv2_b_shape[] = TVMGEN_DIGITS_CONV2_B_SHAPE;
static int64_t conv2_w_shape[] = TVMGEN_DIGITS_CONV2_W_SHAPE;
static int64_t fc_b_shape[] = TVMGEN_DIGITS_FC_B_SHAPE;
static int64_t fc_w_shape[] = TVMGEN_DIGITS_FC_W_SHAPE;
static int64_t probs_shape[] = TVMGEN_DIGITS_PROBS_SHAPE;

static DLTensor tensor(void* data, int64_t* shape, int ndim) {
  DLTensor t;
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

static int read_into(FILE* f, void* data, size_t n) { return fread(data, 1, n, f) == n ? 0 : 1; }

int main(int argc, char** argv) {
  DLTensor tensors[TVMGEN_DIGITS_NUM_ARGS];
  TVMValue values[TVMGEN_DIGITS_NUM_ARGS], ret;
  int codes[TVMGEN_DIGITS_NUM_ARGS], ret_code, i, failed;
  TVMFunctionHandle run;
  FILE *image, *weights;
  if (argc != 3 || !(image = fopen(argv[1], "rb")) || !(weights = fopen(argv[2], "rb"))) return 2;
  failed = read_into(image, x, sizeof x) | read_into(weights, bn1_bias, sizeof bn1_bias) |
           read_into(weights, bn1_weight, sizeof bn1_weight) | read_into(weights, conv2_b, sizeof conv2_b) |
           read_into(weights, conv2_w, sizeof conv2_w) | read_into(weights, fc_b, sizeof fc_b) |
           read_into(weights, fc_w, sizeof fc_w);
  fclose(image);
  fclose(weights);
  if (failed) return 2;
  if (TVMCrtWorkspaceInit(workspace, sizeof workspace) != 0) return 3;
  if (TVMFuncGetGlobal(TVMGEN_DIGITS_MAIN, &run) != 0) {
    fprintf(stderr, "lookup failed: %s\n", TVMGetLastError());
    return 1;
  }
  tensors[0] = tensor(x, x_shape, TVMGEN_DIGITS_X_NDIM);
  tensors[1] = tensor(bn1_bias, bn1_bias_shape, TVMGEN_DIGITS_BN1_BIAS_NDIM);
  tensors[2] = tensor(bn1_weight, bn1_weight_shape, TVMGEN_DIGITS_BN1_WEIGHT_NDIM);
  tensors[3] = tensor(conv2_b, conv2_b_shape, TVMGEN_DIGITS_CONV2_B_NDIM);
  tensors[4] = tensor(conv2_w, conv2_w_shape, TVMGEN_DIGITS_CONV2_W_NDIM);
  tensors[5] = tensor(fc_b, fc_b_shape, TVMGEN_DIGITS_FC_B_NDIM);
  tensors[6] = tensor(fc_w, fc_w_shape, TVMGEN_DIGITS_FC_W_NDIM);
  tensors[7] = tensor(probs, probs_shape, TVMGEN_DIGITS_PROBS_NDIM);
  for (i = 0; i < TVMGEN_DIGITS_NUM_ARGS; ++i) {
    values[i].v_handle = &tensors[i];
    codes[i] = kTVMDLTensorHandle;
  }
  if (TVMFuncCall(run, values, codes, TVMGEN_DIGITS_NUM_ARGS, &ret, &ret_code) != 0) {
    fprintf(stderr, "run failed: %s\n", TVMGetLastError());
    return 1;
  }
  for (i = 0; i < 10; ++i) printf("%.9g\n", probs[i]);
  return 0;
}
