// See helium_vectors.h. Each int32x4 value of the grammar becomes one mtir_v4 helper
// call: an arm_mve.h intrinsic where the compiler has MVE (__ARM_FEATURE_MVE, Cortex-M55),
// a loop over a four-lane struct elsewhere, so the same C runs on the host and matches the
// interpreter lane for lane.
#include "codegen/c/helium_vectors.h"

#include "analysis/helium_vectors.h"
#include "ir/op.h"

namespace mtir::c_helpers {

const char* const kMultiplyByQuantizedMultiplierName = "mtir_mbqm";

// TFLite's MultiplyByQuantizedMultiplier, as builtins.def defines it.
const char* const kMultiplyByQuantizedMultiplierHelper = R"(static inline int32_t mtir_mbqm(int32_t x, int32_t m, int32_t s) {
  int32_t left = s > 0 ? (s < 30 ? s : 30) : 0, right = s < 0 ? (s > -31 ? -s : 31) : 0;
  int32_t a = (int32_t)((uint32_t)x << left);
  int32_t h = (a == INT32_MIN && m == INT32_MIN) ? INT32_MAX : (int32_t)(((int64_t)a * m + ((int64_t)1 << 30)) >> 31);
  int32_t mask = (int32_t)(((uint32_t)1 << right) - 1u);
  return (h >> right) + ((h & mask) > (mask >> 1) + (h < 0));
}
)";

