// LowerBuiltins: a packed call `T.tvm_call_packed("f", tensors and scalars...)` becomes
// what the C code will do, spelled out in TIR: TVMValue and type-code arrays, one
// DLTensor and shape array per tensor argument on the caller's stack, a store for
// every field, the call, and a return of the callee's error code when it fails. After
// this pass the code generators have nothing magic left to expand.
//
// A call to a packed function of the same module whose arguments are all known at
// compile time (tensors of constant shape, scalars) is checked here instead of at run
// time, and calls the function's kernel directly: same result, none of the cost. A
// mismatch is a compile-time error naming the argument.
#include <map>

#include "ir/mutator.h"
#include "ir/op.h"
#include "transform/transform.h"

namespace mtir {
namespace {

const DataType kI32 = DataType::Int(32), kHandle = DataType::Handle();

Expr i32(int64_t v) { return IntImm(kI32, v); }
Expr builtin(const char* name, std::vector<Expr> args) { return Call(lookup_op(name)->result, name, std::move(args)); }
Stmt effect(const char* name, std::vector<Expr> args) { return Evaluate(builtin(name, std::move(args))); }


// What a packed function of the module expects: its kernel's name and, per argument,
// the buffer (dtype, shape) or the scalar type.
struct KernelSignature {
  std::string kernel;
  std::vector<Buffer> buffers;  // null for scalars
  std::vector<DataType> scalars;
};

std::map<std::string, KernelSignature> kernel_signatures(const IRModule& m) {
  std::map<std::string, KernelSignature> out;
  for (const auto& [name, f] : m.functions) {
    if (!is_packed(f)) continue;
    PrimFunc kernel = m.lookup(name + "_compute");
    if (!kernel) continue;
    const std::string symbol = symbol_of(name, f);
    KernelSignature sig;
    sig.kernel = symbol_of(name + "_compute", kernel);
    // The kernel declares each pointer parameter's buffer at its top.
    std::map<const VarNode*, Buffer> views;
    for (Stmt s = kernel->body; s && s->kind == StmtKind::DeclBuffer;) {
      const auto* d = static_cast<const DeclBufferNode*>(s.get());
      views.emplace(d->buffer->data.get(), d->buffer);  // the first is the parameter's own
      s = d->body;
    }
    bool static_shapes = true;
    for (const auto& p : kernel->params) {
      auto it = views.find(p.get());
      sig.buffers.push_back(it == views.end() ? nullptr : it->second);
      sig.scalars.push_back(p->dtype);
      if (it != views.end())
        for (const auto& e : it->second->shape) static_shapes = static_shapes && as_const_int(e);
    }
    if (static_shapes) out[symbol] = sig;
  }
  return out;
}

class Lowerer : public Mutator {
 public:
  explicit Lowerer(const std::map<std::string, KernelSignature>* kernels) : kernels_(kernels) {}

 protected:
  Stmt mutate_Evaluate(const EvaluateNode* op, const Stmt& self) override {
    const auto* call = as<CallNode>(op->value);
    if (!call || !call->is(Builtin::TvmCallPacked)) return Mutator::mutate_Evaluate(op, self);
    return lower(call, op->span);
  }

  Expr mutate_Call(const CallNode* op, const Expr& self) override {
    if (op->is(Builtin::TvmCallPacked) || op->is(Builtin::TvmMakeTensor)) {
      user_error(op->span, "T." + op->op + " can only be used as T.evaluate(T.tvm_call_packed(...)), with tensors "
                                           "made by T.tvm_make_tensor as its arguments");
    }
    return Mutator::mutate_Call(op, self);
  }

 private:
  const std::map<std::string, KernelSignature>* kernels_;

  // The direct kernel call, after checking at compile time what the packed wrapper
  // would check at run time.
  Stmt call_kernel(const std::string& callee, const KernelSignature& sig, const CallNode* call, const Span& span) {
    const size_t n = call->args.size() - 1;
    if (n != sig.buffers.size()) {
      user_error(span, "T.tvm_call_packed: '" + callee + "' takes " + std::to_string(sig.buffers.size()) +
                           " arguments, got " + std::to_string(n));
    }
    std::vector<Expr> args = {StringImm(sig.kernel)};
    for (size_t i = 0; i < n; ++i) {
      const Expr& raw = call->args[i + 1];
      const auto* tensor = as<CallNode>(raw);
      const std::string who = "T.tvm_call_packed: argument " + std::to_string(i) + " of '" + callee + "'";
      if (const Buffer& b = sig.buffers[i]) {
        if (!tensor || !tensor->is(Builtin::TvmMakeTensor)) user_error(span, who + " must be a tensor (T.tvm_make_tensor)");
        const auto* dtype_text = tensor->args.size() >= 2 ? as<StringImmNode>(tensor->args[1]) : nullptr;
        std::vector<int64_t> dims;
        for (size_t k = 2; k < tensor->args.size(); ++k) {
          const int64_t* c = as_const_int(tensor->args[k]);
          if (!c) return Stmt();  // a run-time shape: the wrapper checks it
          dims.push_back(*c);
        }
        std::string want = b->dtype.str() + " (", got = (dtype_text ? dtype_text->value : "?") + " (";
        for (size_t k = 0; k < b->shape.size(); ++k) want += (k ? ", " : "") + std::to_string(*as_const_int(b->shape[k]));
        for (size_t k = 0; k < dims.size(); ++k) got += (k ? ", " : "") + std::to_string(dims[k]);
        want += ")", got += ")";
        if (want != got) user_error(span, who + " must be a " + want + " tensor, got " + got);
        args.push_back(tensor->args[0]);
      } else {
        Expr v = mutate(raw);
        DataType t = sig.scalars[i];
        if (tensor && tensor->is(Builtin::TvmMakeTensor)) user_error(span, who + " must be a " + t.str() + " scalar, got a tensor");
        // Same type, or a constant that fits: anything else the wrapper checks at run time.
        const int64_t* c = as_const_int(v);
        bool fits = v->dtype == t || (t.is_float() && v->dtype.is_float()) ||
                    (c && (t.is_integer() || t.is_bool()) && wrap_int(t, *c) == *c);
        if (!fits) return Stmt();
        args.push_back(v->dtype == t ? v : Cast(t, v));
      }
    }
    Var rc = MakeVar("kernel_rc", kI32);
    return LetStmt(rc, Call(kI32, "call_extern", std::move(args)),
                   IfThenElse(Binary(ExprKind::NE, rc, i32(0)), effect("tvm_return", {rc})), span);
  }

