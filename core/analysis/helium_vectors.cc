// See helium_vectors.h.
#include "analysis/helium_vectors.h"

#include "ir/op.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"

namespace mtir {
namespace {

const DataType kInt32x4 = DataType::Int(32).with_lanes(kHeliumLanes);

bool flat_vector_load(const Expr& e, const BufferLoadNode** load, const RampNode** ramp, int lanes = kHeliumLanes) {
  *load = e && e->kind == ExprKind::BufferLoad ? static_cast<const BufferLoadNode*>(e.get()) : nullptr;
  if (!*load || (*load)->indices.size() != 1 || (*load)->buffer->shape.size() != 1) return false;
  const Expr& index = (*load)->indices[0];
  *ramp = index->kind == ExprKind::Ramp ? static_cast<const RampNode*>(index.get()) : nullptr;
  return *ramp && (*ramp)->lanes == lanes;
}

// A store's one index: Ramp(i, 1, lanes) with a scalar i, into a one-dimensional buffer.
bool contiguous_store(const BufferStoreNode* store, int lanes) {
  if (store->indices.size() != 1 || store->buffer->shape.size() != 1) return false;
  const Expr& index = store->indices[0];
  const auto* ramp = index->kind == ExprKind::Ramp ? static_cast<const RampNode*>(index.get()) : nullptr;
  const int64_t* stride = ramp ? as_const_int(ramp->stride) : nullptr;
  return stride && *stride == 1 && ramp->lanes == lanes && !ramp->base->dtype.is_vector();
}

// `e` as rest + c with c the constant of its outermost additions (x + 3 + 4: x, 7; a
// constant: 0 and itself).
Expr peel_constant(const Expr& e, int64_t* c) {
  if (const int64_t* v = as_const_int(e)) {
    *c += *v;
    return IntImm(e->dtype, 0);
  }
  if (e->kind != ExprKind::Add) return e;
  const auto* op = static_cast<const BinaryNode*>(e.get());
  if (const int64_t* b = as_const_int(op->b)) {
    *c += *b;
    return peel_constant(op->a, c);
  }
  return e;
}

// The one index of a four-lane access of a one-dimensional buffer whose lanes lie at
// constant non-negative offsets from lane 0 (a gather or scatter).
bool offset_access(const Buffer& buffer, const std::vector<Expr>& indices, int64_t offsets[kHeliumLanes]) {
  if (indices.size() != 1 || buffer->shape.size() != 1 || indices[0]->dtype.lanes() != kHeliumLanes) return false;
  return helium_lane_offsets(indices[0], offsets);
}

// A Shuffle of four scalar int32 loads (the sums of a tile, one lane each: VMOV).
bool scalar_lanes(const Expr& e) {
  if (e->kind != ExprKind::Shuffle) return false;
  const auto* op = static_cast<const ShuffleNode*>(e.get());
  if (op->vectors.size() != kHeliumLanes) return false;
  for (size_t k = 0; k < op->vectors.size(); ++k)
    if (op->indices.at(k) != static_cast<int>(k) || op->vectors[k]->dtype != DataType::Int(32) ||
        op->vectors[k]->kind != ExprKind::BufferLoad)
      return false;
  return true;
}

}  // namespace

bool helium_ramp_lane(const Expr& e, int k, Expr* base, int64_t* offset) {
  if (e->kind == ExprKind::Ramp) {
    const auto* ramp = static_cast<const RampNode*>(e.get());
    const int64_t* stride = as_const_int(ramp->stride);
    if (!stride || ramp->base->dtype.is_vector() || k >= ramp->lanes) return false;
    *base = ramp->base, *offset = *stride * k;
    return true;
  }
  if (e->kind != ExprKind::Shuffle) return false;
  const auto* op = static_cast<const ShuffleNode*>(e.get());
  int index = op->indices.at(static_cast<size_t>(k));
  for (const auto& v : op->vectors) {
    if (index < v->dtype.lanes()) return v->dtype.is_vector() && helium_ramp_lane(v, index, base, offset);
    index -= v->dtype.lanes();
  }
  return false;
}

bool helium_lane_offsets(const Expr& index, int64_t offsets[kHeliumLanes]) {
  if (index->dtype.lanes() != kHeliumLanes) return false;
  Expr base0;
  int64_t c0 = 0;
  for (int k = 0; k < kHeliumLanes; ++k) {
    Expr base;
    int64_t c = 0;
    if (!helium_ramp_lane(index, k, &base, &c)) return false;
    Expr rest = peel_constant(base, &c);
    if (k == 0) base0 = rest, c0 = c;
    else if (!structural_equal(rest, base0)) return false;
    offsets[k] = c - c0;
    if (offsets[k] < 0) return false;
  }
  return true;
}

int64_t helium_load_stride(const Expr& e) {
  const BufferLoadNode* load;
  const RampNode* ramp;
  if (!flat_vector_load(e, &load, &ramp) || ramp->base->dtype.is_vector()) return 0;
  const int64_t* stride = as_const_int(ramp->stride);
  return stride && *stride >= 1 ? *stride : 0;
}

const BufferLoadNode* helium_widened_load(const Expr& e) {
  if (e->kind != ExprKind::Cast || e->dtype != kInt32x4) return nullptr;
  const Expr& v = static_cast<const CastNode*>(e.get())->value;
  const DataType t = v->dtype.element_of();
  if (t != DataType::Int(8) && t != DataType::Int(16)) return nullptr;
  if (helium_load_stride(v) == 1) return static_cast<const BufferLoadNode*>(v.get());
  // int8 lanes at constant offsets (VLDRB.S32 gather): a residual input beside a 2x2 tile.
  const auto* load = v->kind == ExprKind::BufferLoad ? static_cast<const BufferLoadNode*>(v.get()) : nullptr;
  int64_t offsets[kHeliumLanes];
  return load && t == DataType::Int(8) && offset_access(load->buffer, load->indices, offsets) ? load : nullptr;
}

const CallNode* helium_shift_left(const Expr& e, int64_t* amount) {
  // int32x4(T.shift_left(uint32x4(v), uint32 c)): a wrapping left shift by a constant.
  if (e->kind != ExprKind::Cast || e->dtype != kInt32x4) return nullptr;
  const Expr& v = static_cast<const CastNode*>(e.get())->value;
  const auto* call = v->kind == ExprKind::Call ? static_cast<const CallNode*>(v.get()) : nullptr;
  if (!call || !call->is(Builtin::ShiftLeft) || call->args.size() != 2 || v->dtype != DataType::UInt(32).with_lanes(kHeliumLanes))
    return nullptr;
  const auto* by = call->args[1]->kind == ExprKind::Broadcast ? static_cast<const BroadcastNode*>(call->args[1].get()) : nullptr;
  const int64_t* c = by ? as_const_int(by->value) : nullptr;
  const auto* from = call->args[0]->kind == ExprKind::Cast ? static_cast<const CastNode*>(call->args[0].get()) : nullptr;
  if (!c || *c < 0 || *c > 31 || !from || from->value->dtype != kInt32x4) return nullptr;
  *amount = *c;
  return call;
}

const Expr* helium_narrowed_value(const Expr& e) {
  // int32x4(int8x4(v)): the low byte of each lane, sign-extended.
  if (e->kind != ExprKind::Cast || e->dtype != kInt32x4) return nullptr;
  const auto* inner = static_cast<const CastNode*>(e.get())->value.get();
  if (inner->kind != ExprKind::Cast || inner->dtype != DataType::Int(8).with_lanes(kHeliumLanes)) return nullptr;
  return &static_cast<const CastNode*>(inner)->value;
}

bool helium_vector(const Expr& e, const HeliumVars* vars) {
  if (!e || e->dtype != kInt32x4) return false;
  switch (e->kind) {
    case ExprKind::Var: return !vars || vars->count(static_cast<const VarNode*>(e.get())) > 0;
    case ExprKind::BufferLoad: {
      if (helium_load_stride(e) > 0) return true;
      const auto* load = static_cast<const BufferLoadNode*>(e.get());
      int64_t offsets[kHeliumLanes];
      return offset_access(load->buffer, load->indices, offsets);
    }
    case ExprKind::Shuffle: return scalar_lanes(e);
    case ExprKind::Cast: {
      int64_t amount;
      if (const CallNode* shl = helium_shift_left(e, &amount))
        return helium_vector(static_cast<const CastNode*>(shl->args[0].get())->value, vars);
      if (const Expr* v = helium_narrowed_value(e)) return helium_vector(*v, vars);
      return helium_widened_load(e) != nullptr;
    }
    case ExprKind::Broadcast: {
      const Expr& v = static_cast<const BroadcastNode*>(e.get())->value;
      return v->dtype == DataType::Int(32);
    }
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Min:
    case ExprKind::Max: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      return helium_vector(op->a, vars) && helium_vector(op->b, vars);
    }
    case ExprKind::Call: {
      const auto* op = static_cast<const CallNode*>(e.get());
      const bool shift = op->is(Builtin::ShiftRight) && op->args.size() == 2;
      if (!shift && !(op->is(Builtin::MultiplyByQuantizedMultiplier) && op->args.size() == 3)) return false;
      for (const auto& a : op->args)
        if (!helium_vector(a, vars)) return false;
      return true;
    }
    default: return false;
  }
}

