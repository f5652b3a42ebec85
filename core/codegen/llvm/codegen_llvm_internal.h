// Private to the LLVM backend (codegen_llvm.cc, codegen_cpu.cc, intrin_rule_llvm.cc):
// the module state and the function emitter they share, as TVM splits CodeGenLLVM,
// CodeGenCPU (the packed API and the CRT calling convention) and intrin_rule_llvm.
#pragma once

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include "analysis/int_bound.h"
#include "codegen/emit_common.h"
#include "codegen/line_marks.h"
#include "ir/op.h"
#include "ir/tvm_intrinsics.h"
#include "ir/visitor.h"
#include "support/names.h"
#include "codegen/llvm/codegen_llvm.h"

namespace mtir::llvm_backend {


// An SSA value or constant with its LLVM type: {"i32", "%t4"}, {"float", "0x3FF0..."}.
struct Val {
  std::string ty;
  std::string v;
  std::string typed() const { return ty + " " + v; }
};

// Register type of a TIR type; bool is i1 in registers and i8 in memory. A vector
// type is an LLVM vector of its lanes.
inline std::string ll_type(DataType t, const Span& span) {
  if (t.is_vector()) return "<" + std::to_string(t.lanes()) + " x " + ll_type(t.element_of(), span) + ">";
  if (t.is_bool()) return "i1";
  if (t.is_integer()) return "i" + std::to_string(t.bits());
  if (t.is_handle()) return "i8*";
  if (t.is_float() && t.bits() == 32) return "float";
  if (t.is_float() && t.bits() == 64) return "double";
  user_error(span, "the LLVM backend does not support " + t.str() + " values");
}
inline std::string mem_type(DataType t, const Span& span) { return t.is_bool() ? "i8" : ll_type(t, span); }
inline int natural_align(DataType t, int pointer_bits) {
  if (t.is_handle()) return pointer_bits / 8;
  return t.is_bool() ? 1 : t.bytes();
}

// Parameter attributes the C ABI gives narrow integers (clang marks them the same way).
inline std::string ext_attr(DataType t) {
  if (t.is_bool() || (t.is_uint() && t.bits() < 32)) return " zeroext";
  if (t.is_int() && t.bits() < 32) return " signext";
  return "";
}

inline std::string hex_double(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIX64, bits);
  return buf;
}

// The runtime's types. TVMValue is an 8-byte union: accessed through casts of its address.
inline const char* const kTypes =
    "%DLDevice = type { i32, i32 }\n"
    "%DLDataType = type { i8, i8, i16 }\n"
    "%DLTensor = type { i8*, %DLDevice, i32, %DLDataType, i64*, i64*, i64 }\n"
    "%TVMValue = type { i64 }\n";

// The SMLADs in `body` (twelve a reduction step of a 3x2 tile, eight of a 2x2 tile).
int smlad_count(const Stmt& body);

// State shared by the functions of one module: declarations, helpers, string constants.
struct ModuleState {
  const LlvmTargetInfo* target = nullptr;
  bool arm_dsp = false;                                 // an Arm CPU with the DSP extension
  bool profile_hooks = false;                           // LlvmCodegenOptions::profile_hooks
  int profile_points = 0;                               // operator calls bracketed so far
  std::string attr_group;                               // "#0"
  std::map<std::string, std::string> declares;          // symbol -> declare line
  std::map<std::string, std::string> helpers;           // symbol -> definition
  std::map<std::string, std::string> strings;           // value -> global name
  std::vector<std::string> globals;                     // global definitions, in order
  std::map<std::string, PrimFunc> module_functions;     // symbol -> function
  std::set<std::string> defined;                        // the module functions defined in this file
  std::vector<std::string> metadata;                    // "!N = ..." lines
  bool mark_lines = false;                              // end lines with their source line

  // A distinct loop-metadata node carrying `hint` (e.g. "llvm.loop.unroll.full"), with
  // `operand` if any ("i32 2" for llvm.loop.unroll.count).
  std::string loop_metadata(const std::string& hint, std::string operand = "") {
    if (operand.empty() && hint == "llvm.loop.vectorize.enable") operand = "i1 true";
    std::string self = "!" + std::to_string(metadata.size());
    std::string property = "!" + std::to_string(metadata.size() + 1);
    metadata.push_back(self + " = distinct !{" + self + ", " + property + "}");
    metadata.push_back(property + " = !{!\"" + hint + "\"" + (operand.empty() ? "" : ", " + operand) + "}");
    return self;
  }

