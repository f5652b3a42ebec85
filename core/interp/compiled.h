// The interpreter's fast form: a PrimFunc body compiled once per call into a tree of
// closures (CExpr / CStmt objects with a virtual eval / exec), with every variable and
// every buffer's storage resolved to a slot of a Frame, buffer shapes and strides that
// are constants folded into the access, and the loads and stores of the common element
// types read and written directly. It computes what the tree walk of interpreter.cc
// computes, error for error (same messages, same spans, same step count): the tree
// walk remains for what this form does not cover (vectors, calls between functions),
// and MICROTIR_INTERP_TREE_WALK=1 forces it, so tests run both and compare.
// Internal to core/interp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "interp/interpreter.h"
#include "interp/scalar.h"
#include "ir/function.h"
#include "ir/tvm_intrinsics.h"
#include "support/ndarray.h"

namespace mtir {
namespace interp {

// Memory behind one or more buffer views.
struct Storage {
  std::string name;                // for messages: the buffer that owns it
  NDArray* array = nullptr;        // parameters: the caller's tensor
  std::unique_ptr<NDArray> owned;  // allocations: our own
  bool track_writes = false;       // allocations only; parameters count as initialized
  std::vector<uint8_t> written;
  int64_t size = 0;  // elements of `array` (its shape does not change while we run)
};

// Thrown by `return x` (tvm_return) and caught where the function's run() began.
struct Returned {
  Scalar value;
};

// Messages shared by both forms, so they cannot drift apart.
std::string shape_text(const std::vector<int64_t>& dims);
[[noreturn]] void out_of_bounds(const Span& span, const BufferNode& b, const int64_t* idx, size_t nidx,
                                const int64_t* dims, size_t ndim, const std::string& detail);
[[noreturn]] void step_limit_exceeded(const Span& span, int64_t max_steps);
[[noreturn]] void storage_type_mismatch(const Span& span, const BufferNode& b, DataType storage);
[[noreturn]] void uninitialized_read(const Span& span, int64_t addr, const Storage& st);
[[noreturn]] void decl_buffer_type_mismatch(const Span& span, const BufferNode& b, const Storage& st);

// The elements an allocation of `b` with extents `dims` needs (reaching its farthest
// element when it has strides or an offset, which `offset` and `stride(k)` evaluate on
// demand), checked against `max_bytes`.
int64_t allocation_elements(const BufferNode& b, const std::vector<int64_t>& dims, const std::function<int64_t()>& offset,
                            const std::function<int64_t(size_t)>& stride, const Span& span, int64_t max_bytes);
// Zeroed storage of `count` elements of b's type whose reads before writes are errors.
std::unique_ptr<Storage> new_allocation(const BufferNode& b, int64_t count);
// T.allocate_const: storage holding its values, every element written.
std::unique_ptr<Storage> new_constant_allocation(const AllocateConstNode& op);

// An argument of a call between functions (Module.sub(...)): a scalar, or for a pointer
// the memory it points into and the element it points to.
struct CallArg {
  Scalar value;
  Storage* storage = nullptr;
  int64_t offset = 0;
};
struct Frame;
// Makes such a call (the interpreter that runs the frame: interpreter.cc).
using GlobalCaller = std::function<Scalar(const CallNode*, std::vector<CallArg>&, Frame&)>;

// The state of one compiled call: variable values and buffer storage by slot.
struct Frame {
  std::vector<Scalar> vars;
  std::vector<Storage*> storage;
  int64_t steps = 0;
  int64_t max_steps = 0;
  // The statement being executed, as the tree walk's stmt_span_ (errors in an
  // expression without a span of its own are reported there).
  const Span* stmt_span = nullptr;
  const InterpOptions* options = nullptr;
  const GlobalCaller* call_global = nullptr;
  // Set by `break` / `continue`; sequences stop at it and the innermost loop takes it.
  LoopExit exit = LoopExit::kNone;

