// MakePackedAPI: wraps each PrimFunc in the packed calling convention
//   int32_t f(TVMValue* args, int32_t* arg_type_ids, int32_t num_args,
//             TVMValue* out_ret_value, int32_t* out_ret_tcode, void* resource_handle)
// keeping the buffer signature as checks: the argument count, every type code, and for
// each tensor its pointer, ndim, dtype, static shape, strides, device, byte offset,
// data pointer and declared alignment. A failed check sets the runtime's last error to
// a message naming the function, the argument, what was expected and what came, and
// returns -1: a caller's mistake is never a crash. The computation itself moves to an
// internal function with the unpacked signature (`<name>_compute`, static in C), which
// the wrapper calls once the checks pass: the kernel keeps restrict pointer parameters
// that the C compiler can optimize, and the wrapper stays small enough to inline.
#include <functional>
#include <set>
#include <unordered_set>

#include "ir/op.h"
#include "transform/pointer_signature.h"
#include "transform/transform.h"

namespace mtir {
namespace {

// Type codes of TVMValue arguments (tvm/runtime/c_runtime_api.h).
constexpr int64_t kArgInt = 0, kArgFloat = 2, kOpaqueHandle = 3, kNullptr = 4, kDLTensorHandle = 7,
                  kNDArrayHandle = 13;
constexpr int64_t kDLCPU = 1;

const DataType kI32 = DataType::Int(32), kI64 = DataType::Int(64), kHandle = DataType::Handle();

Expr i32(int64_t v) { return IntImm(kI32, v); }
Expr i64(int64_t v) { return IntImm(kI64, v); }
Expr builtin(const char* name, std::vector<Expr> args) {
  return Call(lookup_op(name)->result, name, std::move(args));
}
Expr ne(const Expr& a, const Expr& b) { return Binary(ExprKind::NE, a, b); }
Expr any(const std::vector<Expr>& conds) {
  Expr out = conds[0];
  for (size_t i = 1; i < conds.size(); ++i) out = Binary(ExprKind::Or, out, conds[i]);
  return out;
}
Expr to_i64(const Expr& e) {
  if (e->dtype == kI64) return e;
  if (const int64_t* c = as_const_int(e)) return i64(*c);
  return Cast(kI64, e);
}


// The prologue, built front to back and wrapped around the body at the end.
class Prologue {
 public:
  explicit Prologue(std::string fn) : fn_(std::move(fn)) {}

  // if (fails) { set last error "message" (with "{}" from `values`); return -1; }
  void check(const Expr& fails, const std::string& message, std::vector<Expr> values = {}) {
    std::vector<Expr> args = {StringImm(fn_ + ": " + message)};
    for (auto& v : values) args.push_back(v);
    Stmt thrown = Evaluate(Call(kI32, "tvm_throw_last_error", std::move(args)));
    steps_.push_back([fails, thrown](Stmt rest) { return SeqStmt({IfThenElse(fails, thrown), rest}); });
  }
  void let(const Var& v, const Expr& value) {
    steps_.push_back([v, value](Stmt rest) { return LetStmt(v, value, rest); });
  }
  Stmt wrap(Stmt body) const {
    for (size_t i = steps_.size(); i-- > 0;) body = steps_[i](body);
    return body;
  }

 private:
  std::string fn_;
  std::vector<std::function<Stmt(Stmt)>> steps_;
};

class PackedWrapper {
 public:
  PackedWrapper(const std::string& name, const PrimFunc& f) : name_(name), f_(f), prologue_(name) {}

  // The kernel with the unpacked signature, called by the wrapper run() builds.
  PrimFunc compute(const std::string& symbol) {
    PrimFunc c = to_pointer_signature(name_, f_, /*runtime_shapes=*/true, &extra_params_);
    auto out = std::make_shared<PrimFuncNode>(*c);
    out->attrs["global_symbol"] = symbol;
    out->attrs["tir.internal"] = true;
    out->attrs["tir.kernel_of"] = name_;
    compute_symbol_ = symbol;
    return out;
  }

