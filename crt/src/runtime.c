/* The runtime API: last error, function lookup in the system library, packed calls. */
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/func_registry.h>

/* Long enough for generated argument-check messages; longer ones are truncated. */
#define TVM_CRT_LAST_ERROR_SIZE 256
static char g_last_error[TVM_CRT_LAST_ERROR_SIZE];

/* A bounded copy loop rather than strlen + memcpy: the one caller most firmware has
 * (run()'s argument checks) then links no strlen. */
void TVMAPISetLastError(const char* msg) {
  size_t n = 0;
  if (msg != NULL)
    for (; msg[n] != '\0' && n < sizeof g_last_error - 1; ++n) g_last_error[n] = msg[n];
  g_last_error[n] = '\0';
}

const char* TVMGetLastError(void) { return g_last_error; }

/* a + b + c into out (truncated to its size), without snprintf: the printf family would
 * otherwise be linked into every firmware for one message. */
static const char* concat3(char* out, size_t size, const char* a, const char* b, const char* c) {
  const char* parts[3];
  size_t k = 0, i, n;
  parts[0] = a;
  parts[1] = b;
  parts[2] = c;
  for (i = 0; i < 3; ++i) {
    n = strlen(parts[i]);
    if (n > size - 1 - k) n = size - 1 - k;
    memcpy(out + k, parts[i], n);
    k += n;
  }
  out[k] = '\0';
  return out;
}

int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out) {
  const TVMFuncRegistry* reg;
  tvm_function_index_t index;
  TVMBackendPackedCFunc fn;
  char msg[TVM_CRT_LAST_ERROR_SIZE];
  if (name == NULL || out == NULL) {
    TVMAPISetLastError("TVMFuncGetGlobal: NULL argument");
    return kTvmErrorNullArgument;
  }
  *out = NULL;
  reg = TVMSystemLibEntryPoint();
  if (TVMFuncRegistry_Lookup(reg, name, &index) != kTvmErrorNoError ||
      TVMFuncRegistry_GetByIndex(reg, index, &fn) != kTvmErrorNoError) {
    TVMAPISetLastError(concat3(msg, sizeof msg, "TVMFuncGetGlobal: no function named '", name,
                               "' in the system library"));
    return kTvmErrorFunctionNameNotFound;
  }
  /* ISO C has no conversion between function and object pointers; the handle is the
   * address of the registry slot, which is an object. */
  *out = (TVMFunctionHandle)(void*)&reg->funcs[index];
  return kTvmErrorNoError;
}

int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args, TVMValue* ret_val,
                int* ret_type_code) {
  const TVMBackendPackedCFunc* slot = (const TVMBackendPackedCFunc*)func;
  if (slot == NULL || *slot == NULL) {
    TVMAPISetLastError("TVMFuncCall: NULL function handle");
    return kTvmErrorNullArgument;
  }
  return (*slot)(arg_values, (int32_t*)type_codes, num_args, ret_val, (int32_t*)ret_type_code, NULL);
}
