/* Exact instruction counting on QEMU's MPS2 and MPS3 boards. Run QEMU with
 * `-icount shift=S` (S >= 7): the virtual clock then advances exactly 2^S ns per
 * instruction, and the FPGA I/O block's COUNTER register ticks every
 * 1e9 / MTIR_COUNTER_HZ ns of it (40 ns on the MPS2 boards; 50 ns on the mps2-tz boards
 * AN505 and AN547, whose FPGAIO sits elsewhere), exact at each read. So over a region,
 * instructions = round(ticks * tick_ns / 2^S); see docs/targets.md. The counter is
 * 32 bits: one region can hold about 671 M (MPS2) or 839 M (mps2-tz) instructions at
 * S = 8. The build defines both macros for the mps2-tz boards (sim/cross_targets.cc). */
#ifndef MICROTIR_CORTEX_M_INSTRUCTION_COUNTER_H_
#define MICROTIR_CORTEX_M_INSTRUCTION_COUNTER_H_

#include <stdint.h>

#ifndef MTIR_FPGAIO_COUNTER_ADDR
#define MTIR_FPGAIO_COUNTER_ADDR 0x40028018u
#endif
#ifndef MTIR_COUNTER_HZ
#define MTIR_COUNTER_HZ 25000000
#endif

#define MTIR_COUNTER_UNIT "fpgaio-counter"
#define MTIR_MPS2_COUNTER ((volatile uint32_t*)MTIR_FPGAIO_COUNTER_ADDR)

static inline uint32_t mtir_counter_read(void) { return *MTIR_MPS2_COUNTER; }

/* Ticks between two reads, correct across one 32-bit wrap. */
static inline uint32_t mtir_counter_delta(uint32_t t0, uint32_t t1) { return t1 - t0; }

#endif /* MICROTIR_CORTEX_M_INSTRUCTION_COUNTER_H_ */
