// ScalarizeVectors: vector code (Ramp, Broadcast, Shuffle, vector-typed loads, stores,
// arithmetic and lets) becomes one scalar statement per lane, and Let expressions are
// inlined. The C backend emits portable C99, which has no vector types, so it runs this
// before planning memory and flattening buffers; the LLVM backend keeps the vectors and
// skips it; the wasm backend runs the variant below.
//
// A vector store `A[Ramp(b, s, n)] = v` becomes n stores `A[b + k*s] = lane k of v`.
// When `v` reads the buffer it writes, every lane is first bound to a temporary, so a
// store whose lanes overlap its loads sees the old values as the vector store would.
// A vector LetStmt becomes one scalar LetStmt per lane. Let expressions are pure
// (the verifier admits no side effects in them that C could observe twice), so they
// are replaced by their value; a value that calls an external function is refused
// rather than duplicated.
//
// T.vmladava (a scalar sum of vector lanes) stays for C where both vectors are
// contiguous loads; otherwise, and always in the wasm variant, it becomes its sum.
// An int32x4 store of analysis/helium_vectors.h's grammar stays whole for C (the C
// backend emits it for Helium), and so does an int32x4 let that helium_lets keeps;
// T.multiply_by_quantized_multiplier goes lane by lane elsewhere (each backend computes
// the scalar builtin).
//
// The wasm variant (scalarize_vectors_simd128) keeps the stores the wasm backend emits
// as SIMD128 instructions (simd128_store, below) and scalarizes everything else as above.
#include "analysis/helium_vectors.h"
#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "ir/substitute.h"
#include "analysis/simd128.h"
#include "transform/transform.h"

namespace mtir {
namespace {

bool has_vectors(const Expr& e) {
  struct Finder : Visitor {
    bool found = false;
    void visit(const Expr& x) override {
      if (found || !x) return;
      if (x->dtype.is_vector() || x->kind == ExprKind::Let || x->kind == ExprKind::Shuffle) {
        found = true;
        return;
      }
      Visitor::visit(x);
    }
  } f;
  f.visit(e);
  return f.found;
}

// Whether `e` loads from memory that `data` points to.
bool reads_pointer(const Expr& e, const VarNode* data) {
  struct Finder : Visitor {
    const VarNode* data;
    bool found = false;
    void visit_BufferLoad(const BufferLoadNode* op) override {
      if (op->buffer->data.get() == data) found = true;
      Visitor::visit_BufferLoad(op);
    }
  } f;
  f.data = data;
  f.visit(e);
  return f.found;
}

void refuse_impure(const Expr& value, const Span& at) {
  struct Finder : Visitor {
    std::string found;
    void visit_Call(const CallNode* op) override {
      if (!is_pure(op->builtin)) found = op->op;
      Visitor::visit_Call(op);
    }
  } f;
  f.visit(value);
  if (!f.found.empty())
    user_error(at, "a T.Let whose value calls " + f.found +
                       " cannot be inlined by this backend; bind the value with a statement (x = value) instead");
}

// A vector load A[Ramp(i, 1, n)] of a one-dimensional buffer.
bool contiguous_load(const Expr& e) {
  const auto* load = as<BufferLoadNode>(e);
  const auto* ramp = load && load->indices.size() == 1 ? as<RampNode>(load->indices[0]) : nullptr;
  const int64_t* stride = ramp ? as_const_int(ramp->stride) : nullptr;
  return stride && *stride == 1 && load->buffer->shape.size() == 1;
}

class Scalarizer : public Mutator {
 public:
  Scalarizer(bool keep_simd128, HeliumVars helium_vars)
      : helium_vars_(std::move(helium_vars)), keep_simd128_(keep_simd128) {}

 protected:
  // ---- scalar contexts: inline lets, read single lanes ----------------------------
  Expr mutate_Let(const LetNode* op, const Expr& self) override {
    refuse_impure(op->value, op->span);
    if (op->dtype.is_vector()) return self;  // handled lane by lane by its consumer
    return mutate(substitute(op->body, op->var, op->value));
  }

