// The reference interpreter: a direct walk over the IR, no lowering first, so what it
// computes is what the program says. Scalar semantics are in scalar.cc; this file
// handles scopes, buffers and control flow.
//
// Buffers are bound to storage through their data variable, not the BufferNode, so
// two buffer declarations that share a data pointer (a flattened view of a parameter,
// say) see the same memory, as they would in the generated C. Every access checks the
// indices against the view's shape and the final element address against the storage
// behind it. Storage that an Allocate created remembers which elements were written,
// because reading one that was not would read garbage in C.
#include "interp/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "interp/compiled.h"
#include "interp/pointer_map.h"
#include "interp/scalar.h"
#include "ir/carried_types.h"
#include "ir/tvm_intrinsics.h"  // and ir/op.h, the builtins
#include "ir/vector_buffers.h"

namespace mtir {

namespace {

using interp::Scalar;

using interp::shape_text;
using interp::Storage;

using interp::PointerMap;

using interp::Returned;

class Interpreter {
 public:
  Interpreter(const InterpOptions& options, const IRModule* module)
      : options_(options), module_(module), tree_walk_(options.tree_walk || std::getenv("MICROTIR_INTERP_TREE_WALK")) {}

  // The value the function returned, for one with a return type.
  std::optional<Scalar> run(const PrimFunc& f, const std::string& name, const std::vector<InterpArg>& args);

 private:
  // ---- binding --------------------------------------------------------------
  void bind_scalar_param(const Var& p, const InterpArg& arg);
  void bind_pointer_param(const Var& p, const InterpArg& arg);
  void bind_buffer_param(const Var& p, const Buffer& b, const InterpArg& arg);
  // Restores a variable's previous binding (or removes it) when a scope ends.
  class ScopedVar {
   public:
    ScopedVar(Interpreter* in, const VarNode* v, Scalar value) : in_(in), var_(v) {
      if (const Scalar* old = in->vars_.find(v)) saved_ = *old;
      in->vars_[v] = value;
    }
    ~ScopedVar() {
      if (saved_) in_->vars_[var_] = *saved_;
      else in_->vars_.erase(var_);
    }
    void set(Scalar value) { in_->vars_[var_] = value; }

   private:
    Interpreter* in_;
    const VarNode* var_;
    std::optional<Scalar> saved_;
  };

  // A vector variable (of a vector Let or LetStmt): all its lanes, for the scope.
  class ScopedVector {
   public:
    ScopedVector(Interpreter* in, const VarNode* v, std::vector<Scalar> lanes) : in_(in), var_(v) {
      auto it = in->vector_vars_.find(v);
      if (it != in->vector_vars_.end()) saved_ = it->second;
      in->vector_vars_[v] = std::move(lanes);
    }
    ~ScopedVector() {
      if (saved_) in_->vector_vars_[var_] = *saved_;
      else in_->vector_vars_.erase(var_);
    }

   private:
    Interpreter* in_;
    const VarNode* var_;
    std::optional<std::vector<Scalar>> saved_;
  };

  // ---- buffers ----------------------------------------------------------------
  static const void* storage_key(const Buffer& b) { return interp::storage_key(*b); }
  Storage& storage_of(const Buffer& b, const Span& span);
  std::vector<int64_t> eval_shape(const Buffer& b);
  int64_t element_address(const Buffer& b, const std::vector<Expr>& indices, const Storage& st, const Span& span);
  Scalar load(const BufferLoadNode* op);
  void store(const BufferStoreNode* op);

  // ---- evaluation ---------------------------------------------------------------
  // Lane `lane_` of `e` (a scalar's only value when `e` is scalar).
  Scalar eval(const Expr& e);
  // Every lane of `e`, in order.
  std::vector<Scalar> eval_lanes(const Expr& e);
  // The cases eval meets rarely stay out of line, so that its own frame (set up on every
  // node the interpreter visits) stays small.
  [[gnu::noinline]] Scalar eval_shuffle(const ShuffleNode* op);
  [[gnu::noinline]] Scalar eval_let(const LetNode* op);
  void store_vector(const BufferStoreNode* op);
  // A constant (most shapes, strides and offsets) without the trip through eval: an
  // IntImm's value is already wrapped to its type, as eval would make it.
  int64_t eval_int(const Expr& e) {
    if (e && e->kind == ExprKind::IntImm) return static_cast<const IntImmNode*>(e.get())->value;
    return eval(e).i;
  }
  Scalar eval_var(const VarNode* v);
  Scalar eval_binary(const BinaryNode* op);
  [[gnu::noinline]] Scalar eval_call(const CallNode* op);
  [[gnu::noinline]] Scalar eval_ramp(const RampNode* op);
  Scalar eval_extern(const CallNode* op);
  void exec(const Stmt& s);
  void exec_for(const ForNode* op);
  void exec_allocate(const AllocateNode* op);
  void exec_in_storage(const Buffer& b, std::unique_ptr<Storage> st, const Stmt& body);
  void exec_in_shared_storage(const void* key, Storage* st, const Stmt& body);
  void count_step(const Span& span);
  // Where to report an error in an expression: its own span, or the statement's when
  // the expression has none (IR built by passes may not carry expression spans).
  const Span& where(const Span& expr_span) const {
    return expr_span.defined() || !stmt_span_ ? expr_span : *stmt_span_;
  }

  Scalar eval_pure_intrinsic(Builtin b, const CallNode* op) {
    Scalar args[interp::kMaxPureArgs];
    for (size_t k = 0; k < op->args.size() && k < interp::kMaxPureArgs; ++k) args[k] = eval(op->args[k]);
    return interp::pure_intrinsic(b, op->args[0]->dtype.element_of(), op->dtype.element_of(), args);
  }
  // acc + the lanes of a times b (builtins.def's vmladava).
  Scalar eval_vmladava(const CallNode* op);
  Scalar call_function(const CallNode* op, bool by_symbol);
  Scalar call_global(const CallNode* op);
  Scalar call_global_with(const CallNode* op, const std::vector<interp::CallArg>& values);
  // A callee's view of caller memory: `count` elements of `dtype` from element `offset`
  // of `st`, copied in for the call and back after it.
  struct CopyBack {
    Storage* storage;
    int64_t offset;  // in elements
    size_t index;    // of the argument
  };
  std::pair<Storage*, int64_t> pointer_of(const Expr& e, const Span& at);
  NDArray copy_in(const CallNode* op, Storage* st, int64_t offset, DataType dtype, std::vector<int64_t> shape);
  static void copy_back(const std::vector<CopyBack>& copies, const std::vector<NDArray>& tensors);
  std::optional<Scalar> run_callee(const PrimFunc& callee, const std::string& name, const std::vector<InterpArg>& args);
  // The body of `f`, its parameters bound: compiled (compiled.h) unless it uses what
  // only the tree walk covers, or the tree walk is asked for.
  void exec_body(const PrimFunc& f);
  // The body compiled, or null; the variables bound before it runs are `f`'s.
  interp::CStmtPtr compile(const PrimFunc& f, interp::Compiler* c);