  // One executed statement (or loop iteration), as the tree walk counts them.
  void step(const Span& span) {
    if (++steps > max_steps) step_limit_exceeded(span, max_steps);
  }
  const Span& where(const Span& expr_span) const {
    return expr_span.defined() || !stmt_span ? expr_span : *stmt_span;
  }
};

struct CExpr {
  virtual ~CExpr() = default;
  virtual Scalar eval(Frame& f) const = 0;
  // Scalar::i of eval alone, for callers that read nothing else (indices, integer
  // arithmetic): the hot nodes return it in a register instead of a whole Scalar.
  virtual int64_t eval_int(Frame& f) const { return eval(f).i; }
  // Every value eval gives is an integer or bool (never a float), whatever the IR says.
  bool int_result = false;
  // The type of every value eval gives, when the node fixes it (Void when it depends on
  // the operands): a store of that type may take eval_int alone.
  DataType known_type = DataType::Void();
  // Takes `t` as the type of its values when wrapping each of them to `t` changes none
  // (an integer cast that widens, folded into a load): false when it cannot.
  virtual bool widen_to(DataType /*t*/) { return false; }
};
// A node whose every value is an integer of one type it fixes: eval is eval_int in a
// Scalar of that type, so only eval_int is written.
struct IntCExpr : CExpr {
  explicit IntCExpr(DataType t) : type(t) {
    int_result = true;
    known_type = t;
  }
  Scalar eval(Frame& f) const final {
    Scalar r;
    r.dtype = type;
    r.i = eval_int(f);
    return r;
  }
  int64_t eval_int(Frame& f) const override = 0;
  DataType type;
};
struct CStmt {
  virtual ~CStmt() = default;
  virtual void exec(Frame& f) const = 0;
};
// A pointer argument: a buffer's data or a pointer variable, or T.address_of(B[i]).
struct CPointer {
  virtual ~CPointer() = default;
  virtual CallArg eval(Frame& f) const = 0;
};
using CExprPtr = std::unique_ptr<CExpr>;
using CPointerPtr = std::unique_ptr<CPointer>;
using CStmtPtr = std::unique_ptr<CStmt>;

// What the compiled form does not cover; the function is then walked as a tree.
struct Unsupported {
  std::string what;
};

// Compiles one function body. Variables bound before the body runs (parameters, shape
// variables) and storage bound to parameters are given here, by address; everything
// else is bound by the body's own scopes, which the compiler follows lexically.
class Compiler {
 public:
  int var_slot(const VarNode* v);
  int storage_slot(const void* key);
  void bind_at_entry(const VarNode* v) { in_scope_.insert(v); }

  CExprPtr expr(const Expr& e);
  CStmtPtr stmt(const Stmt& s);
  // A constant's value when `e` is an IntImm (most shapes, strides and offsets).
  static bool constant(const Expr& e, int64_t* value);

  const std::unordered_map<const VarNode*, int>& var_slots() const { return var_slots_; }
  const std::unordered_map<const void*, int>& storage_slots() const { return storage_slots_; }

  // Scalar operators (compile_expr.cc).
  CExprPtr binary(const Expr& e);  // a BinaryNode
  // Integer Add, Sub and Mul (compile_linear.cc): one linear form over the variables
  // when the tree has one, else a node per operator.
  CExprPtr int_arith(const Expr& e);  // a BinaryNode
  bool in_scope(const VarNode* v) const { return in_scope_.count(v) > 0; }
  CExprPtr call(const CallNode* op);
  CExprPtr var(const VarNode* v);
  CExprPtr let(const LetNode* op);
  CExprPtr cast(const CastNode* op);
  // Buffers (compile_buffer.cc).
  CExprPtr load(const BufferLoadNode* op);
  CStmtPtr store(const BufferStoreNode* op);
  CStmtPtr allocate(const AllocateNode* op);
  CStmtPtr allocate_const(const AllocateConstNode* op);
  CStmtPtr decl_buffer(const DeclBufferNode* op);
  CPointerPtr pointer(const Expr& e);
  // Statements (compile_stmt.cc).
  CStmtPtr loop(const ForNode* op);
  CStmtPtr let_stmt(const LetStmtNode* op);
  std::vector<CExprPtr> exprs(const std::vector<Expr>& es);

  // A scope binding `v` for as long as the object lives (compile time).
  class Scope {
   public:
    Scope(Compiler* c, const VarNode* v) : c_(c), v_(v), was_bound_(c->in_scope_.count(v) > 0) {
      c->in_scope_.insert(v);
    }
    ~Scope() {
      if (!was_bound_) c_->in_scope_.erase(v_);
    }

   private:
    Compiler* c_;
    const VarNode* v_;
    bool was_bound_;
  };

 private:
  std::unordered_map<const VarNode*, int> var_slots_;
  std::unordered_map<const void*, int> storage_slots_;
  std::unordered_set<const VarNode*> in_scope_;
  std::vector<Expr> expansions_;  // TVM intrinsics' expansions, which the closures point into
};

// The storage key of a buffer: its data variable, so views of the same memory agree.
inline const void* storage_key(const BufferNode& b) {
  return b.data ? static_cast<const void*>(b.data.get()) : static_cast<const void*>(&b);
}

}  // namespace interp
}  // namespace mtir
