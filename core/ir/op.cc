#include "ir/op.h"
#include "ir/reinterpret.h"

#include <unordered_map>

namespace mtir {

namespace {

// A leading '?' (no arguments allowed too) is not an argument.
constexpr const char* signature_letters(const char* sig) { return sig[0] == '?' ? sig + 1 : sig; }
constexpr size_t signature_arity(const char* sig) {
  size_t n = 0;
  while (sig[n] != 0 && sig[n] != '*' && sig[n] != '#') ++n;
  return n;
}
constexpr bool signature_variadic(const char* sig) { return sig[signature_arity(sig)] != 0; }

}  // namespace

const std::vector<OpInfo>& all_ops() {
  using K = OpInfo::Kind;
  using R = OpInfo::Result;
  using P = OpInfo::Position;
  // The Result and Position columns of builtins.def, spelled short there.
  struct ResultOf {
    R rule;
    DataType type;
  };
  const ResultOf Arg{R::kFirstArg, DataType::Void()}, Branch{R::kBranches, DataType::Void()},
      CallType{R::kCallType, DataType::Void()}, I32{R::kFixed, DataType::Int(32)}, I64{R::kFixed, DataType::Int(64)},
      F64{R::kFixed, DataType::Float(64)}, Bool{R::kFixed, DataType::Bool()}, Handle{R::kFixed, DataType::Handle()};
  const bool Pure = false, Effect = true;
  const P Expr = P::kExpr, Stmt = P::kStmt, Let = P::kLetValue;
  static const std::vector<OpInfo> ops = {
#define MTIR_BUILTIN(Id, name, Kind, int_ok, Result, signature, Eff, Pos, lowered_by)                            \
  {Builtin::Id, name, K::k##Kind, int_ok, Result.rule, Result.type, signature_letters(signature), Eff, Pos,         \
   lowered_by, signature_arity(signature_letters(signature)), signature_variadic(signature_letters(signature)),    \
   signature[0] == '?'},
#include "ir/builtins.def"
  };
  (void)Pure, (void)Effect, (void)Expr, (void)Stmt, (void)Let;
  return ops;
}

const OpInfo& builtin_info(Builtin b) { return all_ops()[static_cast<size_t>(b)]; }

std::optional<Builtin> lookup_builtin(const std::string& name) {
  static const std::unordered_map<std::string, Builtin> by_name = [] {
    std::unordered_map<std::string, Builtin> m;
    for (const auto& op : all_ops()) m.emplace(op.name, op.id);
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

bool builtin_arity_ok(const OpInfo& op, size_t num_args, std::string* why) {
  if (num_args == op.arity || (op.variadic && num_args > op.arity) || (num_args == 0 && op.none_ok)) return true;
  *why = std::string("T.") + op.name + " takes " + (op.variadic ? "at least " : "") + std::to_string(op.arity) +
         " argument(s), got " + std::to_string(num_args);
  return false;
}

bool builtin_args_ok(const OpInfo& op, const std::vector<DataType>& arg_types, std::string* why) {
  if (!builtin_arity_ok(op, arg_types.size(), why)) return false;
  const std::string sig = op.signature;
  const char rest = op.variadic ? sig.back() : 0;
  for (size_t i = 0; i < arg_types.size(); ++i) {
    const char want = i < op.arity ? sig[i] : rest == '#' ? 'i' : 'a';
    const DataType t = arg_types[i];
    bool ok = want == 'h'   ? t.is_handle()
              : want == 'i' ? t.is_integer() || (i >= op.arity && t.is_bool())
              : want == 'f' ? t.is_float()
              : want == 'n' ? t.is_float() || (op.int_ok && t.is_integer())
              : want == 'b' ? t.is_bool()
              : want == 's' ? t.is_handle()  // strings are handles
                            : true;
    if (!ok) {
      const char* what = want == 'i'   ? "an integer"
                         : want == 'h' ? "a handle"
                         : want == 'f' ? "a float"
                         : want == 'n' ? "a number"
                         : want == 'b' ? "a bool"
                                       : "a string";
      *why = "argument " + std::to_string(i + 1) + " of T." + op.name + " must be " + what + ", not " + t.str();
      return false;
    }
  }
  return true;
}

std::string reinterpret_refusal(const Expr& x, DataType to) {
  const DataType from = x->dtype;
  const std::string what = from.str() + " to " + to.str();
  if (to.is_handle() && to.is_scalar()) {
    const auto* zero = as<IntImmNode>(x);
    if (zero && zero->value == 0 && from.is_integer() && from.bits() == 64 && from.is_scalar()) return "";
    return "T.reinterpret to handle makes only the null pointer, T.reinterpret(\"handle\", T.uint64(0)), not " +
           what + ": microtir does not turn numbers into addresses";
  }
  if (!from.is_numeric() || !to.is_numeric()) return "T.reinterpret needs numbers: " + what;
  if (from.lanes() != to.lanes()) {
    if (from.bits() * from.lanes() != to.bits() * to.lanes())
      return "T.reinterpret needs as many bits on both sides: " + what;
    return "T.reinterpret from " + what + " changes the number of lanes, which microtir does not support; it "
           "reinterprets lane by lane (e.g. int32x4 to float32x4)";
  }
  if (from.bits() != to.bits() || (from.bits() != 32 && from.bits() != 64))
    return "T.reinterpret needs numbers of one width, 32 or 64 bits: " + what;
  return "";
}

std::string format_error_message(const std::string& format, const std::vector<int64_t>& values) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format.compare(i, 2, "{}") == 0 && next < values.size()) {
      out += std::to_string(values[next++]);
      ++i;
    } else {
      out += format[i];
    }
  }
  return out;
}

}  // namespace mtir
