#include "ops/op_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "support/diagnostic.h"

namespace mtir {
namespace ops {

using json = nlohmann::json;

void fail(const std::string& op, const std::string& message) { user_error(Span{}, op + ": " + message); }

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// An integer in [-(2^31-1), 2^31-1] (also rejects huge unsigned values).
bool is_int31(const json& e) {
  if (e.is_number_unsigned()) return e.get<uint64_t>() <= static_cast<uint64_t>(kMaxInt32);
  if (!e.is_number_integer()) return false;
  int64_t i = e.get<int64_t>();
  return i >= -kMaxInt32 && i <= kMaxInt32;
}

const json& empty_object() {
  static const json e = json::object();
  return e;
}

}  // namespace

AttrReader::AttrReader(std::string op, const json& attrs, std::vector<std::string> known)
    : op_(std::move(op)), attrs_(&attrs), known_(std::move(known)) {
  if (attrs.is_null()) {
    attrs_ = &empty_object();
    return;
  }
  if (!attrs.is_object()) fail(op_, "attributes must be a JSON object, not " + attrs.dump());
  for (auto it = attrs.begin(); it != attrs.end(); ++it) {
    if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
    if (known_.empty()) fail(op_, "unknown attribute '" + it.key() + "'; this op takes no attributes");
    fail(op_, "unknown attribute '" + it.key() + "'; known attributes: " + join(known_));
  }
}

bool AttrReader::has(const std::string& key) const { return attrs_->contains(key); }

const json* AttrReader::raw(const std::string& key) const {
  auto it = attrs_->find(key);
  return it == attrs_->end() ? nullptr : &*it;
}

void AttrReader::bad(const std::string& key, const std::string& requirement) const {
  const json* v = raw(key);
  fail(op_, "attribute '" + key + "' must be " + requirement + (v ? " (got " + v->dump() + ")" : ""));
}

int64_t AttrReader::get_int(const std::string& key, int64_t def) const {
  const json* v = raw(key);
  if (!v) return def;
  if (!v->is_number_integer()) bad(key, "an integer");
  if (!is_int31(*v)) bad(key, "an integer of at most 31 bits");
  return v->get<int64_t>();
}

double AttrReader::get_float(const std::string& key, double def) const {
  const json* v = raw(key);
  if (!v) return def;
  if (!v->is_number()) bad(key, "a number");
  double d = v->get<double>();
  if (!std::isfinite(d)) bad(key, "a finite number");
  return d;
}

bool AttrReader::get_bool(const std::string& key, bool def) const {
  const json* v = raw(key);
  if (!v) return def;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number_integer() && (v->get<int64_t>() == 0 || v->get<int64_t>() == 1)) return v->get<int64_t>() == 1;
  bad(key, "a boolean (true/false or 0/1)");
}

std::string AttrReader::get_string(const std::string& key, const std::string& def,
                                   const std::vector<std::string>& choices) const {
  const json* v = raw(key);
  if (!v) return def;
  std::vector<std::string> quoted;
  for (const auto& c : choices) quoted.push_back("\"" + c + "\"");
  std::string req = "one of " + join(quoted);
  if (!v->is_string()) bad(key, req);
  std::string s = v->get<std::string>();
  if (std::find(choices.begin(), choices.end(), s) == choices.end()) bad(key, req);
  return s;
}

std::vector<int64_t> AttrReader::get_ints(const std::string& key, size_t n, int64_t min_value,
                                          const std::string& what, std::optional<std::vector<int64_t>> def) const {
  const json* v = raw(key);
  std::string req = n ? "a list of " + std::to_string(n) + " " + what : "a list of " + what;
  if (!v) {
    if (!def) fail(op_, "missing required attribute '" + key + "' (" + req + ")");
    return *def;
  }
  if (!v->is_array() || (n && v->size() != n)) bad(key, req);
  std::vector<int64_t> out;
  for (const auto& e : *v) {
    if (!is_int31(e) || e.get<int64_t>() < min_value) bad(key, req);
    out.push_back(e.get<int64_t>());
  }
  return out;
}