  PrimFunc run() {
    Var args = MakeVar("args", kHandle), type_ids = MakeVar("arg_type_ids", kHandle);
    Var num_args = MakeVar("num_args", kI32), ret_value = MakeVar("out_ret_value", kHandle);
    Var ret_tcode = MakeVar("out_ret_tcode", kHandle), resource = MakeVar("resource_handle", kHandle);
    const int64_t n = static_cast<int64_t>(f_->params.size());
    prologue_.check(ne(num_args, i32(n)), "expected " + std::to_string(n) + " arguments, got {}", {num_args});
    // Scalars first: shapes may refer to them.
    for (size_t i = 0; i < f_->params.size(); ++i)
      if (!f_->param_buffers[i]) scalar_arg(args, type_ids, i);
    // Tensors in two rounds: every extent that is a plain variable is bound before any
    // extent that computes with one is checked (`(n + 1,)` may come before `(n,)`).
    std::vector<Var> handles(f_->params.size());
    for (size_t i = 0; i < f_->params.size(); ++i)
      if (f_->param_buffers[i]) handles[i] = tensor_header(args, type_ids, i);
    for (size_t i = 0; i < f_->params.size(); ++i)
      if (f_->param_buffers[i]) tensor_layout(handles[i], i);

    auto out = std::make_shared<PrimFuncNode>(*f_);
    out->params = {args, type_ids, num_args, ret_value, ret_tcode, resource};
    out->param_buffers.assign(6, nullptr);
    // Every parameter of the kernel is bound by now: data pointers, scalars and the
    // shapes read from the tensors.
    std::vector<Expr> call_args = {StringImm(compute_symbol_)};
    for (size_t i = 0; i < f_->params.size(); ++i)
      call_args.push_back(f_->param_buffers[i] ? Expr(f_->param_buffers[i]->data) : Expr(f_->params[i]));
    for (const Var& v : extra_params_) call_args.push_back(v);
    if (f_->ret_type.is_void()) {
      Expr kernel = Call(kI32, "call_extern", std::move(call_args));
      out->body = prologue_.wrap(Evaluate(builtin("tvm_return", {kernel})));
    } else {
      // A function that returns a value (-> T.int32) hands it back in the packed return
      // slot as an int (type code 0, kTVMArgInt) or a float (type code 2, as a double)
      // and returns 0, as TVM's packed API does.
      Var result = MakeVar("result", f_->ret_type);
      const bool is_float = f_->ret_type.is_float();
      Expr value = is_float ? builtin("tvm_set_arg_float", {ret_value, IntImm(kI32, 0), Cast(DataType::Float(64), result)})
                            : builtin("tvm_set_arg_int", {ret_value, IntImm(kI32, 0), Cast(DataType::Int(64), result)});
      Expr code = IntImm(kI32, is_float ? kArgFloat : kArgInt);
      Stmt give = SeqStmt({Evaluate(value), Evaluate(builtin("tvm_set_type_code", {ret_tcode, IntImm(kI32, 0), code})),
                           Evaluate(builtin("tvm_return", {IntImm(kI32, 0)}))});
      out->body = prologue_.wrap(LetStmt(result, Call(f_->ret_type, "call_extern", std::move(call_args)), give));
    }
    out->ret_type = DataType::Void();
    out->attrs["calling_conv"] = std::string("packed");
    return out;
  }

 private:
  std::string who(size_t i) const { return "argument " + std::to_string(i) + " ('" + f_->params[i]->name + "')"; }

  Var type_code(const Var& type_ids, size_t i) {
    Var code = MakeVar(f_->params[i]->name + "_code", kI32);
    prologue_.let(code, builtin("tvm_arg_type_code", {type_ids, i32(static_cast<int64_t>(i))}));
    return code;
  }

