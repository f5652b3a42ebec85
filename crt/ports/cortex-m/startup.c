/* Cortex-M start-up for the QEMU MPS2 boards (and any part with code at 0x0 and RAM
 * at 0x20000000): the vector table, the reset handler (FPU on, .data copied, .bss
 * zeroed, semihosting opened, exit(main())) and fault handlers that end the program
 * with a non-zero exit code, so a crash is never a hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "semihosting.h"

extern uint32_t __stack_top;
extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end;
extern int main(void);
extern void initialise_monitor_handles(void);

/* Weak: newlib's semihosting stdio, exit and fflush are linked only when the program
 * uses them (a main with printf); one that does not (the run harness, which writes over
 * semihosting itself) then carries no C library start-up and exits by semihosting. */
#pragma weak initialise_monitor_handles
#pragma weak exit
#pragma weak fflush

void Reset_Handler(void);
void Fault_Handler(void);

/* The table as a struct: ISO C has no conversion from an object address (the initial
 * stack pointer) to a function pointer. */
struct vector_table {
  uint32_t* initial_sp;
  void (*handlers[15])(void);
};

__attribute__((section(".vectors"), used)) const struct vector_table g_vectors = {
    &__stack_top,
    {
        Reset_Handler,  /* reset */
        Fault_Handler,  /* NMI */
        Fault_Handler,  /* hard fault */
        Fault_Handler,  /* memory management fault */
        Fault_Handler,  /* bus fault */
        Fault_Handler,  /* usage fault */
        0, 0, 0, 0,     /* reserved */
        Fault_Handler,  /* SVCall */
        Fault_Handler,  /* debug monitor */
        0,              /* reserved */
        Fault_Handler,  /* PendSV */
        Fault_Handler,  /* SysTick (never enabled) */
    },
};

void Reset_Handler(void) {
  uint32_t* src = &__data_load;
  uint32_t* dst = &__data_start;
  int status;
#if defined(__ARM_FP)
  /* Full access to coprocessors 10 and 11 (the FPU) before any float instruction. */
  *(volatile uint32_t*)0xE000ED88u |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  /* Through a volatile pointer: GCC would otherwise call memcpy and memset here, and
   * link them into a program that has no other use for them. */
  while (dst < &__data_end) *(volatile uint32_t*)dst++ = *src++;
  for (dst = &__bss_start; dst < &__bss_end;) *(volatile uint32_t*)dst++ = 0;
  if (initialise_monitor_handles) initialise_monitor_handles();
  status = main();
  if (exit) exit(status); /* atexit handlers, stdio flushed, rdimon's exit */
  if (fflush) (void)fflush(NULL);
  mtir_semihost_exit(status);
}

/* Any fault or unexpected exception: say so on the host console and exit with a run-time
 * error (QEMU then exits with status 1). Only semihosting calls, no library state. */
void Fault_Handler(void) {
  uint32_t ipsr;
  __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
  mtir_semihost_write0(ipsr == 3 ? "microtir: hard fault\n" : "microtir: unexpected exception or fault\n");
  mtir_semihost_exit_error();
}
