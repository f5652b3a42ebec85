// The wasm emitter's statements: blocks, stores, loops (unrolled, or with accumulators
// promoted to locals), allocations, register arrays, returns and errors (wat_function.h).
#include "codegen/wasm/wat_function.h"

namespace mtir {
namespace wat_codegen {

void FunctionEmitter::emit(const Stmt& s) {
  const SourceLineScope at(&source_line_, s);
  switch (s->kind) {
    case StmtKind::BufferStore: store(static_cast<const BufferStoreNode*>(s.get())); return;
    case StmtKind::For: emit_for(static_cast<const ForNode*>(s.get())); return;
    case StmtKind::IfThenElse: emit_if(static_cast<const IfThenElseNode*>(s.get())); return;
    case StmtKind::LetStmt: {
      const auto* op = static_cast<const LetStmtNode*>(s.get());
      WVal v = expr(op->value);
      std::string l = local(op->var->name, v.ty);
      line("(local.set " + l + " " + v.code + ")");
      vars_[op->var.get()] = {v.ty, "(local.get " + l + ")"};
      if (op->var->dtype.is_integer() && op->var->dtype.is_scalar()) bounds_.bind(op->var.get(), bounds_.bound(op->value));
      emit(op->body);
      return;
    }
    case StmtKind::SeqStmt:
      for (const auto& child : static_cast<const SeqStmtNode*>(s.get())->seq) emit(child);
      return;
    case StmtKind::While: emit_while(static_cast<const WhileNode*>(s.get())); return;
    case StmtKind::Evaluate: emit_evaluate(static_cast<const EvaluateNode*>(s.get()), s); return;
    case StmtKind::Allocate: emit_allocate(static_cast<const AllocateNode*>(s.get())); return;
    case StmtKind::AllocateConst:
    case StmtKind::BufferRealize: unlowered_statement(s, "wasm");
    case StmtKind::DeclBuffer: {
      const auto* op = static_cast<const DeclBufferNode*>(s.get());
      // A view of memory that already has a pointer (or of a register array's locals).
      if (!register_arrays_.count(op->buffer->data.get())) base_of(op->buffer, op->span);
      emit(op->body);
      return;
    }
    case StmtKind::AttrStmt: emit(static_cast<const AttrStmtNode*>(s.get())->body); return;
    case StmtKind::AssertStmt: {
      const auto* op = static_cast<const AssertStmtNode*>(s.get());
      line("(if (i32.eqz " + expr(op->condition).code + ")");
      ++indent_;
      line("(then");
      ++indent_;
      set_error(user_name() + ": assertion failed: " + op->message, {});
      emit_return("(i32.const -1)");
      --indent_;
      line(")");
      --indent_;
      line(")");
      emit(op->body);
      return;
    }
  }
}

void FunctionEmitter::emit_if(const IfThenElseNode* op) {
  line("(if " + expr(op->condition).code);
  auto before = loads_;
  ++indent_;
  line("(then");
  ++indent_;
  emit(op->then_case);
  loads_ = before;
  --indent_;
  line(")");
  if (op->else_case && !is_no_op(op->else_case)) {
    line("(else");
    ++indent_;
    emit(op->else_case);
    --indent_;
    line(")");
  }
  forget_loads();
  --indent_;
  line(")");
}

void FunctionEmitter::emit_while(const WhileNode* op) {
  std::string exit = label("while.end"), head = label("while.head");
  line("(block " + exit);
  ++indent_;
  line("(loop " + head);
  ++indent_;
  forget_loads();
  line("(br_if " + exit + " (i32.eqz " + expr(op->condition).code + "))");
  emit_loop_body(op->body, exit);
  forget_loads();
  line("(br " + head + ")");
  --indent_;
  line(")");
  --indent_;
  line(")");
}

void FunctionEmitter::emit_evaluate(const EvaluateNode* op, const Stmt& s) {
  if (evaluates_constant(op)) return;
  if (LoopExit e = loop_exit(s); e != LoopExit::kNone) {
    MTIR_ICHECK(!loop_exits_.empty(), "a loop exit outside a loop");
    line("(br " + (e == LoopExit::kBreak ? loop_exits_.back().first : loop_exits_.back().second) + ")");
    return;
  }
  if (const CallNode* call = statement_builtin(op)) {
    if (call->is(Builtin::TvmReturn))
      emit_return(cast(expr(call->args.at(0)), call->args[0]->dtype, DataType::Int(32), call->span).code);
    else
      throw_last_error(call);
    return;
  }
  WVal v = expr(op->value);
  line(v.ty.empty() ? v.code : "(drop " + v.code + ")");
}

// A buffer element a loop reads and writes at one index that does not change inside
// it (a reduction's accumulator) lives in a local for the loop's duration: loaded
// before, stored after. What a C compiler does with `restrict`; V8 does not, and the
// memory traffic would dominate the kernels. Only with distinct buffers (tir.noalias),
// no calls in the loop, and a loop that certainly runs (constant extent > 0).
void FunctionEmitter::emit_for(const ForNode* node) {
  const int64_t* extent = as_const_int(node->extent);
  std::vector<Promoted> added;
  // A loop that may stop early (`break`, `continue`) runs as written: no accumulator
  // kept in a local, no load read before it, no unrolling.
  const bool exits = exits_loop(node->body);
  if (noalias_ && extent && *extent > 0 && !exits) {
    LoopAccesses acc;
    acc.bound.insert(node->loop_var.get());
    acc.visit(node->body);
    // Every pointer the loop goes through must be a parameter's or an allocation's
    // (distinct memory); a derived pointer could alias the promoted element.
    bool distinct = true;
    for (const auto& a : acc.accesses)
      distinct = distinct && (own_memory_.count(a.data) || acc.bound.count(a.data) || register_arrays_.count(a.data));
    std::set<const VarNode*> rejected;
    for (const auto& a : acc.accesses) {
      if (!distinct) break;
      if (!own_memory_.count(a.data)) continue;  // register arrays are locals already
      if (!a.store || acc.has_call || rejected.count(a.data) || a.indices.size() != 1 || acc.bound.count(a.data)) continue;
      if (a.indices[0]->dtype.is_vector()) {  // a SIMD128 store stays in memory
        rejected.insert(a.data);
        continue;
      }
      bool ok = !uses_any(a.indices[0], acc.bound) && promoted(a.buffer, a.indices).empty();
      for (const auto& other : acc.accesses)
        if (other.data == a.data && (other.indices.size() != 1 || !same_expr(other.indices[0], a.indices[0]) ||
                                     other.buffer->dtype != a.buffer->dtype))
          ok = false;
      for (const auto& p : added) ok = ok && p.data != a.data;
      if (!ok) {
        rejected.insert(a.data);
        continue;
      }
      DataType t = a.buffer->dtype;
      std::string local = this->local(a.buffer->name + ".acc", wasm_type(t, a.buffer->span));
      line("(local.set " + local + " (" + load_op(t) + " " + address(a.buffer, a.indices, a.buffer->span) + "))");
      added.push_back({a.data, a.buffer, a.indices[0], local});
    }
  }
  promoted_.insert(promoted_.end(), added.begin(), added.end());
  emit_loop(node, exits ? std::map<std::string, LoadedValue>{} : unrolled(node) ? loads_ : loads_through_loop(node));
  promoted_.resize(promoted_.size() - added.size());
  for (const auto& p : added) {
    line("(" + store_op(p.buffer->dtype) + " " + address(p.buffer, {p.index}, p.buffer->span) + " (local.get " + p.local + "))");
    forget_loads_of(p.buffer);
  }
}

// The loads a rolled loop's body may reuse (reused_load), in every iteration and after
// it: those before it of buffers the loop does not store to, and the loads of such
// buffers at an index that does not change inside the loop and that every iteration
// reads, now read once before it (what clang's LICM does with `restrict` pointers: a
// depthwise kernel's weights, reloaded for every pixel otherwise). Hoisting needs a
// loop that certainly runs (constant extent > 0) and a load outside any branch of the
// body, so it reads nothing the loop would not. Nothing with calls in the loop or
// possibly aliased pointers (no tir.noalias, derived pointers).
std::map<std::string, FunctionEmitter::LoadedValue> FunctionEmitter::loads_through_loop(const ForNode* node) {
  if (!noalias_) return {};
  LoopAccesses acc;
  acc.bound.insert(node->loop_var.get());
  acc.visit(node->body);
  if (acc.has_call) return {};
  std::set<const VarNode*> stored;
  for (const auto& a : acc.accesses) {
    if (!own_memory_.count(a.data) && !acc.bound.count(a.data) && !register_arrays_.count(a.data)) return {};
    if (a.store) stored.insert(a.data);
  }
  std::map<std::string, LoadedValue> kept;
  for (const auto& [code, v] : loads_)
    if (own_memory_.count(v.data) && !stored.count(v.data)) kept.emplace(code, v);
  const int64_t* extent = as_const_int(node->extent);
  if (!extent || *extent <= 0) return kept;
  // The loads every iteration runs, before anything that could leave the body early.
  struct EveryIteration : Visitor {
    std::vector<const BufferLoadNode*> loads;
    bool early_exit = false;
    void visit_BufferLoad(const BufferLoadNode* op) override {
      loads.push_back(op);
      Visitor::visit_BufferLoad(op);
    }
    void visit_IfThenElse(const IfThenElseNode* op) override { visit(op->condition); }
    void visit_While(const WhileNode* op) override { visit(op->condition); }
    void visit_For(const ForNode* op) override {
      const int64_t* n = as_const_int(op->extent);
      if (n && *n > 0) Visitor::visit_For(op);
    }
    void visit_Call(const CallNode* op) override {
      if (op->is(Builtin::IfThenElse) && !op->args.empty()) visit(op->args[0]);
      else Visitor::visit_Call(op);
    }
    void visit_And(const AndNode* op) override { visit(op->a); }
    void visit_Or(const OrNode* op) override { visit(op->a); }
    void visit_AssertStmt(const AssertStmtNode*) override { early_exit = true; }
    void visit_Evaluate(const EvaluateNode* op) override {
      early_exit = early_exit || statement_builtin(op);
      Visitor::visit_Evaluate(op);
    }
  } every;
  every.visit(node->body);
  if (every.early_exit) return kept;
  struct HasLoad : Visitor {
    bool found = false;
    void visit_BufferLoad(const BufferLoadNode*) override { found = true; }
  };
  for (const BufferLoadNode* l : every.loads) {
    const VarNode* data = l->buffer->data.get();
    if (!own_memory_.count(data) || stored.count(data) || register_arrays_.count(data) || l->indices.size() != 1 ||
        l->dtype.is_vector() || l->indices[0]->dtype.is_vector() || uses_any(l->indices[0], acc.bound) ||
        !promoted(l->buffer, l->indices).empty())
      continue;
    HasLoad inner;
    inner.visit(l->indices[0]);
    if (inner.found) continue;
    const DataType t = l->buffer->dtype;
    const int64_t reads = mutable_reads_;
    const std::string code = "(" + load_op(t) + " " + memarg(l->buffer, l->indices, l->span) + ")";
    if (kept.count(code) || reads != mutable_reads_) continue;
    std::string local = this->local("ld", wasm_type(t, l->span));
    line("(local.set " + local + " " + code + ")");
    kept.emplace(code, LoadedValue{data, local});
  }
  loads_ = kept;
  return kept;
}

int64_t FunctionEmitter::unrolled_iterations(const Stmt& s) {
  struct Counter : Visitor {
    int64_t product = 1;
    bool ok = true;
    void visit_For(const ForNode* op) override {
      const int64_t* n = as_const_int(op->extent);
      if (!n || *n < 0 || !as_const_int(op->min)) {
        ok = false;
        return;
      }
      int64_t inner = unrolled_iterations(op->body);
      if (inner < 0 || *n * inner > kUnrollLimit) ok = false;
      else product = std::max(product, *n * inner);
    }
  } c;
  c.visit(s);
  return c.ok ? c.product : -1;
}

bool FunctionEmitter::unrolled(const ForNode* node) {
  const int64_t* min = as_const_int(node->min);
  const int64_t* extent = as_const_int(node->extent);
  if (exits_loop(node->body)) return false;
  const int64_t inner = unrolled_iterations(node->body);
  struct Stores : Visitor {
    int64_t count = 0;
    void visit_BufferStore(const BufferStoreNode* op) override {
      ++count;
      Visitor::visit_BufferStore(op);
    }
  } stores;
  stores.visit(node->body);
  return min && extent && inner > 0 && *extent * inner <= kUnrollLimit && *extent * stores.count <= kUnrollStoreLimit;
}

void FunctionEmitter::emit_loop(const ForNode* node, const std::map<std::string, LoadedValue>& kept) {
  DataType t = node->loop_var->dtype;
  std::string ty = wasm_type(t, node->span);
  const int64_t* min = as_const_int(node->min);
  const int64_t* extent = as_const_int(node->extent);
  // SIMD128 (wat_simd_loops.cc): a dot loop stores to no memory, so `kept` stays valid; a
  // copy loop forgets the loads of what it writes.
  if (emit_dot_loop(node) || emit_copy_loop(node)) return;
  // Small constant nests are unrolled: the loop variable becomes a constant in each
  // copy, so Binaryen folds the index arithmetic and the bound checks (clang's -O2
  // does the same to the C backend's output).
  if (unrolled(node)) {
    for (int64_t k = *min; k < *min + *extent; ++k) {
      vars_[node->loop_var.get()] = {ty, "(" + ty + ".const " + std::to_string(k) + ")"};
      bounds_.bind(node->loop_var.get(), {k, k});
      emit(node->body);
    }
    bounds_.unbind(node->loop_var.get());
    return;
  }
  std::string i = local(node->loop_var->name, ty);
  // The end is set before the begin (when it needs a local): emitted first, for reused loads.
  WVal end = min && *min == 0 ? expr(node->extent) : expr(Binary(ExprKind::Add, node->min, node->extent));
  WVal begin = expr(node->min);
  std::string end_code = end.code;
  if (!extent || !min) {  // evaluated once, as the C loop's bound is loop-invariant
    std::string e = local(node->loop_var->name + ".end", ty);
    line("(local.set " + e + " " + end.code + ")");
    end_code = "(local.get " + e + ")";
  }
  line("(local.set " + i + " " + begin.code + ")");
  std::string exit = label("for.end"), head = label("for.head");
  // A loop that certainly runs is a do-while: one branch per iteration.
  const bool runs = extent && *extent > 0;
  line("(block " + exit);
  ++indent_;
  line("(loop " + head);
  ++indent_;
  if (!runs) line("(br_if " + exit + " (" + ty + ".ge" + sign_suffix(t) + " (local.get " + i + ") " + end_code + "))");
  vars_[node->loop_var.get()] = {ty, "(local.get " + i + ")"};
  if (IntBound range; bounds_.loop_range(node->min, node->extent, &range)) bounds_.bind(node->loop_var.get(), range);
  loads_ = kept;
  emit_loop_body(node->body, exit);
  loads_ = kept;
  bounds_.unbind(node->loop_var.get());
  line("(local.set " + i + " (" + ty + ".add (local.get " + i + ") (" + ty + ".const 1)))");
  if (runs) line("(br_if " + head + " (" + ty + ".lt" + sign_suffix(t) + " (local.get " + i + ") " + end_code + "))");
  else line("(br " + head + ")");
  --indent_;
  line(")");
  --indent_;
  line(")");
}

// A loop's body, inside a block that `continue` leaves (to the loop's increment or test).
void FunctionEmitter::emit_loop_body(const Stmt& body, const std::string& exit) {
  if (!exits_loop(body)) {
    emit(body);
    return;
  }
  const std::string next = label("loop.next");
  line("(block " + next);
  ++indent_;
  loop_exits_.emplace_back(exit, next);
  emit(body);
  loop_exits_.pop_back();
  forget_loads();
  --indent_;
  line(")");
}

bool FunctionEmitter::emit_register_array(const AllocateNode* node) {
  const Buffer& b = node->buffer;
  int64_t n = 0;
  if (!const_num_elements(b, &n) || n <= 0 || n > kRegisterArrayLimit || b->dtype.is_vector() || b->dtype.is_handle())
    return false;
  RegisterArrayUses uses;
  uses.data = b->data.get();
  uses.dtype = b->dtype;
  uses.visit(node->body);
  if (uses.escapes) return false;
  struct UnrolledLoops : Visitor {
    std::set<const VarNode*> vars;
    void visit_For(const ForNode* op) override {
      if (unrolled(op)) vars.insert(op->loop_var.get());
      Visitor::visit_For(op);
    }
  } inner;
  inner.visit(node->body);
  for (const VarNode* v : uses.index_vars) {
    const IntBound* r = bounds_.lookup(v);
    if (!inner.vars.count(v) && !(r && r->min == r->max)) return false;
  }
  std::vector<std::string> elements;
  const std::string ty = wasm_type(b->dtype, b->span);
  for (int64_t k = 0; k < n; ++k) elements.push_back(local(b->name + "." + std::to_string(k), ty));
  register_arrays_[b->data.get()] = elements;
  emit(node->body);
  register_arrays_.erase(b->data.get());
  return true;
}

// The local of a register array's element, or "" when the buffer is not one. An index
// that is not a constant here is an internal error: emit_register_array checked that
// every index is.
std::string FunctionEmitter::register_element(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
  auto it = register_arrays_.find(b->data.get());
  if (it == register_arrays_.end()) return "";
  IntBound k = bounds_.bound(indices.at(0));
  MTIR_ICHECK(k.min == k.max && k.min >= 0 && k.min < static_cast<int64_t>(it->second.size()),
              "the index of register array '" + b->name + "' is a constant in range (line " +
                  std::to_string(span.line) + ")");
  return it->second[static_cast<size_t>(k.min)];
}

// Every allocation comes from the module's LIFO allocator over the pool; freed in
// order, also on every early return.
void FunctionEmitter::emit_allocate(const AllocateNode* node) {
  if (emit_register_array(node)) return;
  const Buffer& b = node->buffer;
  std::string bytes;
  int64_t n = 0;
  if (const_num_elements(b, &n)) {
    bytes = "(i64.const " + std::to_string(n * mem_bytes(b->dtype)) + ")";
  } else {
    bytes = "(i64.const " + std::to_string(mem_bytes(b->dtype)) + ")";
    for (const auto& d : b->shape) {
      WVal dv = cast(expr(d), d->dtype, DataType::Int(64), d->span);
      bytes = "(i64.mul " + bytes + " " + dv.code + ")";
    }
  }
  ms_->helpers.insert("$mtir.alloc");
  forget_loads();
  std::string p = local(b->name, "i32");
  line("(local.set " + p + " (call $mtir.alloc " + bytes + "))");
  line("(if (i32.eqz (local.get " + p + "))");
  ++indent_;
  line("(then");
  ++indent_;
  set_error(user_name() + ": the workspace pool has no room for '" + b->name + "'", {});
  emit_return("(i32.const -1)");
  --indent_;
  line(")");
  --indent_;
  line(")");
  vars_[b->data.get()] = {"i32", "(local.get " + p + ")"};
  own_memory_.insert(b->data.get());
  live_workspace_.push_back(p);
  emit(node->body);
  live_workspace_.pop_back();
  forget_loads();
  line("(if (call $mtir.free (local.get " + p + "))");
  ++indent_;
  line("(then");
  ++indent_;
  emit_return("(i32.const -1)");
  --indent_;
  line(")");
  --indent_;
  line(")");
}

void FunctionEmitter::emit_return(const std::string& value) {
  if (live_workspace_.empty()) {
    line("(return " + value + ")");
    return;
  }
  std::string rc = local("rc", "i32");
  line("(local.set " + rc + " " + value + ")");
  for (size_t i = live_workspace_.size(); i-- > 0;) line("(drop (call $mtir.free (local.get " + live_workspace_[i] + ")))");
  line("(return (local.get " + rc + "))");
}

// The message's address and up to three values go to globals the host reads through
// the last_error exports ("{}" in the message are the values).
void FunctionEmitter::set_error(const std::string& message, const std::vector<WVal>& values) {
  line("(global.set $mtir.err (i32.const " + int_text(ms_->string_address(message), 32) + "))");
  for (size_t k = 0; k < values.size(); ++k) line("(global.set $mtir.err" + std::to_string(k) + " " + values[k].code + ")");
}

void FunctionEmitter::throw_last_error(const CallNode* c) {
  if (c->args.empty()) return emit_return("(i32.const -1)");  // the failed runtime call set the error
  const auto* fmt = c->args.empty() ? nullptr : as<StringImmNode>(c->args[0]);
  if (!fmt) user_error(c->span, "T.tvm_throw_last_error needs a message string");
  if (c->args.size() > 4) user_error(c->span, "T.tvm_throw_last_error takes at most 3 values");
  std::vector<WVal> values;
  for (size_t i = 1; i < c->args.size(); ++i) values.push_back(cast(expr(c->args[i]), c->args[i]->dtype, DataType::Int(64), c->span));
  set_error(fmt->value, values);
  emit_return("(i32.const -1)");
}

}  // namespace wat_codegen
}  // namespace mtir
