// The C backend's helper functions (Halide's CodeGen_C keeps its prologue the same way):
// texts emitted once each into a source that uses them, and the C type of a TIR type.
#include "codegen/c/c_helpers.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "support/diagnostic.h"

namespace mtir::c_helpers {

// C type of a scalar TIR type.
std::string c_type(DataType t, const Span& span) {
  if (t.is_bool()) return "bool";
  if (t.is_int()) return "int" + std::to_string(t.bits()) + "_t";
  if (t.is_uint()) return "uint" + std::to_string(t.bits()) + "_t";
  if (t.is_handle()) return "void*";
  if (t.is_float() && t.bits() == 32) return "float";
  if (t.is_float() && t.bits() == 64) return "double";
  user_error(span, "the C backend does not support " + t.str() + " values");
}

// The message of a failed check, formatted with up to three integers.
const char* const kSetErrorHelper = R"(static void mtir_set_error(const char* format, long long a, long long b, long long c) {
  char message[256];
  snprintf(message, sizeof message, format, a, b, c);
  TVMAPISetLastError(message);
}
)";

// Helpers of lowered packed calls, emitted once each when used.
const char* const kTensorInitHelper = R"(static inline int32_t mtir_tensor_init(DLTensor* t, void* data, int64_t* shape, int32_t ndim,
                                       int32_t code, int32_t bits) {
  t->data = data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = ndim;
  t->dtype.code = (uint8_t)code;
  t->dtype.bits = (uint8_t)bits;
  t->dtype.lanes = 1;
  t->shape = shape;
  t->strides = NULL;
  t->byte_offset = 0;
  return 0;
}
)";
// A function of the same file is called directly (the compiler may inline it); any
// other goes through the system library's registry.
const char* const kCallDirectHelper = R"(static inline int32_t mtir_call_packed(TVMBackendPackedCFunc f, TVMValue* values, int32_t* codes,
                                       int32_t n) {
  TVMValue ret;
  int32_t ret_code = 0;
  return f(values, codes, n, &ret, &ret_code, NULL);
}
)";
const char* const kCallByNameHelper = R"(static inline int32_t mtir_call_packed_by_name(const char* name, TVMValue* values, int32_t* codes,
                                               int32_t n) {
  TVMFunctionHandle f = NULL;
  TVMValue ret;
  int ret_code = 0;
  if (TVMFuncGetGlobal(name, &f) != 0) return -1;
  return TVMFuncCall(f, values, (int*)codes, n, &ret, &ret_code);
}
)";

// Operator profiling: every operator call of the AOT main sits between
// TVMGEN_PROFILE_BEGIN(index, "kernel") and TVMGEN_PROFILE_END(index), which cost
// nothing unless the application defines them before this file (e.g. with -include);
// `microtir run --profile-layers` does, to count each operator's instructions.
const char* const kProfileHooks = R"(#ifndef TVMGEN_PROFILE_BEGIN
#define TVMGEN_PROFILE_BEGIN(index, name) ((void)0)
#endif
#ifndef TVMGEN_PROFILE_END
#define TVMGEN_PROFILE_END(index) ((void)0)
#endif
)";

// The DSP extension's SMLAD where the compiler says it has it (ACLE), the same
// arithmetic elsewhere, wrapping through uint32_t as the instruction does.
const char* const kSmladHelper = R"(#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif
static inline int32_t mtir_smlad(int32_t a, int32_t b, int32_t acc) {
#if defined(__ARM_FEATURE_DSP)
  return __smlad(a, b, acc);
#else
  uint32_t lo = (uint32_t)((int32_t)(int16_t)(uint16_t)(uint32_t)a * (int32_t)(int16_t)(uint16_t)(uint32_t)b);
  uint32_t hi = (uint32_t)((int32_t)(int16_t)(uint16_t)((uint32_t)a >> 16) * (int32_t)(int16_t)(uint16_t)((uint32_t)b >> 16));
  return (int32_t)((uint32_t)acc + lo + hi);
#endif
}
)";