  Expr mutate_Shuffle(const ShuffleNode* op, const Expr& self) override {
    if (op->dtype.is_vector()) return self;
    return lane(self, 0);
  }

  // vmladava: kept for the C backend when both vectors are contiguous loads of a flat
  // buffer (its helper reads them from their first address), else the sum of the lane
  // products, in order, from the accumulator on.
  Expr mutate_Call(const CallNode* op, const Expr& self) override {
    if (!op->is(Builtin::Vmladava) || op->args.size() != 3) return Mutator::mutate_Call(op, self);
    if (!keep_simd128_ && contiguous_load(op->args[1]) && contiguous_load(op->args[2]))
      return Mutator::mutate_Call(op, self);
    const DataType i32 = DataType::Int(32);
    Expr sum = mutate(op->args[0]);
    for (int k = 0; k < op->args[1]->dtype.lanes(); ++k)
      sum = Binary(ExprKind::Add, sum,
                   Binary(ExprKind::Mul, Cast(i32, lane(op->args[1], k), op->span), Cast(i32, lane(op->args[2], k), op->span),
                          op->span),
                   op->span);
    return sum;
  }

  Stmt mutate_BufferStore(const BufferStoreNode* op, const Stmt& self) override {
    const int lanes = op->value->dtype.lanes();
    if (lanes == 1 || (keep_simd128_ && simd128_store(op))) return Mutator::mutate_BufferStore(op, self);
    if (!keep_simd128_ && helium_store(op, &helium_vars_)) return self;
    std::vector<Expr> values;
    for (int k = 0; k < lanes; ++k) values.push_back(lane(op->value, k));
    std::vector<Var> temps;
    if (reads_pointer(op->value, op->buffer->data.get())) {
      for (int k = 0; k < lanes; ++k) {
        temps.push_back(MakeVar(op->buffer->name + "_lane" + std::to_string(k), values[k]->dtype, op->span));
        values[k] = temps.back();
      }
    }
    std::vector<Stmt> stores;
    for (int k = 0; k < lanes; ++k) {
      std::vector<Expr> idx;
      for (const auto& i : op->indices) idx.push_back(lane(i, k));
      stores.push_back(BufferStore(op->buffer, values[k], std::move(idx), op->span));
    }
    Stmt out = SeqStmt(std::move(stores), op->span);
    for (size_t k = temps.size(); k-- > 0;) out = LetStmt(temps[k], lane(op->value, static_cast<int>(k)), out, op->span);
    return out;
  }

  Stmt mutate_LetStmt(const LetStmtNode* op, const Stmt& self) override {
    const int lanes = op->var->dtype.lanes();
    if (lanes == 1) return Mutator::mutate_LetStmt(op, self);
    if (helium_vars_.count(op->var.get())) return LetStmt(op->var, op->value, mutate(op->body), op->span);
    std::vector<Var> vars;
    for (int k = 0; k < lanes; ++k)
      vars.push_back(MakeVar(op->var->name + "_" + std::to_string(k), op->var->dtype.element_of(), op->var->span));
    std::vector<Expr> values;
    for (int k = 0; k < lanes; ++k) values.push_back(lane(op->value, k));
    lane_vars_[op->var.get()] = vars;
    Stmt body = mutate(op->body);
    lane_vars_.erase(op->var.get());
    for (int k = lanes; k-- > 0;) body = LetStmt(vars[k], values[k], body, op->span);
    return body;
  }