  void scalar_arg(const Var& args, const Var& type_ids, size_t i) {
    const Var& p = f_->params[i];
    Var code = type_code(type_ids, i);
    Expr index = i32(static_cast<int64_t>(i));
    if (p->dtype.is_float()) {
      prologue_.check(ne(code, i32(kArgFloat)), who(i) + " must be a float (type code 2), got type code {}", {code});
      prologue_.let(p, Cast(p->dtype, builtin("tvm_arg_float", {args, index})));
    } else if (p->dtype.is_handle()) {
      prologue_.check(Binary(ExprKind::And, ne(code, i32(kOpaqueHandle)),
                             Binary(ExprKind::And, ne(code, i32(kNullptr)), ne(code, i32(kDLTensorHandle)))),
                      who(i) + " must be a pointer (type code 3, 4 or 7), got type code {}", {code});
      prologue_.let(p, builtin("tvm_arg_handle", {args, index}));
    } else {
      prologue_.check(ne(code, i32(kArgInt)), who(i) + " must be an integer (type code 0), got type code {}", {code});
      Var wide = MakeVar(p->name + "_value", kI64);
      prologue_.let(wide, builtin("tvm_arg_int", {args, index}));
      if (p->dtype.bits() < 64 || p->dtype.is_bool()) {
        // The value must survive the narrowing C would do silently.
        Expr narrowed = to_i64(Cast(p->dtype, wide));
        prologue_.check(ne(narrowed, wide), who(i) + " = {} does not fit in " + p->dtype.str(), {wide});
      }
      prologue_.let(p, p->dtype == kI64 ? Expr(wide) : Cast(p->dtype, wide));
    }
    bound_.insert(p.get());
  }

  // The tensor pointer, ndim, dtype, and the extents that bind a variable.
  Var tensor_header(const Var& args, const Var& type_ids, size_t i) {
    const Buffer& b = f_->param_buffers[i];
    const Var& p = f_->params[i];
    const std::string arg = "argument '" + b->name + "'";
    Var code = type_code(type_ids, i);
    prologue_.check(Binary(ExprKind::And, ne(code, i32(kDLTensorHandle)), ne(code, i32(kNDArrayHandle))),
                    who(i) + " must be a tensor (type code 7 or 13), got type code {}", {code});
    // The parameter variable stands for the DLTensor pointer, as in TVM.
    Var handle = p == b->data ? MakeVar(b->name + "_handle", kHandle) : p;
    prologue_.let(handle, builtin("tvm_arg_handle", {args, i32(static_cast<int64_t>(i))}));
    prologue_.check(builtin("tvm_handle_is_null", {handle}), arg + " is a NULL DLTensor pointer");

    const int64_t ndim = static_cast<int64_t>(b->shape.size());
    Expr got_ndim = builtin("tvm_tensor_ndim", {handle});
    prologue_.check(ne(got_ndim, i32(ndim)), arg + " must have ndim " + std::to_string(ndim) + ", got {}", {got_ndim});

    Expr code_e = builtin("tvm_tensor_dtype_code", {handle}), bits = builtin("tvm_tensor_dtype_bits", {handle});
    Expr lanes = builtin("tvm_tensor_dtype_lanes", {handle});
    int64_t want_bits = b->dtype.is_bool() ? 8 : b->dtype.bits();
    prologue_.check(any({ne(code_e, i32(dl_type_code(b->dtype))), ne(bits, i32(want_bits)), ne(lanes, i32(1))}),
                    arg + " must be " + b->dtype.str() + " (code " + std::to_string(dl_type_code(b->dtype)) + ", bits " +
                        std::to_string(want_bits) + ", lanes 1), got code {}, bits {}, lanes {}",
                    {code_e, bits, lanes});

    for (int64_t k = 0; k < ndim; ++k) {
      Expr got = builtin("tvm_tensor_shape", {handle, i32(k)});
      const Expr& want = b->shape[k];
      const std::string dim = arg + ".shape[" + std::to_string(k) + "]";
      if (const auto* v = as<VarNode>(want); v && !bound_.count(v)) {
        // A symbolic extent first seen here takes its value from the tensor.
        Var var = std::static_pointer_cast<const VarNode>(want);
        prologue_.check(Binary(ExprKind::LT, got, i64(0)), dim + " must not be negative, got {}", {got});
        if (var->dtype.bits() < 64) {
          prologue_.check(ne(to_i64(Cast(var->dtype, got)), got), dim + " = {} does not fit in " + var->dtype.str(),
                          {got});
        }
        prologue_.let(var, var->dtype == kI64 ? got : Cast(var->dtype, got));
        bound_.insert(v);
        binds_extent_.insert({i, k});
      }
    }
    return handle;
  }