  const InterpOptions& options_;
  const IRModule* module_;  // for calls between functions
  PointerMap<Scalar> vars_;
  std::unordered_map<const VarNode*, std::vector<Scalar>> vector_vars_;
  // Vectors are evaluated one lane at a time: the lane being computed. Scalar
  // expressions ignore it; Ramp, Shuffle and vector variables read it.
  int lane_ = 0;
  PointerMap<Storage*> storage_;
  std::vector<std::unique_ptr<Storage>> param_storage_;
  int64_t steps_ = 0;
  // Set by `break` / `continue`; sequences stop at it and the innermost loop takes it.
  LoopExit exit_ = LoopExit::kNone;
  bool take_exit() {
    const bool stop = exit_ == LoopExit::kBreak;
    exit_ = LoopExit::kNone;
    return stop;
  }
  bool tree_walk_;
  // The statement being executed (its expressions are evaluated before any nested
  // statement runs, so this is always the enclosing one when they fail).
  const Span* stmt_span_ = nullptr;
};

// ---- parameters -------------------------------------------------------------------

void Interpreter::bind_scalar_param(const Var& p, const InterpArg& arg) {
  const std::string who = "argument '" + p->name + "'";
  if (std::holds_alternative<NDArray*>(arg))
    user_error(p->span, who + ": expected a " + p->dtype.str() + " scalar but got a tensor");
  if (p->dtype.is_float()) {
    double v = std::holds_alternative<double>(arg) ? std::get<double>(arg)
                                                   : static_cast<double>(std::get<int64_t>(arg));
    vars_[p.get()] = interp::make_float(p->dtype, v);
    return;
  }
  if (!p->dtype.is_integer() && !p->dtype.is_bool())
    user_error(p->span, who + ": cannot pass a scalar for a " + p->dtype.str() + " parameter");
  if (!std::holds_alternative<int64_t>(arg))
    user_error(p->span, who + ": expected an integer for " + p->dtype.str() + " but got a float");
  int64_t v = std::get<int64_t>(arg);
  // A value that does not fit would silently wrap in C; better to say so here.
  if (!p->dtype.is_bool() && wrap_int(p->dtype, v) != v && !(p->dtype.is_uint() && p->dtype.bits() == 64))
    user_error(p->span, who + ": value " + std::to_string(v) + " does not fit in " + p->dtype.str());
  vars_[p.get()] = interp::make_int(p->dtype, v);
}

void Interpreter::bind_buffer_param(const Var& p, const Buffer& b, const InterpArg& arg) {
  const std::string who = "argument '" + p->name + "'";
  if (!std::holds_alternative<NDArray*>(arg))
    user_error(p->span, who + ": expected a " + b->dtype.str() + " tensor but got a scalar");
  NDArray* a = std::get<NDArray*>(arg);
  if (!a) user_error(p->span, who + ": expected a " + b->dtype.str() + " tensor but got a null pointer");
  if (a->dtype != b->dtype)
    user_error(p->span, who + ": expected " + b->dtype.str() + " but got " + a->dtype.str());
  // A hand-built tensor whose bytes do not match its shape would make every access
  // check meaningless.
  int64_t elements = a->num_elements();
  if (elements < 0 || a->data.size() != static_cast<size_t>(elements) * static_cast<size_t>(a->dtype.bytes()))
    user_error(p->span, who + ": tensor holds " + std::to_string(a->data.size()) + " bytes but its shape " +
                            shape_text(a->shape) + " of " + a->dtype.str() + " needs " +
                            std::to_string(elements * a->dtype.bytes()));
  std::vector<int64_t> expected = eval_shape(b);
  if (expected != a->shape)
    user_error(p->span, who + ": expected shape " + shape_text(expected) + " but got " + shape_text(a->shape));
  auto st = std::make_unique<Storage>();
  st->name = b->name;
  st->array = a;
  st->size = a->num_elements();
  storage_[storage_key(b)] = st.get();
  storage_[p.get()] = st.get();
  param_storage_.push_back(std::move(st));
}

void Interpreter::bind_pointer_param(const Var& p, const InterpArg& arg) {
  NDArray* const* a = std::get_if<NDArray*>(&arg);
  if (!a || !*a) user_error(p->span, "argument '" + p->name + "': expected a tensor for a pointer parameter");
  auto st = std::make_unique<Storage>();
  st->name = p->name;
  st->array = *a;
  st->size = (*a)->num_elements();
  storage_[p.get()] = st.get();
  param_storage_.push_back(std::move(st));
}

std::optional<Scalar> Interpreter::run(const PrimFunc& f, const std::string& name,
                                        const std::vector<InterpArg>& args) {
  MTIR_ICHECK(f->param_buffers.size() == f->params.size(), "PrimFunc '" + name + "' has unmatched param_buffers");
  if (args.size() != f->params.size())
    user_error(f->span, "'" + name + "' takes " + std::to_string(f->params.size()) + " arguments but got " +
                            std::to_string(args.size()));
  // Kinds first, in parameter order, so the first wrong argument is the one named.
  for (size_t i = 0; i < args.size(); ++i) {
    const Var& p = f->params[i];
    const bool is_tensor = std::holds_alternative<NDArray*>(args[i]);
    if (f->param_buffers[i] && !is_tensor)
      user_error(p->span, "argument '" + p->name + "': expected a " + f->param_buffers[i]->dtype.str() +
                              " tensor but got a scalar");
    if (!f->param_buffers[i] && is_tensor && !p->dtype.is_handle())
      user_error(p->span, "argument '" + p->name + "': expected a " + p->dtype.str() + " scalar but got a tensor");
  }
  // Then scalars: buffer shapes may refer to them.
  for (size_t i = 0; i < args.size(); ++i) {
    if (f->param_buffers[i]) continue;
    // A bare pointer parameter (the unpacked calling convention) takes a tensor as its
    // memory; the buffers declared on it inside the body are checked against it.
    if (f->params[i]->dtype.is_handle()) bind_pointer_param(f->params[i], args[i]);
    else bind_scalar_param(f->params[i], args[i]);
  }
  // A shape extent that is a variable no one bound yet takes its value from the tensor,
  // so T.Buffer((n,), ...) works without passing n as well. All of them are bound
  // before any shape is checked: `(n + 1,)` may come before the `(n,)` that binds n.
  for (size_t i = 0; i < args.size(); ++i) {
    const Buffer& b = f->param_buffers[i];
    NDArray* const* a = std::get_if<NDArray*>(&args[i]);
    if (!b || !a || !*a || (*a)->shape.size() != b->shape.size()) continue;
    for (size_t k = 0; k < b->shape.size(); ++k) {
      const auto* v = as<VarNode>(b->shape[k]);
      if (v && !vars_.count(v)) vars_[v] = interp::make_int(v->dtype, (*a)->shape[k]);
    }
  }
  // A buffer declared on an earlier one's memory (T.match_buffer(b, ..., data=A.data))
  // views that tensor: TVM requires b to be the same memory, so b's own is not used.
  std::set<const VarNode*> bound_data;
  for (size_t i = 0; i < args.size(); ++i)
    if (f->param_buffers[i] && bound_data.insert(f->param_buffers[i]->data.get()).second)
      bind_buffer_param(f->params[i], f->param_buffers[i], args[i]);
  try {
    exec_body(f);
  } catch (const Returned& r) {
    if (f->ret_type.is_void()) return std::nullopt;
    return interp::cast(f->ret_type, r.value, f->span);
  }
  if (!f->ret_type.is_void())
    user_error(f->span, "'" + name + "' returns " + f->ret_type.str() + " but ended without a return statement");
  return std::nullopt;
}

interp::CStmtPtr Interpreter::compile(const PrimFunc& f, interp::Compiler* c) {
  if (tree_walk_) return nullptr;
  vars_.for_each([&](const void* v, const Scalar&) { c->bind_at_entry(static_cast<const VarNode*>(v)); });
  try {
    return c->stmt(f->body);
  } catch (const interp::Unsupported&) {
    return nullptr;
  }
}

void Interpreter::exec_body(const PrimFunc& f) {
  interp::Compiler c;
  interp::CStmtPtr body = compile(f, &c);
  if (!body) {
    if (f->body) exec(f->body);
    return;
  }
  interp::Frame frame;
  frame.vars.resize(c.var_slots().size());
  for (const auto& [v, slot] : c.var_slots())
    if (const Scalar* value = vars_.find(v)) frame.vars[static_cast<size_t>(slot)] = *value;
  frame.storage.resize(c.storage_slots().size());
  for (const auto& [key, slot] : c.storage_slots())
    if (Storage* const* st = storage_.find(key)) frame.storage[static_cast<size_t>(slot)] = *st;
  frame.steps = steps_;
  frame.max_steps = options_.max_steps;
  frame.options = &options_;
  // Module.sub(...) from the compiled body: the steps so far count for the callee.
  const interp::GlobalCaller caller = [this](const CallNode* op, std::vector<interp::CallArg>& values,
                                             interp::Frame& fr) {
    steps_ = fr.steps;
    Scalar r = call_global_with(op, values);
    fr.steps = steps_;
    return r;
  };
  frame.call_global = &caller;
  // The steps taken count however the body ends (a call's steps add to its caller's).
  struct Sync {
    int64_t& steps;
    const interp::Frame& frame;
    ~Sync() { steps = frame.steps; }
  } sync{steps_, frame};
  body->exec(frame);
}

// ---- buffers ------------------------------------------------------------------------

Storage& Interpreter::storage_of(const Buffer& b, const Span& span) {
  Storage* const* st = storage_.find(storage_key(b));
  if (!st) user_error(span, "buffer '" + b->name + "' is used outside its allocation");
  return **st;
}

std::vector<int64_t> Interpreter::eval_shape(const Buffer& b) {
  std::vector<int64_t> dims;
  for (const auto& e : b->shape) dims.push_back(eval_int(e));
  return dims;
}

int64_t Interpreter::element_address(const Buffer& b, const std::vector<Expr>& indices, const Storage& st,
                                     const Span& span) {
  // The hot path of the interpreter: no heap allocation and no strings unless an
  // access fails. Up to kInline dimensions live on the stack.
  constexpr size_t kInline = 8;
  const size_t ndim = b->shape.size();
  int64_t idx_inline[kInline], dim_inline[kInline];
  std::vector<int64_t> idx_heap, dim_heap;
  if (indices.size() > kInline || ndim > kInline) {
    idx_heap.resize(indices.size());
    dim_heap.resize(ndim);
  }
  int64_t* idx = idx_heap.empty() ? idx_inline : idx_heap.data();
  int64_t* dims = dim_heap.empty() ? dim_inline : dim_heap.data();
  for (size_t k = 0; k < indices.size(); ++k) idx[k] = eval_int(indices[k]);
  for (size_t k = 0; k < ndim; ++k) dims[k] = eval_int(b->shape[k]);

  auto fail = [&](const std::string& detail) { interp::out_of_bounds(span, *b, idx, indices.size(), dims, ndim, detail); };
  if (indices.size() != ndim)
    fail("has " + std::to_string(indices.size()) + " dimensions but the shape " +
         shape_text(std::vector<int64_t>(dims, dims + ndim)) + " has " + std::to_string(ndim));
  for (size_t k = 0; k < ndim; ++k)
    if (idx[k] < 0 || idx[k] >= dims[k]) fail("");

  // __int128 so that a wild stride cannot overflow the address computation itself.
  __int128 address = b->elem_offset ? eval_int(b->elem_offset) : 0;
  if (!b->strides.empty()) {
    for (size_t k = 0; k < ndim && k < b->strides.size(); ++k)
      address += static_cast<__int128>(idx[k]) * eval_int(b->strides[k]);
  } else {
    // Row-major (Horner form): ((i0 * d1 + i1) * d2 + i2) ...; in range by the checks.
    int64_t flat = 0;
    for (size_t k = 0; k < ndim; ++k)
      if (__builtin_mul_overflow(flat, dims[k], &flat) || __builtin_add_overflow(flat, idx[k], &flat))
        fail("is beyond any addressable element");
    address += flat;
  }
  const int64_t size = st.size;
  if (address < 0 || address >= size) {
    std::string where = (address > INT64_MAX || address < INT64_MIN) ? std::string("(overflow)")
                                                                       : std::to_string(static_cast<int64_t>(address));
    fail("is element " + where + ", outside its storage of " + std::to_string(size) + " elements");
  }
  return static_cast<int64_t>(address);
}

Scalar Interpreter::load(const BufferLoadNode* op) {
  Storage& st = storage_of(op->buffer, where(op->span));
  int64_t addr = element_address(op->buffer, op->indices, st, where(op->span));
  if (st.track_writes && !st.written[static_cast<size_t>(addr)])
    interp::uninitialized_read(where(op->span), addr, st);
  const DataType t = op->buffer->dtype;
  if (st.array->dtype != t) interp::storage_type_mismatch(where(op->span), *op->buffer, st.array->dtype);
  if (t.is_float()) return interp::make_float(t, st.array->get_float(addr));
  // NDArray::get_int without its range checks (element_address made them): the
  // little-endian bytes, which make_int wraps (sign- or zero-extends) to the type.
  const int nbytes = t.bytes();
  const uint8_t* p = st.array->data.data() + addr * nbytes;
  uint64_t raw = p[0];
  for (int k = 1; k < nbytes; ++k) raw |= uint64_t{p[k]} << (8 * k);
  return interp::make_int(t, static_cast<int64_t>(raw));
}

void Interpreter::store(const BufferStoreNode* op) {
  if (op->value->dtype.is_vector()) return store_vector(op);
  Storage& st = storage_of(op->buffer, where(op->span));
  // Value first, then the address, as the C statement `A[i] = v` may do either; an
  // error in both reports the value's.
  Scalar v = eval(op->value);
  int64_t addr = element_address(op->buffer, op->indices, st, where(op->span));
  const DataType t = op->buffer->dtype;
  if (st.array->dtype != t) interp::storage_type_mismatch(where(op->span), *op->buffer, st.array->dtype);
  // The verifier makes the value's type equal the buffer's; converting anyway keeps a
  // malformed program from storing raw bits of the wrong kind.
  if (v.dtype != t) v = interp::cast(t, v, where(op->span));
  if (t.is_float()) st.array->set_float(addr, v.f);
  else st.array->set_int(addr, v.i);
  if (st.track_writes) st.written[static_cast<size_t>(addr)] = 1;
}

// A vector store writes every lane after computing all of them, so a store whose lanes
// overlap the lanes it loads sees the old values, as one vector instruction would.
void Interpreter::store_vector(const BufferStoreNode* op) {
  Storage& st = storage_of(op->buffer, where(op->span));
  const DataType t = op->buffer->dtype;
  if (st.array->dtype != t) interp::storage_type_mismatch(where(op->span), *op->buffer, st.array->dtype);
  const int lanes = op->value->dtype.lanes();
  std::vector<Scalar> values = eval_lanes(op->value);
  std::vector<int64_t> addresses;
  const int saved = lane_;
  for (lane_ = 0; lane_ < lanes; ++lane_)
    addresses.push_back(element_address(op->buffer, op->indices, st, where(op->span)));
  lane_ = saved;
  for (int k = 0; k < lanes; ++k) {
    Scalar v = values[k].dtype != t ? interp::cast(t, values[k], where(op->span)) : values[k];
    if (t.is_float()) st.array->set_float(addresses[k], v.f);
    else st.array->set_int(addresses[k], v.i);
    if (st.track_writes) st.written[static_cast<size_t>(addresses[k])] = 1;
  }
}

Scalar Interpreter::eval_vmladava(const CallNode* op) {
  const DataType a = op->args.at(1)->dtype, b = op->args.at(2)->dtype;
  const int max_lanes = a.bits() == 8 ? 16 : 8;
  if (a != b || !a.is_int() || (a.bits() != 8 && a.bits() != 16) || a.lanes() > max_lanes)
    user_error(where(op->span), "T.vmladava takes two int8 vectors of up to 16 lanes or two int16 vectors of up to 8, "
                                "of the same type; got " + a.str() + " and " + b.str());
  uint32_t sum = static_cast<uint32_t>(eval(op->args[0]).i);
  const std::vector<Scalar> x = eval_lanes(op->args[1]), y = eval_lanes(op->args[2]);
  for (size_t k = 0; k < x.size(); ++k) sum += static_cast<uint32_t>(x[k].i * y[k].i);
  return interp::make_int(DataType::Int(32), static_cast<int32_t>(sum));
}

std::vector<Scalar> Interpreter::eval_lanes(const Expr& e) {
  std::vector<Scalar> out;
  const int saved = lane_;
  for (lane_ = 0; lane_ < e->dtype.lanes(); ++lane_) out.push_back(eval(e));
  lane_ = saved;
  return out;
}

Scalar Interpreter::eval_shuffle(const ShuffleNode* op) {
  MTIR_ICHECK(lane_ >= 0 && static_cast<size_t>(lane_) < op->indices.size(), "shuffle lane out of range");
  int index = op->indices[static_cast<size_t>(lane_)];
  for (const auto& v : op->vectors) {
    if (index < v->dtype.lanes()) {
      const int saved = lane_;
      lane_ = index;
      Scalar r = eval(v);
      lane_ = saved;
      return r;
    }
    index -= v->dtype.lanes();
  }
  user_error(where(op->span), "shuffle index " + std::to_string(op->indices[static_cast<size_t>(lane_)]) +
                                  " is past the lanes of its vectors");
}

Scalar Interpreter::eval_let(const LetNode* op) {
  if (op->var->dtype.is_vector()) {
    ScopedVector var(this, op->var.get(), eval_lanes(op->value));
    return eval(op->body);
  }
  ScopedVar var(this, op->var.get(), eval(op->value));
  return eval(op->body);
}

// ---- expressions ----------------------------------------------------------------------

Scalar Interpreter::eval_var(const VarNode* v) {
  if (v->dtype.is_vector()) {
    auto vit = vector_vars_.find(v);
    if (vit != vector_vars_.end() && lane_ < static_cast<int>(vit->second.size())) return vit->second[lane_];
  }
  if (const Scalar* value = vars_.find(v)) return *value;
  // A handle (a buffer's data pointer) has no numeric value; it may appear as an
  // attribute node or extern argument, which we never compute with.
  if (v->dtype.is_handle()) return interp::make_int(DataType::Int(64), 0);
  user_error(where(v->span), "variable '" + v->name + "' has no value here (used outside its scope)");
}

Scalar Interpreter::eval_binary(const BinaryNode* op) {
  if (op->kind == ExprKind::And || op->kind == ExprKind::Or) {
    // Short-circuit, as C's && and ||.
    bool a = eval(op->a).truthy();
    bool r = op->kind == ExprKind::And ? (a && eval(op->b).truthy()) : (a || eval(op->b).truthy());
    return interp::make_int(DataType::Bool(), r);
  }
  Scalar a = eval(op->a);
  Scalar b = eval(op->b);
  const DataType t = op->dtype.element_of();
  switch (op->kind) {
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
      if (t.is_integer()) {
        // Most of what a kernel computes (index arithmetic, multiply-accumulate): the
        // same wrap-around as interp::arith, without its call and dispatch.
        const uint64_t x = static_cast<uint64_t>(a.i), y = static_cast<uint64_t>(b.i);
        const uint64_t r = op->kind == ExprKind::Add ? x + y : op->kind == ExprKind::Sub ? x - y : x * y;
        return interp::make_int(t, static_cast<int64_t>(r));
      }
      break;
    default:
      if (is_comparison(op->kind)) return interp::make_int(DataType::Bool(), interp::compare(op->kind, a, b));
  }
  return interp::arith(op->kind, t, a, b, where(op->span));
}

Scalar Interpreter::eval_extern(const CallNode* op) {
  // call_extern("result type", "symbol", args...): skip the leading strings.
  size_t first_arg = 0;
  std::string symbol;
  const auto* s0 = op->args.empty() ? nullptr : as<StringImmNode>(op->args[0]);
  const auto* s1 = op->args.size() < 2 ? nullptr : as<StringImmNode>(op->args[1]);
  if (s0 && s1) {
    symbol = s1->value;
    first_arg = 2;
  } else if (s0) {
    symbol = s0->value;
    first_arg = 1;
  }
  auto fn = options_.extern_functions.find(symbol);
  if (fn == options_.extern_functions.end())
    user_error(where(op->span), "cannot interpret call_extern '" + symbol +
                             "': external functions are not available to the interpreter");
  std::vector<double> values;
  for (size_t k = first_arg; k < op->args.size(); ++k) {
    Scalar v = eval(op->args[k]);
    values.push_back(v.dtype.is_float() ? v.f
                     : v.dtype.is_uint() ? static_cast<double>(static_cast<uint64_t>(v.i))
                                         : static_cast<double>(v.i));
  }
  double r = fn->second(values);
  if (op->dtype.is_void() || op->dtype.is_handle()) return interp::make_int(DataType::Int(32), 0);
  return interp::cast(op->dtype, interp::make_float(DataType::Float(64), r), where(op->span));
}

// Every builtin has a family (interp::call_family, a switch without a default): a new
// row of ir/builtins.def does not compile until the interpreter says what it computes.
Scalar Interpreter::eval_call(const CallNode* op) {
  if (!op->builtin) return eval(expand_tvm_intrinsic(op, "the interpreter"));  // TVM's own intrinsics
  const Builtin b = *op->builtin;
  // An unverified call's arity is checked here (the table's), before any argument is read.
  if (std::string why; !builtin_arity_ok(builtin_info(b), op->args.size(), &why)) user_error(where(op->span), why);
  switch (interp::call_family(b)) {
    case interp::CallFamily::kUnaryMath: {
      interp::UnaryFunction fn;
      MTIR_ICHECK(interp::unary_function(b, &fn), "no math function for " + op->op);
      return interp::unary_math(b, op->dtype.element_of(), eval(op->args[0]), where(op->span), fn);
    }
    case interp::CallFamily::kBinaryMath:
      return interp::binary_math(b, op->dtype.element_of(), eval(op->args[0]), eval(op->args[1]), where(op->span));
    case interp::CallFamily::kIntBinary:
      return interp::int_binary(b, op->dtype.element_of(), eval(op->args[0]), eval(op->args[1]), where(op->span));
    case interp::CallFamily::kKnownRange:
      return interp::known_range(eval(op->args[0]), eval(op->args[1]), eval(op->args[2]), where(op->span));
    case interp::CallFamily::kIfThenElse:
      // Lazy: only the taken side runs, so it may guard an access that would be
      // out of bounds.
      return eval(eval(op->args[0]).truthy() ? op->args[1] : op->args[2]);
    case interp::CallFamily::kExtern: return eval_extern(op);
    case interp::CallFamily::kCallPacked: return call_function(op, /*by_symbol=*/true);
    case interp::CallFamily::kCallTir: return call_function(op, /*by_symbol=*/false);
    case interp::CallFamily::kCallGlobal: return call_global(op);
    case interp::CallFamily::kPureIntrinsic: return eval_pure_intrinsic(b, op);
    case interp::CallFamily::kVmladava: return eval_vmladava(op);
    // `return x` / T.ret(x): unwinds to the function's run().
    case interp::CallFamily::kReturn:
      throw Returned{op->args.empty() ? Scalar{} : eval(op->args[0])};
    case interp::CallFamily::kThrowLastError: {
      if (op->args.empty()) user_error(where(op->span), interp::kNoMessageError);
      const auto* format = as<StringImmNode>(op->args[0]);
      if (!format) user_error(where(op->span), "T.tvm_throw_last_error needs a message string");
      std::vector<int64_t> values;
      for (size_t i = 1; i < op->args.size(); ++i) values.push_back(eval_int(op->args[i]));
      user_error(where(op->span), format_error_message(format->value, values));
    }
    case interp::CallFamily::kRefused: user_error(where(op->span), interp::builtin_refusal(op));
  }
  MTIR_ICHECK(false, "unhandled builtin");
}

// Calls between functions of the module: T.tvm_call_packed("f", args...) and
// T.call_tir("f", args...). A tensor argument (tvm_make_tensor over a pointer, or a
// tir_region of a buffer) is copied into a tensor of the callee's view, and copied back
// after the call, so the callee sees exactly the bytes a C callee would and its writes
// land in the caller's memory.
Scalar Interpreter::call_function(const CallNode* op, bool by_symbol) {
  const Span& at = where(op->span);
  const auto* name = op->args.empty() ? nullptr : as<StringImmNode>(op->args[0]);
  if (!name) user_error(at, "T." + op->op + " needs the function name first");
  PrimFunc callee;
  std::string callee_name;
  for (const auto& [n, f] : module_->functions) {
    auto sym = f->attrs.find("global_symbol");
    bool named = n == name->value || (by_symbol && sym != f->attrs.end() && sym->second == AttrValue(name->value));
    if (named) callee = f, callee_name = n;
  }
  if (!callee) user_error(at, "T." + op->op + ": no function '" + name->value + "' in the module");
  std::vector<NDArray> tensors(op->args.size());
  std::vector<CopyBack> copies;
  std::vector<InterpArg> args;
  for (size_t i = 1; i < op->args.size(); ++i) {
    const auto* t = as<CallNode>(op->args[i]);
    Storage* st = nullptr;
    int64_t offset = 0;
    DataType dtype;
    std::vector<int64_t> shape;
    if (t && t->is(Builtin::TvmMakeTensor)) {
      const auto* data = t->args.size() >= 2 ? as<VarNode>(t->args[0]) : nullptr;
      const auto* dtype_text = t->args.size() >= 2 ? as<StringImmNode>(t->args[1]) : nullptr;
      auto parsed = dtype_text ? DataType::parse(dtype_text->value) : std::nullopt;
      if (!data || !parsed) user_error(at, "T.tvm_make_tensor needs a pointer variable and a dtype string");
      Storage* const* found = storage_.find(data);
      if (!found) user_error(at, "T.tvm_make_tensor: '" + data->name + "' points to no memory here");
      st = *found;
      dtype = *parsed;
      for (size_t k = 2; k < t->args.size(); ++k) shape.push_back(eval_int(t->args[k]));
    } else if (t && t->is(Builtin::TirRegion)) {
      const auto* load = t->args.empty() ? nullptr : as<BufferLoadNode>(t->args[0]);
      if (!load) user_error(at, "malformed region in T." + op->op);
      st = &storage_of(load->buffer, at);
      offset = element_address(load->buffer, load->indices, *st, at);
      dtype = load->buffer->dtype;
      // The callee's buffer says how it sees the region (unit dimensions aside).
      const Buffer& pb = i - 1 < callee->param_buffers.size() ? callee->param_buffers[i - 1] : nullptr;
      if (!pb) user_error(at, "T." + op->op + ": argument " + std::to_string(i - 1) + " is a region but '" +
                                  callee_name + "' takes a scalar there");
      shape = eval_shape(pb);
    } else {
      Scalar v = eval(op->args[i]);
      if (op->args[i]->dtype.is_float()) args.push_back(v.f);
      else args.push_back(v.i);
      continue;
    }
    tensors[i] = copy_in(op, st, offset, dtype, shape);
    copies.push_back({st, offset, i});
    args.push_back(&tensors[i]);
  }
  std::optional<Scalar> returned = run_callee(callee, callee_name, args);
  copy_back(copies, tensors);
  return interp::make_int(DataType::Int(32), returned ? returned->i : 0);
}

NDArray Interpreter::copy_in(const CallNode* op, Storage* st, int64_t offset, DataType dtype,
                             std::vector<int64_t> shape) {
  const NDArray& mem = st->array ? *st->array : *st->owned;
  NDArray view = NDArray::zeros(dtype, std::move(shape));
  const size_t begin = static_cast<size_t>(offset) * static_cast<size_t>(dtype.bytes());
  if (dtype != mem.dtype || begin + view.data.size() > mem.data.size())
    user_error(where(op->span), "T." + op->op + ": a " + dtype.str() + " tensor of " +
                                    std::to_string(view.num_elements()) + " elements at element " +
                                    std::to_string(offset) + " does not fit the " + mem.dtype.str() + " memory of '" +
                                    st->name + "'");
  std::copy(mem.data.begin() + static_cast<std::ptrdiff_t>(begin),
            mem.data.begin() + static_cast<std::ptrdiff_t>(begin + view.data.size()), view.data.begin());
  return view;
}

void Interpreter::copy_back(const std::vector<CopyBack>& copies, const std::vector<NDArray>& tensors) {
  for (const CopyBack& c : copies) {
    NDArray& mem = c.storage->array ? *c.storage->array : *c.storage->owned;
    const NDArray& t = tensors[c.index];
    const size_t begin = static_cast<size_t>(c.offset) * static_cast<size_t>(t.dtype.bytes());
    std::copy(t.data.begin(), t.data.end(), mem.data.begin() + static_cast<std::ptrdiff_t>(begin));
    // What the callee was given counts as initialized now (it may have written all of it).
    if (c.storage->track_writes)
      std::fill(c.storage->written.begin() + c.offset, c.storage->written.begin() + c.offset + t.num_elements(), 1);
  }
}

std::optional<Scalar> Interpreter::run_callee(const PrimFunc& callee, const std::string& name,
                                              const std::vector<InterpArg>& args) {
  Interpreter sub(options_, module_);
  sub.steps_ = steps_;
  struct Sync {  // the callee's steps count, however it ends
    int64_t& steps;
    const Interpreter& sub;
    ~Sync() { steps = sub.steps_; }
  } sync{steps_, sub};
  return sub.run(callee, name, args);
}

// Module.sub(args...) (call_global): scalars as they are; a pointer (a buffer's data, a
// pointer parameter, T.address_of(B[i])) as its memory from the element it points to up
// to the end, copied in and back as call_function does. Two pointers into one memory
// would each see their own copy, so they are refused.
Scalar Interpreter::call_global(const CallNode* op) {
  std::vector<interp::CallArg> values(op->args.size() > 0 ? op->args.size() - 1 : 0);
  for (size_t i = 1; i < op->args.size(); ++i) {
    if (!op->args[i]->dtype.is_handle()) values[i - 1].value = eval(op->args[i]);
    else std::tie(values[i - 1].storage, values[i - 1].offset) = pointer_of(op->args[i], where(op->span));
  }
  return call_global_with(op, values);
}

// The call itself, its arguments evaluated (by the tree walk or the compiled form).
Scalar Interpreter::call_global_with(const CallNode* op, const std::vector<interp::CallArg>& values) {
  const Span& at = where(op->span);
  const auto* name = op->args.empty() ? nullptr : as<StringImmNode>(op->args[0]);
  PrimFunc callee = name ? module_->lookup(name->value) : nullptr;
  if (!callee) user_error(at, "no function '" + (name ? name->value : "?") + "' in the module to call");
  if (callee->params.size() != values.size())
    user_error(at, "'" + name->value + "' takes " + std::to_string(callee->params.size()) + " arguments, got " +
                       std::to_string(values.size()));
  std::vector<NDArray> tensors(values.size());
  std::vector<CopyBack> copies;
  std::vector<InterpArg> args;
  for (size_t i = 0; i < values.size(); ++i) {
    Storage* st = values[i].storage;
    if (!st) {
      const Scalar& v = values[i].value;
      if (v.dtype.is_float()) args.push_back(v.f);
      else args.push_back(v.i);
      continue;
    }
    for (const CopyBack& c : copies)
      if (c.storage == st)
        user_error(at, "two pointer arguments of this call point into '" + st->name +
                           "': the interpreter gives the callee a copy per pointer, so it cannot run this call");
    const NDArray& mem = st->array ? *st->array : *st->owned;
    tensors[i] = copy_in(op, st, values[i].offset, mem.dtype, {st->size - values[i].offset});
    copies.push_back({st, values[i].offset, i});
    args.push_back(&tensors[i]);
  }
  std::optional<Scalar> returned = run_callee(callee, name->value, args);
  copy_back(copies, tensors);
  if (op->dtype.is_void() || !returned) return interp::make_int(DataType::Int(32), 0);
  return *returned;
}

// The memory a pointer argument points into and the element it points to.
std::pair<Storage*, int64_t> Interpreter::pointer_of(const Expr& e, const Span& at) {
  if (const auto* v = as<VarNode>(e)) {
    if (Storage* const* st = storage_.find(v)) return {*st, 0};
    user_error(at, "pointer '" + v->name + "' points to no memory the interpreter knows here");
  }
  const auto* call = as<CallNode>(e);
  const auto* load = call && call->is(Builtin::AddressOf) ? as<BufferLoadNode>(call->args.at(0)) : nullptr;
  if (!load)
    user_error(at, "the interpreter passes a pointer argument that is a buffer's data (A.data), a pointer variable "
                   "or T.address_of(A[i])");
  Storage* st = &storage_of(load->buffer, at);
  return {st, element_address(load->buffer, load->indices, *st, at)};
}

Scalar Interpreter::eval(const Expr& e) {
  MTIR_ICHECK(e != nullptr, "null expression");
  switch (e->kind) {
    case ExprKind::IntImm: return interp::make_int(e->dtype, static_cast<const IntImmNode*>(e.get())->value);
    case ExprKind::FloatImm: return interp::make_float(e->dtype, static_cast<const FloatImmNode*>(e.get())->value);
    case ExprKind::StringImm:
      user_error(where(e->span), "a string has no value outside call_extern");
    case ExprKind::Var: return eval_var(static_cast<const VarNode*>(e.get()));
#define MTIR_BINARY(Name) case ExprKind::Name:
#include "ir/nodes.def"
      return eval_binary(static_cast<const BinaryNode*>(e.get()));
    case ExprKind::Not: {
      bool a = eval(static_cast<const NotNode*>(e.get())->a).truthy();
      return interp::make_int(DataType::Bool(), !a);
    }
    case ExprKind::Select: {
      // Both sides are evaluated (errors in either are reported), as TIR's Select says.
      const auto* op = static_cast<const SelectNode*>(e.get());
      bool c = eval(op->condition).truthy();
      Scalar t = eval(op->true_value);
      Scalar f = eval(op->false_value);
      return c ? t : f;
    }
    case ExprKind::Cast: {
      const auto* op = static_cast<const CastNode*>(e.get());
      const DataType t = op->dtype.element_of();
      const Scalar v = eval(op->value);
      // Integer to integer (requantization's widening and narrowing): interp::cast's
      // modular conversion, inline.
      if (t.is_integer() && !v.dtype.is_float()) return interp::make_int(t, v.i);
      return interp::cast(t, v, where(op->span));
    }
    case ExprKind::BufferLoad: return load(static_cast<const BufferLoadNode*>(e.get()));
    case ExprKind::Call: return eval_call(static_cast<const CallNode*>(e.get()));
    case ExprKind::Ramp: return eval_ramp(static_cast<const RampNode*>(e.get()));
    case ExprKind::Broadcast: return eval(static_cast<const BroadcastNode*>(e.get())->value);
    case ExprKind::Shuffle: return eval_shuffle(static_cast<const ShuffleNode*>(e.get()));
    case ExprKind::Let: return eval_let(static_cast<const LetNode*>(e.get()));
  }
  MTIR_ICHECK(false, "unhandled expression kind");
}

Scalar Interpreter::eval_ramp(const RampNode* op) {
  const DataType t = op->base->dtype;
  Scalar step = interp::arith(ExprKind::Mul, t, eval(op->stride), interp::make_int(t, lane_), where(op->span));
  return interp::arith(ExprKind::Add, t, eval(op->base), step, where(op->span));
}

// ---- statements -------------------------------------------------------------------------

void Interpreter::count_step(const Span& span) {
  if (++steps_ > options_.max_steps) interp::step_limit_exceeded(span, options_.max_steps);
}

void Interpreter::exec_for(const ForNode* op) {
  if (op->for_kind == ForKind::kThreadBinding)
    user_error(op->span, "loop '" + op->loop_var->name + "' is bound to the GPU thread '" + op->thread_tag +
                             "': microtir targets CPUs and microcontrollers and does not run GPU thread bindings");
  // Every loop kind runs serially: parallel and vectorized loops must not depend on
  // the order anyway, and serial order is the one a reader expects.
  const DataType t = op->loop_var->dtype;
  const int64_t min = eval_int(op->min);
  const int64_t extent = eval_int(op->extent);
  ScopedVar loop_var(this, op->loop_var.get(), interp::make_int(t, min));
  for (int64_t k = 0; k < extent; ++k) {
    count_step(op->span);
    loop_var.set(interp::make_int(t, static_cast<int64_t>(static_cast<uint64_t>(min) + static_cast<uint64_t>(k))));
    exec(op->body);
    if (exit_ != LoopExit::kNone && take_exit()) break;
  }
}

void Interpreter::exec_allocate(const AllocateNode* op) {
  const Buffer& b = op->buffer;
  const int64_t count = interp::allocation_elements(
      *b, eval_shape(b), [&] { return eval_int(b->elem_offset); }, [&](size_t k) { return eval_int(b->strides[k]); },
      op->span, options_.max_alloc_bytes);
  exec_in_storage(b, interp::new_allocation(*b, count), op->body);
}

// Runs `body` with `st` as the storage of `b`, restoring the previous binding after.
void Interpreter::exec_in_storage(const Buffer& b, std::unique_ptr<Storage> st, const Stmt& body) {
  exec_in_shared_storage(storage_key(b), st.get(), body);
}

// Runs `body` with `st` (owned elsewhere) as the storage under `key`, restoring after.
void Interpreter::exec_in_shared_storage(const void* key, Storage* st, const Stmt& body) {
  Storage* const* found = storage_.find(key);
  Storage* saved = found ? *found : nullptr;
  storage_[key] = st;
  // Restore on every exit, including an error thrown from the body.
  struct Restore {
    PointerMap<Storage*>& map;
    const void* key;
    Storage* saved;
    ~Restore() {
      if (saved) map[key] = saved;
      else map.erase(key);
    }
  } restore{storage_, key, saved};
  exec(body);
}

void Interpreter::exec(const Stmt& s) {
  if (!s) return;
  count_step(s->span);
  stmt_span_ = &s->span;
  switch (s->kind) {
    case StmtKind::BufferStore: store(static_cast<const BufferStoreNode*>(s.get())); return;
    case StmtKind::For: exec_for(static_cast<const ForNode*>(s.get())); return;
    case StmtKind::IfThenElse: {
      const auto* op = static_cast<const IfThenElseNode*>(s.get());
      if (eval(op->condition).truthy()) exec(op->then_case);
      else exec(op->else_case);
      return;
    }
    case StmtKind::LetStmt: {
      const auto* op = static_cast<const LetStmtNode*>(s.get());
      if (op->var->dtype.is_vector()) {
        ScopedVector var(this, op->var.get(), eval_lanes(op->value));
        exec(op->body);
        return;
      }
      ScopedVar var(this, op->var.get(), eval(op->value));
      // A pointer bound to another buffer's data: views over it use that storage.
      const auto* pointee = as<VarNode>(op->value);
      Storage* const* shared = pointee && op->var->dtype.is_handle() ? storage_.find(pointee) : nullptr;
      if (shared) exec_in_shared_storage(op->var.get(), *shared, op->body);
      else exec(op->body);
      return;
    }
    case StmtKind::SeqStmt:
      for (const auto& child : static_cast<const SeqStmtNode*>(s.get())->seq) {
        exec(child);
        if (exit_ != LoopExit::kNone) return;
      }
      return;
    case StmtKind::While: {
      const auto* op = static_cast<const WhileNode*>(s.get());
      while (eval(op->condition).truthy()) {
        exec(op->body);
        if (exit_ != LoopExit::kNone && take_exit()) break;
      }
      return;
    }
    case StmtKind::Evaluate:
      if (LoopExit e = loop_exit(s); e != LoopExit::kNone) exit_ = e;
      else eval(static_cast<const EvaluateNode*>(s.get())->value);
      return;
    case StmtKind::Allocate: exec_allocate(static_cast<const AllocateNode*>(s.get())); return;
    case StmtKind::AllocateConst: {
      const auto* op = static_cast<const AllocateConstNode*>(s.get());
      exec_in_storage(op->buffer, interp::new_constant_allocation(*op), op->body);
      return;
    }
    case StmtKind::BufferRealize:
      internal_error(__FILE__, __LINE__, "T.realize is refused before interpretation (refuse_carried_types)");
    case StmtKind::DeclBuffer: {
      // A view of storage bound elsewhere: accesses go through the data variable and
      // are bounds-checked against that storage, so only the element type must agree.
      const auto* op = static_cast<const DeclBufferNode*>(s.get());
      const Storage& st = storage_of(op->buffer, op->span);
      if (st.array->dtype != op->buffer->dtype) interp::decl_buffer_type_mismatch(op->span, *op->buffer, st);
      exec(op->body);
      return;
    }
    case StmtKind::AttrStmt: {
      const auto* op = static_cast<const AttrStmtNode*>(s.get());
      if (op->key == "thread_extent")
        user_error(op->span, "T.launch_thread starts GPU threads: microtir targets CPUs and microcontrollers and does "
                             "not run them");
      exec(op->body);
      return;
    }
    case StmtKind::AssertStmt: {
      const auto* op = static_cast<const AssertStmtNode*>(s.get());
      if (!eval(op->condition).truthy()) user_error(op->span, "assertion failed: " + op->message);
      exec(op->body);
      return;
    }
  }
  MTIR_ICHECK(false, "unhandled statement kind");
}

}  // namespace

std::optional<int64_t> interpret(const IRModule& mod, const std::string& func_name,
                                 const std::vector<InterpArg>& args, const InterpOptions& options) {
  if (!mod.lookup(func_name)) user_error(Span{}, "no function '" + func_name + "' in module");
  refuse_carried_types(mod, "the interpreter");
  // Buffers of vector type run as scalar buffers with a dimension of lanes, as compiled.
  const IRModule expanded = expand_vector_buffers(mod);
  PrimFunc f = expanded.lookup(func_name);
  std::optional<interp::Scalar> r = Interpreter(options, &expanded).run(f, func_name, args);
  if (!r) return std::nullopt;
  return r->i;
}

}  // namespace mtir