bool helium_byte_store(const BufferStoreNode* store) {
  if (store->buffer->dtype != DataType::Int(8) || !contiguous_store(store, kHeliumBytes)) return false;
  const Expr& v = store->value;
  if (v->kind == ExprKind::Broadcast) return static_cast<const BroadcastNode*>(v.get())->value->dtype == DataType::Int(8);
  const BufferLoadNode* load;
  const RampNode* ramp;
  if (!flat_vector_load(v, &load, &ramp, kHeliumBytes) || load->buffer->dtype != DataType::Int(8)) return false;
  const int64_t* stride = as_const_int(ramp->stride);
  return stride && *stride == 1 && !ramp->base->dtype.is_vector();
}

bool helium_scatter_store(const BufferStoreNode* store, int64_t offsets[kHeliumLanes]) {
  return store->buffer->dtype == DataType::Int(8) && !contiguous_store(store, kHeliumLanes) &&
         offset_access(store->buffer, store->indices, offsets);
}

bool helium_store(const BufferStoreNode* store, const HeliumVars* vars) {
  if (helium_byte_store(store)) return true;
  int64_t offsets[kHeliumLanes];
  const bool scatter = helium_scatter_store(store, offsets);
  if (!scatter && !contiguous_store(store, kHeliumLanes)) return false;
  const DataType t = store->buffer->dtype;
  if (t == DataType::Int(32)) return !scatter && helium_vector(store->value, vars);
  if (t != DataType::Int(8) || store->value->kind != ExprKind::Cast) return false;
  return helium_vector(static_cast<const CastNode*>(store->value.get())->value, vars);
}