  Val string_constant(const std::string& s) {
    auto it = strings.find(s);
    std::string name;
    if (it != strings.end()) {
      name = it->second;
    } else {
      name = "@.str." + std::to_string(strings.size());
      strings[s] = name;
      globals.push_back(name + " = private unnamed_addr constant [" + std::to_string(s.size() + 1) + " x i8] " +
                        llvm_c_string(s) + ", align 1");
    }
    std::string arr = "[" + std::to_string(s.size() + 1) + " x i8]";
    return {"i8*", "getelementptr inbounds (" + arr + ", " + arr + "* " + name + ", i32 0, i32 0)"};
  }

  void declare(const std::string& symbol, const std::string& line) { declares.emplace(symbol, line); }
};

// Emits one PrimFunc: SSA values for expressions, basic blocks for control flow, allocas
// in the entry block. TIR variables map to the SSA values bound to them.
struct WordLoads;  // paired_loads.cc

class FunctionEmitter {
 public:
  FunctionEmitter(ModuleState* ms, std::string symbol, PrimFunc func)
      : ms_(ms), symbol_(std::move(symbol)), func_(std::move(func)) {}

  // "define ... { ... }" under `name` with `linkage` ("" or "internal ").
  std::string define(const std::string& name, const std::string& linkage);

  // The parameter list, with names (for a definition) or without (a declaration).
  std::string signature_params(bool with_names);

 private:
  // The alignment promised for pointer parameter `p` beyond its element's: the buffer's
  // own, or the smallest of the views declared on it (T.decl_buffer(..., align=N)).
  int declared_align(const Var& p, const Buffer& b) const;

  // ---- names and blocks ---------------------------------------------------------
  std::string local_name(const std::string& hint);
  std::string tmp() { return "%.t" + std::to_string(next_tmp_++); }
  std::string label(const std::string& hint) { return hint + "." + std::to_string(next_label_++); }
  void inst(const std::string& s) { *out_ << "  " << s << line_mark(ms_->mark_lines, source_line_) << "\n"; }
  Val op(const std::string& ty, const std::string& text);
  void begin_block(const std::string& l);
  void br(const std::string& l) { inst("br label %" + l); }
  void cond_br(const Val& c, const std::string& t, const std::string& f);
  // An alloca in the entry block, so it is allocated once however often its code runs.
  std::string entry_alloca(const std::string& ty, int64_t count, int align, const std::string& hint);

  std::string user_name() const { return user_function_name(func_, symbol_); }

  // ---- conversions ----------------------------------------------------------------
  Val cast(const Val& v, DataType from, DataType to, const Span& span);
  // An integer value of any width as `ty` (sign-extending signed types).
  Val as_int(const Val& v, DataType from, const std::string& ty);

  // ---- memory -----------------------------------------------------------------------
  Val handle(const Buffer& b, const Span& span);
  Val elem_ptr(const Buffer& b, const std::vector<Expr>& indices, const Span& span);
  Val load(const BufferLoadNode* l);
  void store(const BufferStoreNode* s);

  // A field of a DLTensor given as i8*.
  Val tensor_field(const Val& t, const std::string& path, const std::string& ty);
  Val load_ty(const std::string& ty, const Val& p, int align);
  // Element `i` of an array of `ty` at handle `base`.
  Val array_elem(const Val& base, const std::string& ty, const Val& i);
  // The member of type `ty` of TVMValue `i` of the array at `base`.
  Val value_member(const Val& base, const Val& i, const std::string& ty);

  // ---- expressions ------------------------------------------------------------------
  Val int_const(DataType t, int64_t v);
  Val float_const(DataType t, double v, const Span& span);

  Val binary(const char* int_op, const char* float_op, const BinaryNode* e);
  // + - * wrap in TIR; where the integer bounds prove they cannot, nsw/nuw tell LLVM so
  // (as plain signed arithmetic tells a C compiler), which lets it widen indices.
  Val arith(const char* int_op, const char* float_op, const Expr& self);

  Val compare(ExprKind k, const BinaryNode* e);
  Val min_max(bool min, const BinaryNode* e);

  // Integer / % floordiv floormod with no undefined case: a zero divisor (which the
  // interpreter refuses) divides by 1 instead, and MIN / -1 wraps to MIN as in C's
  // helpers. Guards are left out where the bounds prove them unnecessary.
  Val int_division(ExprKind k, const BinaryNode* e);

  Val intrinsic(const std::string& name, const std::string& ty, const std::vector<Val>& args);

