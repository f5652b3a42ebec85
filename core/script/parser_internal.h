// The parser's private header: the Parser class of the text format
// (docs/text-format.md), its grammar split by area as TVM keeps the TIR vocabulary apart
// from the statement parser: parser.cc (the entry points, tokens and scopes),
// parser_module.cc (modules, functions, buffer declarations), parser_stmt.cc
// (statements), parser_expr.cc (operators and atoms) and parser_t_calls.cc (the `T.*`
// calls). Errors are thrown as DiagnosticError at the first problem and turned into a
// ParseResult by parse_module, so the grammar code can stay linear.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/op.h"
#include "ir/tvm_intrinsics.h"
#include "script/lexer.h"
#include "script/parser.h"

namespace mtir {
namespace script_parser {

using script::Token;
using script::TokKind;

// Deeper nesting than this is rejected rather than risking a stack overflow (in the
// parser, and later in every recursive pass over the tree).
constexpr int kMaxExprDepth = 200;
// Statements nest once per scoped statement (a let owns the rest of its block), so
// long flat sequences of lets legitimately go deep; allow more.
constexpr int kMaxStmtDepth = 1000;
// Operator chains like `a + b + c + ...` are parsed in a loop but build a tree as
// deep as the chain is long.
constexpr int kMaxExprHeight = 1000;

// A parsed expression plus whether it is a bare (untyped) literal or a tree made only
// of bare literals, which takes the type of the operand next to it.
struct PExpr {
  Expr e;
  bool bare = false;
  int height = 1;  // of the operator tree, to bound the depth of long chains
};

// What a name in scope stands for.
struct Binding {
  Var var;        // scalar variable, or the handle parameter of a buffer parameter
  Buffer buffer;  // set for buffers
  bool is_param = false;
};

bool contains_float_literal(const Expr& e);

// Rebuilds a bare-literal tree with type `t`.
Expr retype_literal(const Expr& e, DataType t);

// Every name the parser accepts after `T.` in an expression, for "did you mean".
const std::vector<std::string>& t_expr_names();

// The note "did you mean 'T.x'?" for the closest candidate, or no note.
std::vector<std::string> did_you_mean(const std::string& name, const std::vector<std::string>& candidates,
                                      const std::string& prefix);

// The one refusal of TVM's schedulable, block-based TIR.
inline const char* const kBlockRefusal =
    "block-based TIR (T.block, T.axis, T.reads, T.writes, T.init, T.where) is out of scope: microtir reads "
    "lowered, block-free TIR; lower the function in TVM first (tvm.tir.transform.LowerOpaqueBlock after "
    "ConvertBlocksToOpaque, as tvm.lower does)";

bool is_block_construct(const std::string& name);

// How a function's "target" attribute keeps the host of T.target("cuda", host="llvm"):
// "cuda -host=llvm" (the printer splits it back).
inline const char* const kTargetHostSeparator = " -host=";

const char* binary_symbol(ExprKind k);

class Parser {
 public:
  Parser(std::shared_ptr<const SourceFile> file, std::vector<Token> toks)
      : file_(std::move(file)), toks_(std::move(toks)) {}
  IRModule parse_file();

 private:
  // ---- token helpers ------------------------------------------------------------
  const Token& cur() const { return toks_[pos_]; }
  const Token& ahead(size_t n) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  const Token& next();
  bool is_op(const char* s) const { return cur().kind == TokKind::kOp && cur().text == s; }
  bool is_name(const char* s) const { return cur().kind == TokKind::kName && cur().text == s; }
  static bool tok_is_op(const Token& t, const char* s) { return t.kind == TokKind::kOp && t.text == s; }
  static bool tok_is_name(const Token& t, const char* s) { return t.kind == TokKind::kName && t.text == s; }
  bool at_t_attr(const char* name) const;
  Span span(const Token& t) const { return Span{file_, t.line, t.col}; }
  [[noreturn]] void fail(const Token& t, const std::string& msg, std::vector<std::string> notes = {});
  const Token& expect_op(const char* s, const std::string& context);
  const Token& expect_name(const std::string& context);
  void expect_keyword(const char* kw, const std::string& context);
  std::string expect_string(const std::string& context);
  void expect_newline(const std::string& context);
  void skip_newlines();

  // Counts recursion into expressions (or statements) and stops at the limit.
  struct DepthGuard {
    int& depth;
    DepthGuard(Parser& p, const Token& t, bool stmt = false) : depth(stmt ? p.stmt_depth_ : p.depth_) {
      if (++depth > (stmt ? kMaxStmtDepth : kMaxExprDepth)) {
        --depth;
        p.fail(t, "nesting too deep");
      }
    }
    ~DepthGuard() { --depth; }
  };
  int combined_height(const PExpr& a, const PExpr& b, const Token& op);

  // ---- scopes ---------------------------------------------------------------------
  const Binding* lookup(const std::string& name) const;
  void bind(const std::string& name, Binding b) { bindings_.emplace_back(name, std::move(b)); }
  size_t scope_mark() const { return bindings_.size(); }
  void pop_scope(size_t mark) { bindings_.resize(mark); }

