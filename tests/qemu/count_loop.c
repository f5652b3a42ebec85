/* Checks the instruction-counting method: a loop of exactly two instructions per trip,
 * measured at several trip counts with the port's counter, must give a*n + b exactly.
 * Prints "@mtir probe -1 <raw>" and "@mtir loop <n> <raw>" (raw counter deltas, hex). */
#include <stdint.h>
#include <stdio.h>

#include "instruction_counter.h"

static __attribute__((noinline)) void spin(uint32_t n) {
#if defined(__arm__)
  __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n)::"cc");
#elif defined(__riscv)
  __asm__ volatile("1: addi %0, %0, -1\n\tbnez %0, 1b" : "+r"(n));
#else
#error "count_loop.c: no two-instruction loop for this architecture"
#endif
}

static void print_raw(const char* what, long n, uint64_t v) {
  printf("@mtir %s %ld %08lx%08lx\n", what, n, (unsigned long)(v >> 32), (unsigned long)(v & 0xffffffffu));
}

int main(void) {
  static const uint32_t trips[] = {1, 2, 10, 100, 1000, 12345, 100000};
  uint64_t t0, t1;
  unsigned i;
  t0 = mtir_counter_read();
  t1 = mtir_counter_read();
  print_raw("probe", -1, (uint64_t)mtir_counter_delta(t0, t1));
  for (i = 0; i < sizeof trips / sizeof trips[0]; ++i) {
    t0 = mtir_counter_read();
    spin(trips[i]);
    t1 = mtir_counter_read();
    print_raw("loop", (long)trips[i], (uint64_t)mtir_counter_delta(t0, t1));
  }
  return 0;
}
