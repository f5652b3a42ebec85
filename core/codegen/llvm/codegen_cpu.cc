// The packed API and the CRT calling convention of the LLVM backend (TVM's CodeGenCPU):
// parameters and DLTensor fields, packed calls, workspace allocation, TVMAPISetLastError.
#include "codegen/llvm/codegen_llvm_internal.h"

namespace mtir::llvm_backend {

std::string FunctionEmitter::signature_params(bool with_names) {
  std::string out;
  for (size_t i = 0; i < func_->params.size(); ++i) {
    const Var& p = func_->params[i];
    const Buffer& b = func_->param_buffers[i];
    const bool noalias = noalias_param(func_, static_cast<int>(i));
    std::string ty = b ? "i8*" : ll_type(p->dtype, p->span);
    std::string attrs = b ? "" : ext_attr(p->dtype);
    if (b || p->dtype.is_handle()) {
      if (noalias && !is_packed(func_)) attrs += " noalias";
      int align = declared_align(p, b);
      if (align > 1) attrs += " align " + std::to_string(align);
    }
    out += (i ? ", " : "") + ty + attrs;
    if (with_names) {
      std::string n = local_name("p." + p->name);
      vars_[p.get()] = {ty, n};
      if (b && b->data && b->data.get() != p.get()) vars_[b->data.get()] = {ty, n};
      out += " " + n;
    }
  }
  return out;
}

int FunctionEmitter::declared_align(const Var& p, const Buffer& b) const {
  auto beyond_natural = [&](const Buffer& v) {
    return v->align > natural_align(v->dtype, ms_->target->pointer_bits) ? v->align : 0;
  };
  if (b) return beyond_natural(b);
  struct Finder : Visitor {
    const VarNode* var;
    std::vector<Buffer> views;
    void visit_DeclBuffer(const DeclBufferNode* op) override {
      if (op->buffer && op->buffer->data.get() == var) views.push_back(op->buffer);
      Visitor::visit_DeclBuffer(op);
    }
  } finder;
  finder.var = p.get();
  finder.visit(func_->body);
  int align = 0;
  for (size_t i = 0; i < finder.views.size(); ++i) {
    int a = beyond_natural(finder.views[i]);
    align = i == 0 ? a : std::min(align, a);
  }
  return align;
}

Val FunctionEmitter::tensor_field(const Val& t, const std::string& path, const std::string& ty) {
  Val s = op("%DLTensor*", "bitcast " + t.typed() + " to %DLTensor*");
  return op(ty + "*", "getelementptr inbounds %DLTensor, " + s.typed() + ", i32 0, " + path);
}

Val FunctionEmitter::load_ty(const std::string& ty, const Val& p, int align) {
  return op(ty, "load " + ty + ", " + p.typed() + ", align " + std::to_string(align));
}

Val FunctionEmitter::array_elem(const Val& base, const std::string& ty, const Val& i) {
  Val typed = op(ty + "*", "bitcast " + base.typed() + " to " + ty + "*");
  return op(ty + "*", "getelementptr inbounds " + ty + ", " + typed.typed() + ", " + i.typed());
}

Val FunctionEmitter::value_member(const Val& base, const Val& i, const std::string& ty) {
  Val slot = array_elem(base, "%TVMValue", i);
  return op(ty + "*", "bitcast " + slot.typed() + " to " + ty + "*");
}

Val FunctionEmitter::handle_is_aligned(const CallNode* c) {
  const std::string st = ms_->target->size_type();
  Val p = expr(c->args.at(0));
  Val addr = op(st, "ptrtoint " + p.typed() + " to " + st);
  const int64_t* k = as_const_int(c->args.at(1));
  Val m;
  if (k && *k > 0) {
    m = op(st, "urem " + addr.typed() + ", " + std::to_string(*k));
  } else {
    Val a = as_int(expr(c->args.at(1)), c->args.at(1)->dtype, st);
    Val zero = op("i1", "icmp eq " + a.typed() + ", 0");
    Val d = op(st, "select i1 " + zero.v + ", " + st + " 1, " + a.typed());
    m = op(st, "urem " + addr.typed() + ", " + d.v);
  }
  return op("i1", "icmp eq " + m.typed() + ", 0");
}

Val FunctionEmitter::tensor_init(const CallNode* c) {
  const int pa = ms_->target->pointer_bits / 8;
  auto arg = [&](size_t i) { return expr(c->args.at(i)); };
  auto arg_as = [&](size_t i, const std::string& ty) { return as_int(arg(i), c->args.at(i)->dtype, ty); };
  Val t = arg(0), data = arg(1), shape = arg(2), ndim = arg_as(3, "i32"), code = arg_as(4, "i8"), bits = arg_as(5, "i8");
  auto put = [&](const std::string& path, const Val& v, int align) {
    inst("store " + v.typed() + ", " + tensor_field(t, path, v.ty).typed() + ", align " + std::to_string(align));
  };
  put("i32 0", data, pa);
  put("i32 1, i32 0", {"i32", "1"}, 4);  // kDLCPU
  put("i32 1, i32 1", {"i32", "0"}, 4);
  put("i32 2", ndim, 4);
  put("i32 3, i32 0", code, 1);
  put("i32 3, i32 1", bits, 1);
  put("i32 3, i32 2", {"i16", "1"}, 2);
  put("i32 4", op("i64*", "bitcast " + shape.typed() + " to i64*"), pa);
  put("i32 5", {"i64*", "null"}, pa);
  put("i32 6", {"i64", "0"}, 8);
  return {"i32", "0"};
}

Val FunctionEmitter::call_packed(const CallNode* c) {
  const auto* callee = as<StringImmNode>(c->args.at(0));
  if (!callee) user_error(c->span, "T.tvm_call_packed_lowered needs the function name first");
  Val values = expr(c->args.at(1)), codes = expr(c->args.at(2)), n = as_int(expr(c->args.at(3)), c->args[3]->dtype, "i32");
  auto f = ms_->module_functions.find(callee->value);
  if (f != ms_->module_functions.end() && is_packed(f->second)) {
    if (ret_value_.empty()) {
      ret_value_ = entry_alloca("%TVMValue", 1, 8, "ret.value");
      ret_code_ = entry_alloca("i32", 1, 4, "ret.code");
    }
    Val rv = op("i8*", "bitcast %TVMValue* " + ret_value_ + " to i8*");
    Val rc = op("i8*", "bitcast i32* " + ret_code_ + " to i8*");
    return op("i32", "call i32 @" + callee->value + "_checked(" + values.typed() + ", " + codes.typed() + ", " +
                         n.typed() + ", " + rv.typed() + ", " + rc.typed() + ", i8* null)");
  }
  use_call_by_name_helper();
  Val name = ms_->string_constant(callee->value);
  return op("i32", "call i32 @mtir_call_packed_by_name(" + name.typed() + ", " + values.typed() + ", " +
                       codes.typed() + ", " + n.typed() + ")");
}

void FunctionEmitter::use_call_by_name_helper() {
  ms_->declare("TVMFuncGetGlobal", "declare i32 @TVMFuncGetGlobal(i8*, i8**)");
  ms_->declare("TVMFuncCall", "declare i32 @TVMFuncCall(i8*, i8*, i8*, i32, i8*, i8*)");
  ms_->helpers.emplace("mtir_call_packed_by_name",
                       "define internal i32 @mtir_call_packed_by_name(i8* %name, i8* %values, i8* %codes, i32 %n) " +
                           ms_->attr_group +
                           " {\nentry:\n"
                           "  %f = alloca i8*, align 8\n"
                           "  %ret = alloca %TVMValue, align 8\n"
                           "  %ret.code = alloca i32, align 4\n"
                           "  store i8* null, i8** %f, align 8\n"
                           "  %found = call i32 @TVMFuncGetGlobal(i8* %name, i8** %f)\n"
                           "  %missing = icmp ne i32 %found, 0\n"
                           "  br i1 %missing, label %fail, label %call\n"
                           "fail:\n  ret i32 -1\n"
                           "call:\n"
                           "  %fn = load i8*, i8** %f, align 8\n"
                           "  %rv = bitcast %TVMValue* %ret to i8*\n"
                           "  %rc = bitcast i32* %ret.code to i8*\n"
                           "  %r = call i32 @TVMFuncCall(i8* %fn, i8* %values, i8* %codes, i32 %n, i8* %rv, i8* %rc)\n"
                           "  ret i32 %r\n}\n");
}

void FunctionEmitter::emit_stack_alloca(const Var& v, const CallNode* c) {
  const auto* kind = c->args.size() == 2 ? as<StringImmNode>(c->args[0]) : nullptr;
  const int64_t* count = c->args.size() == 2 ? as_const_int(c->args[1]) : nullptr;
  static const std::map<std::string, std::pair<std::string, int>> kTypes = {
      {"arg_value", {"%TVMValue", 8}}, {"arg_tcode", {"i32", 4}}, {"array", {"%DLTensor", 8}}, {"shape", {"i64", 8}}};
  if (!kind || !count || *count <= 0 || !kTypes.count(kind->value))
    user_error(c->span, "T.tvm_stack_alloca needs a kind (arg_value, arg_tcode, array, shape) and a constant count");
  const auto& [ty, align] = kTypes.at(kind->value);
  std::string a = entry_alloca(ty, *count, align, v->name);
  std::string p = local_name(v->name + ".ptr");
  entry_ << "  " << p << " = bitcast " << ty << "* " << a << " to i8*\n";
  vars_[v.get()] = {"i8*", p};
}

void FunctionEmitter::emit_allocate(const AllocateNode* node) {
  const Buffer& b = node->buffer;
  std::string mt = mem_type(b->dtype, b->span);
  int64_t n = 0;
  bool constant = const_num_elements(b, &n);
  int align = std::max(natural_align(b->dtype, ms_->target->pointer_bits), b->align);
  local_allocations_.insert(b->data.get());  // fresh memory: aliases nothing else (paired_loads.cc)
  if (node->scope == "local" && constant) {
    std::string a = read_by_word_pairs(node->body, b->data.get()) ? word_pair_alloca(b, n > 0 ? n : 1, align)
                                                                  : entry_alloca(mt, n > 0 ? n : 1, align, b->name);
    std::string p = local_name(b->name + ".ptr");
    entry_ << "  " << p << " = bitcast " << mt << "* " << a << " to i8*\n";
    vars_[b->data.get()] = {"i8*", p};
    emit(node->body);
    return;
  }
  Val bytes;
  if (constant) {
    bytes = {"i64", std::to_string(n * b->dtype.bytes())};
  } else {
    bytes = {"i64", std::to_string(b->dtype.bytes())};
    for (const auto& d : b->shape) {
      Val dv = as_int(expr(d), d->dtype, "i64");
      bytes = op("i64", "mul " + bytes.typed() + ", " + dv.v);
    }
  }
  ms_->declare("TVMBackendAllocWorkspace", "declare i8* @TVMBackendAllocWorkspace(i32, i32, i64, i32, i32)");
  ms_->declare("TVMBackendFreeWorkspace", "declare i32 @TVMBackendFreeWorkspace(i32, i32, i8*)");
  Val p = op("i8*", "call i8* @TVMBackendAllocWorkspace(i32 1, i32 0, " + bytes.typed() + ", i32 " +
                        std::to_string(dl_type_code(b->dtype)) + ", i32 " + std::to_string(b->dtype.bits()) + ")");
  Val null = op("i1", "icmp eq " + p.typed() + ", null");
  std::string fail = label("alloc.fail"), ok = label("alloc.ok");
  cond_br(null, fail, ok);
  begin_block(fail);
  emit_return("-1");
  br(ok);
  begin_block(ok);
  vars_[b->data.get()] = p;
  live_workspace_.push_back(p.v);
  emit(node->body);
  live_workspace_.pop_back();
  Val rc = op("i32", "call i32 @TVMBackendFreeWorkspace(i32 1, i32 0, " + p.typed() + ")");
  Val bad = op("i1", "icmp ne " + rc.typed() + ", 0");
  std::string free_fail = label("free.fail"), free_ok = label("free.ok");
  cond_br(bad, free_fail, free_ok);
  begin_block(free_fail);
  emit_return("-1");
  br(free_ok);
  begin_block(free_ok);
}

void FunctionEmitter::emit_return(const std::string& value) {
  for (size_t i = live_workspace_.size(); i-- > 0;) {
    inst("call i32 @TVMBackendFreeWorkspace(i32 1, i32 0, i8* " + live_workspace_[i] + ")");
  }
  inst("ret i32 " + value);
  begin_block(label("after.ret"));
}

void FunctionEmitter::set_last_error(const Val& message) {
  ms_->declare("TVMAPISetLastError", "declare void @TVMAPISetLastError(i8*)");
  inst("call void @TVMAPISetLastError(" + message.typed() + ")");
}

void FunctionEmitter::throw_last_error(const CallNode* c) {
  if (c->args.empty()) return emit_return("-1");  // the failed runtime call set the error
  const auto* fmt = c->args.empty() ? nullptr : as<StringImmNode>(c->args[0]);
  if (!fmt) user_error(c->span, "T.tvm_throw_last_error needs a message string");
  if (c->args.size() == 1) {
    set_last_error(ms_->string_constant(fmt->value));
    emit_return("-1");
    return;
  }
  std::string printf_format;
  std::vector<Val> values;
  size_t next = 1;
  for (size_t i = 0; i < fmt->value.size(); ++i) {
    if (fmt->value.compare(i, 2, "{}") == 0 && next < c->args.size()) {
      printf_format += "%lld";
      values.push_back(as_int(expr(c->args[next]), c->args[next]->dtype, "i64"));
      ++next;
      ++i;
    } else {
      printf_format += fmt->value[i] == '%' ? std::string("%%") : std::string(1, fmt->value[i]);
    }
  }
  if (values.size() > 3) user_error(c->span, "T.tvm_throw_last_error takes at most 3 values");
  while (values.size() < 3) values.push_back({"i64", "0"});
  use_set_error_helper();
  inst("call void @mtir_set_error(" + ms_->string_constant(printf_format).typed() + ", " + values[0].typed() + ", " +
       values[1].typed() + ", " + values[2].typed() + ")");
  emit_return("-1");
}

void FunctionEmitter::use_set_error_helper() {
  const std::string st = ms_->target->size_type();
  ms_->declare("snprintf", "declare i32 @snprintf(i8*, " + st + ", i8*, ...)");
  ms_->declare("TVMAPISetLastError", "declare void @TVMAPISetLastError(i8*)");
  ms_->helpers.emplace("mtir_set_error",
                       "define internal void @mtir_set_error(i8* %format, i64 %a, i64 %b, i64 %c) noinline " +
                           ms_->attr_group +
                           " {\nentry:\n"
                           "  %buf = alloca [256 x i8], align 1\n"
                           "  %p = getelementptr inbounds [256 x i8], [256 x i8]* %buf, i32 0, i32 0\n"
                           "  %n = call i32 (i8*, " + st + ", i8*, ...) @snprintf(i8* %p, " + st +
                           " 256, i8* %format, i64 %a, i64 %b, i64 %c)\n"
                           "  call void @TVMAPISetLastError(i8* %p)\n"
                           "  ret void\n}\n");
}

std::string FunctionEmitter::module_callee(const Expr& value) const {
  const auto* call = as<CallNode>(value);
  if (!call || !call->is(Builtin::CallExtern) || call->args.empty()) return "";
  const auto* sym = as<StringImmNode>(call->args[0]);
  if (!sym || !ms_->module_functions.count(sym->value)) return "";
  auto own = call->attrs.find("kernel_name");
  if (own != call->attrs.end() && std::holds_alternative<std::string>(own->second))
    return std::get<std::string>(own->second);
  return sym->value;
}

Val FunctionEmitter::profiled(const Expr& value) {
  const std::string callee = ms_->profile_hooks ? module_callee(value) : "";
  if (callee.empty()) return expr(value);
  const int index = ms_->profile_points++;
  ms_->declare("mtir_profile_begin", "declare void @mtir_profile_begin(i32, i8*)");
  ms_->declare("mtir_profile_end", "declare void @mtir_profile_end(i32)");
  // The begin hook goes right before the call, after its arguments (extern_call), so
  // the count holds the kernel alone, as the C backend's macros around the call do.
  profiled_call_ = {static_cast<const CallNode*>(value.get()),
                    "call void @mtir_profile_begin(i32 " + std::to_string(index) + ", " +
                        ms_->string_constant(callee).typed() + ")"};
  Val v = expr(value);
  inst("call void @mtir_profile_end(i32 " + std::to_string(index) + ")");
  return v;
}

}  // namespace mtir::llvm_backend