  Val math_call(const CallNode* c);
  // The DSP SMLAD and Helium VMLADAVA builtins (builtins.def); vmladava() also takes
  // multiply_by_quantized_multiplier.
  Val smlad(const CallNode* c);
  // smmlar(a, b, acc): the high word of acc * 2^32 + a * b + 2^31 in 64-bit steps, which
  // the ARM backend selects as one SMMLAR when the operands are registers. With a constant
  // operand (IC's residual adds: smmlar(v * 2^21, M, 2)) InstCombine folds the constant
  // into the 64-bit sum, or multiplies by it with UMULL and MLA, and no SMMLAR forms (IC's
  // residual epilogues about 8 instructions an output more than GCC's): there, on Arm DSP
  // cores, it is the instruction through inline assembly (readnone), as in the C helper,
  // and its constants reach it as register values (an empty asm each) that LICM hoists.
  Val smmlar(const CallNode* c);
  Val vmladava(const CallNode* c);
  // word_pair(lo, hi) as zext, shl and or (LLVM pairs adjacent loads itself).
  Val word_pair(const CallNode* c);
  // The builtins that assemble a word from loads: pack_bytes and word_pair.
  Val word_builtin(const CallNode* c) { return c->is(Builtin::PackBytes) ? pack_bytes(c) : word_pair(c); }
  // TFLite's MultiplyByQuantizedMultiplier lane by lane (builtins.def), int32 or <n x i32>.
  Val multiply_by_quantized_multiplier(const CallNode* c);

  // `(int32)(q >> 32) >> 31` on Cortex-M: the sign of a 64-bit value's high word (the
  // requantization's rounding correction). LLVM folds it into a 64-bit compare of q (of
  // the product, before the rounding term is added), which Thumb does with SUBS/SBCS and
  // the product computed twice; `freeze` on the high word stops that fold, so the sign
  // stays one ASR of a register, as GCC emits it (KWS: 3 to 4 instructions per output).
  bool is_sign_of_high_word(const CallNode* c) const;

  // On Arm DSP cores, int64(x) * C for an int32 x and a constant C of more than 16 bits
  // (a requantization multiplier), with C passed through an empty asm: LLVM 14's ARM
  // backend multiplies by the constant with UMULL, MUL and MLA and computes the product
  // again for the sign of its high word; as a register value it is one SMULL (SMLAL with
  // the rounding term), as GCC emits it (AD's output layer 131,510 -> 125,119
  // instructions). nullopt for any other product. `mul` is "mul" or "mul nsw".
  std::optional<Val> widened_product(const BinaryNode* e, const std::string& mul);

  // Shifts and bitwise operators in the operands' type. A non-constant shift amount is
  // masked into [0, bits) (LLVM makes a larger one poison; the interpreter refuses it).
  Val int_binary(const CallNode* c);

  Val extern_call(const CallNode* c);

  // `value` (a statement's call or let value), between the profiling hooks when it calls
  // another function of the module and the module has them (profile_hooks).
  Val profiled(const Expr& value);
  // The name the hooks give a call of a module function ("" for any other value): the
  // kernel it calls, or with merge_kernels the one the shared kernel stands for.
  std::string module_callee(const Expr& value) const;

  // Lazy forms: only the branch that is taken is evaluated (a && b guards b's loads).
  Val short_circuit(bool is_and, const Expr& ea, const Expr& eb);
  Val if_then_else(const CallNode* c);

  // Every builtin of ir/builtins.def, by a switch without a default: a new row does not
  // compile until it has its case here.
  Val call_expr(const CallNode* c);

  Val handle_is_aligned(const CallNode* c);

  Val tensor_init(const CallNode* c);

  Val sxtb16(Val x, bool ror8);
  Val pack_bytes(const CallNode* c);

  // A packed function of this module is called directly (LLVM may inline its checks);
  // any other is looked up in the system library's registry.
  Val call_packed(const CallNode* c);

  void use_call_by_name_helper();

  // ---- vectors ----------------------------------------------------------------------
  // Vector code is emitted as LLVM vectors: Ramp, Broadcast and Shuffle as
  // insertelement/shufflevector, contiguous loads and stores (a Ramp with stride 1) as
  // one vector access, + - * / min max, comparisons, selects and numeric casts as vector
  // instructions. The rest (integer division, calls, logic) runs lane by lane on
  // extracted scalars and is put back together, which LLVM may vectorize again.
  Val splat(const Val& scalar, int lanes);
  Val extract(const Val& v, int k, const std::string& elem_ty);
  Val insert(const Val& v, const Val& x, int k);
  static std::string lane_list(const std::vector<int>& lanes);

  Val ramp(const RampNode* r);

  Val shuffle(const ShuffleNode* s);

  // `e` (a vector node of one of the kinds below) computed lane by lane: each operand
  // lane is bound to a scalar variable and the scalar node is emitted as usual.
  Val lanewise(const Expr& e);

  // The vector kinds with a native form; nullopt for the lane-by-lane rest.
  bool native_vector(const Expr& e) const;
  bool is_vqrdmulh(const CallNode* c) const;  // intrin_rule_llvm.cc
  Val helium_multiply_by_quantized_multiplier(const CallNode* c);

