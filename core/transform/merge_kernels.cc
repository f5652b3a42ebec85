// MergeKernels: kernels that differ only in integer constants become one function that
// takes those constants as int32 parameters, and every call passes its own values.
//
// Why: a model repeats layers (AD's six 128x128 fully connected layers, VWW's blocks):
// their kernels are the same loop nest with another requantization multiplier, shift,
// rounding term or extent. Each copy costs flash; one shared body plus a few immediates
// at each call site costs far less. GCC's identical code folding already merges copies
// that are equal to the bit; this pass also merges copies whose constants differ.
//
// How: every integer constant at a site where a run-time value works the same (index
// and address arithmetic, loop bounds, comparisons, the requantization's multiplier,
// rounding term and shift, the shapes of flat buffer views) is replaced by a
// placeholder; kernels whose placeholder forms are structurally equal form a group.
// Sites where all members agree keep their constant; each distinct column of differing
// values becomes one parameter, or reads another's times a small factor (below).
// Constants stay where C or the backends need them, or where a variable would cost: divisors (a division by a constant is a multiply),
// min/max bounds (the saturating clamp is one SSAT only with constant bounds), the
// arguments of other intrinsics than the shifts, bitwise operators and SMMLAR, vector
// nodes, allocation sizes and attributes.
//
// Assumes the unpacked calling convention with call_tir lowered (each kernel is called
// by call_extern from the AOT main); runs after lower_call_tir. A call redirected to
// another member's body carries the kernel it replaces in the attribute "kernel_name",
// so the profiling hooks still name each operator's own kernel.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "analysis/callees.h"
#include "ir/mutator.h"
#include "ir/visitor.h"
#include "ir/structural_equal.h"
#include "transform/transform.h"

namespace mtir {
namespace {

const DataType kI32 = DataType::Int(32);
// More parameters than this and the calls (arguments past the fourth go on the stack)
// and the register pressure in the shared body cost more than the copy saves.
constexpr size_t kMaxParams = 8;

bool holeable_type(DataType t) { return t.lanes() == 1 && t.is_int() && (t.bits() == 32 || t.bits() == 64); }

// Walks a function in a fixed order and hands each integer constant at an eligible
// site to `site(value, ordinal)`, which returns what goes there. Two functions with
// structurally equal results visit their sites in the same order, so ordinal k of one
// corresponds to ordinal k of the other.
class SiteRewriter : public Mutator {
 public:
  // The constant, its ordinal, and whether it is in the shape of a flat view (which
  // emits no code: a view's shape only describes the memory).
  using Site = std::function<Expr(const IntImmNode*, size_t, bool)>;
  explicit SiteRewriter(Site site) : site_(std::move(site)) {}