namespace {

// On Helium: VQRDMULH is SaturatingRoundingDoublingHighMul; VRSHL by -right rounds half
// up, so negative values first take -1 (saturating) to round half away from zero as
// RoundingDivideByPOT does (INT32_MIN stays: it divides exactly).
const char* const kHeliumHelpers = R"(#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
typedef int32x4_t mtir_v4;
static inline mtir_v4 mtir_v4_load(const int32_t* p) { return vld1q_s32(p); }
static inline mtir_v4 mtir_v4_load_strided(const int32_t* p, uint32_t stride) {
  return vldrwq_gather_shifted_offset_s32(p, vmulq_n_u32(vidupq_n_u32(0, 1), stride));
}
static inline mtir_v4 mtir_v4_load_s8(const int8_t* p) { return vldrbq_s32(p); }
static inline mtir_v4 mtir_v4_load_s16(const int16_t* p) { return vldrhq_s32(p); }
static inline mtir_v4 mtir_v4_gather_s8(const int8_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  uint32x4_t o = vsetq_lane_u32(d, vsetq_lane_u32(c, vsetq_lane_u32(b, vdupq_n_u32(a), 1), 2), 3);
  return vldrbq_gather_offset_s32(p, o);
}
static inline mtir_v4 mtir_v4_shl(mtir_v4 a, int32_t n) { return vshlq_s32(a, vdupq_n_s32(n)); }
static inline mtir_v4 mtir_v4_sext8(mtir_v4 a) { return vshrq_n_s32(vshlq_n_s32(a, 24), 24); }
static inline mtir_v4 mtir_v4_dup(int32_t x) { return vdupq_n_s32(x); }
static inline mtir_v4 mtir_v4_add(mtir_v4 a, mtir_v4 b) { return vaddq_s32(a, b); }
static inline mtir_v4 mtir_v4_sub(mtir_v4 a, mtir_v4 b) { return vsubq_s32(a, b); }
static inline mtir_v4 mtir_v4_mul(mtir_v4 a, mtir_v4 b) { return vmulq_s32(a, b); }
static inline mtir_v4 mtir_v4_min(mtir_v4 a, mtir_v4 b) { return vminq_s32(a, b); }
static inline mtir_v4 mtir_v4_max(mtir_v4 a, mtir_v4 b) { return vmaxq_s32(a, b); }
static inline mtir_v4 mtir_v4_mbqm(mtir_v4 x, mtir_v4 m, mtir_v4 s) {
  mtir_v4 zero = vdupq_n_s32(0), right;
  s = vmaxq_s32(vminq_s32(s, vdupq_n_s32(30)), vdupq_n_s32(-31));  /* the interpreter's range */
  right = vminq_s32(s, zero);
  mtir_v4 h = vqrdmulhq_s32(vshlq_s32(x, vmaxq_s32(s, zero)), m);
  h = vqaddq_s32(h, vshrq_n_s32(vandq_s32(h, right), 31));
  return vrshlq_s32(h, right);
}
/* The shift min(-1 - b, 0) (the three-column table's r - 1 in b): right shifts only. */
static inline mtir_v4 mtir_v4_mbqm_rinc(mtir_v4 x, mtir_v4 m, mtir_v4 b) {
  mtir_v4 right = vmaxq_s32(vminq_s32(vmvnq_s32(b), vdupq_n_s32(0)), vdupq_n_s32(-31));
  mtir_v4 h = vqrdmulhq_s32(x, m);
  h = vqaddq_s32(h, vshrq_n_s32(vandq_s32(h, right), 31));
  return vrshlq_s32(h, right);
}
/* right in [1, 31]: negative lanes one lower first, so VRSHL's half up is away from zero. */
static inline mtir_v4 mtir_v4_mbqm_right(mtir_v4 x, int32_t m, int32_t right) {
  mtir_v4 h = vqrdmulhq_n_s32(x, m);
  return vrshlq_s32(vqaddq_s32(h, vshrq_n_s32(h, 31)), vdupq_n_s32(-right));
}
static inline mtir_v4 mtir_v4_gather(const int32_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  uint32x4_t o = vsetq_lane_u32(d, vsetq_lane_u32(c, vsetq_lane_u32(b, vdupq_n_u32(a), 1), 2), 3);
  return vldrwq_gather_shifted_offset_s32(p, o);
}
static inline mtir_v4 mtir_v4_lanes(int32_t a, int32_t b, int32_t c, int32_t d) {
  return vsetq_lane_s32(d, vsetq_lane_s32(c, vsetq_lane_s32(b, vdupq_n_s32(a), 1), 2), 3);
}
/* SaturatingRoundingDoublingHighMul: T.multiply_by_quantized_multiplier with shift 0. */
static inline mtir_v4 mtir_v4_srdhm(mtir_v4 x, mtir_v4 m) { return vqrdmulhq_s32(x, m); }
static inline mtir_v4 mtir_v4_shr(mtir_v4 a, mtir_v4 b) { return vshlq_s32(a, vnegq_s32(b)); }
/* a >> (b + 1): VSHL by ~b, which is -(b + 1). */
static inline mtir_v4 mtir_v4_shr_inc(mtir_v4 a, mtir_v4 b) { return vshlq_s32(a, vmvnq_s32(b)); }
/* min(max(v, -128), 127): a saturating shift to the top byte and back. */
static inline mtir_v4 mtir_v4_sat8(mtir_v4 v) { return vshrq_n_s32(vqshlq_n_s32(v, 24), 24); }
static inline void mtir_v4_store(int32_t* p, mtir_v4 v) { vst1q_s32(p, v); }
static inline void mtir_v4_store_s8(int8_t* p, mtir_v4 v) { vstrbq_s32(p, v); }
static inline void mtir_v4_scatter_s8(int8_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d, mtir_v4 v) {
  uint32x4_t o = vsetq_lane_u32(d, vsetq_lane_u32(c, vsetq_lane_u32(b, vdupq_n_u32(a), 1), 2), 3);
  vstrbq_scatter_offset_s32(p, o, v);
}
static inline void mtir_v16_copy(int8_t* dst, const int8_t* src) { vst1q_s8(dst, vld1q_s8(src)); }
static inline void mtir_v16_fill(int8_t* dst, int8_t x) { vst1q_s8(dst, vdupq_n_s8(x)); }
#else
typedef struct { int32_t v[4]; } mtir_v4;
/* Lanes written out at constant indices, not in a loop: GCC's alias walk over a loop's
   r.v[k] took a minute at -O2 on a depthwise kernel's few hundred vectors. */
#define MTIR_V4_LANE(K, expr) { const int k = K; (void)k; r.v[K] = (expr); }
#define MTIR_V4_LANES(expr) mtir_v4 r; MTIR_V4_LANE(0, expr) MTIR_V4_LANE(1, expr) MTIR_V4_LANE(2, expr) MTIR_V4_LANE(3, expr) return r
static inline mtir_v4 mtir_v4_load(const int32_t* p) { MTIR_V4_LANES(p[k]); }
static inline mtir_v4 mtir_v4_load_strided(const int32_t* p, uint32_t stride) { MTIR_V4_LANES(p[(uint32_t)k * stride]); }
static inline mtir_v4 mtir_v4_load_s8(const int8_t* p) { MTIR_V4_LANES(p[k]); }
static inline mtir_v4 mtir_v4_load_s16(const int16_t* p) { MTIR_V4_LANES(p[k]); }
static inline mtir_v4 mtir_v4_gather_s8(const int8_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  const uint32_t o[4] = {a, b, c, d};
  MTIR_V4_LANES(p[o[k]]);
}
static inline mtir_v4 mtir_v4_shl(mtir_v4 a, int32_t n) { MTIR_V4_LANES((int32_t)((uint32_t)a.v[k] << (n & 31))); }
static inline mtir_v4 mtir_v4_sext8(mtir_v4 a) { MTIR_V4_LANES((int32_t)(int8_t)a.v[k]); }
static inline mtir_v4 mtir_v4_dup(int32_t x) { MTIR_V4_LANES(x); }
static inline mtir_v4 mtir_v4_add(mtir_v4 a, mtir_v4 b) { MTIR_V4_LANES((int32_t)((uint32_t)a.v[k] + (uint32_t)b.v[k])); }
static inline mtir_v4 mtir_v4_sub(mtir_v4 a, mtir_v4 b) { MTIR_V4_LANES((int32_t)((uint32_t)a.v[k] - (uint32_t)b.v[k])); }
static inline mtir_v4 mtir_v4_mul(mtir_v4 a, mtir_v4 b) { MTIR_V4_LANES((int32_t)((uint32_t)a.v[k] * (uint32_t)b.v[k])); }
static inline mtir_v4 mtir_v4_min(mtir_v4 a, mtir_v4 b) { MTIR_V4_LANES(a.v[k] < b.v[k] ? a.v[k] : b.v[k]); }
static inline mtir_v4 mtir_v4_max(mtir_v4 a, mtir_v4 b) { MTIR_V4_LANES(a.v[k] > b.v[k] ? a.v[k] : b.v[k]); }
static inline mtir_v4 mtir_v4_mbqm(mtir_v4 x, mtir_v4 m, mtir_v4 s) { MTIR_V4_LANES(mtir_mbqm(x.v[k], m.v[k], s.v[k])); }
static inline mtir_v4 mtir_v4_mbqm_right(mtir_v4 x, int32_t m, int32_t right) { MTIR_V4_LANES(mtir_mbqm(x.v[k], m, -right)); }
static inline mtir_v4 mtir_v4_mbqm_rinc(mtir_v4 x, mtir_v4 m, mtir_v4 b) { MTIR_V4_LANES(mtir_mbqm(x.v[k], m.v[k], ~b.v[k] < 0 ? ~b.v[k] : 0)); }
static inline mtir_v4 mtir_v4_gather(const int32_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  const uint32_t o[4] = {a, b, c, d};
  MTIR_V4_LANES(p[o[k]]);
}
static inline mtir_v4 mtir_v4_lanes(int32_t a, int32_t b, int32_t c, int32_t d) {
  const int32_t x[4] = {a, b, c, d};
  MTIR_V4_LANES(x[k]);
}
static inline mtir_v4 mtir_v4_srdhm(mtir_v4 x, mtir_v4 m) { MTIR_V4_LANES(mtir_mbqm(x.v[k], m.v[k], 0)); }
static inline mtir_v4 mtir_v4_shr(mtir_v4 a, mtir_v4 b) { MTIR_V4_LANES(a.v[k] >> (b.v[k] & 31)); }
static inline mtir_v4 mtir_v4_shr_inc(mtir_v4 a, mtir_v4 b) { MTIR_V4_LANES(a.v[k] >> ((b.v[k] + 1) & 31)); }
static inline mtir_v4 mtir_v4_sat8(mtir_v4 v) { MTIR_V4_LANES(v.v[k] < -128 ? -128 : v.v[k] > 127 ? 127 : v.v[k]); }
#undef MTIR_V4_LANES
#undef MTIR_V4_LANE
static inline void mtir_v4_store(int32_t* p, mtir_v4 v) { int k; for (k = 0; k < 4; ++k) p[k] = v.v[k]; }
static inline void mtir_v4_store_s8(int8_t* p, mtir_v4 v) { int k; for (k = 0; k < 4; ++k) p[k] = (int8_t)v.v[k]; }
static inline void mtir_v4_scatter_s8(int8_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d, mtir_v4 v) {
  const uint32_t o[4] = {a, b, c, d};
  int k;
  for (k = 0; k < 4; ++k) p[o[k]] = (int8_t)v.v[k];
}
static inline void mtir_v16_copy(int8_t* dst, const int8_t* src) { int k; for (k = 0; k < 16; ++k) dst[k] = src[k]; }
static inline void mtir_v16_fill(int8_t* dst, int8_t x) { int k; for (k = 0; k < 16; ++k) dst[k] = x; }
#endif
)";

