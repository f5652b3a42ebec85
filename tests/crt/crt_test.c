/* Tests of the C runtime: registry lookups, packed calls, the last error and the
 * stack allocator. Plain C99 so it also checks that the headers are C99. */
#include <stdio.h>
#include <string.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/func_registry.h>
#include <tvm/runtime/crt/stack_allocator.h>

static int g_checks = 0;
static int g_failures = 0;

#define CHECK(cond)                                                  \
  do {                                                               \
    ++g_checks;                                                      \
    if (!(cond)) {                                                   \
      ++g_failures;                                                  \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                \
  } while (0)

/* Two packed functions: add_one returns args[0] + 1; fail sets an error. */
static int32_t add_one(TVMValue* args, int32_t* codes, int32_t n, TVMValue* ret, int32_t* ret_code, void* rh) {
  (void)rh;
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("add_one: expected one int argument");
    return -1;
  }
  ret->v_int64 = args[0].v_int64 + 1;
  *ret_code = kTVMArgInt;
  return 0;
}

static int32_t fail(TVMValue* args, int32_t* codes, int32_t n, TVMValue* ret, int32_t* ret_code, void* rh) {
  (void)args, (void)codes, (void)n, (void)ret, (void)ret_code, (void)rh;
  TVMAPISetLastError("fail: always fails");
  return -1;
}

/* What the generated metadata module provides: a names blob and a function table. */
static const char g_names[] = "\x03\x00" "add_one\0" "fail\0" "add_one_alias\0";
static const TVMBackendPackedCFunc g_funcs[] = {add_one, fail, add_one};
static const TVMFuncRegistry g_registry = {g_names, g_funcs};
const TVMFuncRegistry* TVMSystemLibEntryPoint(void) { return &g_registry; }

static void test_registry(void) {
  tvm_function_index_t index = 99;
  TVMBackendPackedCFunc fn = NULL;
  CHECK(TVMFuncRegistry_GetNumFuncs(&g_registry) == 3);
  CHECK(TVMFuncRegistry_Lookup(&g_registry, "add_one", &index) == kTvmErrorNoError && index == 0);
  CHECK(TVMFuncRegistry_Lookup(&g_registry, "fail", &index) == kTvmErrorNoError && index == 1);
  CHECK(TVMFuncRegistry_Lookup(&g_registry, "add_one_alias", &index) == kTvmErrorNoError && index == 2);
  CHECK(TVMFuncRegistry_Lookup(&g_registry, "add_on", &index) == kTvmErrorFunctionNameNotFound);
  CHECK(TVMFuncRegistry_Lookup(&g_registry, "", &index) == kTvmErrorFunctionNameNotFound);
  CHECK(TVMFuncRegistry_Lookup(&g_registry, NULL, &index) == kTvmErrorNullArgument);
  CHECK(TVMFuncRegistry_GetByIndex(&g_registry, 1, &fn) == kTvmErrorNoError && fn == fail);
  CHECK(TVMFuncRegistry_GetByIndex(&g_registry, 3, &fn) == kTvmErrorFunctionIndexInvalid);
}

static void test_packed_calls(void) {
  TVMFunctionHandle handle = NULL;
  TVMValue arg, ret;
  int code = kTVMArgInt, ret_code = -1;
  CHECK(TVMFuncGetGlobal("add_one", &handle) == 0 && handle != NULL);
  arg.v_int64 = 41;
  CHECK(TVMFuncCall(handle, &arg, &code, 1, &ret, &ret_code) == 0);
  CHECK(ret.v_int64 == 42 && ret_code == kTVMArgInt);
  code = kTVMArgFloat;
  CHECK(TVMFuncCall(handle, &arg, &code, 1, &ret, &ret_code) != 0);
  CHECK(strcmp(TVMGetLastError(), "add_one: expected one int argument") == 0);

  CHECK(TVMFuncGetGlobal("fail", &handle) == 0);
  CHECK(TVMFuncCall(handle, NULL, NULL, 0, &ret, &ret_code) != 0);
  CHECK(strcmp(TVMGetLastError(), "fail: always fails") == 0);

  CHECK(TVMFuncGetGlobal("missing", &handle) == kTvmErrorFunctionNameNotFound && handle == NULL);
  CHECK(strstr(TVMGetLastError(), "'missing'") != NULL);
  CHECK(TVMFuncCall(NULL, NULL, NULL, 0, &ret, &ret_code) == kTvmErrorNullArgument);
}

static void test_last_error(void) {
  char long_message[1000];
  memset(long_message, 'x', sizeof long_message - 1);
  long_message[sizeof long_message - 1] = '\0';
  TVMAPISetLastError(long_message);
  CHECK(strlen(TVMGetLastError()) == 255);  /* truncated, still terminated */
  TVMAPISetLastError(NULL);
  CHECK(strcmp(TVMGetLastError(), "") == 0);
}

