/* The run harness's console (sim/firmware_main.cc): the C library's stdout. */
#ifndef MICROTIR_RISCV32_CONSOLE_H_
#define MICROTIR_RISCV32_CONSOLE_H_

#include <stdio.h>

static inline void mtir_console_puts(const char* s) { (void)fputs(s, stdout); }

#endif /* MICROTIR_RISCV32_CONSOLE_H_ */
