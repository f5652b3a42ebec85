/* The function registry of a system library, laid out at compile time by the
 * generated metadata module: no parsing and no allocation at start-up.
 *
 * `names` is a blob: a 16-bit little-endian count N, then N NUL-terminated names.
 * `funcs[i]` is the function named by the i-th name. */
#ifndef MICROTIR_TVM_RUNTIME_CRT_FUNC_REGISTRY_H_
#define MICROTIR_TVM_RUNTIME_CRT_FUNC_REGISTRY_H_

#include <stdint.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t tvm_function_index_t;

typedef struct TVMFuncRegistry {
  const char* names;
  const TVMBackendPackedCFunc* funcs;
} TVMFuncRegistry;

/* Number of functions in the registry. */
uint16_t TVMFuncRegistry_GetNumFuncs(const TVMFuncRegistry* reg);

/* Index of `name`, or kTvmErrorFunctionNameNotFound. */
tvm_crt_error_t TVMFuncRegistry_Lookup(const TVMFuncRegistry* reg, const char* name,
                                       tvm_function_index_t* index);

/* The function at `index`, or kTvmErrorFunctionIndexInvalid. */
tvm_crt_error_t TVMFuncRegistry_GetByIndex(const TVMFuncRegistry* reg, tvm_function_index_t index,
                                           TVMBackendPackedCFunc* out);

/* Defined by the generated metadata module: the registry of this system library. */
const TVMFuncRegistry* TVMSystemLibEntryPoint(void);

#ifdef __cplusplus
}
#endif
#endif /* MICROTIR_TVM_RUNTIME_CRT_FUNC_REGISTRY_H_ */
