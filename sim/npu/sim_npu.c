#include "sim_npu.h"

#include <string.h>

static char g_log[8192];
static size_t g_log_used;

void mtir_sim_npu_log_reset(void) {
  g_log_used = 0;
  g_log[0] = '\0';
}

const char* mtir_sim_npu_log(void) { return g_log; }

static void log_call(const mtir_sim_npu* npu, const char* what) {
  size_t a = strlen(npu->name), b = strlen(what);
  if (g_log_used + a + b + 3 > sizeof g_log) return; /* full: later lines are dropped */
  memcpy(g_log + g_log_used, npu->name, a);
  g_log[g_log_used + a] = ' ';
  memcpy(g_log + g_log_used + a + 1, what, b);
  g_log[g_log_used + a + 1 + b] = '\n';
  g_log_used += a + b + 2;
  g_log[g_log_used] = '\0';
}

void mtir_sim_npu_init(mtir_sim_npu* npu, const char* name) {
  size_t i;
  memset(npu, 0, sizeof *npu);
  for (i = 0; i + 1 < sizeof npu->name && name[i] != '\0'; ++i) npu->name[i] = name[i];
}

/* Logs the call and returns the injected failure code, or 0. */
static int32_t enter(mtir_sim_npu* npu, const char* what) {
  log_call(npu, what);
  if (npu->fail_what && strcmp(npu->fail_what, what) == 0 && ++npu->seen == npu->fail_at) return npu->fail_code;
  return 0;
}

int32_t TVMDeviceNpuActivate(void* context) {
  mtir_sim_npu* npu = (mtir_sim_npu*)context;
  int32_t rc;
  if (!npu) return MTIR_SIM_NPU_EBADSTATE;
  if ((rc = enter(npu, "Activate")) != 0) return rc;
  if (npu->active) return MTIR_SIM_NPU_EBADSTATE;
  npu->active = 1;
  npu->activations++;
  return 0;
}

int32_t TVMDeviceNpuOpen(void* context) {
  mtir_sim_npu* npu = (mtir_sim_npu*)context;
  int32_t rc;
  if (!npu) return MTIR_SIM_NPU_EBADSTATE;
  if ((rc = enter(npu, "Open")) != 0) return rc;
  if (!npu->active || npu->open) return MTIR_SIM_NPU_EBADSTATE;
  npu->open = 1;
  return 0;
}

int32_t TVMDeviceNpuClose(void* context) {
  mtir_sim_npu* npu = (mtir_sim_npu*)context;
  int32_t rc;
  if (!npu) return MTIR_SIM_NPU_EBADSTATE;
  if ((rc = enter(npu, "Close")) != 0) return rc;
  if (!npu->open) return MTIR_SIM_NPU_EBADSTATE;
  npu->open = 0;
  return 0;
}

int32_t TVMDeviceNpuDeactivate(void* context) {
  mtir_sim_npu* npu = (mtir_sim_npu*)context;
  int32_t rc;
  if (!npu) return MTIR_SIM_NPU_EBADSTATE;
  if ((rc = enter(npu, "Deactivate")) != 0) return rc;
  if (!npu->active || npu->open) return MTIR_SIM_NPU_EBADSTATE;
  npu->active = 0;
  return 0;
}

static int32_t start_kernel(mtir_sim_npu* npu, const char* what) {
  int32_t rc;
  if (!npu) return MTIR_SIM_NPU_EBADSTATE;
  if ((rc = enter(npu, what)) != 0) return rc;
  if (!npu->open) return MTIR_SIM_NPU_EBADSTATE;
  npu->kernel_calls++;
  return 0;
}

static void charge(mtir_sim_npu* npu, uint64_t macs) {
  npu->macs += macs;
  npu->cycles += MTIR_SIM_NPU_LAUNCH_CYCLES + (macs + MTIR_SIM_NPU_MACS_PER_CYCLE - 1) / MTIR_SIM_NPU_MACS_PER_CYCLE;
}

int32_t npu_conv2d(void* data, void* weight, void* bias, void* out, int32_t has_bias, int32_t n, int32_t c,
                   int32_t h, int32_t w, int32_t o, int32_t kh, int32_t kw, int32_t groups, int32_t sh, int32_t sw,
                   int32_t dh, int32_t dw, int32_t pt, int32_t pl, int32_t oh, int32_t ow, void* context) {
  mtir_sim_npu* npu = (mtir_sim_npu*)context;
  const float* x = (const float*)data;
  const float* k = (const float*)weight;
  const float* b = (const float*)bias;
  float* y = (float*)out;
  int32_t rc = start_kernel(npu, "conv2d");
  int32_t cg, og, bn, oc, yh, yw, ic, ry, rx;
  if (rc != 0) return rc;
  if (groups <= 0 || c % groups != 0 || o % groups != 0) return MTIR_SIM_NPU_EBADSTATE;
  cg = c / groups;
  og = o / groups;
  for (bn = 0; bn < n; ++bn)
    for (oc = 0; oc < o; ++oc)
      for (yh = 0; yh < oh; ++yh)
        for (yw = 0; yw < ow; ++yw) {
          float acc = has_bias ? b[oc] : 0.0f;
          for (ic = 0; ic < cg; ++ic)
            for (ry = 0; ry < kh; ++ry)
              for (rx = 0; rx < kw; ++rx) {
                int32_t iy = yh * sh + ry * dh - pt, ix = yw * sw + rx * dw - pl;
                int32_t channel = (oc / og) * cg + ic;
                float v = (iy >= 0 && iy < h && ix >= 0 && ix < w) ? x[((bn * c + channel) * h + iy) * w + ix] : 0.0f;
                acc = acc + v * k[((oc * cg + ic) * kh + ry) * kw + rx];
              }
          y[((bn * o + oc) * oh + yh) * ow + yw] = acc;
        }
  charge(npu, (uint64_t)n * (uint64_t)o * (uint64_t)oh * (uint64_t)ow * (uint64_t)cg * (uint64_t)kh * (uint64_t)kw);
  return 0;
}

int32_t npu_dense(void* data, void* weight, void* bias, void* out, int32_t has_bias, int32_t batch,
                  int32_t in_features, int32_t out_features, void* context) {
  mtir_sim_npu* npu = (mtir_sim_npu*)context;
  const float* x = (const float*)data;
  const float* k = (const float*)weight;
  const float* b = (const float*)bias;
  float* y = (float*)out;
  int32_t rc = start_kernel(npu, "dense");
  int32_t i, j, f;
  if (rc != 0) return rc;
  for (i = 0; i < batch; ++i)
    for (j = 0; j < out_features; ++j) {
      float acc = has_bias ? b[j] : 0.0f;
      for (f = 0; f < in_features; ++f) acc = acc + x[i * in_features + f] * k[j * in_features + f];
      y[i * out_features + j] = acc;
    }
  charge(npu, (uint64_t)batch * (uint64_t)out_features * (uint64_t)in_features);
  return 0;
}