 protected:
  Expr mutate_IntImm(const IntImmNode* op, const Expr& self) override {
    if (!holeable_type(op->dtype)) return self;
    return site_(op, count_++, in_shape_);
  }
  // A constant operand stays: divisors, and the bounds of min/max (clamps).
  Expr keep_constant_b(const BinaryNode* op, const Expr& self) {
    Expr a = mutate(op->a);
    Expr b = as<IntImmNode>(op->b) ? op->b : mutate(op->b);
    if (a == op->a && b == op->b) return self;
    return Binary(op->kind, a, b, op->span);
  }
  Expr keep_constants(const BinaryNode* op, const Expr& self) {
    Expr a = as<IntImmNode>(op->a) ? op->a : mutate(op->a);
    Expr b = as<IntImmNode>(op->b) ? op->b : mutate(op->b);
    if (a == op->a && b == op->b) return self;
    return Binary(op->kind, a, b, op->span);
  }
  Expr mutate_Div(const DivNode* op, const Expr& self) override { return keep_constant_b(op, self); }
  Expr mutate_Mod(const ModNode* op, const Expr& self) override { return keep_constant_b(op, self); }
  Expr mutate_FloorDiv(const FloorDivNode* op, const Expr& self) override { return keep_constant_b(op, self); }
  Expr mutate_FloorMod(const FloorModNode* op, const Expr& self) override { return keep_constant_b(op, self); }
  Expr mutate_Min(const MinNode* op, const Expr& self) override { return keep_constants(op, self); }
  Expr mutate_Max(const MaxNode* op, const Expr& self) override { return keep_constants(op, self); }
  Expr mutate_Call(const CallNode* op, const Expr& self) override {
    // Shifts and bitwise operators take a run-time operand as well (a variable shift
    // amount is masked by the backends), and so does SMMLAR (smmlar_requant's per-tensor
    // multiplier is a register operand either way); every other intrinsic keeps its constants.
    const bool any_operand = op->builtin && (op->is(Builtin::ShiftRight) || op->is(Builtin::ShiftLeft) ||
                                             op->is(Builtin::BitwiseAnd) || op->is(Builtin::BitwiseOr) ||
                                             op->is(Builtin::BitwiseXor) || op->is(Builtin::Smmlar));
    bool changed = false;
    std::vector<Expr> args;
    for (const auto& a : op->args) {
      args.push_back(!any_operand && as<IntImmNode>(a) ? a : mutate(a));
      changed = changed || args.back() != a;
    }
    if (!changed) return self;
    return Call(op->dtype, op->op, std::move(args), op->attrs, op->span);
  }
  Expr mutate_Ramp(const RampNode*, const Expr& self) override { return self; }
  Expr mutate_Broadcast(const BroadcastNode*, const Expr& self) override { return self; }
  Expr mutate_Shuffle(const ShuffleNode*, const Expr& self) override { return self; }
  Stmt mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (body == op->body) return self;
    return AttrStmt(op->node, op->key, op->value, body, op->span);
  }
  Stmt mutate_Allocate(const AllocateNode* op, const Stmt& self) override {
    allocated_.insert(op->buffer.get());  // its size stays a constant (a C array)
    return Mutator::mutate_Allocate(op, self);
  }
  // A view declared on a pointer: its shape may become a parameter.
  Stmt mutate_DeclBuffer(const DeclBufferNode* op, const Stmt& self) override {
    const Buffer& b = op->buffer;
    if (!allocated_.count(b.get()) && !views_.count(b.get()) && b->strides.empty()) {
      bool changed = false;
      in_shape_ = true;
      std::vector<Expr> shape = mutate_all(b->shape, &changed);
      in_shape_ = false;
      if (changed) {
        auto nb = std::make_shared<BufferNode>(*b);
        nb->shape = std::move(shape);
        views_[b.get()] = nb;
      } else {
        views_[b.get()] = b;
      }
    }
    return Mutator::mutate_DeclBuffer(op, self);
  }
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = views_.find(b.get());
    return it == views_.end() ? b : it->second;
  }

 private:
  Site site_;
  size_t count_ = 0;
  bool in_shape_ = false;
  std::set<const BufferNode*> allocated_;
  std::map<const BufferNode*, Buffer> views_;
};

struct Kernel {
  std::string name;
  PrimFunc func;
  PrimFunc form;                // constants replaced by placeholders
  std::vector<int64_t> values;  // the constant at each site
  std::vector<DataType> types;
  std::vector<bool> in_shape;   // the site is in a flat view's shape
};

Kernel make_kernel(const std::string& name, const PrimFunc& f) {
  Kernel k{name, f, nullptr, {}, {}, {}};
  SiteRewriter r([&](const IntImmNode* op, size_t, bool in_shape) -> Expr {
    k.values.push_back(op->value);
    k.types.push_back(op->dtype);
    k.in_shape.push_back(in_shape);
    return MakeVar("site", op->dtype);
  });
  auto form = std::make_shared<PrimFuncNode>(*r.mutate_func(f));
  form->attrs.erase("global_symbol");  // the one attribute that always differs
  k.form = form;
  return k;
}

// How a call of a merged kernel changes: the shared symbol, and the values to append.
struct Redirect {
  std::string symbol;
  std::vector<int64_t> extra;
};

class CallRewriter : public Mutator {
 public:
  explicit CallRewriter(const std::map<std::string, Redirect>& r) : redirects_(r) {}

 protected:
  Expr mutate_Call(const CallNode* op, const Expr& self) override {
    Expr e = Mutator::mutate_Call(op, self);
    const auto* call = as<CallNode>(e);
    if (!call->is(Builtin::CallExtern) || call->args.empty()) return e;
    const auto* sym = as<StringImmNode>(call->args[0]);
    auto it = sym ? redirects_.find(sym->value) : redirects_.end();
    if (it == redirects_.end()) return e;
    std::vector<Expr> args = {StringImm(it->second.symbol, call->args[0]->span)};
    args.insert(args.end(), call->args.begin() + 1, call->args.end());
    for (int64_t v : it->second.extra) args.push_back(IntImm(kI32, v));
    Attrs attrs = call->attrs;
    if (sym->value != it->second.symbol) attrs["kernel_name"] = sym->value;
    return Call(call->dtype, call->op, std::move(args), attrs, call->span);
  }

 private:
  const std::map<std::string, Redirect>& redirects_;
};

