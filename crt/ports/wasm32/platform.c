/* Platform hooks for wasm32 under WASI (node's wasi module, wasmtime, ...): abort
 * reports on stderr and exits; the timer is WASI's monotonic clock (wall time, so not
 * deterministic: the instruction counts come from the QEMU targets). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <tvm/runtime/crt/platform.h>

void TVMPlatformAbort(tvm_crt_error_t code) {
  fprintf(stderr, "microtir crt: abort (error 0x%04x)\n", (unsigned)code);
  exit(2);
}

static struct timespec g_timer_start;
static int g_timer_running;

tvm_crt_error_t TVMPlatformTimerStart(void) {
  if (clock_gettime(CLOCK_MONOTONIC, &g_timer_start) != 0) return kTvmErrorPlatformTimerUnavailable;
  g_timer_running = 1;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds) {
  struct timespec now;
  if (!g_timer_running || elapsed_time_seconds == NULL || clock_gettime(CLOCK_MONOTONIC, &now) != 0)
    return kTvmErrorPlatformTimerUnavailable;
  g_timer_running = 0;
  *elapsed_time_seconds = (double)(now.tv_sec - g_timer_start.tv_sec) + (double)(now.tv_nsec - g_timer_start.tv_nsec) * 1e-9;
  return kTvmErrorNoError;
}
