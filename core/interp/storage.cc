// Storage shared by the interpreter's two forms: the messages of its checks, the size of
// an allocation, and the compiled Allocate and DeclBuffer statements.
#include <algorithm>

#include "interp/compiled.h"

namespace mtir {
namespace interp {

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + ")";
}

void out_of_bounds(const Span& span, const BufferNode& b, const int64_t* idx, size_t nidx, const int64_t* dims,
                   size_t ndim, const std::string& detail) {
  std::string index = "[";
  for (size_t k = 0; k < nidx; ++k) index += (k ? ", " : "") + std::to_string(idx[k]);
  index += "]";
  user_error(span, "out-of-bounds access to buffer '" + b.name + "': index " + index + " " +
                       (detail.empty() ? "outside shape " + shape_text(std::vector<int64_t>(dims, dims + ndim))
                                       : detail));
}

void step_limit_exceeded(const Span& span, int64_t max_steps) {
  user_error(span, "step limit of " + std::to_string(max_steps) + " exceeded (infinite or very long loop?)");
}

void storage_type_mismatch(const Span& span, const BufferNode& b, DataType storage) {
  user_error(span, "buffer '" + b.name + "' is " + b.dtype.str() + " but its storage holds " + storage.str());
}

void uninitialized_read(const Span& span, int64_t addr, const Storage& st) {
  user_error(span, "read of uninitialized element " + std::to_string(addr) + " of buffer '" + st.name + "'");
}

int64_t allocation_elements(const BufferNode& b, const std::vector<int64_t>& dims, const std::function<int64_t()>& offset,
                            const std::function<int64_t(size_t)>& stride, const Span& span, int64_t max_bytes) {
  // Sizes saturate at INT64_MAX on overflow; the limit check below then rejects them.
  auto mul = [](int64_t x, int64_t y) {
    int64_t r;
    return __builtin_mul_overflow(x, y, &r) ? INT64_MAX : r;
  };
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) user_error(span, "allocation of buffer '" + b.name + "' with negative extent " + std::to_string(d));
    count = mul(count, d);
  }
  // With explicit strides or an offset, the storage must reach the farthest element.
  if (count > 0 && (!b.strides.empty() || (b.elem_offset && offset() != 0))) {
    int64_t last = b.elem_offset ? offset() : 0;
    for (size_t k = 0; k < dims.size() && k < b.strides.size(); ++k) {
      int64_t reach = mul(dims[k] - 1, stride(k));
      if (__builtin_add_overflow(last, reach, &last)) last = INT64_MAX - 1;
    }
    count = std::max<int64_t>(count, last + 1);
  }
  if (mul(count, b.dtype.bytes()) > max_bytes)
    user_error(span, "allocation of buffer '" + b.name + "' is larger than the interpreter's limit of " +
                         std::to_string(max_bytes) + " bytes");
  return count;
}

std::unique_ptr<Storage> new_allocation(const BufferNode& b, int64_t count) {
  auto st = std::make_unique<Storage>();
  st->name = b.name;
  st->owned = std::make_unique<NDArray>(NDArray::zeros(b.dtype, {count}));
  st->array = st->owned.get();
  st->size = count;
  st->track_writes = true;
  st->written.assign(static_cast<size_t>(count), 0);
  return st;
}

std::unique_ptr<Storage> new_constant_allocation(const AllocateConstNode& op) {
  const auto count = static_cast<int64_t>(op.size());
  std::unique_ptr<Storage> st = new_allocation(*op.buffer, count);
  for (int64_t i = 0; i < count; ++i) {
    if (op.buffer->dtype.is_float())
      st->array->set_float(i, op.floats[static_cast<size_t>(i)]);
    else
      st->array->set_int(i, op.ints[static_cast<size_t>(i)]);
  }
  st->written.assign(static_cast<size_t>(count), 1);
  return st;
}

