/* wasm32 has no instruction counter: V8 exposes none, and wall time is noisy. The
 * firmware main reports "not available" when MTIR_COUNTER_UNIT is undefined. */
#ifndef MICROTIR_WASM32_INSTRUCTION_COUNTER_H_
#define MICROTIR_WASM32_INSTRUCTION_COUNTER_H_
#endif /* MICROTIR_WASM32_INSTRUCTION_COUNTER_H_ */