struct HeliumEmitter {
  const ScalarEmitter& scalar;
  const AddressEmitter& address;

  std::string first_address(const Expr& load_expr) const {
    const auto* load = static_cast<const BufferLoadNode*>(load_expr.get());
    const auto* ramp = static_cast<const RampNode*>(load->indices[0].get());
    return address(load->buffer, ramp->base, load->span);
  }

  static std::string offsets_list(const int64_t offsets[kHeliumLanes]) {
    std::string out;
    for (int k = 0; k < kHeliumLanes; ++k) out += std::to_string(offsets[k]) + "u, ";
    return out;
  }

  // The address of lane 0 of a gather or scatter.
  std::string lane0_address(const Buffer& buffer, const Expr& index, const Span& span) const {
    Expr base;
    int64_t offset = 0;
    helium_ramp_lane(index, 0, &base, &offset);
    return address(buffer, offset ? Binary(ExprKind::Add, base, IntImm(base->dtype, offset)) : base, span);
  }

  // min(max(v, lo), hi) with -128 <= lo and hi <= 127: its lanes are int8 values already.
  static bool in_int8_range(const Expr& e) {
    if (e->kind != ExprKind::Min) return false;
    const auto* op = static_cast<const BinaryNode*>(e.get());
    const auto* inner = op->a->kind == ExprKind::Max ? static_cast<const BinaryNode*>(op->a.get()) : nullptr;
    auto splat = [](const Expr& x) -> const int64_t* {
      return x->kind == ExprKind::Broadcast ? as_const_int(static_cast<const BroadcastNode*>(x.get())->value) : nullptr;
    };
    const int64_t *hi = splat(op->b), *lo = inner ? splat(inner->b) : nullptr;
    return hi && lo && *lo >= -128 && *hi <= 127;
  }

