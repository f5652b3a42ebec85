/* Lookups in the compile-time function registry (see func_registry.h for the layout). */
#include <string.h>
#include <tvm/runtime/crt/func_registry.h>

uint16_t TVMFuncRegistry_GetNumFuncs(const TVMFuncRegistry* reg) {
  const unsigned char* blob = (const unsigned char*)reg->names;
  return (uint16_t)(blob[0] | (blob[1] << 8));
}

tvm_crt_error_t TVMFuncRegistry_Lookup(const TVMFuncRegistry* reg, const char* name,
                                       tvm_function_index_t* index) {
  uint16_t count, i;
  const char* entry;
  if (reg == NULL || reg->names == NULL || name == NULL || index == NULL) return kTvmErrorNullArgument;
  count = TVMFuncRegistry_GetNumFuncs(reg);
  entry = reg->names + 2;
  for (i = 0; i < count; ++i) {
    if (strcmp(entry, name) == 0) {
      *index = i;
      return kTvmErrorNoError;
    }
    entry += strlen(entry) + 1;
  }
  return kTvmErrorFunctionNameNotFound;
}

tvm_crt_error_t TVMFuncRegistry_GetByIndex(const TVMFuncRegistry* reg, tvm_function_index_t index,
                                           TVMBackendPackedCFunc* out) {
  if (reg == NULL || reg->names == NULL || out == NULL) return kTvmErrorNullArgument;
  if (index >= TVMFuncRegistry_GetNumFuncs(reg)) return kTvmErrorFunctionIndexInvalid;
  *out = reg->funcs[index];
  return kTvmErrorNoError;
}
