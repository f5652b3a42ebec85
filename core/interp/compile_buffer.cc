// Buffer accesses of the compiled interpreter. A buffer whose shape, strides and offset
// are constants (nearly all of them) has its element strides folded at compile time, so
// an access is its indices' bounds checks, one multiply-add per dimension and the check
// against the storage; the common element types are read and written directly. The
// checks and their messages are the tree walk's (Interpreter::element_address, load,
// store in interpreter.cc), in the same order.
#include <cstring>

#include "interp/compiled.h"
#include "interp/linear.h"
#include "ir/op.h"
#include "ir/structural_equal.h"

namespace mtir {
namespace interp {

namespace {

constexpr size_t kInline = 8;  // dimensions kept on the stack

// Where one access goes: the buffer's storage slot and how its indices map to an element.
struct Access {
  const BufferNode* buffer;
  int slot;
  const Span& span;
  std::vector<CExprPtr> indices, dims, strides;
  CExprPtr offset;  // null: 0
  // How the folded address computes indices[k] with no call: its constant plus its
  // variable terms terms[first, end) wrapped to `type`; or by calling `call` (an index
  // other than a constant or a linear form of variables alone).
  struct InlineIndex {
    const CExpr* call;
    uint64_t constant;
    uint32_t first, end;
    DataType type;
    bool int32;  // type is int32: wrapping is one truncation
  };
  std::vector<InlineIndex> inline_indices;
  std::vector<LinearInt::VarTerm> terms;
  int64_t index_value(Frame& f, const InlineIndex& ix) const {
    if (ix.call) return ix.call->eval_int(f);
    uint64_t sum = ix.constant;
    for (uint32_t j = ix.first; j < ix.end; ++j)
      sum += terms[j].coef * static_cast<uint64_t>(f.vars[static_cast<size_t>(terms[j].slot)].i);
    return ix.int32 ? static_cast<int32_t>(static_cast<uint32_t>(sum)) : wrap_int(ix.type, static_cast<int64_t>(sum));
  }
  // Constant shape, strides and offset, small enough that no address overflows int64.
  bool folded = false;
  std::vector<int64_t> fixed_dims, fixed_strides;
  int64_t fixed_offset = 0;

  Storage& storage(Frame& f) const {
    Storage* st = f.storage[static_cast<size_t>(slot)];
    if (!st) user_error(f.where(span), "buffer '" + buffer->name + "' is used outside its allocation");
    return *st;
  }
  // A folded flat buffer with a nonnegative extent (most kernels' hot accesses).
  bool flat = false;