// A file with Helium kernels: GCC's instruction scheduling before register allocation
// (on at -O2 for Arm) hoists their 128-bit loads ahead of use and so spills the eight Q
// registers to the stack; off for this file where GCC compiles it for MVE (-17% of KWS's
// instructions on the Cortex-M55, bench/report.md). So is temporary expression
// replacement, which moves every load of a kernel whose int32x4 sums are lets (the
// depthwise tiles) ahead of its arithmetic and spills the Q registers just as well (KWS's
// depthwise layers 179,147 -> 111,513 instructions each; with RTL loop-invariant motion
// off too, 110,138, but its first convolution +13,312). Other compilers and CPUs see
// nothing.
const char* const kHeliumSchedulingPragma = R"(#if defined(__ARM_FEATURE_MVE) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns", "no-tree-ter")
#endif
)";

// A file with SMLAD kernels (schedule dsp_no_early_scheduling): the same scheduling off
// where GCC compiles for a DSP core without MVE (Cortex-M4, M7, M33). Scheduled before
// register allocation, the 3x2 and 2x2 tiles' loads move ahead of their uses and the
// six accumulators, the widened weights and the gathered words no longer fit the 14
// registers: GCC spills accumulators and loads weight words twice (bench/report.md).
const char* const kDspSchedulingPragma =
    R"(#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_FEATURE_MVE) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif
)";

// With a residual add in schedule smmlar_add's form fused into a convolution: GCC's
// regional allocator, at the 14 registers of the 3x2 tile, keeps a value of the code
// around the loop in a register and spills a tile accumulator in every pass (IC's first
// residual convolution: 19 stack accesses a pass, +154,330 instructions); one region
// for the whole function does not (IC 15,850,178 -> 15,561,753 instructions; as a rule
// for every file it costs KWS +1.6 % and VWW +0.9 %, bench/report.md).
const char* const kDspOneRegionPragma =
    R"(#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_FEATURE_MVE) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("ira-region=one")
#endif
)";

// VMLADAVA over n contiguous lanes (builtins.def's vmladava): one Helium instruction
// where the compiler has MVE (n below the full width tail-predicated with VCTP, so the
// lanes past n are neither read nor added), a loop elsewhere, wrapping through uint32_t.
const char* const kVmladavaHelper = R"(#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif
static inline int32_t mtir_vmladava_s8(int32_t acc, const int8_t* a, const int8_t* b, int32_t n) {
#if defined(__ARM_FEATURE_MVE)
  if (n >= 16) return vmladavaq_s8(acc, vld1q_s8(a), vld1q_s8(b));
  mve_pred16_t p = vctp8q((uint32_t)n);
  return vmladavaq_p_s8(acc, vld1q_z_s8(a, p), vld1q_z_s8(b, p), p);
#else
  uint32_t sum = (uint32_t)acc;
  for (int32_t i = 0; i < n; ++i) sum += (uint32_t)((int32_t)a[i] * (int32_t)b[i]);
  return (int32_t)sum;
#endif
}
static inline int32_t mtir_vmladava_s16(int32_t acc, const int16_t* a, const int16_t* b, int32_t n) {
#if defined(__ARM_FEATURE_MVE)
  if (n >= 8) return vmladavaq_s16(acc, vld1q_s16(a), vld1q_s16(b));
  mve_pred16_t p = vctp16q((uint32_t)n);
  return vmladavaq_p_s16(acc, vld1q_z_s16(a, p), vld1q_z_s16(b, p), p);
#else
  uint32_t sum = (uint32_t)acc;
  for (int32_t i = 0; i < n; ++i) sum += (uint32_t)((int32_t)a[i] * (int32_t)b[i]);
  return (int32_t)sum;
#endif
}
)";

// SMLABB likewise: acc + lo16(a) * lo16(b). A call GCC does not look into, so it keeps
// the accumulation chain in the order written (see builtins.def).
const char* const kSmlabbHelper = R"(#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif
static inline int32_t mtir_smlabb(int32_t a, int32_t b, int32_t acc) {
#if defined(__ARM_FEATURE_DSP)
  return __smlabb(a, b, acc);
#else
  return (int32_t)((uint32_t)acc + (uint32_t)((int32_t)(int16_t)(uint16_t)(uint32_t)a * (int32_t)(int16_t)(uint16_t)(uint32_t)b));
#endif
}
)";

