#include "ir/op.h"

namespace mtir {

const std::vector<OpInfo>& all_ops() {
  using K = OpInfo::Kind;
  static const std::vector<OpInfo> ops = {
      {"exp", K::kUnaryMath, false},   {"log", K::kUnaryMath, false},
      {"sqrt", K::kUnaryMath, false},  {"tanh", K::kUnaryMath, false},
      {"sigmoid", K::kUnaryMath, false}, {"sin", K::kUnaryMath, false},
      {"cos", K::kUnaryMath, false},   {"floor", K::kUnaryMath, false},
      {"ceil", K::kUnaryMath, false},  {"round", K::kUnaryMath, false},
      {"erf", K::kUnaryMath, false},   {"abs", K::kUnaryMath, true},
      {"pow", K::kBinaryMath, false},  {"if_then_else", K::kIfThenElse, true},
      {"call_extern", K::kCallExtern, true},
  };
  return ops;
}

const OpInfo* lookup_op(const std::string& name) {
  for (const auto& op : all_ops())
    if (name == op.name) return &op;
  return nullptr;
}

}  // namespace mtir