  // ---- module structure (parser_module.cc) -------------------------------------
  void skip_preamble();
  std::string parse_decorator();
  void parse_class(IRModule* mod);
  Attrs parse_dict();
  std::string parse_target_value();
  std::string parse_target_call();
  std::string parse_target_spec();
  AttrValue parse_attr_value();

  // A type, and for a typed pointer what it points to.
  struct TypeAnn {
    DataType type;
    DataType pointee = DataType::Void();
    std::string scope;
    Var make_var(const std::string& name, const Span& s) const {
      return pointee.is_void() && scope.empty() ? MakeVar(name, type, s) : MakePointerVar(name, pointee, scope, s);
    }
  };
  TypeAnn parse_type_ann();
  DataType parse_type_annotation() { return parse_type_ann().type; }
  DataType parse_dtype_string(const std::string& context);
  std::pair<std::string, PrimFunc> parse_function();
  bool at_var_decl(size_t at) const;
  Expr parse_buffer_list();
  Stmt parse_let_scope(const Token& with_tok);
  void check_bound_by_buffer(const Token& name, const Var& var, const Stmt& body);
  struct VectorAccess {
    std::vector<Expr> indices;
    Expr value;      // .vstore
    Expr predicate;  // null without predicate=
  };
  VectorAccess parse_vector_access(const Token& name, const Buffer& b, bool store);
  bool at_multi_var_decl() const;
  void parse_multi_var_decl();
  template <typename Params>
  void parse_function_header(PrimFuncNode* f, const Params& params);
  void skip_balanced_until_comma();
  std::vector<Expr> parse_shape();

  // An expression used as an index, extent or shape: bare literals stay int32.
  Expr parse_index_expr() { return parse_expr().e; }

  // What a buffer declaration says, before the buffer gets its name.
  struct BufferSpec {
    std::vector<Expr> shape;
    DataType dtype = DataType::Float(32);
    std::vector<Expr> strides;
    Expr elem_offset;
    int align = 0;
    std::string scope = "global";
    Var data;  // T.decl_buffer: the existing pointer it views
    // A parameter's scope other than "global" (scope="shared"): kept on its data pointer.
    std::string param_scope;
    std::vector<int64_t> axis_separators;
  };
  BufferSpec parse_buffer_args(bool allow_scope, const Token& call_tok, bool allow_data = false,
                               bool data_required = true);
  Buffer make_buffer(const std::string& name, const Span& name_span, BufferSpec spec);
  int64_t parse_small_int(const std::string& context);

  // ---- statements (parser_stmt.cc) --------------------------------------------
  // NoOp() leaves its constant without a location; every parsed node gets one.
  static Stmt spanned_no_op(const Span& s) { return Evaluate(IntImm(DataType::Int(32), 0, s), s); }
  static Stmt make_seq(std::vector<Stmt> stmts, const Span& s);
  std::vector<Stmt> parse_stmt_list();
  Stmt parse_block(const Token& owner, const std::string& header);
  Stmt parse_loop_body(const Token& owner, const std::string& header);

  // The rest of the current block, as the body of a scoped statement.
  Stmt parse_rest(const Token& owner) { return make_seq(parse_stmt_list(), span(owner)); }
  Stmt parse_stmt();
  Expr return_value(const Token& tok);
  Stmt parse_return();
  Stmt parse_multi_assign();
  Stmt parse_store();
  std::vector<Expr> parse_indices(const Token& name, const Buffer& buf);
  Expr parse_index_or_slice();
  Stmt parse_let();
  Stmt parse_assign();
  Stmt parse_thread(const Token& name);
  Buffer parse_alloc_call(const Token& name, std::string* scope);

  struct LoopHeader {
    ForKind kind = ForKind::kSerial;
    bool grid = false;
    std::vector<PExpr> args;
    Attrs annotations;
    std::string thread;
    PExpr step;
    const Token* step_tok = nullptr;
  };
  void parse_loop_args(LoopHeader* h, const Token& iter_tok);
  void parse_loop_kind(LoopHeader* h, const Token& iter_tok);
  // (min, extent, loop variable type) per loop variable.
  struct LoopRange {
    Expr min, extent;
    DataType type;
  };
  std::vector<LoopRange> loop_ranges(const LoopHeader& h, const std::vector<const Token*>& targets,
                                     const Token& iter_tok);
  Expr loop_step(const LoopHeader& h, DataType type);
  void apply_loop_step(const Expr& step, const Token& step_tok, Var* var, LoopRange* range, Stmt* body);
  Stmt parse_for();
  Expr loop_bound(PExpr p, const Token& at);
  static Expr range_extent(const Expr& start, const Expr& stop, const Span& s);
  Stmt parse_if();
  Stmt parse_assert();
  std::string parse_assert_tuple();
  Stmt parse_with();
  // The parenthesized part of T.attr(...) / T.launch_thread(...): an AttrStmt's header.
  struct ScopeHeader {
    Expr node;
    std::string key;
    Expr value;
  };
  ScopeHeader parse_attr_header();
  struct IterVarNode {  // T.iter_var(name, dom, "kind", "tag")
    const Token* name = nullptr;
    std::string kind, tag;
  };
  IterVarNode parse_iter_var();
  Var thread_var(const Token& name, const std::string& tag);
  ScopeHeader parse_launch_header();
  Stmt parse_launch_as(const Token& with_tok);
  Stmt parse_concise_scope();
  // T.realize(A[lo:hi, ...], "scope", condition=c) after `T.realize`; `body` parses
  // what it scopes.
  Stmt parse_realize(const Token& at, const std::function<Stmt()>& body);
  struct ConstValues {
    BufferSpec spec;
    std::vector<int64_t> ints;
    std::vector<double> floats;
  };
  ConstValues parse_const_values();
  Stmt parse_allocate_const(const Token* name, const Token* with_tok);

