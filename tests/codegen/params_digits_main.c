/* A firmware author's main for the digits model built with -interface-api=c
 * -link-params=0: the weights are the application's (e.g. in external flash), passed
 * in the params struct. argv: the image, then the weights (each parameter's bytes, in
 * the struct's order). Prints the ten probabilities. */
#include <stdio.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include "tvmgen_digits.h"

static uint8_t workspace[TVMGEN_DIGITS_WORKSPACE_SIZE];
static float image[TVMGEN_DIGITS_X_SIZE / sizeof(float)];
static float probs[TVMGEN_DIGITS_PROBS_SIZE / sizeof(float)];
static float weights[(TVMGEN_DIGITS_BN1_BIAS_SIZE + TVMGEN_DIGITS_BN1_WEIGHT_SIZE + TVMGEN_DIGITS_CONV2_B_SIZE +
                      TVMGEN_DIGITS_CONV2_W_SIZE + TVMGEN_DIGITS_FC_B_SIZE + TVMGEN_DIGITS_FC_W_SIZE) /
                     sizeof(float)];

int main(int argc, char** argv) {
  struct tvmgen_digits_inputs inputs;
  struct tvmgen_digits_outputs outputs;
  struct tvmgen_digits_params params;
  const char* at = (const char*)weights;
  FILE *f, *w;
  size_t i;
  int32_t rc;
  if (argc != 3 || !(f = fopen(argv[1], "rb")) || !(w = fopen(argv[2], "rb"))) return 2;
  if (fread(image, 1, sizeof image, f) != sizeof image || fread(weights, 1, sizeof weights, w) != sizeof weights)
    return 2;
  fclose(f);
  fclose(w);
  if (TVMCrtWorkspaceInit(workspace, sizeof workspace) != 0) return 3;
  params.bn1_bias = at, at += TVMGEN_DIGITS_BN1_BIAS_SIZE;
  params.bn1_weight = at, at += TVMGEN_DIGITS_BN1_WEIGHT_SIZE;
  params.conv2_b = at, at += TVMGEN_DIGITS_CONV2_B_SIZE;
  params.conv2_w = at, at += TVMGEN_DIGITS_CONV2_W_SIZE;
  params.fc_b = at, at += TVMGEN_DIGITS_FC_B_SIZE;
  params.fc_w = at;
  inputs.x = image;
  outputs.probs = probs;
  rc = tvmgen_digits_run(&inputs, &outputs, &params);
  if (rc != 0) {
    fprintf(stderr, "run failed (%d): %s\n", (int)rc, TVMGetLastError());
    return 1;
  }
  for (i = 0; i < sizeof probs / sizeof probs[0]; ++i) printf("%.9g\n", probs[i]);
  return 0;
}
