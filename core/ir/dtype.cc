#include "ir/dtype.h"

namespace mtir {

std::string DataType::str() const {
  std::string s;
  switch (code_) {
    case Code::kBool: s = "bool"; break;
    case Code::kHandle: s = bits_ == 0 ? "void" : "handle"; break;
    case Code::kInt: s = "int" + std::to_string(bits_); break;
    case Code::kUInt: s = "uint" + std::to_string(bits_); break;
    case Code::kFloat: s = "float" + std::to_string(bits_); break;
  }
  if (lanes_ != 1 || scalable_) s += (scalable_ ? "xvscalex" : "x") + std::to_string(lanes_);
  return s;
}

std::optional<DataType> DataType::parse(const std::string& name, bool allow_lanes) {
  // "<scalar>xvscalex<k>": a scalable vector of T.vscale() * k lanes.
  if (size_t v = name.find("xvscalex"); allow_lanes && v != std::string::npos) {
    auto fixed = parse(name.substr(0, v) + "x" + name.substr(v + 8), true);
    if (!fixed) return std::nullopt;
    return fixed->element_of().with_scalable_lanes(fixed->lanes());
  }
  // "<scalar>x<lanes>": 2 to kMaxLanes lanes of a bool, integer or float type.
  size_t x = name.rfind('x');
  if (allow_lanes && x != std::string::npos && x + 1 < name.size() && name[x + 1] != '0' &&
      name.find_first_not_of("0123456789", x + 1) == std::string::npos && name.size() - x <= 3) {
    auto elem = parse(name.substr(0, x));
    int lanes = std::stoi(name.substr(x + 1));
    if (!elem || elem->is_handle() || elem->is_void() || lanes < 2 || lanes > kMaxLanes) return std::nullopt;
    return elem->with_lanes(lanes);
  }
  if (name == "bool") return Bool();
  if (name == "handle") return Handle();
  if (name == "void") return Void();
  struct Prefix { const char* text; Code code; };
  static const Prefix prefixes[] = {{"uint", Code::kUInt}, {"int", Code::kInt}, {"float", Code::kFloat}};
  for (const auto& p : prefixes) {
    std::string pre = p.text;
    if (name.compare(0, pre.size(), pre) != 0) continue;
    std::string rest = name.substr(pre.size());
    int bits = 0;
    if (rest == "4" && p.code != Code::kFloat) bits = 4;  // carried, not run (ir/carried_types.h)
    else if (rest == "8") bits = 8;
    else if (rest == "16") bits = 16;
    else if (rest == "32") bits = 32;
    else if (rest == "64") bits = 64;
    else return std::nullopt;
    if (p.code == Code::kFloat && bits == 8) return std::nullopt;
    return DataType(p.code, bits);
  }
  return std::nullopt;
}

}  // namespace mtir
