/* A firmware author's main for the digits model: the generated header, a static
 * workspace of the advertised size, inputs and outputs by pointer, one run. Reads the
 * image (64 float32 values) from argv[1], prints the ten probabilities. */
#include <stdio.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include "tvmgen_digits.h"

static uint8_t workspace[TVMGEN_DIGITS_WORKSPACE_SIZE];
static float image[TVMGEN_DIGITS_X_SIZE / sizeof(float)];
static float probs[TVMGEN_DIGITS_PROBS_SIZE / sizeof(float)];

int main(int argc, char** argv) {
  struct tvmgen_digits_inputs inputs;
  struct tvmgen_digits_outputs outputs;
  FILE* f;
  size_t i;
  int32_t rc;
  if (argc != 2 || !(f = fopen(argv[1], "rb"))) return 2;
  if (fread(image, 1, sizeof image, f) != sizeof image) return 2;
  fclose(f);
  if (TVMCrtWorkspaceInit(workspace, sizeof workspace) != 0) return 3;
  inputs.x = image;
  outputs.probs = probs;
  rc = tvmgen_digits_run(&inputs, &outputs);
  if (rc != 0) {
    fprintf(stderr, "run failed (%d): %s\n", (int)rc, TVMGetLastError());
    return 1;
  }
  /* Every workspace block came back. */
  if (TVMCrtWorkspaceUsed() != 0) return 4;
  for (i = 0; i < sizeof probs / sizeof probs[0]; ++i) printf("%.9g\n", probs[i]);
  return 0;
}
