/* The host has no deterministic instruction counter (wall time is noisy): a firmware
 * main reports "not available" when MTIR_COUNTER_UNIT is undefined. */
#ifndef MICROTIR_HOST_INSTRUCTION_COUNTER_H_
#define MICROTIR_HOST_INSTRUCTION_COUNTER_H_
#endif /* MICROTIR_HOST_INSTRUCTION_COUNTER_H_ */