  // A load or store of lanes: contiguous (stride-1 Ramp index, non-bool) is one vector
  // access at the element alignment; anything else goes element by element.
  const RampNode* contiguous(const Buffer& b, const std::vector<Expr>& indices);
  Val vector_load(const BufferLoadNode* l);
  void vector_store(const BufferStoreNode* s);

  Val expr(const Expr& e);

  // ---- paired word loads (paired_loads.cc) -------------------------------------------
  // Pairs of adjacent int32 loads in straight-line code (`region`: stores, lists of them,
  // lets) that load() emits as one LDRD on Arm DSP cores; paired_load() is the value of
  // `l` when it is one of them. True when some pairs were found (the plan holds until the
  // region is emitted).
  bool plan_paired_loads(const Stmt& region);
  bool straight_line_words(const Stmt& s, WordLoads& found) const;
  std::optional<Val> paired_load(const BufferLoadNode* l);
  // word_pair(A[i], A[i + 1]) of int32 words on Arm DSP cores: one `load volatile i64`
  // (LDRD), as the C backend loads it; nullopt for other operands.
  std::optional<Val> adjacent_word_pair(const CallNode* c);
  // Whether word_pair reads adjacent words of allocation `data` in `body` (DSP cores).
  bool read_by_word_pairs(const Stmt& body, const VarNode* data) const;
  // The alloca of local allocation `b` (`count` int32 words) that word_pair reads, noted in
  // word_pair_buffers_: one word longer, the words from its second on (an i32* to them).
  std::string word_pair_alloca(const Buffer& b, int64_t count, int align);
  // Whether `loop`'s body is straight-line code (no loop, no branch) that stores into a
  // word_pair_buffers_ allocation at indices that change with it: a tile's column fill.
  bool fills_word_pair_buffer(const ForNode* loop) const;
  struct PairedLoad {
    std::vector<const BufferLoadNode*> lo_loads, hi_loads;  // the loads of the lower and the upper word
    Expr index;                                             // of the lower word, as base + constant
    Val lo, hi;                                             // once loaded
  };
  std::vector<PairedLoad> paired_loads_;
  std::set<const VarNode*> local_allocations_;  // the data of this function's own allocations
  std::set<const VarNode*> word_pair_buffers_;  // those of them that word_pair reads (on DSP cores)
  std::vector<const VarNode*> loop_vars_;       // of the enclosing loops, innermost last

  // ---- statements -------------------------------------------------------------------
  void emit(const Stmt& s);

  void emit_for(const ForNode* node);
  // On Arm DSP cores, when `body` only writes this function's own allocations, multiplies
  // nothing (SMLAD) and tests a border (each tap copied or filled with the padding value,
  // no load: an im2col gather filling a tile's columns): how many times its loops of at
  // most three steps repeat the tap (1 without such loops). Else 0.
  int padded_window_gather(const Stmt& body) const;
  void emit_if(const IfThenElseNode* op);
  void emit_while(const WhileNode* op);
  void emit_evaluate(const EvaluateNode* op, const Stmt& s);
  Val op_cmp(const std::string& pred, const Val& a, const Val& b) { return op("i1", "icmp " + pred + " " + a.typed() + ", " + b.v); }

  void emit_stack_alloca(const Var& v, const CallNode* c);

  // Constant-size "local" buffers live on the stack; everything else comes from the
  // CRT workspace, freed in LIFO order (also on every early return).
  void emit_allocate(const AllocateNode* node);

  // Frees the enclosing workspace allocations, newest first, and returns. Code after it
  // (in the same TIR statement list) lands in a block with no predecessors.
  void emit_return(const std::string& value);

  void set_last_error(const Val& message);

  // tvm_throw_last_error: "{}" in the message are filled in at run time by one shared,
  // out-of-line formatter, so each check stays small.
  void throw_last_error(const CallNode* c);

  void use_set_error_helper();

  ModuleState* ms_;
  std::string symbol_;
  PrimFunc func_;
  std::ostringstream entry_;
  std::ostringstream* out_ = nullptr;
  std::string block_;
  int next_tmp_ = 0, next_label_ = 0;
  std::set<std::string> used_;
  std::map<std::string, int> next_suffix_;  // unique_name's search start per hint
  std::unordered_map<const VarNode*, Val> vars_;
  std::vector<std::string> live_workspace_;
  std::string ret_value_, ret_code_;  // the out-values of direct packed calls
  IntBoundAnalyzer bounds_;
  // The labels `break` and `continue` branch to, innermost loop last.
  std::vector<std::pair<std::string, std::string>> loop_exits_;
  int source_line_ = 0;  // of the statement being emitted
  // The operator call profiled() brackets, and its begin hook, which extern_call emits
  // right before the call instruction.
  std::pair<const CallNode*, std::string> profiled_call_{nullptr, ""};
};

}  // namespace mtir::llvm_backend