 private:
  // Lane `k` of `e`, as a scalar expression without vectors.
  Expr lane(const Expr& e, int k) {
    if (e->dtype.is_scalar() && e->kind != ExprKind::Shuffle) return mutate(e);
    const Span& s = e->span;
    switch (e->kind) {
      case ExprKind::Ramp: {
        const auto* op = as<RampNode>(e);
        Expr base = mutate(op->base), stride = mutate(op->stride);
        if (k == 0) return base;
        const DataType t = base->dtype;
        const int64_t *b = as_const_int(base), *c = as_const_int(stride);
        if (b && c) return IntImm(t, *b + *c * k, s);
        if (c) return Binary(ExprKind::Add, base, IntImm(t, *c * k, s), s);
        return Binary(ExprKind::Add, base, Binary(ExprKind::Mul, stride, IntImm(t, k, s), s), s);
      }
      case ExprKind::Broadcast: return mutate(as<BroadcastNode>(e)->value);
      case ExprKind::Shuffle: {
        const auto* op = as<ShuffleNode>(e);
        int index = op->indices.at(static_cast<size_t>(k));
        for (const auto& v : op->vectors) {
          if (index < v->dtype.lanes()) return lane(v, index);
          index -= v->dtype.lanes();
        }
        internal_error(__FILE__, __LINE__, "shuffle index past its vectors (the verifier checks this)");
      }
      case ExprKind::Let: {
        const auto* op = as<LetNode>(e);
        refuse_impure(op->value, op->span);
        return lane(substitute(op->body, op->var, op->value), k);
      }
      case ExprKind::Var: {
        auto it = lane_vars_.find(as<VarNode>(e));
        MTIR_ICHECK(it != lane_vars_.end(), "vector variable '" + as<VarNode>(e)->name + "' used outside its let");
        return it->second.at(static_cast<size_t>(k));
      }
      case ExprKind::Not: return Not(lane(as<NotNode>(e)->a, k), s);
      case ExprKind::Select: {
        const auto* op = as<SelectNode>(e);
        return Select(lane(op->condition, k), lane(op->true_value, k), lane(op->false_value, k), s);
      }
      case ExprKind::Cast: return Cast(e->dtype.element_of(), lane(as<CastNode>(e)->value, k), s);
      case ExprKind::BufferLoad: {
        const auto* op = as<BufferLoadNode>(e);
        std::vector<Expr> idx;
        for (const auto& i : op->indices) idx.push_back(lane(i, k));
        return BufferLoad(op->buffer, std::move(idx), s);
      }
      case ExprKind::Call: {
        const auto* op = as<CallNode>(e);
        std::vector<Expr> args;
        for (const auto& a : op->args) args.push_back(lane(a, k));
        return Call(e->dtype.element_of(), op->op, std::move(args), op->attrs, s);
      }
      default:
        if (is_binary(e->kind)) {
          const auto* op = static_cast<const BinaryNode*>(e.get());
          return Binary(e->kind, lane(op->a, k), lane(op->b, k), s);
        }
        user_error(s, std::string("cannot scalarize a vector ") + expr_kind_name(e->kind));
    }
  }

  std::unordered_map<const VarNode*, std::vector<Var>> lane_vars_;
  const HeliumVars helium_vars_;  // the int32x4 lets kept for Helium (C only)
  bool keep_simd128_;
};

PrimFunc scalarize(const PrimFunc& f, bool keep_simd128) {
  // Cheap exit: most functions have no vectors at all.
  struct Any : Visitor {
    bool found = false;
    void visit(const Expr& e) override {
      if (!found && e && has_vectors(e)) found = true;
    }
  } any;
  any.visit_func(f);
  if (!any.found) return f;
  return Scalarizer(keep_simd128, keep_simd128 ? HeliumVars{} : helium_lets(f->body)).mutate_func(f);
}

}  // namespace

Pass ScalarizeVectors() {
  return MakeFunctionPass("scalarize_vectors", [](const PrimFunc& f) { return scalarize(f, false); });
}

Pass ScalarizeVectorsSimd128() {
  return MakeFunctionPass("scalarize_vectors_simd128", [](const PrimFunc& f) { return scalarize(f, true); });
}

}  // namespace mtir
