// The wasm text backend's private header (codegen_wat.h is its interface): what the
// functions of a module share and the emitter of one function, whose methods are spread
// by concern over wat_function.cc (names, locals, conversions, memory, reused loads,
// SIMD128), wat_expr.cc (expressions and calls) and wat_stmt.cc (statements, loops,
// allocations); codegen_wat.cc assembles the module around them.
#pragma once

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "analysis/int_bound.h"
#include "codegen/emit_common.h"
#include "codegen/line_marks.h"
#include "ir/op.h"
#include "ir/structural_equal.h"
#include "ir/tvm_intrinsics.h"
#include "ir/visitor.h"
#include "support/diagnostic.h"
#include "analysis/simd128.h"
#include "analysis/buffer_accesses.h"
#include "codegen/wasm/codegen_wat.h"

namespace mtir {
namespace wat_codegen {

constexpr int64_t kNullArgument = 0x0400;  // kTvmErrorNullArgument of the CRT
constexpr int64_t kBlockHeader = 16;       // the allocator's header, as the CRT stack allocator's
constexpr int64_t kWasmPage = 65536;

inline int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }
inline int64_t block_bytes(int64_t n) { return n > 0 ? kBlockHeader + round16(n) : 0; }

// A value on the wasm stack: its value type and the folded expression computing it.
struct WVal {
  std::string ty;  // i32 | i64 | f32 | f64 | v128
  std::string code;
};

std::string wasm_type(DataType t, const Span& span);
// Bytes of a value of `t` in linear memory (bool is one byte, handles are wasm32 pointers).
int mem_bytes(DataType t);
std::string int_text(int64_t v, int bits);
std::string float_text(double v, bool f32);
// A wasm text identifier from a TIR name.
std::string ident(const std::string& hint);
// A string of bytes as a wasm text string literal.
std::string data_literal(const std::string& bytes);

// What all functions of the module share: the callees, the imports, the strings.
struct ModuleState {
  std::map<std::string, PrimFunc> functions;          // symbol -> function
  std::map<std::string, std::string> imports;         // wasm name -> import line
  std::map<std::string, int64_t> strings;             // text -> address
  std::vector<std::pair<int64_t, std::string>> data;  // address -> bytes
  int64_t next_string = 0;                            // where the next string goes
  std::set<std::string> helpers;                      // helper functions used
  bool mark_lines = false;                            // end lines with their source line

  int64_t string_address(const std::string& s) {
    auto it = strings.find(s);
    if (it != strings.end()) return it->second;
    int64_t a = next_string;
    strings[s] = a;
    data.emplace_back(a, s + std::string(1, '\0'));
    next_string += static_cast<int64_t>(s.size()) + 1;
    return a;
  }
  // A math function of the C library, imported from the host ("env" "expf").
  std::string math_import(const std::string& name, const std::string& ty, int arity) {
    std::string id = "$env." + name;
    std::string params;
    for (int i = 0; i < arity; ++i) params += " " + ty;
    imports.emplace(id, "(import \"" + std::string(kWasmMathImportModule) + "\" \"" + name + "\" (func " + id +
                            " (param" + params + ") (result " + ty + ")))");
    return id;
  }
};

// The runtime the module carries (wat_runtime.cc): the error globals and exports, the
// workspace allocator over the pool, and the division helper `name`
// ($mtir.[floor]div|mod_s|u_i32|i64).
std::string wat_runtime_error_state();
std::string wat_runtime_error_exports();
std::string wat_runtime_allocator(int64_t pool_base, int64_t pool_bytes, int64_t pool_end);
std::string wat_runtime_division(const std::string& name);

// A statement `acc = acc + x * y` of a loop the emitter makes a SIMD128 dot product
// (wat_simd_loops.cc): x and y narrow integer loads at loop_var * coef + constant + rest.
struct DotOperand {
  const BufferLoadNode* load = nullptr;
  int64_t coef = 0, constant = 0;
  std::vector<Expr> rest;  // the index terms without the loop variable
};
struct DotTerm {
  std::string acc;  // the accumulator's local
  DotOperand x, y;
};

class FunctionEmitter {
 public:
  FunctionEmitter(ModuleState* ms, std::string symbol, PrimFunc f)
      : ms_(ms), symbol_(std::move(symbol)), func_(std::move(f)) {}
  std::string define(bool exported);