HeliumVars helium_lets(const Stmt& body) {
  // Every int32x4 let is a candidate; a walk drops those used anywhere but in the value
  // of a kept store or of a candidate let, until no walk drops one (a dropped variable
  // can make a store or let that uses it scalar, and so the others it reads).
  struct Walk : Visitor {
    HeliumVars vars;
    bool collecting = true, dropped = false;
    void drop(const VarNode* v) { dropped = vars.erase(v) > 0 || dropped; }
    void visit_Var(const VarNode* op) override {
      if (!collecting) drop(op);
    }
    void visit_LetStmt(const LetStmtNode* op) override {
      if (collecting) {
        if (op->var->dtype == kInt32x4) vars.insert(op->var.get());
      } else if (vars.count(op->var.get()) && !helium_vector(op->value, &vars)) {
        drop(op->var.get());
      }
      if (collecting || !vars.count(op->var.get())) visit(op->value);
      visit(op->body);
    }
    void visit_BufferStore(const BufferStoreNode* op) override {
      if (!collecting && op->value->dtype.is_vector() && helium_store(op, &vars)) return;
      Visitor::visit_BufferStore(op);
    }
  } walk;
  walk.visit(body);
  if (walk.vars.empty()) return {};
  walk.collecting = false;
  do {
    walk.dropped = false;
    walk.visit(body);
  } while (walk.dropped);
  return walk.vars;
}

}  // namespace mtir