  Stmt lower(const CallNode* call, const Span& span) {
    const auto* name = call->args.empty() ? nullptr : as<StringImmNode>(call->args[0]);
    if (!name) user_error(span, "T.tvm_call_packed needs the function name first");
    auto known = kernels_->find(name->value);
    if (known != kernels_->end()) {
      if (Stmt direct = call_kernel(name->value, known->second, call, span)) return direct;
    }
    const int64_t n = static_cast<int64_t>(call->args.size()) - 1;
    Var values = MakeVar("packed_values", kHandle), codes = MakeVar("packed_codes", kHandle);
    std::vector<std::pair<Var, Expr>> lets = {
        {values, builtin("tvm_stack_alloca", {StringImm("arg_value"), i32(std::max<int64_t>(n, 1))})},
        {codes, builtin("tvm_stack_alloca", {StringImm("arg_tcode"), i32(std::max<int64_t>(n, 1))})}};
    std::vector<Stmt> stores;
    for (int64_t i = 0; i < n; ++i) {
      const Expr& raw = call->args[static_cast<size_t>(i) + 1];
      const auto* tensor = as<CallNode>(raw);
      Expr arg = tensor && tensor->is(Builtin::TvmMakeTensor) ? raw : mutate(raw);
      if (tensor && tensor->is(Builtin::TvmMakeTensor)) {
        const auto* dtype_text = tensor->args.size() >= 2 ? as<StringImmNode>(tensor->args[1]) : nullptr;
        auto dtype = dtype_text ? DataType::parse(dtype_text->value) : std::nullopt;
        if (!dtype || dtype->is_handle() || dtype->is_void())
          user_error(span, "T.tvm_make_tensor needs an element type such as \"float32\"");
        const int64_t ndim = static_cast<int64_t>(tensor->args.size()) - 2;
        Var shape = MakeVar("packed_shape", kHandle), array = MakeVar("packed_tensor", kHandle);
        lets.push_back({shape, builtin("tvm_stack_alloca", {StringImm("shape"), i32(std::max<int64_t>(ndim, 1))})});
        lets.push_back({array, builtin("tvm_stack_alloca", {StringImm("array"), i32(1)})});
        for (int64_t k = 0; k < ndim; ++k)
          stores.push_back(effect("tvm_set_shape", {shape, i32(k), tensor->args[static_cast<size_t>(k) + 2]}));
        stores.push_back(effect("tvm_tensor_init", {array, tensor->args[0], shape, i32(ndim), i32(dl_type_code(*dtype)),
                                                    i32(dtype->is_bool() ? 8 : dtype->bits())}));
        stores.push_back(effect("tvm_set_arg_handle", {values, i32(i), array}));
        stores.push_back(effect("tvm_set_type_code", {codes, i32(i), i32(7)}));
      } else if (arg->dtype.is_float()) {
        Expr wide = arg->dtype.bits() == 64 ? arg : Cast(DataType::Float(64), arg);
        stores.push_back(effect("tvm_set_arg_float", {values, i32(i), wide}));
        stores.push_back(effect("tvm_set_type_code", {codes, i32(i), i32(2)}));
      } else if (arg->dtype.is_integer() || arg->dtype.is_bool()) {
        Expr wide = arg->dtype == DataType::Int(64) ? arg : Cast(DataType::Int(64), arg);
        stores.push_back(effect("tvm_set_arg_int", {values, i32(i), wide}));
        stores.push_back(effect("tvm_set_type_code", {codes, i32(i), i32(0)}));
      } else {
        user_error(span, "T.tvm_call_packed: argument " + std::to_string(i + 1) + " of type " + arg->dtype.str() +
                             " cannot be passed (pass tensors with T.tvm_make_tensor)");
      }
    }
    Var rc = MakeVar("packed_rc", kI32);
    Stmt check = IfThenElse(Binary(ExprKind::NE, rc, i32(0)), effect("tvm_return", {rc}));
    stores.push_back(LetStmt(rc, builtin("tvm_call_packed_lowered", {call->args[0], values, codes, i32(n)}), check));
    Stmt body = SeqStmt(stores, span);
    for (size_t k = lets.size(); k-- > 0;) body = LetStmt(lets[k].first, lets[k].second, body, span);
    return body;
  }
};

}  // namespace

Pass LowerBuiltins() {
  Pass p;
  p.name = "lower_builtins";
  p.run = [](const IRModule& m) {
    std::map<std::string, KernelSignature> kernels = kernel_signatures(m);
    IRModule out = m;
    for (auto& [name, f] : out.functions) f = Lowerer(&kernels).mutate_func(f);
    return out;
  };
  return p;
}

}  // namespace mtir
