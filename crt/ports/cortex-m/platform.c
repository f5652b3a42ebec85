/* Platform hooks for Cortex-M on the QEMU MPS2 boards: abort reports over semihosting
 * and exits; the timer is the FPGA I/O block's COUNTER (25 MHz on MPS2, 20 MHz on AN505/AN547). */
#include <tvm/runtime/crt/platform.h>

#include "instruction_counter.h"
#include "semihosting.h"

/* Semihosting alone, not fprintf and exit: referencing them would link newlib's stdio
 * into every firmware, whether or not it ever aborts. */
void TVMPlatformAbort(tvm_crt_error_t code) {
  char msg[] = "microtir crt: abort (error 0x0000)\n";
  int i;
  for (i = 0; i < 4; ++i) msg[32 - i] = "0123456789abcdef"[((unsigned)code >> (4 * i)) & 0xFu];
  mtir_semihost_write0(msg);
  mtir_semihost_exit(2);
}

static uint32_t g_timer_start;
static int g_timer_running;

tvm_crt_error_t TVMPlatformTimerStart(void) {
  g_timer_start = mtir_counter_read();
  g_timer_running = 1;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds) {
  uint32_t now = mtir_counter_read();
  if (!g_timer_running || elapsed_time_seconds == NULL) return kTvmErrorPlatformTimerUnavailable;
  g_timer_running = 0;
  *elapsed_time_seconds = (double)mtir_counter_delta(g_timer_start, now) / (double)MTIR_COUNTER_HZ;
  return kTvmErrorNoError;
}