  int64_t address(Frame& f, const Storage& st) const {
    if (flat) {
      // Unsigned compares: i < 0 or i >= extent, and the same against the storage.
      const int64_t i = index_value(f, inline_indices[0]);
      if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(fixed_dims[0])) flat_out_of_bounds(f, i, nullptr);
      const int64_t address = fixed_offset + i * fixed_strides[0];
      if (static_cast<uint64_t>(address) >= static_cast<uint64_t>(st.size)) flat_out_of_bounds(f, i, &address);
      return address;
    }
    if (folded && indices.size() <= kInline) return folded_address(f, st);
    return general_address(f, st);
  }
  [[noreturn]] __attribute__((noinline, cold)) void flat_out_of_bounds(Frame& f, int64_t i, const int64_t* address) const {
    if (!address) out_of_bounds(f.where(span), *buffer, &i, 1, fixed_dims.data(), 1, "");
    storage_overrun(f, &i, *address, *f.storage[static_cast<size_t>(slot)]);
  }
  int64_t folded_address(Frame& f, const Storage& st) const {
    int64_t idx[kInline];
    const size_t n = indices.size();
    int64_t address = fixed_offset;
    for (size_t k = 0; k < n; ++k) idx[k] = index_value(f, inline_indices[k]);
    for (size_t k = 0; k < n; ++k) {
      if (idx[k] < 0 || idx[k] >= fixed_dims[k]) out_of_bounds(f.where(span), *buffer, idx, n, fixed_dims.data(), n, "");
      address += idx[k] * fixed_strides[k];
    }
    if (address < 0 || address >= st.size) storage_overrun(f, idx, address, st);
    return address;
  }
  [[noreturn]] __attribute__((noinline, cold)) void storage_overrun(Frame& f, const int64_t* idx, int64_t address, const Storage& st) const {
    const size_t n = indices.size();
    out_of_bounds(f.where(span), *buffer, idx, n, fixed_dims.data(), n,
                  "is element " + std::to_string(address) + ", outside its storage of " + std::to_string(st.size) +
                      " elements");
  }
  int64_t general_address(Frame& f, const Storage& st) const;
};

int64_t Access::general_address(Frame& f, const Storage& st) const {
  std::vector<int64_t> idx, dim;
  for (const CExprPtr& e : indices) idx.push_back(e->eval_int(f));
  for (const CExprPtr& e : dims) dim.push_back(e->eval_int(f));
  const Span& at = f.where(span);
  auto fail = [&](const std::string& detail) {
    out_of_bounds(at, *buffer, idx.data(), idx.size(), dim.data(), dim.size(), detail);
  };
  const size_t ndim = dim.size();
  if (idx.size() != ndim)
    fail("has " + std::to_string(idx.size()) + " dimensions but the shape " + shape_text(dim) + " has " +
         std::to_string(ndim));
  for (size_t k = 0; k < ndim; ++k)
    if (idx[k] < 0 || idx[k] >= dim[k]) fail("");
  // __int128 so that a wild stride cannot overflow the address computation itself.
  __int128 address = offset ? offset->eval_int(f) : 0;
  if (!strides.empty()) {
    for (size_t k = 0; k < ndim && k < strides.size(); ++k)
      address += static_cast<__int128>(idx[k]) * strides[k]->eval_int(f);
  } else {
    int64_t flat = 0;
    for (size_t k = 0; k < ndim; ++k)
      if (__builtin_mul_overflow(flat, dim[k], &flat) || __builtin_add_overflow(flat, idx[k], &flat))
        fail("is beyond any addressable element");
    address += flat;
  }
  if (address < 0 || address >= st.size) {
    std::string where = (address > INT64_MAX || address < INT64_MIN) ? std::string("(overflow)")
                                                                       : std::to_string(static_cast<int64_t>(address));
    fail("is element " + where + ", outside its storage of " + std::to_string(st.size) + " elements");
  }
  return static_cast<int64_t>(address);
}

// Folds constant shape, strides and offset when every in-range address fits in 2^62.
void fold(Access* a, const BufferNode& b) {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0, v;
  for (const Expr& e : b.shape) {
    if (!Compiler::constant(e, &v)) return;
    dims.push_back(v);
  }
  for (const Expr& e : b.strides) {
    if (!Compiler::constant(e, &v)) return;
    strides.push_back(v);
  }
  if (b.elem_offset && !Compiler::constant(b.elem_offset, &offset)) return;
  if (a->indices.size() != dims.size() || (!strides.empty() && strides.size() < dims.size())) return;
  if (strides.empty()) {  // row-major
    strides.assign(dims.size(), 0);
    __int128 stride = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      if (stride > (__int128{1} << 62)) return;
      strides[k] = static_cast<int64_t>(stride);
      stride *= dims[k] > 0 ? dims[k] : 0;
    }
  }
  __int128 reach = offset < 0 ? -static_cast<__int128>(offset) : offset;
  for (size_t k = 0; k < dims.size(); ++k) {
    __int128 s = strides[k] < 0 ? -static_cast<__int128>(strides[k]) : strides[k];
    reach += (dims[k] > 0 ? dims[k] : 0) * s;
    if (reach > (__int128{1} << 62)) return;
  }
  a->folded = true;
  a->fixed_dims = std::move(dims);
  a->fixed_strides = std::move(strides);
  a->fixed_offset = offset;
}

// An index for Access::index_value: a constant or a linear form of variables inline.
Access::InlineIndex inline_index(const Expr& index, const CExpr* e, std::vector<LinearInt::VarTerm>* terms) {
  const auto first = static_cast<uint32_t>(terms->size());
  if (const auto* form = dynamic_cast<const LinearInt*>(e); form && form->exprs.empty()) {
    terms->insert(terms->end(), form->vars.begin(), form->vars.end());
    return {nullptr, form->constant, first, static_cast<uint32_t>(terms->size()), form->type,
            form->type == DataType::Int(32)};
  }
  // A constant: its value as its ConstExpr gives it (an int64 is wrapped to nothing).
  if (const auto* k = as<IntImmNode>(index); k && !k->dtype.is_float())
    return {nullptr, static_cast<uint64_t>(make_int(k->dtype, k->value).i), first, first, DataType::Int(64), false};
  return {e, 0, first, first, DataType::Int(64), false};
}

Access make_access(Compiler* c, const BufferNode& b, const std::vector<Expr>& indices, const Span& span) {
  Access a{&b, c->storage_slot(storage_key(b)), span, c->exprs(indices), c->exprs(b.shape), c->exprs(b.strides),
           b.elem_offset ? c->expr(b.elem_offset) : nullptr, {}, {}, false, {}, {}, 0, false};
  for (size_t k = 0; k < indices.size(); ++k)
    a.inline_indices.push_back(inline_index(indices[k], a.indices[k].get(), &a.terms));
  fold(&a, b);
  a.flat = a.folded && a.indices.size() == 1 && a.fixed_dims[0] >= 0;
  return a;
}

inline void check_type(Frame& f, const Access& a, const Storage& st) {
  if (st.array->dtype != a.buffer->dtype) storage_type_mismatch(f.where(a.span), *a.buffer, st.array->dtype);
}

// T: the element's C type for the direct forms; void for any other type (NDArray's).
template <typename T>
struct LoadExpr final : CExpr {
  explicit LoadExpr(Access a) : access(std::move(a)), type(access.buffer->dtype) {
    int_result = std::is_integral_v<T>;
    known_type = type;
  }
  // A widening integer cast of the loaded value: the same value, of type `t`.
  bool widen_to(DataType t) override {
    if constexpr (!std::is_integral_v<T>) {
      return false;
    } else {
      const DataType from = access.buffer->dtype;
      const bool fits = t.bits() >= 64 || (from.is_int() == t.is_int() && t.bits() >= from.bits()) ||
                        (from.is_uint() && t.is_int() && t.bits() > from.bits());
      if (!t.is_integer() || !fits) return false;
      type = known_type = t;
      return true;
    }
  }
  int64_t eval_int(Frame& f) const override {
    if constexpr (std::is_integral_v<T>) {
      Storage& st = access.storage(f);
      const int64_t addr = access.address(f, st);
      if (st.track_writes && !st.written[static_cast<size_t>(addr)]) uninitialized_read(f.where(access.span), addr, st);
      check_type(f, access, st);
      T v;
      std::memcpy(&v, st.array->data.data() + addr * static_cast<int64_t>(sizeof(T)), sizeof(T));
      return v;
    } else {
      return eval(f).i;
    }
  }
  Scalar eval(Frame& f) const override {
    const DataType t = access.buffer->dtype;
    Scalar s;
    s.dtype = type;
    if constexpr (std::is_integral_v<T>) {
      s.i = eval_int(f);
      return s;
    }
    Storage& st = access.storage(f);
    const int64_t addr = access.address(f, st);
    if (st.track_writes && !st.written[static_cast<size_t>(addr)]) uninitialized_read(f.where(access.span), addr, st);
    check_type(f, access, st);
    if constexpr (std::is_floating_point_v<T>) {
      T v;
      std::memcpy(&v, st.array->data.data() + addr * static_cast<int64_t>(sizeof(T)), sizeof(T));
      s.f = v;
      return s;
    }
    if (t.is_float()) return make_float(t, st.array->get_float(addr));
    // The little-endian bytes, which make_int wraps (sign- or zero-extends) to the type.
    const int nbytes = t.bytes();
    const uint8_t* p = st.array->data.data() + addr * nbytes;
    uint64_t raw = p[0];
    for (int k = 1; k < nbytes; ++k) raw |= uint64_t{p[k]} << (8 * k);
    return make_int(t, static_cast<int64_t>(raw));
  }
  Access access;
  DataType type;  // of the values: the buffer's, or the wider type of a cast folded in
};

template <typename T>
struct StoreStmt final : CStmt {
  StoreStmt(const Span& s, Access a, CExprPtr v)
      : span(s), access(std::move(a)), value(std::move(v)),
        direct(std::is_integral_v<T> && value->int_result && value->known_type == access.buffer->dtype) {}
  void exec(Frame& f) const override {
    f.step(span);
    f.stmt_span = &span;
    Storage& st = access.storage(f);
    if constexpr (std::is_integral_v<T>) {
      if (direct) return store_int(f, st);
    }
    // Value first, then the address, as the C statement `A[i] = v` may do either.
    Scalar v = value->eval(f);
    const int64_t addr = access.address(f, st);
    check_type(f, access, st);
    const DataType t = access.buffer->dtype;
    // The verifier makes the value's type equal the buffer's; converting anyway keeps a
    // malformed program from storing raw bits of the wrong kind.
    if (v.dtype != t) v = interp::cast(t, v, f.where(access.span));
    if constexpr (std::is_void_v<T>) {
      if (t.is_float()) st.array->set_float(addr, v.f);
      else st.array->set_int(addr, v.i);
    } else {
      T x;
      if constexpr (std::is_floating_point_v<T>) x = static_cast<T>(v.f);
      else x = static_cast<T>(static_cast<uint64_t>(v.i));  // the low bytes: two's complement wrap
      std::memcpy(st.array->data.data() + addr * static_cast<int64_t>(sizeof(T)), &x, sizeof(T));
    }
    if (st.track_writes) st.written[static_cast<size_t>(addr)] = 1;
  }
  // exec when the value is an integer of the buffer's type: no Scalar and no cast.
  void store_int(Frame& f, Storage& st) const {
    const int64_t v = value->eval_int(f);
    const int64_t addr = access.address(f, st);
    check_type(f, access, st);
    const T x = static_cast<T>(static_cast<uint64_t>(v));
    std::memcpy(st.array->data.data() + addr * static_cast<int64_t>(sizeof(T)), &x, sizeof(T));
    if (st.track_writes) st.written[static_cast<size_t>(addr)] = 1;
  }
  const Span& span;
  Access access;
  CExprPtr value;
  bool direct;  // store_int applies
};

// `B[i] = B[i] + e` on an int32 buffer whose indices need no call (an accumulation): one
// address for the load and the store, the same element, which cannot fail the second
// time. Otherwise as StoreStmt<int32_t> of the Add: the store's storage check, the load
// (bounds, initialization, type, at its span), e, then the write.
struct AccumulateInt32 final : CStmt {
  AccumulateInt32(const Span& s, Access load, CExprPtr e) : span(s), load(std::move(load)), addend(std::move(e)) {}
  void exec(Frame& f) const override {
    f.step(span);
    f.stmt_span = &span;
    Storage* st = f.storage[static_cast<size_t>(load.slot)];
    if (!st) user_error(f.where(span), "buffer '" + load.buffer->name + "' is used outside its allocation");
    const int64_t addr = load.address(f, *st);
    if (st->track_writes && !st->written[static_cast<size_t>(addr)]) uninitialized_read(f.where(load.span), addr, *st);
    check_type(f, load, *st);
    uint8_t* p = st->array->data.data() + addr * static_cast<int64_t>(sizeof(int32_t));
    int32_t x;
    std::memcpy(&x, p, sizeof x);
    const uint64_t sum = static_cast<uint64_t>(int64_t{x}) + static_cast<uint64_t>(addend->eval_int(f));
    x = static_cast<int32_t>(static_cast<uint32_t>(sum));
    std::memcpy(p, &x, sizeof x);
  }
  const Span& span;
  Access load;
  CExprPtr addend;
};

// The accumulation `op` is, or null.
CStmtPtr accumulation(Compiler* c, const BufferStoreNode* op) {
  const DataType i32 = DataType::Int(32);
  const auto* add = op->value->kind == ExprKind::Add ? static_cast<const BinaryNode*>(op->value.get()) : nullptr;
  const auto* load = add ? as<BufferLoadNode>(add->a) : nullptr;
  if (!load || op->buffer->dtype != i32 || add->dtype != i32 || load->buffer != op->buffer ||
      load->indices.size() != op->indices.size())
    return nullptr;
  for (size_t k = 0; k < op->indices.size(); ++k)
    if (!same_expr(load->indices[k], op->indices[k])) return nullptr;
  Access a = make_access(c, *load->buffer, load->indices, load->span);
  if (!a.folded) return nullptr;
  for (const Access::InlineIndex& ix : a.inline_indices)
    if (ix.call) return nullptr;
  return std::make_unique<AccumulateInt32>(op->span, std::move(a), c->expr(add->b));
}

template <template <typename> class Node, typename... Args>
auto by_type(DataType t, Args&&... args) {
  using Base = std::conditional_t<std::is_base_of_v<CExpr, Node<void>>, CExpr, CStmt>;
  std::unique_ptr<Base> out;
  if (t == DataType::Int(8)) out = std::make_unique<Node<int8_t>>(std::forward<Args>(args)...);
  else if (t == DataType::UInt(8)) out = std::make_unique<Node<uint8_t>>(std::forward<Args>(args)...);
  else if (t == DataType::Int(16)) out = std::make_unique<Node<int16_t>>(std::forward<Args>(args)...);
  else if (t == DataType::Int(32)) out = std::make_unique<Node<int32_t>>(std::forward<Args>(args)...);
  else if (t == DataType::Float(32)) out = std::make_unique<Node<float>>(std::forward<Args>(args)...);
  else out = std::make_unique<Node<void>>(std::forward<Args>(args)...);
  return out;
}

struct VarPointer final : CPointer {
  VarPointer(const VarNode* v, int slot) : var(v), slot(slot) {}
  CallArg eval(Frame& f) const override {
    CallArg a;
    a.storage = f.storage[static_cast<size_t>(slot)];
    if (!a.storage) user_error(f.where(var->span), "pointer '" + var->name + "' points to no memory the interpreter knows here");
    return a;
  }
  const VarNode* var;
  int slot;
};

struct ElementPointer final : CPointer {
  explicit ElementPointer(Access a) : access(std::move(a)) {}
  CallArg eval(Frame& f) const override {
    CallArg a;
    a.storage = &access.storage(f);
    a.offset = access.address(f, *a.storage);
    return a;
  }
  Access access;
};

}  // namespace

// As Interpreter::pointer_of: the forms a pointer argument takes.
CPointerPtr Compiler::pointer(const Expr& e) {
  if (const auto* v = as<VarNode>(e)) return std::make_unique<VarPointer>(v, storage_slot(v));
  const auto* call = as<CallNode>(e);
  const auto* load = call && call->is(Builtin::AddressOf) ? as<BufferLoadNode>(call->args.at(0)) : nullptr;
  if (!load) throw Unsupported{"a pointer argument"};
  return std::make_unique<ElementPointer>(make_access(this, *load->buffer, load->indices, load->span));
}

CExprPtr Compiler::load(const BufferLoadNode* op) {
  return by_type<LoadExpr>(op->buffer->dtype, make_access(this, *op->buffer, op->indices, op->span));
}

CStmtPtr Compiler::store(const BufferStoreNode* op) {
  if (op->value->dtype.is_vector()) throw Unsupported{"vector stores"};
  if (CStmtPtr fused = accumulation(this, op)) return fused;
  CExprPtr value = expr(op->value);
  return by_type<StoreStmt>(op->buffer->dtype, op->span, make_access(this, *op->buffer, op->indices, op->span),
                            std::move(value));
}

}  // namespace interp
}  // namespace mtir
