/* Programs that go wrong on purpose, to check that each failure ends the run with a
 * clear message instead of a hang: -DFAULT reads an unmapped address, -DHANG spins
 * forever, -DTOO_BIG needs more RAM than the board has. And one that must not go wrong:
 * -DFULL_BOARD nearly fills the code memory and the RAM (a big model's weights and
 * arena), which the board's loader once spoiled by zero-filling the bss at flash
 * addresses past the end of the code memory. -DEXIT_PRINTF and -DEXIT_QUIET return a
 * status, after printf or with no stdio linked at all: the status is QEMU's. */
#include <stdint.h>
#include <stdio.h>

#include "instruction_counter.h"

#if defined(TOO_BIG)
static volatile uint8_t g_big[8u << 20];
#elif defined(FULL_BOARD)
static const uint8_t g_weights[3u << 20] = {7, [(3u << 20) - 1] = 9};
static volatile uint8_t g_arena[2u << 20];
#endif

int main(void) {
#if defined(FAULT)
  volatile uint32_t* p = (volatile uint32_t*)0xFFFFFFF0u;
  printf("reading %p\n", (void*)p);
  return (int)*p;
#elif defined(HANG)
  volatile int forever = 1;
  while (forever) {
  }
  return 0;
#elif defined(TOO_BIG)
  g_big[sizeof g_big - 1] = 1;
  return g_big[0];
#elif defined(FULL_BOARD)
  const volatile uint8_t* w = g_weights;  /* volatile: read the memory, not the initializer */
  g_arena[sizeof g_arena - 1] = w[sizeof g_weights - 1];
  return (w[0] == 7 && g_arena[sizeof g_arena - 1] == 9) ? 0 : 3;
#elif defined(EXIT_PRINTF)
  printf("returning 5\n");
  return 5;
#elif defined(EXIT_QUIET)
  return 6;
#else
#error "faults.c: define FAULT, HANG, TOO_BIG, FULL_BOARD, EXIT_PRINTF or EXIT_QUIET"
#endif
}