// The parameters a merge of `members` needs: each distinct column of differing values
// over the members that code reads, in site order; site_param[s] is the parameter of
// site s, -1 where all members agree, or kViewShape where the site differs but is only
// in flat views' shapes: no code reads those, so they need no parameter and take the
// column's largest value (every member's accesses stay inside the declared extent).
// A column that is k times another in every member (2 <= k <= kMaxFactor: a pixel's
// stride 3 * C beside the channel stride C, which simplify folds from (p * 3) * C to
// p * 3C) takes no parameter: its sites read that column's parameter times k
// (site_scale[s]; 1 elsewhere). A parameter of its own cost GCC a register in the
// shared body (VWW's 1x1 layers: +1,318 instructions); larger factors are coincidences
// (a multiplier and a rounding term) and keep their own.
// False when a value does not fit an int32 parameter.
constexpr int kViewShape = -2;

constexpr int64_t kMaxFactor = 1024;

// k when column c is k times column b in every member, 2 <= k <= kMaxFactor; else 0.
int64_t whole_multiple(const std::vector<int64_t>& c, const std::vector<int64_t>& b) {
  int64_t k = 0;
  for (size_t m = 0; m < c.size(); ++m) {
    if (b[m] == 0 || c[m] % b[m] != 0) return 0;
    if (m > 0 && c[m] / b[m] != k) return 0;
    k = c[m] / b[m];
  }
  return k >= 2 && k <= kMaxFactor ? k : 0;
}

bool columns(const std::vector<const Kernel*>& members, std::vector<std::vector<int64_t>>* params,
             std::vector<int>* site_param, std::vector<int64_t>* site_scale = nullptr,
             std::vector<int64_t>* shape_value = nullptr) {
  const size_t n = members[0]->values.size();
  auto column_at = [&](size_t s) {
    std::vector<int64_t> column;
    for (const Kernel* k : members) column.push_back(k->values[s]);
    return column;
  };
  auto differs = [](const std::vector<int64_t>& column) {
    return std::any_of(column.begin(), column.end(), [&](int64_t v) { return v != column[0]; });
  };
  // The differing columns some code site has, in site order.
  std::vector<std::vector<int64_t>> read_by_code;
  for (size_t s = 0; s < n; ++s) {
    std::vector<int64_t> column = column_at(s);
    if (members[0]->in_shape[s] || !differs(column)) continue;
    for (int64_t v : column)
      if (v < INT32_MIN || v > INT32_MAX) return false;
    if (std::find(read_by_code.begin(), read_by_code.end(), column) == read_by_code.end()) read_by_code.push_back(column);
  }
  // A column that is no whole multiple of another is a parameter; the others read one
  // of those, or (a multiple only of multiples, past kMaxFactor of a parameter) their own.
  std::map<std::vector<int64_t>, std::pair<size_t, int64_t>> column_param;  // column -> parameter, k
  for (const auto& c : read_by_code) {
    bool derived = false;
    for (const auto& b : read_by_code) derived = derived || whole_multiple(c, b) != 0;
    if (!derived) column_param[c] = {params->size(), 1}, params->push_back(c);
  }
  const size_t roots = params->size();
  for (const auto& c : read_by_code) {
    for (size_t p = 0; p < roots && !column_param.count(c); ++p)
      if (int64_t k = whole_multiple(c, (*params)[p])) column_param[c] = {p, k};
    if (!column_param.count(c)) column_param[c] = {params->size(), 1}, params->push_back(c);
  }
  site_param->assign(n, -1);
  if (site_scale) site_scale->assign(n, 1);
  if (shape_value) shape_value->assign(n, 0);
  for (size_t s = 0; s < n; ++s) {
    std::vector<int64_t> column = column_at(s);
    if (!differs(column)) continue;
    auto it = column_param.find(column);
    if (it == column_param.end()) {
      (*site_param)[s] = kViewShape;
      if (shape_value) (*shape_value)[s] = *std::max_element(column.begin(), column.end());
      continue;
    }
    (*site_param)[s] = static_cast<int>(it->second.first);
    if (site_scale) (*site_scale)[s] = it->second.second;
  }
  return true;
}

bool mergeable(const std::vector<const Kernel*>& members) {
  std::vector<std::vector<int64_t>> params;
  std::vector<int> site_param;
  return columns(members, &params, &site_param) && params.size() <= kMaxParams;
}