  // ---- expressions (parser_expr.cc) -------------------------------------------
  static PExpr promote_to(PExpr p, DataType t);
  void unify(PExpr& a, PExpr& b, const std::string& sym, const Token& at, const char* what = nullptr);
  PExpr arith(ExprKind k, PExpr a, PExpr b, const Token& op);
  PExpr compare(ExprKind k, PExpr a, PExpr b, const Token& op);
  PExpr logic(ExprKind k, PExpr a, PExpr b, const Token& op);
  PExpr parse_expr();
  PExpr parse_or();
  PExpr parse_and();
  PExpr parse_not();
  bool at_comparison(ExprKind* k) const;
  PExpr parse_comparison();
  PExpr parse_arith();
  PExpr parse_term();
  PExpr parse_unary();
  Expr int_literal(const Token& lit, bool negative);
  PExpr parse_power();
  PExpr parse_atom();

  // ---- T.* calls (parser_t_calls.cc) --------------------------------------------
  Expr parse_call_tir(const Token& t_tok, const Token& fn);
  std::pair<Expr, Expr> parse_slice(const Expr& dim);
  Expr parse_region(const Buffer& buf);
  // Also accepts `dtype="..."` (as TVM's tests write it), kept in dtype_kw_.
  std::vector<PExpr> parse_args(const Token& fn_tok, Attrs* attrs);
  std::optional<DataType> dtype_kw_;
  void check_arity(const Token& at, const Token& fn, const std::vector<PExpr>& args, size_t n);
  PExpr parse_typed_constant(const Token& t_tok, const Token& fn, DataType type);
  bool parse_tvm_sugar(const Token& t_tok, const Token& fn, PExpr* out);
  Expr parse_access_ptr(const Token& t_tok);
  Expr parse_call_extern(const Token& t_tok, const Token& fn);
  Expr parse_reinterpret(const Token& t_tok);

  // vectors
  int parse_lanes(const Token& fn, bool* scalable);
  PExpr parse_vector_constant(const Token& t_tok, const Token& fn, DataType t);
  PExpr parse_ramp(const Token& t_tok, const Token& fn);
  PExpr parse_broadcast(const Token& t_tok, const Token& fn);
  PExpr parse_shuffle(const Token& t_tok, const Token& fn);
  PExpr parse_let_expr(const Token& t_tok);
  PExpr parse_t_call();
  PExpr parse_op_call(const Token& t_tok, const Token& fn, const OpInfo& op, std::vector<PExpr>& args, Attrs attrs);

  // ---- TVM's other names (parser_tvm_ops.cc) -----------------------------------
  bool parse_tvm_ops(const Token& t_tok, const Token& fn, PExpr* out);
  PExpr parse_ceildiv(const Token& t_tok, const Token& fn);
  PExpr parse_tvm_intrinsic(const Token& t_tok, const Token& fn, const TvmIntrinsic& in);
  PExpr make_tvm_intrinsic(const Token& t_tok, const Token& fn, const TvmIntrinsic& in, std::vector<PExpr>& args,
                           Attrs attrs);
  // T.Call(dtype, "tir.name", [args]) (listed) or T.call_intrin(dtype, "tir.name", args...).
  PExpr parse_generic_call(const Token& t_tok, bool listed);
  Expr parse_buffer_field(const Token& name, const Buffer& b);
  [[noreturn]] void fail_undefined(const Token& name);
  // Calls of another function of the module by its GlobalVar, `Module.sub(args...)`:
  // the return types of the class's functions come from a scan of their signatures
  // before any body is parsed, so a call may come before its callee.
  void scan_function_signatures();
  bool at_global_call(const Token& name) const;
  PExpr parse_global_call(const Token& name);
  std::string module_name_;                                         // the class being parsed, "" outside one
  std::vector<std::pair<std::string, DataType>> module_functions_;  // name, return type

  std::shared_ptr<const SourceFile> file_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int stmt_depth_ = 0;
  int loop_depth_ = 0;  // loops around the statement being parsed, for break/continue
  std::vector<std::pair<std::string, Binding>> bindings_;
  DataType ret_type_ = DataType::Void();  // of the function being parsed
};

}  // namespace script_parser
}  // namespace mtir
