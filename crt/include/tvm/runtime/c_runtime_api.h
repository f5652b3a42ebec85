/* The microtir C runtime API: the names and type codes of TVM's C runtime, so that
 * application code written for microTVM-style generated code builds against ours.
 * C99, no malloc. */
#ifndef MICROTIR_TVM_RUNTIME_C_RUNTIME_API_H_
#define MICROTIR_TVM_RUNTIME_C_RUNTIME_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TVM_DLL

/* Type codes of packed arguments. 0..2 are DLPack's int, uint and float codes. */
typedef enum {
  kTVMArgInt = kDLInt,
  kTVMArgFloat = kDLFloat,
  kTVMOpaqueHandle = 3U,
  kTVMNullptr = 4U,
  kTVMDataType = 5U,
  kDLDevice = 6U,
  kTVMDLTensorHandle = 7U,
  kTVMObjectHandle = 8U,
  kTVMModuleHandle = 9U,
  kTVMPackedFuncHandle = 10U,
  kTVMStr = 11U,
  kTVMBytes = 12U,
  kTVMNDArrayHandle = 13U,
  kTVMObjectRValueRefArg = 14U,
  kTVMExtBegin = 15U
} TVMArgTypeCode;

/* One packed argument or return value; the type code says which member is live. */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

typedef void* TVMFunctionHandle;

/* Calls a packed function found with TVMFuncGetGlobal. Returns 0 on success; on
 * failure the callee has set the message that TVMGetLastError returns. */
TVM_DLL int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                        TVMValue* ret_val, int* ret_type_code);

/* Looks `name` up in the system library's function registry (the generated metadata
 * module). Returns 0 and sets *out, or non-zero with the last error set. */
TVM_DLL int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out);

/* The message of the last failed call; "" if none. */
TVM_DLL const char* TVMGetLastError(void);
TVM_DLL void TVMAPISetLastError(const char* msg);

#ifdef __cplusplus
}
#endif
#endif /* MICROTIR_TVM_RUNTIME_C_RUNTIME_API_H_ */
