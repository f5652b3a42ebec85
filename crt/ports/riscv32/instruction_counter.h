/* Exact instruction counting on QEMU's RISC-V virt board: run QEMU with
 * `-icount shift=0,sleep=off` and minstret counts exactly the retired instructions
 * (without -icount it follows the host clock). The CSR reads are spelled with .insn so
 * that the rv32imac multilib (no Zicsr in -march) can still be used. */
#ifndef MICROTIR_RISCV32_INSTRUCTION_COUNTER_H_
#define MICROTIR_RISCV32_INSTRUCTION_COUNTER_H_

#include <stdint.h>

#define MTIR_COUNTER_UNIT "minstret"

/* csrrs rd, csr, x0 with csr 0xB02 (minstret) or 0xB82 (minstreth); the 12-bit CSR
 * field is written as a signed immediate. */
static inline uint32_t mtir_read_minstret(void) {
  uint32_t v;
  __asm__ volatile(".insn i 0x73, 2, %0, x0, -1278" : "=r"(v));
  return v;
}

static inline uint32_t mtir_read_minstreth(void) {
  uint32_t v;
  __asm__ volatile(".insn i 0x73, 2, %0, x0, -1150" : "=r"(v));
  return v;
}

/* The 64-bit count: high, low, high again, retried if the low half wrapped in between. */
static inline uint64_t mtir_counter_read(void) {
  uint32_t hi, lo, hi2;
  do {
    hi = mtir_read_minstreth();
    lo = mtir_read_minstret();
    hi2 = mtir_read_minstreth();
  } while (hi != hi2);
  return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t mtir_counter_delta(uint64_t t0, uint64_t t1) { return t1 - t0; }

#endif /* MICROTIR_RISCV32_INSTRUCTION_COUNTER_H_ */