 private:
  // ---- names, locals, lines ---------------------------------------------------------
  std::string fresh_name(const std::string& hint);
  std::string local(const std::string& hint, const std::string& ty);
  void line(const std::string& s) {
    body_ << std::string(2 * indent_, ' ') << s << line_mark(ms_->mark_lines, source_line_) << "\n";
  }
  std::string label(const std::string& hint) { return "$" + hint + "." + std::to_string(next_label_++); }

  // ---- conversions ----------------------------------------------------------------
  static std::string normalize(const std::string& code, DataType t);
  WVal cast(const WVal& v, DataType from, DataType to, const Span& span);

  // ---- memory -----------------------------------------------------------------------
  WVal base_of(const Buffer& b, const Span& span);
  std::string address(const Buffer& b, const std::vector<Expr>& indices, const Span& span);
  std::string memarg(const Buffer& b, const std::vector<Expr>& indices, const Span& span);
  bool constant_term(const Expr& e, int64_t* c) const;
  static std::string load_op(DataType t);
  static std::string store_op(DataType t);
  std::string promoted(const Buffer& b, const std::vector<Expr>& indices) const;
  WVal load(const BufferLoadNode* l);
  void store(const BufferStoreNode* s);

  // ---- reused loads -------------------------------------------------------------------
  // A load of the same address as one before it in straight-line code, with no store to
  // that buffer between, reads the value the first left in a local: what clang's GVN does
  // with the C backend's output. V8 does not (wasm loads stay on its effect chain), and a
  // register tile reads each input element once per output it feeds: the duplicates
  // doubled the loads of a 1x1 convolution's tile loop and made V8 spill. The key is the
  // load's text, so unrolled copies (their loop variable a different constant in each)
  // never match. Forgotten at every branch, loop, call and allocation, so a local.get
  // never runs without its local.tee having run before it.
  struct LoadedValue {
    const VarNode* data;  // the buffer's
    std::string local;
  };
  std::string reused_load(const Buffer& b, const std::string& code, const std::string& ty);
  std::string without_unread_tees(const std::string& body) const;
  void forget_loads_of(const Buffer& b);
  void forget_loads();
  WVal conditional_expr(const Expr& e);

  // ---- SIMD128 ------------------------------------------------------------------------
  static std::string simd_shape(DataType t);
  std::string simd_memarg(const Buffer& b, const std::vector<Expr>& indices, DataType t, const Span& span);
  void simd_store(const BufferStoreNode* s);
  WVal simd_expr(const Expr& e);

  // ---- SIMD128 loops: dot products, widening copies (wat_simd_loops.cc) ----------------
  bool dot_term(const Stmt& s, const VarNode* v, DotTerm* out);
  bool emit_dot_loop(const ForNode* node);
  void emit_dot_runs(const std::vector<DotTerm>& accs, int64_t start, int64_t length);
  bool emit_copy_loop(const ForNode* node);
  void emit_copy_steps(const std::string& y, const std::string& x, const std::string& splat, DataType from, int64_t length);

  // ---- expressions ------------------------------------------------------------------
  WVal int_const(DataType t, int64_t v);
  WVal float_const(DataType t, double v, const Span& span);
  static const char* sign_suffix(DataType t) { return t.is_uint() || t.is_bool() ? "_u" : "_s"; }
  WVal arith(const char* name, const BinaryNode* e);
  WVal compare(ExprKind k, const BinaryNode* e);
  WVal int_division(ExprKind k, const BinaryNode* e);
  std::string temp(const std::string& ty) { return local("t", ty); }
  WVal math_call(const CallNode* c);
  WVal int_binary(const CallNode* c);
  WVal extern_call(const CallNode* c);
  WVal imported_call(const CallNode* c, const std::string& symbol);
  WVal call_expr(const CallNode* c);
  WVal multiply_by_quantized_multiplier(const CallNode* c);
  WVal pack_bytes(const CallNode* c);
  WVal word_pair(const CallNode* c);  // two int32 words as one i64, lo in the low half
  // `op` of the word the arguments are, when they are consecutive integer elements of
  // `bits` in linear memory; else "".
  std::string whole_word_load(const CallNode* c, int bits, const std::string& op, int align);
  // The builtins that assemble a word from loads: pack_bytes and word_pair.
  WVal word_builtin(const CallNode* c) { return c->is(Builtin::PackBytes) ? pack_bytes(c) : word_pair(c); }
  WVal expr(const Expr& e);

