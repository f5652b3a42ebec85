/* Runtime faults for the digits model's C interface: a workspace too small for the
 * plan, a misaligned workspace, NULL structs and pointers. Every buffer the run may
 * touch sits between guard bytes, and every byte outside what the application handed
 * over must be unchanged afterwards. argv: the image, then the fault: ok, small,
 * misaligned, null-inputs, null-input, null-output, null-outputs.
 * Prints "rc <code>", the error message, "guards intact" or the broken guard, then the
 * ten probabilities. */
#include <stdio.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include "tvmgen_digits.h"

#define GUARD 64
#define PATTERN 0xA5

static uint8_t workspace[GUARD + TVMGEN_DIGITS_WORKSPACE_SIZE + 1 + GUARD];
static uint8_t image[GUARD + TVMGEN_DIGITS_X_SIZE + GUARD];
static uint8_t probs[GUARD + TVMGEN_DIGITS_PROBS_SIZE + GUARD];

/* Whether every byte of `buf` outside [start, start + n) still holds the pattern. */
static int intact(const uint8_t* buf, size_t size, size_t start, size_t n) {
  size_t i;
  for (i = 0; i < size; ++i)
    if ((i < start || i >= start + n) && buf[i] != PATTERN) return 0;
  return 1;
}

int main(int argc, char** argv) {
  struct tvmgen_digits_inputs inputs;
  struct tvmgen_digits_outputs outputs;
  size_t ws_start = GUARD, ws_size = TVMGEN_DIGITS_WORKSPACE_SIZE, i;
  const char* fault;
  FILE* f;
  int32_t rc;
  float p;
  if (argc != 3 || !(f = fopen(argv[1], "rb"))) return 2;
  fault = argv[2];
  memset(workspace, PATTERN, sizeof workspace);
  memset(image, PATTERN, sizeof image);
  memset(probs, PATTERN, sizeof probs);
  if (fread(image + GUARD, 1, TVMGEN_DIGITS_X_SIZE, f) != TVMGEN_DIGITS_X_SIZE) return 2;
  fclose(f);
  if (strcmp(fault, "small") == 0) ws_size = TVMGEN_DIGITS_WORKSPACE_SIZE / 4;
  if (strcmp(fault, "misaligned") == 0) ws_start = GUARD + 1;
  if (TVMCrtWorkspaceInit(workspace + ws_start, ws_size) != 0) return 3;
  inputs.x = image + GUARD;
  outputs.probs = probs + GUARD;
  if (strcmp(fault, "null-input") == 0) inputs.x = NULL;
  if (strcmp(fault, "null-output") == 0) outputs.probs = NULL;
  rc = tvmgen_digits_run(strcmp(fault, "null-inputs") == 0 ? NULL : &inputs,
                         strcmp(fault, "null-outputs") == 0 ? NULL : &outputs);
  printf("rc %d\n%s\n", (int)rc, rc != 0 ? TVMGetLastError() : "no error");
  if (!intact(workspace, sizeof workspace, ws_start, ws_size)) printf("guard broken: workspace\n");
  else if (!intact(image, sizeof image, GUARD, TVMGEN_DIGITS_X_SIZE)) printf("guard broken: input\n");
  else if (!intact(probs, sizeof probs, GUARD, TVMGEN_DIGITS_PROBS_SIZE)) printf("guard broken: output\n");
  else printf("guards intact\n");
  if (rc == 0 && TVMCrtWorkspaceUsed() != 0) printf("workspace leaked\n");
  for (i = 0; i < TVMGEN_DIGITS_PROBS_SIZE / sizeof(float); ++i) {
    memcpy(&p, probs + GUARD + i * sizeof(float), sizeof p);
    printf("%.9g\n", p);
  }
  return 0;
}
