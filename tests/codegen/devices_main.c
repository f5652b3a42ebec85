/* A firmware author's main for the digits model with layers on two simulated NPU
 * instances: the generated header, the devices struct filled with each instance's
 * context, one run. argv: image file, then optionally a failure to inject:
 * INSTANCE WHAT AT CODE (e.g. npu0 Close 2 7). Prints the return code, the ten
 * probabilities, each instance's counters and the device log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include "sim_npu.h"
#include "tvmgen_digits.h"

static uint8_t workspace[TVMGEN_DIGITS_WORKSPACE_SIZE];
static float image[TVMGEN_DIGITS_X_SIZE / sizeof(float)];
static float probs[TVMGEN_DIGITS_PROBS_SIZE / sizeof(float)];

int main(int argc, char** argv) {
  struct tvmgen_digits_inputs inputs;
  struct tvmgen_digits_outputs outputs;
  struct tvmgen_digits_devices devices;
  mtir_sim_npu npu0, npu1;
  FILE* f;
  size_t i;
  int32_t rc;
  if ((argc != 2 && argc != 6) || !(f = fopen(argv[1], "rb"))) return 2;
  if (fread(image, 1, sizeof image, f) != sizeof image) return 2;
  fclose(f);
  if (TVMCrtWorkspaceInit(workspace, sizeof workspace) != 0) return 3;
  mtir_sim_npu_init(&npu0, "npu0");
  mtir_sim_npu_init(&npu1, "npu1");
  if (argc == 6) {
    mtir_sim_npu* target = strcmp(argv[2], "npu0") == 0 ? &npu0 : &npu1;
    target->fail_what = argv[3];
    target->fail_at = (uint32_t)atoi(argv[4]);
    target->fail_code = atoi(argv[5]);
  }
  mtir_sim_npu_log_reset();
  inputs.x = image;
  outputs.probs = probs;
  devices.npu0 = &npu0;
  devices.npu1 = &npu1;
  rc = tvmgen_digits_run(&inputs, &outputs, &devices);
  printf("rc %d\n", (int)rc);
  for (i = 0; i < sizeof probs / sizeof probs[0]; ++i) printf("%.9g\n", probs[i]);
  printf("npu0 activations %u kernels %u macs %llu cycles %llu\n", (unsigned)npu0.activations,
         (unsigned)npu0.kernel_calls, (unsigned long long)npu0.macs, (unsigned long long)npu0.cycles);
  printf("npu1 activations %u kernels %u macs %llu cycles %llu\n", (unsigned)npu1.activations,
         (unsigned)npu1.kernel_calls, (unsigned long long)npu1.macs, (unsigned long long)npu1.cycles);
  printf("log\n%s", mtir_sim_npu_log());
  return 0;
}
