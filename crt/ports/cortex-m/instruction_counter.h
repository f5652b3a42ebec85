/* Exact instruction counting on QEMU's MPS2 boards. Run QEMU with `-icount shift=S`
 * (S >= 7): the virtual clock then advances exactly 2^S ns per instruction, and the FPGA
 * I/O block's COUNTER register ticks every 40 ns of it (25 MHz), exact at each read. So
 * over a region, instructions = round(ticks * 40 / 2^S); see docs/targets.md. The
 * counter is 32 bits: one region can hold about 671 M instructions at S = 8. */
#ifndef MICROTIR_CORTEX_M_INSTRUCTION_COUNTER_H_
#define MICROTIR_CORTEX_M_INSTRUCTION_COUNTER_H_

#include <stdint.h>

#define MTIR_COUNTER_UNIT "mps2-counter-40ns"
#define MTIR_MPS2_COUNTER ((volatile uint32_t*)0x40028018u)

static inline uint32_t mtir_counter_read(void) { return *MTIR_MPS2_COUNTER; }

/* Ticks between two reads, correct across one 32-bit wrap. */
static inline uint32_t mtir_counter_delta(uint32_t t0, uint32_t t1) { return t1 - t0; }

#endif /* MICROTIR_CORTEX_M_INSTRUCTION_COUNTER_H_ */
