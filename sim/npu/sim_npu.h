/* A simulated NPU: the device library a model's placed operators call. C99, no heap.
 *
 * Each instance is one mtir_sim_npu the application owns and passes in
 * struct tvmgen_<model>_devices; every kernel and hook receives it as its last
 * argument (the resource handle) and checks that it is used in the documented order:
 * Activate once, then Open / kernel / Close for each call, then Deactivate. Kernels do
 * the real float32 arithmetic, count their calls and simulated cycles (a simple cost
 * model: 4 multiply-accumulates per cycle plus a fixed launch cost), and log every
 * call to one shared log so tests can compare the sequence. A test can make one hook
 * or kernel fail on its n-th call. */
#ifndef MTIR_SIM_NPU_H_
#define MTIR_SIM_NPU_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MTIR_SIM_NPU_LAUNCH_CYCLES 100u
#define MTIR_SIM_NPU_MACS_PER_CYCLE 4u
/* Returned for a call out of order (kernel outside Open/Close, Open before Activate...). */
#define MTIR_SIM_NPU_EBADSTATE (-0x4e50)

typedef struct mtir_sim_npu {
  char name[16];          /* the instance's name in the log, e.g. "npu0" */
  int32_t active, open;   /* between Activate/Deactivate, Open/Close */
  uint32_t activations, kernel_calls;
  uint64_t cycles, macs;
  /* Failure injection: the call named fail_what ("Activate", "Open", "Close",
   * "Deactivate", "conv2d", "dense") returns fail_code on its fail_at-th time (1-based). */
  const char* fail_what;
  uint32_t fail_at;
  int32_t fail_code;
  uint32_t seen;  /* calls of fail_what so far */
} mtir_sim_npu;

/* Sets up an instance with a name and no failure. */
void mtir_sim_npu_init(mtir_sim_npu* npu, const char* name);

/* The shared log: one line per hook or kernel call, "<instance> <what>\n". */
void mtir_sim_npu_log_reset(void);
const char* mtir_sim_npu_log(void);

int32_t TVMDeviceNpuActivate(void* context);
int32_t TVMDeviceNpuOpen(void* context);
int32_t TVMDeviceNpuClose(void* context);
int32_t TVMDeviceNpuDeactivate(void* context);

/* NCHW conv2d with OIHW weights and groups; `bias` is read only when has_bias. */
int32_t npu_conv2d(void* data, void* weight, void* bias, void* out, int32_t has_bias, int32_t n, int32_t c,
                   int32_t h, int32_t w, int32_t o, int32_t kh, int32_t kw, int32_t groups, int32_t sh, int32_t sw,
                   int32_t dh, int32_t dw, int32_t pt, int32_t pl, int32_t oh, int32_t ow, void* context);
/* out[b, j] = bias[j] + sum_k data[b, k] * weight[j, k] */
int32_t npu_dense(void* data, void* weight, void* bias, void* out, int32_t has_bias, int32_t batch,
                  int32_t in_features, int32_t out_features, void* context);

#ifdef __cplusplus
}
#endif
#endif