// SMMLAR: the high word of acc * 2^32 + a * b + 2^31 (rounded most significant word
// multiply-accumulate). ACLE has no intrinsic for it, and GCC forms a MOV and an SMLAL
// from the C expression: one instruction of inline assembly where the DSP exists.
const char* const kSmmlarHelper = R"(static inline int32_t mtir_smmlar(int32_t a, int32_t b, int32_t acc) {
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
  int32_t r;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
#else
  uint64_t sum = ((uint64_t)(uint32_t)acc << 32) + (uint64_t)((int64_t)a * (int64_t)b) + UINT64_C(0x80000000);
  return (int32_t)(uint32_t)(sum >> 32);
#endif
}
)";

// SXTB16 (plain and with ROR #8) where the DSP extension exists, shifts and masks
// elsewhere; (v ^ 0x80) - 0x80 sign-extends a byte without implementation-defined casts.
const char* const kSxtb16Helper = R"(#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif
static inline int32_t mtir_sxtb16_portable(uint32_t x) {
  uint32_t lo = (uint32_t)(((int32_t)(x & 0xffu) ^ 0x80) - 0x80) & 0xffffu;
  uint32_t hi = (uint32_t)(((int32_t)((x >> 16) & 0xffu) ^ 0x80) - 0x80);
  return (int32_t)(lo | (hi << 16));
}
static inline int32_t mtir_sxtb16(int32_t x) {
#if defined(__ARM_FEATURE_DSP)
  return (int32_t)__sxtb16((uint32_t)x);
#else
  return mtir_sxtb16_portable((uint32_t)x);
#endif
}
static inline int32_t mtir_sxtb16_ror8(int32_t x) {
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
  uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"((uint32_t)x));
  return (int32_t)r;
#else
  return mtir_sxtb16_portable((uint32_t)x >> 8);
#endif
}
)";

// pack_bytes of four consecutive int8 elements: one word read through memcpy (any
// alignment; one LDR on Cortex-M, whose loads may be unaligned). Bytes in memory order
// are the word's bytes 0..3 on a little-endian target; elsewhere they are assembled.
const char* const kReadWordHelper = R"(#include <string.h>
static inline int32_t mtir_read_word(const void* p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint32_t w;
  memcpy(&w, p, 4);
  return (int32_t)w;
#else
  const uint8_t* b = (const uint8_t*)p;
  return (int32_t)((uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24));
#endif
}
)";

// word_pair(A[i], A[i + 1]) of int32 words: one LDRD where GCC compiles for a DSP core (GCC
// loads a word used once by its own LDR next to its use and splits an int64 load in two);
// the may_alias type keeps it ordered after int32 stores to the same words. Two outputs,
// not one int64: Thumb-2's LDRD takes any two registers, an int64 operand an even/odd
// pair, which cost the full 3x2 tile of a short convolution 6 spill instructions (IC
// conv2d_5: 122 -> 116 a tile). The two loads elsewhere.
const char* const kWordPairHelper = R"(static inline int64_t mtir_word_pair(const int32_t* p) {
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__) && !defined(__clang__)
  typedef int64_t __attribute__((__may_alias__, __aligned__(4))) mtir_pair_t;
  uint32_t lo, hi;
  __asm__("ldrd %0, %1, %2" : "=r"(lo), "=r"(hi) : "m"(*(const mtir_pair_t*)p));
  return (int64_t)((uint64_t)lo | ((uint64_t)hi << 32));
#else
  return (int64_t)((uint64_t)(uint32_t)p[0] | ((uint64_t)(uint32_t)p[1] << 32));
#endif
}
)";

// (lo & 0xffff) | (hi << 16) of uint32 values: one PKHBT where GCC compiles for a DSP core
// (GCC has no pattern for it and emits UXTH and ORR: two instructions a gathered int16 pair
// of an im2col column). The two operations elsewhere.
const char* const kPackHalvesHelper = R"(static inline uint32_t mtir_pack_halves(uint32_t lo, uint32_t hi) {
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__) && !defined(__clang__)
  uint32_t r;
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
  return r;
#else
  return (lo & 65535U) | (hi << 16U);