  // The other extents, strides, device, offset and data pointer of tensor `i`.
  void tensor_layout(const Var& handle, size_t i) {
    const Buffer& b = f_->param_buffers[i];
    const std::string arg = "argument '" + b->name + "'";
    const int64_t ndim = static_cast<int64_t>(b->shape.size());
    for (int64_t k = 0; k < ndim; ++k) {
      if (binds_extent_.count({i, k})) continue;
      Expr got = builtin("tvm_tensor_shape", {handle, i32(k)});
      const Expr& want = b->shape[k];
      const std::string dim = arg + ".shape[" + std::to_string(k) + "]";
      if (const int64_t* c = as_const_int(want)) {
        prologue_.check(ne(got, i64(*c)), dim + " must be " + std::to_string(*c) + ", got {}", {got});
      } else {
        prologue_.check(ne(got, to_i64(want)), dim + " must be {}, got {}", {to_i64(want), got});
      }
    }

    // Strides: NULL means compact; otherwise each must be what the buffer declares.
    std::vector<Expr> want_strides(ndim);
    if (!b->strides.empty()) {
      for (int64_t k = 0; k < ndim; ++k) want_strides[k] = to_i64(b->strides[k]);
    } else {
      Expr running = i64(1);
      for (int64_t k = ndim; k-- > 0;) {
        want_strides[k] = running;
        const int64_t *r = as_const_int(running), *s = as_const_int(b->shape[k]);
        running = r && s ? i64(*r * *s) : Binary(ExprKind::Mul, running, to_i64(b->shape[k]));
      }
    }
    Expr strides_null = builtin("tvm_tensor_strides_is_null", {handle});
    if (!b->strides.empty()) {
      // NULL strides mean compact, which is not what this buffer declares.
      prologue_.check(strides_null, arg + " must have strides (the buffer declares them), got NULL");
    }
    for (int64_t k = 0; k < ndim; ++k) {
      Expr got = builtin("tvm_tensor_stride", {handle, i32(k)});
      // Only extents above 1 constrain a stride (numpy gives any value there).
      Expr matters = Binary(ExprKind::GT, builtin("tvm_tensor_shape", {handle, i32(k)}), i64(1));
      Expr fails = Binary(ExprKind::And, Not(strides_null), Binary(ExprKind::And, matters, ne(got, want_strides[k])));
      const std::string what = arg + " must be " + (b->strides.empty() ? "compact" : "laid out as declared") +
                               ": strides[" + std::to_string(k) + "] must be ";
      if (const int64_t* c = as_const_int(want_strides[k])) {
        prologue_.check(fails, what + std::to_string(*c) + ", got {}", {got});
      } else {
        prologue_.check(fails, what + "{}, got {}", {want_strides[k], got});
      }
    }

    Expr device = builtin("tvm_tensor_device_type", {handle});
    prologue_.check(ne(device, i32(kDLCPU)), arg + " must be on the CPU (device type 1), got device type {}", {device});
    Expr offset = builtin("tvm_tensor_byte_offset", {handle});
    prologue_.check(ne(offset, i64(0)), arg + " must have byte_offset 0, got {}", {offset});
    Expr data = builtin("tvm_tensor_data", {handle});
    prologue_.check(builtin("tvm_handle_is_null", {data}), arg + " has NULL data");
    if (b->align > 0) {
      prologue_.check(Not(builtin("tvm_handle_is_aligned", {data, i32(b->align)})),
                      arg + " data must be aligned to " + std::to_string(b->align) + " bytes");
    }
    prologue_.let(b->data, data);
  }

  std::string name_;
  PrimFunc f_;
  Prologue prologue_;
  std::unordered_set<const VarNode*> bound_;
  std::set<std::pair<size_t, int64_t>> binds_extent_;  // (tensor, dim) whose extent binds a variable
  std::vector<Var> extra_params_;
  std::string compute_symbol_;
};


}  // namespace

Pass MakePackedAPI() {
  Pass p;
  p.name = "make_packed_api";
  p.run = [](const IRModule& m) {
    IRModule out = m;
    out.functions.clear();
    for (const auto& [name, f] : m.functions) {
      const std::string compute_name = name + "_compute";
      if (m.lookup(compute_name)) {
        user_error(f->span, "make_packed_api: the kernel of '" + name + "' would be named '" + compute_name +
                                "', which the module already defines");
      }
      PackedWrapper wrapper(name, f);
      out.functions.emplace_back(compute_name, wrapper.compute(symbol_of(name, f) + "_compute"));
      out.functions.emplace_back(name, wrapper.run());
    }
    return out;
  };
  return p;
}

}  // namespace mtir