namespace {

// Fresh storage on every entry, its elements unwritten; the previous binding of the
// data variable comes back when the body ends.
struct AllocateStmt final : CStmt {
  AllocateStmt(const AllocateNode* op, int slot, Compiler* c)
      : op(op), slot(slot), dims(c->exprs(op->buffer->shape)), strides(c->exprs(op->buffer->strides)),
        offset(op->buffer->elem_offset ? c->expr(op->buffer->elem_offset) : nullptr), body(c->stmt(op->body)) {}
  void exec(Frame& f) const override {
    f.step(op->span);
    f.stmt_span = &op->span;
    std::vector<int64_t> extents;
    for (const CExprPtr& d : dims) extents.push_back(d->eval(f).i);
    const int64_t count = allocation_elements(
        *op->buffer, extents, [&] { return offset->eval(f).i; }, [&](size_t k) { return strides[k]->eval(f).i; },
        op->span, f.options->max_alloc_bytes);
    std::unique_ptr<Storage> st = new_allocation(*op->buffer, count);
    Storage* saved = f.storage[static_cast<size_t>(slot)];
    f.storage[static_cast<size_t>(slot)] = st.get();
    body->exec(f);
    f.storage[static_cast<size_t>(slot)] = saved;
  }
  const AllocateNode* op;
  int slot;
  std::vector<CExprPtr> dims, strides;
  CExprPtr offset;
  CStmtPtr body;
};

// T.allocate_const: storage holding the constants for the duration of the body.
struct AllocateConstStmt final : CStmt {
  AllocateConstStmt(const AllocateConstNode* op, int slot, Compiler* c) : op(op), slot(slot), body(c->stmt(op->body)) {}
  void exec(Frame& f) const override {
    f.step(op->span);
    f.stmt_span = &op->span;
    std::unique_ptr<Storage> st = new_constant_allocation(*op);
    Storage* saved = f.storage[static_cast<size_t>(slot)];
    f.storage[static_cast<size_t>(slot)] = st.get();
    body->exec(f);
    f.storage[static_cast<size_t>(slot)] = saved;
  }
  const AllocateConstNode* op;
  int slot;
  CStmtPtr body;
};

// A view of storage bound elsewhere: accesses go through the data variable and are
// bounds-checked against that storage, so only the element type must agree.
struct DeclBufferStmt final : CStmt {
  DeclBufferStmt(const DeclBufferNode* op, int slot, CStmtPtr body) : op(op), slot(slot), body(std::move(body)) {}
  void exec(Frame& f) const override {
    f.step(op->span);
    f.stmt_span = &op->span;
    const Storage* st = f.storage[static_cast<size_t>(slot)];
    if (!st) user_error(op->span, "buffer '" + op->buffer->name + "' is used outside its allocation");
    if (st->array->dtype != op->buffer->dtype) decl_buffer_type_mismatch(op->span, *op->buffer, *st);
    body->exec(f);
  }
  const DeclBufferNode* op;
  int slot;
  CStmtPtr body;
};

}  // namespace

void decl_buffer_type_mismatch(const Span& span, const BufferNode& b, const Storage& st) {
  user_error(span, "buffer '" + b.name + "' views " + st.array->dtype.str() + " storage of '" + st.name + "' as " +
                       b.dtype.str() + "; the interpreter cannot reinterpret memory");
}

CStmtPtr Compiler::allocate(const AllocateNode* op) {
  return std::make_unique<AllocateStmt>(op, storage_slot(storage_key(*op->buffer)), this);
}

CStmtPtr Compiler::allocate_const(const AllocateConstNode* op) {
  return std::make_unique<AllocateConstStmt>(op, storage_slot(storage_key(*op->buffer)), this);
}

CStmtPtr Compiler::decl_buffer(const DeclBufferNode* op) {
  const int slot = storage_slot(storage_key(*op->buffer));
  return std::make_unique<DeclBufferStmt>(op, slot, stmt(op->body));
}

}  // namespace interp
}  // namespace mtir
