/* Platform hooks for a hosted build (the simulator and the runtime's own tests). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <tvm/runtime/crt/platform.h>

void TVMPlatformAbort(tvm_crt_error_t code) {
  fprintf(stderr, "microtir crt: abort (error 0x%04x)\n", (unsigned)code);
  exit(2);
}

static clock_t g_timer_start = (clock_t)-1;

tvm_crt_error_t TVMPlatformTimerStart(void) {
  g_timer_start = clock();
  return g_timer_start == (clock_t)-1 ? kTvmErrorPlatformTimerUnavailable : kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds) {
  clock_t now = clock();
  if (g_timer_start == (clock_t)-1 || now == (clock_t)-1 || elapsed_time_seconds == NULL) {
    return kTvmErrorPlatformTimerUnavailable;
  }
  *elapsed_time_seconds = (double)(now - g_timer_start) / CLOCKS_PER_SEC;
  g_timer_start = (clock_t)-1;
  return kTvmErrorNoError;
}
