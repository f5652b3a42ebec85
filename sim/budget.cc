#include "sim/budget.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "support/diagnostic.h"

namespace mtir::sim {
namespace {

// The firmware's functions and objects shown per resource.
constexpr size_t kShownSymbols = 5;

// The parts, largest first, without the empty ones.
std::vector<BudgetPart> ranked(std::vector<BudgetPart> parts) {
  parts.erase(std::remove_if(parts.begin(), parts.end(), [](const BudgetPart& p) { return p.bytes <= 0; }), parts.end());
  std::stable_sort(parts.begin(), parts.end(), [](const BudgetPart& a, const BudgetPart& b) { return a.bytes > b.bytes; });
  return parts;
}

// The largest symbols in the given sections ("text", "rodata", "data", "bss").
std::vector<BudgetPart> largest_symbols(const TargetReport& r, const std::vector<std::string>& sections) {
  std::vector<BudgetPart> out;
  for (const auto& s : r.symbols) {  // largest first already
    if (out.size() == kShownSymbols) break;
    if (std::find(sections.begin(), sections.end(), s.section) != sections.end())
      out.push_back({s.name, s.bytes, s.section});
  }
  return out;
}

BudgetCheck flash_check(const TargetReport& r, int64_t limit) {
  BudgetCheck c{"flash", r.flash_bytes, limit, {}, {}};
  const int64_t code = r.size.text;
  const int64_t weights = std::min(r.weights_bytes, std::max<int64_t>(0, r.flash_bytes - code));
  const int64_t input = std::min(r.test_input_bytes, std::max<int64_t>(0, r.flash_bytes - code - weights));
  // Constants no symbol names: string literals, most of them the packed API's argument
  // checks' messages (KWS: about 110 KB).
  int64_t named = 0;
  for (const auto& sym : r.symbols)
    if (sym.section == "rodata" || sym.section == "data") named += sym.bytes;
  const int64_t unnamed = r.symbols.empty() ? 0
                          : std::clamp<int64_t>(r.size.rodata + r.size.data - named, 0, r.flash_bytes - code - weights - input);
  c.parts = ranked({{"code (text)", code, ""},
                    {"weights (linked constants)", weights, ""},
                    {"the harness's test input", input, ""},
                    {"unnamed constants (string literals: error messages)", unnamed, ""},
                    {"other constants and initialized data", r.flash_bytes - code - weights - input - unnamed, ""}});
  c.symbols = largest_symbols(r, {"text", "rodata", "data"});
  return c;
}

BudgetCheck ram_check(const TargetReport& r, int64_t limit) {
  const int64_t stack = std::max<int64_t>(0, r.stack_bytes);
  BudgetCheck c{"RAM", r.ram_bytes + stack, limit, {}, {}};
  c.parts = ranked({{"workspace (intermediate tensors)", r.workspace_bytes, ""},
                    {"input/output buffers", r.io_bytes, ""},
                    {"state", r.state_bytes, ""},
                    {"stack high-water", stack, ""},
                    {"other static RAM (runtime, C library, harness)",
                     r.ram_bytes - r.workspace_bytes - r.io_bytes - r.state_bytes, ""}});
  c.symbols = largest_symbols(r, {"data", "bss"});
  return c;
}

std::string percent_of(int64_t part, int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return text;
}

std::string row(const std::string& name, int64_t bytes, const std::string& note) {
  char line[160];
  std::snprintf(line, sizeof line, "    %-48s %12s", name.c_str(), with_commas(bytes).c_str());
  return line + (note.empty() ? "" : "  " + note) + "\n";
}

}  // namespace

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

int64_t parse_byte_size(const std::string& text, const std::string& option) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string suffix = text.substr(digits);
  int64_t unit = 0;
  if (suffix.empty()) unit = 1;
  else if (suffix == "K" || suffix == "k") unit = 1024;
  else if (suffix == "M" || suffix == "m") unit = 1024 * 1024;
  if (digits == 0 || digits > 12 || unit == 0)
    user_error({}, "bad " + option + " '" + text + "': expected bytes, as a whole number with an optional K (1024) or M (1024 K) suffix, e.g. 65536, 64K or 1M");
  return std::stoll(text.substr(0, digits)) * unit;
}

bool BudgetResult::ok() const {
  return std::none_of(checks.begin(), checks.end(), [](const BudgetCheck& c) { return c.exceeds(); });
}

BudgetResult check_budget(const TargetReport& report, const Budget& budget) {
  BudgetResult r;
  r.target = report.target;
  if (budget.max_flash >= 0) r.checks.push_back(flash_check(report, budget.max_flash));
  if (budget.max_ram >= 0) r.checks.push_back(ram_check(report, budget.max_ram));
  return r;
}

std::string budget_text(const BudgetResult& result) {
  std::string out = "budget on " + result.target + ": " + (result.ok() ? "within" : "EXCEEDED") + "\n";
  for (const auto& c : result.checks) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-6s %12s bytes of %12s  ", c.resource.c_str(), with_commas(c.used).c_str(),
                  with_commas(c.limit).c_str());
    out += line;
    if (!c.exceeds()) {
      out += "ok, " + with_commas(c.limit - c.used) + " to spare\n";
      continue;
    }
    out += "EXCEEDS by " + with_commas(c.used - c.limit) + " bytes (" + percent_of(c.used - c.limit, c.limit) + " over)\n";
    for (const auto& p : c.parts) out += row(p.name, p.bytes, percent_of(p.bytes, c.used) + " of the " + c.resource);
    if (!c.symbols.empty()) out += "    largest functions and objects in it:\n";
    for (const auto& s : c.symbols) out += row("  " + s.name + " (" + s.section + ")", s.bytes, "");
  }
  return out;
}

nlohmann::json budget_json(const BudgetResult& result) {
  auto parts_json = [](const std::vector<BudgetPart>& parts) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : parts) {
      list.push_back({{"name", p.name}, {"bytes", p.bytes}});
      if (!p.section.empty()) list.back()["section"] = p.section;
    }
    return list;
  };
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : result.checks)
    checks.push_back({{"resource", c.resource}, {"used", c.used}, {"limit", c.limit}, {"exceeds", c.exceeds()},
                      {"over_by", std::max<int64_t>(0, c.used - c.limit)}, {"parts", parts_json(c.parts)},
                      {"symbols", parts_json(c.symbols)}});
  return {{"ok", result.ok()}, {"target", result.target}, {"checks", checks}};
}

}  // namespace mtir::sim