  static const int64_t* splat_value(const Expr& e) {
    return e->kind == ExprKind::Broadcast ? as_const_int(static_cast<const BroadcastNode*>(e.get())->value) : nullptr;
  }

  // b when e is min(-1 - b, 0).
  static const Expr* right_shift_of_column(const Expr& e) {
    if (e->kind != ExprKind::Min) return nullptr;
    const auto* mn = static_cast<const BinaryNode*>(e.get());
    if (!is_splat(mn->b, 0) || mn->a->kind != ExprKind::Sub) return nullptr;
    const auto* s = static_cast<const BinaryNode*>(mn->a.get());
    return is_splat(s->a, -1) ? &s->b : nullptr;
  }
  static bool is_splat(const Expr& e, int64_t value) {
    if (e->kind != ExprKind::Broadcast) return false;
    const int64_t* v = as_const_int(static_cast<const BroadcastNode*>(e.get())->value);
    return v && *v == value;
  }

  std::string vector(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::BufferLoad: {
        const int64_t stride = helium_load_stride(e);
        if (stride == 1) return "mtir_v4_load(" + first_address(e) + ")";
        if (stride > 1) return "mtir_v4_load_strided(" + first_address(e) + ", " + std::to_string(stride) + "u)";
        const auto* load = static_cast<const BufferLoadNode*>(e.get());
        int64_t offsets[kHeliumLanes];
        helium_lane_offsets(load->indices[0], offsets);
        std::string list = offsets_list(offsets);
        return "mtir_v4_gather(" + lane0_address(load->buffer, load->indices[0], load->span) + ", " +
               list.substr(0, list.size() - 2) + ")";
      }
      case ExprKind::Shuffle: {
        const auto* op = static_cast<const ShuffleNode*>(e.get());
        std::string out = "mtir_v4_lanes(";
        for (size_t k = 0; k < op->vectors.size(); ++k) out += (k ? ", " : "") + scalar(op->vectors[k]);
        return out + ")";
      }
      case ExprKind::Cast: {
        int64_t amount;
        if (const CallNode* shl = helium_shift_left(e, &amount))
          return "mtir_v4_shl(" + vector(static_cast<const CastNode*>(shl->args[0].get())->value) + ", " +
                 std::to_string(amount) + ")";
        if (const Expr* v = helium_narrowed_value(e))
          return in_int8_range(*v) ? vector(*v) : "mtir_v4_sext8(" + vector(*v) + ")";
        const BufferLoadNode* load = helium_widened_load(e);
        const Expr& value = static_cast<const CastNode*>(e.get())->value;
        if (helium_load_stride(value) != 1) {
          int64_t offsets[kHeliumLanes];
          helium_lane_offsets(load->indices[0], offsets);
          std::string list = offsets_list(offsets);
          return "mtir_v4_gather_s8(" + lane0_address(load->buffer, load->indices[0], load->span) + ", " +
                 list.substr(0, list.size() - 2) + ")";
        }
        const char* name = load->buffer->dtype.bits() == 8 ? "mtir_v4_load_s8(" : "mtir_v4_load_s16(";
        return name + first_address(value) + ")";
      }
      case ExprKind::Var: return scalar(e);  // a kept let's Q register
      case ExprKind::Broadcast: return "mtir_v4_dup(" + scalar(static_cast<const BroadcastNode*>(e.get())->value) + ")";
      case ExprKind::Call: {
        const auto* op = static_cast<const CallNode*>(e.get());
        if (op->is(Builtin::ShiftRight)) {
          // A shift by b + 1 (the three-column table's r - 1, plus one) is one VMVN.
          const Expr& b = op->args[1];
          const auto* inc = b->kind == ExprKind::Add ? static_cast<const BinaryNode*>(b.get()) : nullptr;
          if (inc && is_splat(inc->b, 1)) return "mtir_v4_shr_inc(" + vector(op->args[0]) + ", " + vector(inc->a) + ")";
          return "mtir_v4_shr(" + vector(op->args[0]) + ", " + vector(b) + ")";
        }
        if (is_splat(op->args[2], 0)) return "mtir_v4_srdhm(" + vector(op->args[0]) + ", " + vector(op->args[1]) + ")";
        // min(-1 - b, 0) (requantize_lanes' three-column table): right shifts only, one
        // VMVN for the negation, no left shift.
        if (const Expr* b = right_shift_of_column(op->args[2]))
          return "mtir_v4_mbqm_rinc(" + vector(op->args[0]) + ", " + vector(op->args[1]) + ", " + vector(*b) + ")";
        // A constant multiplier and right shift (a fused qadd's): VQRDMULH by a scalar and
        // the rounding shift, without the general helper's clamps of the shift.
        const int64_t* m = splat_value(op->args[1]);
        const int64_t* shift = splat_value(op->args[2]);
        if (m && shift && *shift < 0 && *shift >= -31)
          return "mtir_v4_mbqm_right(" + vector(op->args[0]) + ", " + std::to_string(*m) + ", " + std::to_string(-*shift) + ")";
        return "mtir_v4_mbqm(" + vector(op->args[0]) + ", " + vector(op->args[1]) + ", " + vector(op->args[2]) + ")";
      }
      case ExprKind::Min: {  // min(max(v, -128), 127): int8 saturation, no constant vectors
        const auto* op = static_cast<const BinaryNode*>(e.get());
        const auto* inner = op->a->kind == ExprKind::Max ? static_cast<const BinaryNode*>(op->a.get()) : nullptr;
        if (inner && is_splat(op->b, 127) && is_splat(inner->b, -128)) return "mtir_v4_sat8(" + vector(inner->a) + ")";
        break;
      }
      default: break;
    }
    const auto* op = static_cast<const BinaryNode*>(e.get());
    const char* name = e->kind == ExprKind::Add   ? "mtir_v4_add("
                       : e->kind == ExprKind::Sub ? "mtir_v4_sub("
                       : e->kind == ExprKind::Mul ? "mtir_v4_mul("
                       : e->kind == ExprKind::Min ? "mtir_v4_min("
                                                  : "mtir_v4_max(";
    return name + vector(op->a) + ", " + vector(op->b) + ")";
  }
};