// Merges `members` (members[0] is kept, with the constants as parameters) and records
// how each member's calls change.
PrimFunc merge_group(const std::vector<const Kernel*>& members, std::map<std::string, Redirect>* redirects) {
  const Kernel& first = *members[0];
  std::vector<std::vector<int64_t>> params;  // params[p][member]
  std::vector<int> site_param;
  std::vector<int64_t> site_scale, shape_value;
  columns(members, &params, &site_param, &site_scale, &shape_value);
  std::vector<Var> vars;
  for (size_t p = 0; p < params.size(); ++p) vars.push_back(MakeVar("merged_c" + std::to_string(p), kI32));
  SiteRewriter fill([&](const IntImmNode* op, size_t s, bool) -> Expr {
    if (site_param[s] == kViewShape) return IntImm(op->dtype, shape_value[s], op->span);
    if (site_param[s] < 0) return IntImm(op->dtype, op->value, op->span);
    Expr v = vars[site_param[s]];
    if (op->dtype != kI32) v = Cast(op->dtype, v, op->span);
    return site_scale[s] == 1 ? v : Binary(ExprKind::Mul, v, IntImm(op->dtype, site_scale[s], op->span), op->span);
  });
  auto f = std::make_shared<PrimFuncNode>(*fill.mutate_func(first.func));
  for (const Var& v : vars) {
    f->params.push_back(v);
    f->param_buffers.push_back(nullptr);
  }
  const std::string symbol = symbol_of(first.name, first.func);
  for (size_t m = 0; m < members.size(); ++m) {
    Redirect r{symbol, {}};
    for (const auto& column : params) r.extra.push_back(column[m]);
    (*redirects)[symbol_of(members[m]->name, members[m]->func)] = std::move(r);
  }
  return f;
}

// Splits a group of equal forms into runs that merge within kMaxParams: greedily, each
// run takes the first kernel left and every later one that keeps it mergeable.
std::vector<std::vector<const Kernel*>> split(std::vector<const Kernel*> left) {
  std::vector<std::vector<const Kernel*>> runs;
  while (!left.empty()) {
    std::vector<const Kernel*> run = {left[0]}, rest;
    for (size_t i = 1; i < left.size(); ++i) {
      run.push_back(left[i]);
      if (!mergeable(run)) {
        run.pop_back();
        rest.push_back(left[i]);
      }
    }
    runs.push_back(std::move(run));
    left = std::move(rest);
  }
  return runs;
}

IRModule merge_kernels(const IRModule& m) {
  std::map<std::string, std::string> name_of_symbol;
  for (const auto& [name, f] : m.functions) name_of_symbol[symbol_of(name, f)] = name;
  std::set<std::string> module_symbols;
  for (const auto& [symbol, name] : name_of_symbol) module_symbols.insert(symbol);
  std::set<std::string> called;
  std::map<std::string, bool> calls_module_function;
  for (const auto& [name, f] : m.functions) {
    for (const auto& symbol : callees(f->body, Builtin::CallExtern)) {
      called.insert(symbol);
      if (module_symbols.count(symbol)) calls_module_function[name] = true;
    }
  }
  // Candidates: kernels only called (not callers, not packed, not on a device).
  std::vector<Kernel> kernels;
  for (const auto& [name, f] : m.functions) {
    if (!called.count(symbol_of(name, f)) || is_packed(f) || f->attrs.count(kDeviceAttr) || calls_module_function[name])
      continue;
    kernels.push_back(make_kernel(name, f));
  }
  // Groups of structurally equal forms, in module order.
  std::vector<std::vector<const Kernel*>> groups;
  std::multimap<size_t, size_t> by_hash;  // form hash -> group index
  for (const Kernel& k : kernels) {
    size_t h = structural_hash(k.form);
    bool placed = false;
    auto range = by_hash.equal_range(h);
    for (auto it = range.first; it != range.second && !placed; ++it) {
      const Kernel* lead = groups[it->second][0];
      if (lead->types == k.types && structural_equal(lead->form, k.form)) {
        groups[it->second].push_back(&k);
        placed = true;
      }
    }
    if (!placed) {
      by_hash.emplace(h, groups.size());
      groups.push_back({&k});
    }
  }
  std::map<std::string, Redirect> redirects;
  std::map<std::string, PrimFunc> merged;
  std::set<std::string> dropped;
  for (const auto& group : groups) {
    for (const auto& run : split(group)) {
      if (run.size() < 2) continue;
      merged[run[0]->name] = merge_group(run, &redirects);
      for (size_t i = 1; i < run.size(); ++i) dropped.insert(run[i]->name);
    }
  }
  if (redirects.empty()) return m;
  IRModule out;
  out.name = m.name;
  out.attrs = m.attrs;
  CallRewriter calls(redirects);
  for (const auto& [name, f] : m.functions) {
    if (dropped.count(name)) continue;
    auto it = merged.find(name);
    out.functions.emplace_back(name, it != merged.end() ? it->second : calls.mutate_func(f));
  }
  return out;
}

}  // namespace

Pass MergeKernels() {
  Pass p;
  p.name = "merge_kernels";
  p.run = merge_kernels;
  return p;
}

}  // namespace mtir