  // ---- statements -------------------------------------------------------------------
  void emit(const Stmt& s);
  std::string user_name() const { return user_function_name(func_, symbol_); }
  void emit_for(const ForNode* node);
  void emit_if(const IfThenElseNode* op);
  void emit_while(const WhileNode* op);
  void emit_evaluate(const EvaluateNode* op, const Stmt& s);
  std::map<std::string, LoadedValue> loads_through_loop(const ForNode* node);

  // Iterations of `s` when every loop in it has a constant extent, with at most
  // kUnrollLimit in all; -1 otherwise (then it is not unrolled).
  static constexpr int64_t kUnrollLimit = 16;
  static int64_t unrolled_iterations(const Stmt& s);
  // Whether emit_loop unrolls `node`: a small constant nest of a small body. A long
  // straight line (a register tile's loop, already unrolled by its schedule) stays a loop:
  // V8 schedules the loads of a long line early and spills them.
  static constexpr int64_t kUnrollStoreLimit = 32;
  static bool unrolled(const ForNode* node);
  void emit_loop(const ForNode* node, const std::map<std::string, LoadedValue>& kept);

  // A small array whose elements are only read and written one at a time, at indices that
  // are constants once the small loops are unrolled (a register tile's accumulators),
  // lives in locals: what clang's SROA does to the C backend's `int32_t acc[4]`. In
  // linear memory every multiply-add would be a load and a store V8 cannot remove.
  static constexpr int64_t kRegisterArrayLimit = 16;
  bool emit_register_array(const AllocateNode* node);
  std::string register_element(const Buffer& b, const std::vector<Expr>& indices, const Span& span);
  void emit_allocate(const AllocateNode* node);
  void emit_return(const std::string& value);
  void set_error(const std::string& message, const std::vector<WVal>& values);
  void throw_last_error(const CallNode* c);

  ModuleState* ms_;
  std::string symbol_;
  PrimFunc func_;
  std::ostringstream body_;
  int indent_ = 2;
  int source_line_ = 0;  // of the statement being emitted
  int next_label_ = 0;
  std::set<std::string> used_;
  std::map<std::string, int> next_suffix_;  // unique_name's search start per hint
  std::vector<std::pair<std::string, std::string>> locals_;
  std::unordered_map<const VarNode*, WVal> vars_;  // how each variable is read: a local, or a constant in unrolled code
  std::vector<std::string> live_workspace_;
  IntBoundAnalyzer bounds_;
  // The labels `break` and `continue` branch to, innermost loop last.
  std::vector<std::pair<std::string, std::string>> loop_exits_;
  void emit_loop_body(const Stmt& body, const std::string& exit);
  struct Promoted {
    const VarNode* data;
    Buffer buffer;
    Expr index;
    std::string local;
  };
  std::vector<Promoted> promoted_;
  std::map<std::string, LoadedValue> loads_;  // load text -> its value's local (reused_load)
  std::set<std::string> unread_loads_;        // locals of reused_load no local.get reads
  int64_t forgotten_ = 0;                     // forget_loads calls so far
  int64_t mutable_reads_ = 0;                 // reads of register array elements and promoted accumulators so far
  std::unordered_map<const VarNode*, std::vector<std::string>> register_arrays_;  // data -> a local per element
  bool noalias_ = noalias_param(func_, -1);  // the vectorizer's promise covers every buffer
  std::set<const VarNode*> own_memory_;      // data of parameters and allocations
};

}  // namespace wat_codegen
}  // namespace mtir
