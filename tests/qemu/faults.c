/* Programs that go wrong on purpose, to check that each failure ends the run with a
 * clear message instead of a hang: -DFAULT reads an unmapped address, -DHANG spins
 * forever, -DTOO_BIG needs more RAM than the board has. */
#include <stdint.h>
#include <stdio.h>

#include "instruction_counter.h"

#if defined(TOO_BIG)
static volatile uint8_t g_big[8u << 20];
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
#else
#error "faults.c: define FAULT, HANG or TOO_BIG"
#endif
}
