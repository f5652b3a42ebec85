/* The two ARM semihosting calls the fault path needs, without the C library. */
#ifndef MICROTIR_CORTEX_M_SEMIHOSTING_H_
#define MICROTIR_CORTEX_M_SEMIHOSTING_H_

#include <stdint.h>

static inline uint32_t mtir_semihost_call(uint32_t op, const void* arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

/* SYS_WRITE0: a NUL-terminated string to the host console. */
static inline void mtir_semihost_write0(const char* s) { (void)mtir_semihost_call(0x04u, s); }

/* SYS_EXIT with ADP_Stopped_RunTimeError: QEMU exits with status 1. */
__attribute__((noreturn)) static inline void mtir_semihost_exit_error(void) {
  for (;;) (void)mtir_semihost_call(0x18u, (const void*)0x20023u);
}

#endif /* MICROTIR_CORTEX_M_SEMIHOSTING_H_ */
