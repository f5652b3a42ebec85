/* The run harness's console (sim/firmware_main.cc): a line straight to the host over
 * semihosting, so the firmware links none of the C library's stdio. */
#ifndef MICROTIR_CORTEX_M_CONSOLE_H_
#define MICROTIR_CORTEX_M_CONSOLE_H_

#include "semihosting.h"

static inline void mtir_console_puts(const char* s) { mtir_semihost_write0(s); }

#endif /* MICROTIR_CORTEX_M_CONSOLE_H_ */