#endif
}
)";

// pack_bytes of any four values: their low bytes, or-ed into place.
const char* const kPackBytesHelper = R"(static inline int32_t mtir_pack_bytes(int32_t a, int32_t b, int32_t c, int32_t d) {
  return (int32_t)(((uint32_t)a & 0xffu) | (((uint32_t)b & 0xffu) << 8) | (((uint32_t)c & 0xffu) << 16) | ((uint32_t)d << 24));
}
)";

// Helper functions the generated code may need, emitted once each when used.
// Leading zero bits in portable C99 (compiler builtins are undefined for zero).
std::string clz_helper(const std::string& name, const std::string& ut, int bits) {
  return "static inline int32_t " + name + "(" + ut + " x) {\n  int32_t n = " + std::to_string(bits) +
         ";\n  while (x != 0) {\n    x >>= 1;\n    --n;\n  }\n  return n;\n}\n";
}

// x clamped to [-2^(bits-1), 2^(bits-1) - 1]: ACLE's __ssat (one SSAT) where the CPU has
// the saturation instructions, compares elsewhere.
std::string ssat_helper(const std::string& name, int bits) {
  const std::string lo = "(-" + std::to_string(int64_t{1} << (bits - 1)) + ")";
  const std::string hi = std::to_string((int64_t{1} << (bits - 1)) - 1);
  return "#if defined(__ARM_FEATURE_SAT)\n#include <arm_acle.h>\n"
         "static inline int32_t " + name + "(int32_t x) { return __ssat(x, " + std::to_string(bits) + "); }\n"
         "#else\nstatic inline int32_t " + name + "(int32_t x) { return x < " + lo + " ? " + lo + " : x > " + hi +
         " ? " + hi + " : x; }\n#endif\n";
}

std::string helper_definition(const std::string& name, DataType t) {
  std::string ct = c_type(t, {});
  std::ostringstream os;
  if (name.rfind("mtir_abs", 0) == 0) {
    // Negating through the unsigned type wraps INT_MIN as the interpreter does.
    std::string ut = t.bits() <= 32 ? "uint32_t" : "uint64_t";
    os << "static inline " << ct << " " << name << "(" << ct << " a) {\n"
       << "  return a < 0 ? (" << ct << ")(0u - (" << ut << ")a) : a;\n}\n";
    return os.str();
  }
  os << "static inline " << ct << " " << name << "(" << ct << " a, " << ct << " b) {\n";
  // Dividing the most negative value by -1 overflows in C; TIR wraps it (as the
  // interpreter does), so -1 is handled before the division.
  std::string ut = t.bits() <= 32 ? "uint32_t" : "uint64_t";
  std::string negate = "(" + ct + ")(0u - (" + ut + ")a)";
  if (name.rfind("mtir_div", 0) == 0) {
    os << "  return b == -1 ? " << negate << " : (" << ct << ")(a / b);\n";
  } else if (name.rfind("mtir_mod", 0) == 0) {
    os << "  return b == -1 ? 0 : (" << ct << ")(a % b);\n";
  } else if (name.rfind("mtir_floordiv", 0) == 0) {
    os << "  " << ct << " q;\n  if (b == -1) return " << negate << ";\n  q = (" << ct << ")(a / b);\n"
       << "  return (" << ct << ")((q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q);\n";
  } else if (name.rfind("mtir_floormod", 0) == 0) {
    os << "  " << ct << " r;\n  if (b == -1) return 0;\n  r = (" << ct << ")(a % b);\n"
       << "  return (" << ct << ")((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);\n";
  } else if (name.rfind("mtir_min", 0) == 0) {
    os << "  return a < b ? a : b;\n";
  } else {
    os << "  return a > b ? a : b;\n";
  }
  os << "}\n";
  return os.str();
}

std::string c_string_literal(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);  // octal: cannot swallow following digits
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool is_reserved_c_word(const std::string& s) {
  static const std::set<std::string> keywords = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
      "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
      "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
      "volatile", "while", "bool", "true", "false", "main", "NULL", "INFINITY", "NAN"};
  return keywords.count(s) > 0;
}

}  // namespace mtir::c_helpers
