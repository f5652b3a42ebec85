/* Platform hooks: what a port (a board, the host simulator, QEMU) supplies. */
#ifndef MICROTIR_TVM_RUNTIME_CRT_PLATFORM_H_
#define MICROTIR_TVM_RUNTIME_CRT_PLATFORM_H_

#include <stddef.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called when the runtime cannot go on (a broken invariant, never a user error). Must
 * not return. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn))
#endif
void TVMPlatformAbort(tvm_crt_error_t code);

/* Timing hooks for measurements; a port without a timer returns
 * kTvmErrorPlatformTimerUnavailable. */
tvm_crt_error_t TVMPlatformTimerStart(void);
tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds);

#ifdef __cplusplus
}
#endif
#endif /* MICROTIR_TVM_RUNTIME_CRT_PLATFORM_H_ */
