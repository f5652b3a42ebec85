/* What generated code calls: the packed function signature and workspace memory. */
#ifndef MICROTIR_TVM_RUNTIME_C_BACKEND_API_H_
#define MICROTIR_TVM_RUNTIME_C_BACKEND_API_H_

#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The packed calling convention: every compiled function exported to the runtime. */
typedef int32_t (*TVMBackendPackedCFunc)(TVMValue* args, int32_t* type_codes, int32_t num_args,
                                         TVMValue* out_ret_value, int32_t* out_ret_tcode,
                                         void* resource_handle);

/* Temporary memory for generated code, from the stack allocator over the buffer the
 * application gave TVMCrtWorkspaceInit. Frees must come in reverse order of allocation.
 * Returns NULL (with the last error set) when the workspace is exhausted. */
TVM_DLL void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                       int dtype_code_hint, int dtype_bits_hint);
/* Returns 0, or non-zero (last error set) if `ptr` is not the most recent allocation. */
TVM_DLL int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

#ifdef __cplusplus
}
#endif
#endif /* MICROTIR_TVM_RUNTIME_C_BACKEND_API_H_ */
