/* A firmware author's main for a model with state (TFLite variable tensors), compiled as
 * "model" with input 'x' and output 'y': runs the model on each input file in turn (the
 * state carries over from one run to the next), then tvmgen_model_reset() and the first
 * input again. Prints each run's output as one line of hex bytes. argv: the input files
 * (raw bytes of x). */
#include <stdio.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include "tvmgen_model.h"

static uint8_t workspace[TVMGEN_MODEL_WORKSPACE_SIZE > 0 ? TVMGEN_MODEL_WORKSPACE_SIZE : 1];
static uint64_t x[(TVMGEN_MODEL_X_SIZE + 7) / 8];
static uint64_t y[(TVMGEN_MODEL_Y_SIZE + 7) / 8];

static int run_once(const char* path) {
  struct tvmgen_model_inputs inputs;
  struct tvmgen_model_outputs outputs;
  const uint8_t* b = (const uint8_t*)y;
  FILE* f = fopen(path, "rb");
  size_t i;
  int32_t rc;
  if (!f) return 2;
  if (fread(x, 1, TVMGEN_MODEL_X_SIZE, f) != TVMGEN_MODEL_X_SIZE) {
    fclose(f);
    return 2;
  }
  fclose(f);
  inputs.x = x;
  outputs.y = y;
  memset(y, 0, sizeof y);
  rc = tvmgen_model_run(&inputs, &outputs);
  if (rc != 0) {
    fprintf(stderr, "run failed (%d): %s\n", (int)rc, TVMGetLastError());
    return 1;
  }
  for (i = 0; i < TVMGEN_MODEL_Y_SIZE; ++i) printf("%02x", b[i]);
  printf("\n");
  return 0;
}

int main(int argc, char** argv) {
  int k, rc;
  if (argc < 2) return 2;
  if (TVMCrtWorkspaceInit(workspace, sizeof workspace) != 0) return 3;
  for (k = 1; k < argc; ++k)
    if ((rc = run_once(argv[k])) != 0) return rc;
  if (tvmgen_model_reset() != 0) return 4;
  printf("reset %d bytes of state\n", (int)TVMGEN_MODEL_STATE_SIZE);
  return run_once(argv[1]);
}