void check_inputs(const std::string& op, const std::vector<TensorType>& inputs, size_t min_count,
                  const std::vector<std::string>& names, Dtypes dtypes) {
  size_t max_count = names.size();
  if (inputs.size() < min_count || inputs.size() > max_count) {
    std::string expect;
    if (min_count == max_count) {
      expect = std::to_string(min_count);
    } else if (max_count == min_count + 1) {
      expect = std::to_string(min_count) + " or " + std::to_string(max_count);
    } else {
      expect = std::to_string(min_count) + " to " + std::to_string(max_count);
    }
    std::string list;
    for (size_t i = 0; i < names.size(); ++i) {
      std::string n = i >= min_count ? "[" + names[i] + "]" : names[i];
      list += (i ? ", " : "") + n;
    }
    fail(op, "expected " + expect + " input" + (max_count == 1 ? "" : "s") + " (" + list + "), got " +
                 std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = inputs[i];
    std::string name = i < names.size() ? names[i] : "input " + std::to_string(i);
    if (dtypes == Dtypes::kFloat32 && t.dtype != DataType::Float(32))
      fail(op, "input '" + name + "' has type " + t.dtype.str() + "; only float32 is supported");
    bool is_f32_or_f64 = t.dtype == DataType::Float(32) || t.dtype == DataType::Float(64);
    if (dtypes == Dtypes::kFloat && !is_f32_or_f64)
      fail(op, "input '" + name + "' has type " + t.dtype.str() + "; only float32 and float64 are supported");
    if (dtypes == Dtypes::kAny && !is_f32_or_f64 && !t.dtype.is_integer() && !t.dtype.is_bool())
      fail(op, "input '" + name + "' has type " + t.dtype.str() +
                   "; only float32, float64, integer types and bool are supported");
    if (dtypes == Dtypes::kNumeric && !is_f32_or_f64 && !t.dtype.is_integer())
      fail(op, "input '" + name + "' has type " + t.dtype.str() +
                   "; only float32, float64 and integer types are supported");
    if (t.dtype != inputs[0].dtype)
      fail(op, "input '" + name + "' has type " + t.dtype.str() + " but '" + names[0] + "' has type " +
                   inputs[0].dtype.str() + "; mixed types are not supported");
    int64_t n = 1;
    for (int64_t d : t.shape) {
      if (d <= 0) fail(op, "input '" + name + "' has shape " + shape_str(t.shape) + "; every dimension must be positive");
      n *= d;
      if (n > std::numeric_limits<int32_t>::max())
        fail(op, "input '" + name + "' has more than 2^31-1 elements");
    }
  }
}

void check_rank(const std::string& op, const std::vector<TensorType>& inputs, size_t i, const std::string& name,
                size_t rank) {
  if (inputs[i].shape.size() != rank)
    fail(op, name + " must have rank " + std::to_string(rank) + ", got shape " + shape_str(inputs[i].shape));
}

int64_t normalize_axis(const std::string& op, const std::string& attr, int64_t axis, int64_t rank, bool inclusive) {
  int64_t hi = inclusive ? rank : rank - 1;
  if (axis < -rank || axis > hi)
    fail(op, "attribute '" + attr + "' is " + std::to_string(axis) + ", out of range [" + std::to_string(-rank) +
                 ", " + std::to_string(hi) + "] for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// ---- IR helpers ---------------------------------------------------------------
Expr ci(int64_t v) { return IntImm(DataType::Int(32), v); }
Expr cf(double v) { return FloatImm(DataType::Float(32), v); }
Expr cv(DataType t, double v) {
  if (t.is_float()) return FloatImm(t, v);
  if (t.is_bool()) return IntImm(t, v != 0);
  // The type's range as doubles (exact for the bounds of types up to 53 bits; int64's
  // are clamped by the comparisons below before the conversion).
  int bits = t.bits();
  double lo = t.is_uint() ? 0.0 : -std::ldexp(1.0, bits - 1);
  double hi = t.is_uint() ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
  if (v <= lo) return IntImm(t, t.is_uint() ? 0 : std::numeric_limits<int64_t>::min() >> (64 - bits));
  if (v >= hi) return IntImm(t, t.is_uint() ? static_cast<int64_t>((~uint64_t{0}) >> (64 - bits))
                                            : std::numeric_limits<int64_t>::max() >> (64 - bits));
  return IntImm(t, static_cast<int64_t>(std::trunc(v)));
}
Var ivar(const std::string& name) { return MakeVar(name, DataType::Int(32)); }

namespace {
bool is_int(const Expr& e, int64_t v) {
  const int64_t* c = as_const_int(e);
  return c && *c == v && e->dtype == DataType::Int(32);
}
const int64_t* cint(const Expr& e) { return e->dtype == DataType::Int(32) ? as_const_int(e) : nullptr; }
}  // namespace

Expr add(Expr a, Expr b) {
  if (is_int(a, 0)) return b;
  if (is_int(b, 0)) return a;
  if (cint(a) && cint(b)) return ci(*cint(a) + *cint(b));
  if (const int64_t* cb = cint(b)) {
    // (x + c1) + c2 and (x - c1) + c2 fold their constants.
    if (const auto* x = as<AddNode>(a); x && cint(x->b)) return add(x->a, ci(*cint(x->b) + *cb));
    if (const auto* x = as<SubNode>(a); x && cint(x->b)) return add(x->a, ci(*cb - *cint(x->b)));
    if (*cb < 0) return Binary(ExprKind::Sub, a, ci(-*cb));
  }
  return Binary(ExprKind::Add, a, b);
}
Expr sub(Expr a, Expr b) {
  if (is_int(b, 0)) return a;
  if (cint(a) && cint(b)) return ci(*cint(a) - *cint(b));
  if (const int64_t* cb = cint(b)) return add(a, ci(-*cb));
  return Binary(ExprKind::Sub, a, b);
}
Expr mul(Expr a, Expr b) {
  if (is_int(a, 1)) return b;
  if (is_int(b, 1)) return a;
  if (is_int(a, 0) || is_int(b, 0)) return ci(0);
  if (cint(a) && cint(b)) return ci(*cint(a) * *cint(b));
  return Binary(ExprKind::Mul, a, b);
}
Expr fdiv(Expr a, Expr b) { return Binary(ExprKind::Div, a, b); }
Expr floordiv(Expr a, Expr b) {
  if (is_int(b, 1)) return a;
  return Binary(ExprKind::FloorDiv, a, b);
}
Expr floormod(Expr a, Expr b) {
  if (is_int(b, 1)) return ci(0);
  return Binary(ExprKind::FloorMod, a, b);
}
Expr min_(Expr a, Expr b) { return Binary(ExprKind::Min, a, b); }
Expr max_(Expr a, Expr b) { return Binary(ExprKind::Max, a, b); }
Expr lt(Expr a, Expr b) { return Binary(ExprKind::LT, a, b); }
Expr ge(Expr a, Expr b) { return Binary(ExprKind::GE, a, b); }
Expr and_(Expr a, Expr b) {
  if (!a) return b;
  if (!b) return a;
  // Keep chains left-nested so they print without parentheses.
  if (const auto* x = as<AndNode>(b)) return and_(and_(a, x->a), x->b);
  return Binary(ExprKind::And, a, b);
}
Expr load(const Buffer& b, std::vector<Expr> idx) { return BufferLoad(b, std::move(idx)); }
Stmt store(const Buffer& b, Expr value, std::vector<Expr> idx) { return BufferStore(b, std::move(value), std::move(idx)); }
Expr lazy_select(Expr cond, Expr a, Expr b) {
  if (!cond) return a;
  DataType t = a->dtype;
  return Call(t, "if_then_else", {std::move(cond), std::move(a), std::move(b)});
}
Expr call(const std::string& op, std::vector<Expr> args) {
  DataType t = args.at(0)->dtype;
  return Call(t, op, std::move(args));
}

Expr LoopNest::axis(const std::string& name, int64_t extent) {
  if (extent == 1) return ci(0);
  Var v = ivar(name);
  loops_.emplace_back(v, extent);
  return v;
}

std::vector<Expr> LoopNest::axes(const std::vector<int64_t>& shape, const std::string& prefix,
                                 const std::string& suffix) {
  std::vector<Expr> idx;
  for (size_t k = 0; k < shape.size(); ++k) idx.push_back(axis(prefix + std::to_string(k) + suffix, shape[k]));
  return idx;
}

Stmt LoopNest::wrap(Stmt body) const {
  for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
    body = For(it->first, ci(0), ci(it->second), ForKind::kSerial, std::move(body));
  return body;
}

namespace {
std::vector<Expr> shape_exprs(const std::vector<int64_t>& shape) {
  std::vector<Expr> s;
  for (int64_t d : shape) s.push_back(ci(d));
  return s;
}
}  // namespace

Buffer FuncBuilder::param(const std::string& name, const std::vector<int64_t>& shape, DataType dtype) {
  Buffer b = MakeBuffer(name, dtype, shape_exprs(shape));
  params_.push_back(MakeVar(name, DataType::Handle()));
  buffers_.push_back(b);
  return b;
}

PrimFunc FuncBuilder::finish(const std::string& func_name, Stmt body) const {
  auto f = std::make_shared<PrimFuncNode>();
  f->params = params_;
  f->param_buffers = buffers_;
  f->body = std::move(body);
  f->attrs["global_symbol"] = func_name;
  f->attrs["tir.noalias"] = true;
  return f;
}

Buffer flat_view(const Buffer& b, int64_t n) {
  auto v = std::make_shared<BufferNode>(*b);
  v->shape = {ci(n)};
  v->name = b->name + "_flat";
  return v;
}

Buffer scratch(const std::string& name, const std::vector<int64_t>& shape, DataType dtype) {
  return MakeBuffer(name, dtype, shape_exprs(shape));
}

std::vector<int64_t> broadcast_shape(const std::string& op, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(op, "shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together (dimension " +
                   std::to_string(k) + " of the result: " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    out[k] = std::max(da, db);
  }
  return out;
}

std::vector<Expr> broadcast_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                                  const std::vector<Expr>& out_idx) {
  std::vector<Expr> idx;
  size_t off = out_shape.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) idx.push_back(shape[k] == 1 ? ci(0) : out_idx[k + off]);
  return idx;
}

std::vector<Expr> unflatten(const Expr& flat, const std::vector<int64_t>& shape) {
  std::vector<Expr> idx(shape.size());
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] == 1) {
      idx[k] = ci(0);
    } else {
      Expr q = floordiv(flat, ci(stride));
      idx[k] = k == 0 ? q : floormod(q, ci(shape[k]));
    }
    stride *= shape[k];
  }
  return idx;
}

}  // namespace ops
}  // namespace mtir