static void test_stack_allocator(void) {
  static uint8_t memory[1024 + TVM_CRT_WORKSPACE_ALIGN];
  tvm_workspace_t ws;
  void *a = NULL, *b = NULL, *c = NULL;
  memset(&ws, 0, sizeof ws);
  CHECK(StackMemoryManager_Allocate(&ws, 4, &a) == kTvmErrorWorkspaceNotInitialized);
  /* Start at an odd address: the allocator aligns. */
  CHECK(StackMemoryManager_Init(&ws, memory + 1, 1024) == kTvmErrorNoError);
  CHECK(StackMemoryManager_Allocate(&ws, 10, &a) == kTvmErrorNoError && a != NULL);
  CHECK(((uintptr_t)a % TVM_CRT_WORKSPACE_ALIGN) == 0);
  CHECK(StackMemoryManager_Allocate(&ws, 100, &b) == kTvmErrorNoError && b != NULL);
  CHECK(((uintptr_t)b % TVM_CRT_WORKSPACE_ALIGN) == 0);
  CHECK((uint8_t*)b >= (uint8_t*)a + 10);
  memset(a, 0xAA, 10);
  memset(b, 0xBB, 100);
  /* Out of order and foreign frees are refused and change nothing. */
  CHECK(StackMemoryManager_Free(&ws, a) == kTvmErrorWorkspaceFreeOrder);
  CHECK(StackMemoryManager_Free(&ws, memory) == kTvmErrorWorkspaceFreeUnknown);
  CHECK(StackMemoryManager_Free(&ws, NULL) == kTvmErrorWorkspaceFreeUnknown);
  CHECK(StackMemoryManager_Free(&ws, b) == kTvmErrorNoError);
  CHECK(StackMemoryManager_Free(&ws, b) == kTvmErrorWorkspaceFreeUnknown);
  CHECK(StackMemoryManager_Free(&ws, a) == kTvmErrorNoError);
  CHECK(StackMemoryManager_Free(&ws, a) == kTvmErrorWorkspaceFreeUnknown);
  CHECK(ws.top == ws.base);
  CHECK(ws.peak >= 110);
  /* Exhaustion, including sizes that would wrap around. */
  CHECK(StackMemoryManager_Allocate(&ws, 2000, &c) == kTvmErrorPlatformNoMemory && c == NULL);
  CHECK(StackMemoryManager_Allocate(&ws, (size_t)-1, &c) == kTvmErrorPlatformNoMemory && c == NULL);
  CHECK(StackMemoryManager_Allocate(&ws, (size_t)-8, &c) == kTvmErrorPlatformNoMemory && c == NULL);
  /* The whole region minus one header fits exactly once. */
  CHECK(StackMemoryManager_Allocate(&ws, 1024 - 2 * TVM_CRT_WORKSPACE_ALIGN, &c) == kTvmErrorNoError);
  CHECK(StackMemoryManager_Allocate(&ws, 1, &a) == kTvmErrorPlatformNoMemory);
  CHECK(StackMemoryManager_Free(&ws, c) == kTvmErrorNoError);
  /* An empty workspace allocates nothing. */
  CHECK(StackMemoryManager_Init(&ws, memory, 0) == kTvmErrorNoError);
  CHECK(StackMemoryManager_Allocate(&ws, 1, &a) == kTvmErrorPlatformNoMemory);
}

static void test_backend_workspace(void) {
  static uint8_t memory[256];
  void *a, *b;
  CHECK(TVMBackendAllocWorkspace(1, 0, 16, 2, 32) == NULL);
  CHECK(strstr(TVMGetLastError(), "not initialized") != NULL);
  CHECK(TVMCrtWorkspaceInit(memory, sizeof memory) == kTvmErrorNoError);
  a = TVMBackendAllocWorkspace(1, 0, 64, 2, 32);
  b = TVMBackendAllocWorkspace(1, 0, 64, 2, 32);
  CHECK(a != NULL && b != NULL);
  CHECK(TVMCrtWorkspaceUsed() > 128);
  CHECK(TVMBackendAllocWorkspace(1, 0, 1000, 2, 32) == NULL);
  CHECK(strstr(TVMGetLastError(), "out of workspace memory") != NULL);
  CHECK(TVMBackendFreeWorkspace(1, 0, a) != 0);
  CHECK(strstr(TVMGetLastError(), "reverse order") != NULL);
  CHECK(TVMBackendFreeWorkspace(1, 0, b) == 0);
  CHECK(TVMBackendFreeWorkspace(1, 0, a) == 0);
  CHECK(TVMCrtWorkspaceUsed() == 0);
  CHECK(TVMCrtWorkspacePeak() > 128);
}

int main(void) {
  test_backend_workspace(); /* first: it checks the uninitialized workspace */
  test_registry();
  test_packed_calls();
  test_last_error();
  test_stack_allocator();
  printf("crt_test: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
