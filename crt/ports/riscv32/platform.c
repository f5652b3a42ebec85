/* Platform hooks for RV32 on QEMU's virt board with picolibc's semihosting crt0: abort
 * reports over semihosting and exits; the timer is the CLINT's 10 MHz mtime. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <tvm/runtime/crt/platform.h>

#define MTIR_VIRT_MTIME_LO ((volatile uint32_t*)0x0200BFF8u)
#define MTIR_VIRT_MTIME_HI ((volatile uint32_t*)0x0200BFFCu)
#define MTIR_VIRT_MTIME_HZ 10000000.0

void TVMPlatformAbort(tvm_crt_error_t code) {
  fprintf(stderr, "microtir crt: abort (error 0x%04x)\n", (unsigned)code);
  exit(2);
}

static uint64_t read_mtime(void) {
  uint32_t hi, lo;
  do {
    hi = *MTIR_VIRT_MTIME_HI;
    lo = *MTIR_VIRT_MTIME_LO;
  } while (hi != *MTIR_VIRT_MTIME_HI);
  return ((uint64_t)hi << 32) | lo;
}

static uint64_t g_timer_start;
static int g_timer_running;

tvm_crt_error_t TVMPlatformTimerStart(void) {
  g_timer_start = read_mtime();
  g_timer_running = 1;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds) {
  uint64_t now = read_mtime();
  if (!g_timer_running || elapsed_time_seconds == NULL) return kTvmErrorPlatformTimerUnavailable;
  g_timer_running = 0;
  *elapsed_time_seconds = (double)(now - g_timer_start) / MTIR_VIRT_MTIME_HZ;
  return kTvmErrorNoError;
}
