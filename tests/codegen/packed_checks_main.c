/* Calls the packed functions generated from packed_checks.tir with every kind of bad
 * argument: each must fail with a non-zero code and a message naming the problem. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>

static int g_checks = 0, g_failures = 0;

static void expect(int ok, int line, const char* what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    fprintf(stderr, "packed_checks_main.c:%d: %s (last error: '%s')\n", line, what, TVMGetLastError());
  }
}
#define EXPECT(cond) expect((cond), __LINE__, #cond)
/* The call fails, and the last error contains `needle`. */
#define EXPECT_FAILS(call, needle) \
  expect((call) != 0 && strstr(TVMGetLastError(), (needle)) != NULL, __LINE__, "expected failure: " needle)

static uint8_t a_raw[64];
static int32_t b_data[5];
static int64_t a_shape[3] = {2, 3, 1};
static int64_t b_shape[1] = {5};
static DLTensor a, b;
static TVMValue values[3];
static int codes[3];
static TVMFunctionHandle checked;

/* A valid call's arguments; each test then breaks one thing. */
static void reset(void) {
  float* a_data = (float*)(void*)(((uintptr_t)a_raw + 15) & ~(uintptr_t)15);
  memset(&a, 0, sizeof a);
  a.data = a_data;
  a.device.device_type = kDLCPU;
  a.ndim = 2;
  a.dtype.code = kDLFloat;
  a.dtype.bits = 32;
  a.dtype.lanes = 1;
  a.shape = a_shape;
  a_shape[0] = 2;
  a_shape[1] = 3;
  memset(&b, 0, sizeof b);
  b.data = b_data;
  b.device.device_type = kDLCPU;
  b.ndim = 1;
  b.dtype.code = kDLInt;
  b.dtype.bits = 32;
  b.dtype.lanes = 1;
  b.shape = b_shape;
  b_shape[0] = 5;
  values[0].v_handle = &a;
  codes[0] = kTVMDLTensorHandle;
  values[1].v_int64 = 40;
  codes[1] = kTVMArgInt;
  values[2].v_handle = &b;
  codes[2] = kTVMDLTensorHandle;
}

static int call(int num_args) {
  TVMValue ret;
  int ret_code = 0;
  return TVMFuncCall(checked, values, codes, num_args, &ret, &ret_code);
}

int main(void) {
  TVMFunctionHandle other = NULL, missing = NULL;
  int64_t strides[2];
  int i;
  /* The registry finds every function by name, and only those. */
  EXPECT(TVMFuncGetGlobal("checked", &checked) == 0 && checked != NULL);
  EXPECT(TVMFuncGetGlobal("other", &other) == 0 && other != NULL);
  EXPECT(TVMFuncGetGlobal("nope", &missing) != 0 && missing == NULL);
  EXPECT(strstr(TVMGetLastError(), "'nope'") != NULL);

  /* A valid call works, with m taken from B's shape. */
  reset();
  EXPECT(call(3) == 0);
  for (i = 0; i < 5; ++i) EXPECT(b_data[i] == 40 + i);

  reset();
  EXPECT_FAILS(call(2), "checked: expected 3 arguments, got 2");
  reset();
  codes[0] = kTVMArgInt;
  EXPECT_FAILS(call(3), "checked: argument 0 ('A') must be a tensor (type code 7 or 13), got type code 0");
  reset();
  codes[1] = kTVMArgFloat;
  EXPECT_FAILS(call(3), "checked: argument 1 ('n') must be an integer (type code 0), got type code 2");
  reset();
  values[1].v_int64 = (int64_t)1 << 40;
  EXPECT_FAILS(call(3), "checked: argument 1 ('n') = 1099511627776 does not fit in int32");
  reset();
  values[0].v_handle = NULL;
  EXPECT_FAILS(call(3), "checked: argument 'A' is a NULL DLTensor pointer");
  reset();
  a.ndim = 3;
  EXPECT_FAILS(call(3), "checked: argument 'A' must have ndim 2, got 3");
  reset();
  a.dtype.code = kDLInt;
  EXPECT_FAILS(call(3), "checked: argument 'A' must be float32 (code 2, bits 32, lanes 1), got code 0, bits 32, lanes 1");
  reset();
  a.dtype.lanes = 4;
  EXPECT_FAILS(call(3), "got code 2, bits 32, lanes 4");
  reset();
  a_shape[1] = 4;
  EXPECT_FAILS(call(3), "checked: argument 'A'.shape[1] must be 3, got 4");
  reset();
  strides[0] = 1;
  strides[1] = 2;
  a.strides = strides;
  EXPECT_FAILS(call(3), "checked: argument 'A' must be compact: strides[0] must be 3, got 1");
  reset();
  strides[0] = 3; /* compact strides given explicitly are fine */
  strides[1] = 1;
  a.strides = strides;
  EXPECT(call(3) == 0);
  reset();
  a.device.device_type = kDLCUDA;
  EXPECT_FAILS(call(3), "checked: argument 'A' must be on the CPU (device type 1), got device type 2");
  reset();
  a.byte_offset = 4;
  EXPECT_FAILS(call(3), "checked: argument 'A' must have byte_offset 0, got 4");
  reset();
  a.data = NULL;
  EXPECT_FAILS(call(3), "checked: argument 'A' has NULL data");
  reset();
  a.data = (uint8_t*)a.data + 4;
  EXPECT_FAILS(call(3), "checked: argument 'A' data must be aligned to 16 bytes");
  reset();
  b_shape[0] = -1;
  EXPECT_FAILS(call(3), "checked: argument 'B'.shape[0] must not be negative, got -1");
  reset();
  codes[2] = kTVMNullptr;
  EXPECT_FAILS(call(3), "checked: argument 2 ('b') must be a tensor (type code 7 or 13), got type code 4");

  printf("packed_checks: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
