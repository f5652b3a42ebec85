#include "codegen/emit_common.h"

#include <cctype>
#include <sstream>
#include <variant>

#include "ir/attrs.h"
#include "ir/structural_equal.h"
#include "support/diagnostic.h"

namespace mtir {

void refuse_builtin(const CallNode* call, const char* backend, const std::string& why) {
  const std::string name = "T." + call->op;
  if (call->builtin) {
    const OpInfo& info = builtin_info(*call->builtin);
    if (*info.lowered_by)
      user_error(call->span, name + " must be lowered first (the " + info.lowered_by + " pass): the " + backend +
                                 " backend does not emit it");
  }
  user_error(call->span, "the " + std::string(backend) + " backend does not support " + name + (why.empty() ? "" : ": ") + why);
}

void refuse_statement_builtin(const CallNode* call, const char* backend) {
  user_error(call->span, "T." + call->op + " returns from the function, so it can only be a statement of its own "
                         "(T.evaluate), not part of an expression (the " + std::string(backend) + " backend)");
}

void refuse_unscalarized(const Expr& e, const char* backend, const char* what) {
  user_error(e->span, "the " + std::string(backend) + " backend emits " + what + ": a " + expr_kind_name(e->kind) +
                          " must be scalarized first (run the scalarize_vectors pass)");
}

void unlowered_statement(const Stmt& s, const char* backend) {
  internal_error(__FILE__, __LINE__,
                 std::string(stmt_kind_name(s->kind)) + " reached the " + backend +
                     " backend: T.allocate_const and T.realize do not reach code generation (lower_allocate_const, "
                     "refuse_carried_types)");
}

bool attr_flag(const PrimFunc& f, const char* key) {
  auto it = f->attrs.find(key);
  return it != f->attrs.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
}

std::string linked_params_file(const PrimFunc& f) {
  auto it = f->attrs.find(kLinkedParamsAttr);
  return it != f->attrs.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second) : "";
}

std::map<size_t, std::string> linked_params(const PrimFunc& f) {
  std::map<size_t, std::string> out;
  auto it = f->attrs.find(kConstantSymbolsAttr);
  if (linked_params_file(f).empty() || it == f->attrs.end() || !std::holds_alternative<std::string>(it->second))
    return out;
  std::istringstream list(std::get<std::string>(it->second));
  for (std::string item; std::getline(list, item, ',');) {
    const size_t colon = item.find(':');
    out[std::stoul(item.substr(0, colon))] = item.substr(colon + 1);
  }
  return out;
}

bool noalias_param(const PrimFunc& f, int index) {
  if (!attr_flag(f, "tir.noalias")) return false;
  auto it = f->attrs.find(kAliasedParamsAttr);
  if (it == f->attrs.end() || !std::holds_alternative<std::string>(it->second)) return true;
  if (index < 0) return false;
  const std::string& list = std::get<std::string>(it->second);
  for (size_t pos = 0; pos < list.size();) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    if (list.substr(pos, comma - pos) == std::to_string(index)) return false;
    pos = comma + 1;
  }
  return true;
}

std::string user_function_name(const PrimFunc& f, const std::string& symbol) {
  auto it = f->attrs.find("tir.kernel_of");
  if (it != f->attrs.end() && std::holds_alternative<std::string>(it->second)) return std::get<std::string>(it->second);
  return symbol;
}

const CallNode* statement_builtin(const EvaluateNode* op) {
  const auto* call = as<CallNode>(op->value);
  if (!call || !call->builtin) return nullptr;
  return builtin_info(*call->builtin).position == OpInfo::Position::kStmt ? call : nullptr;
}

std::string sanitized_name(const std::string& hint, bool keep_dots) {
  std::string out;
  for (char c : hint) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (keep_dots && c == '.') ? c : '_';
  return out;
}

std::string unique_name(const std::string& base, char sep, std::set<std::string>* used) {
  std::string name = base;
  for (int n = 1; used->count(name); ++n) name = base + sep + std::to_string(n);
  used->insert(name);
  return name;
}

std::string unique_name(const std::string& base, char sep, std::set<std::string>* used, std::map<std::string, int>* next) {
  int& n = (*next)[base];
  std::string name = n == 0 ? base : base + sep + std::to_string(n);
  while (used->count(name)) name = base + sep + std::to_string(++n);
  used->insert(name);
  ++n;
  return name;
}

int signed_clamp_bits(const BinaryNode* op) {
  const ExprKind want = op->kind == ExprKind::Min ? ExprKind::Max : ExprKind::Min;
  if (!(op->dtype == DataType::Int(32)) || !op->a || op->a->kind != want) return 0;
  const auto* inner = static_cast<const BinaryNode*>(op->a.get());
  auto outer_c = as_const_int(op->b), inner_c = as_const_int(inner->b);
  if (!outer_c || !inner_c) return 0;
  const int64_t hi = op->kind == ExprKind::Min ? *outer_c : *inner_c;
  const int64_t lo = op->kind == ExprKind::Min ? *inner_c : *outer_c;
  for (int n = 2; n < 32; ++n)
    if (lo == -(int64_t{1} << (n - 1)) && hi == (int64_t{1} << (n - 1)) - 1) return n;
  return 0;
}

namespace {
// `e` as its non-constant part (null for a constant) and its constant term.
std::pair<Expr, int64_t> split_constant(const Expr& e) {
  if (const auto* imm = as<IntImmNode>(e)) return {Expr(), imm->value};
  if (e->kind == ExprKind::Add || e->kind == ExprKind::Sub)
    if (const auto* imm = as<IntImmNode>(static_cast<const BinaryNode*>(e.get())->b))
      return {static_cast<const BinaryNode*>(e.get())->a, e->kind == ExprKind::Add ? imm->value : -imm->value};
  return {e, 0};
}
}  // namespace

const BufferLoadNode* consecutive_elements(const std::vector<Expr>& args) {
  if (args.size() < 2) return nullptr;
  const auto* first = as<BufferLoadNode>(args[0]);
  if (!first || first->indices.size() != 1 || first->predicate || first->dtype.lanes() != 1 ||
      !first->buffer->strides.empty())
    return nullptr;
  const std::pair<Expr, int64_t> base = split_constant(first->indices[0]);
  for (size_t k = 1; k < args.size(); ++k) {
    const auto* load = as<BufferLoadNode>(args[k]);
    if (!load || load->buffer.get() != first->buffer.get() || load->indices.size() != 1 || load->predicate ||
        load->dtype != first->dtype)
      return nullptr;
    const std::pair<Expr, int64_t> at = split_constant(load->indices[0]);
    const bool same_part = base.first ? at.first && same_expr(base.first, at.first) : !at.first;
    if (!same_part || at.second != base.second + static_cast<int64_t>(k)) return nullptr;
  }
  return first;
}

}  // namespace mtir