void register_helpers(std::map<std::string, std::string>* helpers) {
  (*helpers)[kMultiplyByQuantizedMultiplierName] = kMultiplyByQuantizedMultiplierHelper;  // the fallback's lanes
  (*helpers)["mtir_v4"] = kHeliumHelpers;
}

}  // namespace

std::string helium_vector_value(const Expr& value, const ScalarEmitter& scalar, const AddressEmitter& address,
                                std::map<std::string, std::string>* helpers) {
  register_helpers(helpers);
  return HeliumEmitter{scalar, address}.vector(value);
}

std::string helium_store_statement(const BufferStoreNode* store, const ScalarEmitter& scalar,
                                   const AddressEmitter& address, std::map<std::string, std::string>* helpers) {
  register_helpers(helpers);
  HeliumEmitter h{scalar, address};
  int64_t offsets[kHeliumLanes];
  if (helium_scatter_store(store, offsets)) {
    const std::string list = HeliumEmitter::offsets_list(offsets);
    return "mtir_v4_scatter_s8(" + h.lane0_address(store->buffer, store->indices[0], store->span) + ", " + list +
           h.vector(static_cast<const CastNode*>(store->value.get())->value) + ");";
  }
  const auto* ramp = static_cast<const RampNode*>(store->indices[0].get());
  const std::string at = address(store->buffer, ramp->base, store->span);
  if (helium_byte_store(store)) {
    const Expr& v = store->value;
    if (v->kind == ExprKind::Broadcast) return "mtir_v16_fill(" + at + ", " + scalar(static_cast<const BroadcastNode*>(v.get())->value) + ");";
    return "mtir_v16_copy(" + at + ", " + h.first_address(v) + ");";
  }
  if (store->buffer->dtype.bits() == 8)
    return "mtir_v4_store_s8(" + at + ", " + h.vector(static_cast<const CastNode*>(store->value.get())->value) + ");";
  return "mtir_v4_store(" + at + ", " + h.vector(store->value) + ");";
}

}  // namespace mtir::c_helpers
