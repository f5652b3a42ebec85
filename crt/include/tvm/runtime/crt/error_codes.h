/* Error codes of the C runtime. 0 is success; every failure has its own code. */
#ifndef MICROTIR_TVM_RUNTIME_CRT_ERROR_CODES_H_
#define MICROTIR_TVM_RUNTIME_CRT_ERROR_CODES_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  kTvmErrorNoError = 0,
  /* Function registry. */
  kTvmErrorFunctionNameNotFound = 0x0100,
  kTvmErrorFunctionIndexInvalid = 0x0101,
  kTvmErrorFunctionRegistryFull = 0x0102,
  kTvmErrorFunctionAlreadyDefined = 0x0103,
  kTvmErrorFunctionCallNumArguments = 0x0104,
  kTvmErrorFunctionCallInvalidArg = 0x0105,
  /* Workspace (stack allocator). */
  kTvmErrorPlatformNoMemory = 0x0201,
  kTvmErrorWorkspaceNotInitialized = 0x0202,
  kTvmErrorWorkspaceFreeOrder = 0x0203,
  kTvmErrorWorkspaceFreeUnknown = 0x0204,
  /* Platform. */
  kTvmErrorPlatformTimerUnavailable = 0x0210,
  /* Generated code. */
  kTvmErrorGeneratedInvalidArgument = 0x0300,
  kTvmErrorGeneratedAssertFailed = 0x0301,
  /* Caller misuse of the runtime API. */
  kTvmErrorNullArgument = 0x0400,
  kTvmErrorSystemErrorMask = 0x8000
} tvm_crt_error_t;

#ifdef __cplusplus
}
#endif
#endif /* MICROTIR_TVM_RUNTIME_CRT_ERROR_CODES_H_ */
