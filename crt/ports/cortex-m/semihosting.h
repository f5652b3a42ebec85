/* The ARM semihosting calls the port needs, without the C library: console output and
 * exit for the fault path, the run harness's console and a program that links no stdio. */
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

/* Exit with status `code`: SYS_EXIT (ADP_Stopped_ApplicationExit) for 0, else
 * SYS_EXIT_EXTENDED, whose parameter block carries the status; a host without the
 * extension returns from it, and the program then stops with a run-time error. */
__attribute__((noreturn)) static inline void mtir_semihost_exit(int code) {
  uint32_t block[2];
  block[0] = 0x20026u;
  block[1] = (uint32_t)code;
  if (code == 0) (void)mtir_semihost_call(0x18u, (const void*)0x20026u);
  else (void)mtir_semihost_call(0x20u, block);
  mtir_semihost_exit_error();
}

#endif /* MICROTIR_CORTEX_M_SEMIHOSTING_H_ */
