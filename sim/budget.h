// Flash and RAM budgets for CI: a target report (sim/artifact_runner.h) checked against
// limits such as `--max-flash 64K --max-ram 20K`, and when it exceeds one, by how much
// and what takes the room (code, weights, workspace, I/O buffers, stack, and the largest
// functions and objects of the firmware). The CLI's run and compile and the Python
// package take it from here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "sim/artifact_runner.h"

namespace mtir::sim {

// 1234567 -> "1,234,567", as the target report and the budget table print sizes.
std::string with_commas(int64_t v);

// "65536", "64K", "64k", "1M" (K = 1024 bytes, M = 1024 K) -> bytes. A user error
// naming `option` for anything else ("12Q", "", "-1", "64KB", "1.5M").
int64_t parse_byte_size(const std::string& text, const std::string& option);

struct Budget {
  int64_t max_flash = -1;  // bytes; -1: no limit
  int64_t max_ram = -1;    // bytes, static RAM plus the measured stack high-water; -1: no limit
  bool any() const { return max_flash >= 0 || max_ram >= 0; }
};

// One part of a resource's use, or one function or object of the firmware.
struct BudgetPart {
  std::string name;
  int64_t bytes = 0;
  std::string section;  // a symbol's: "text", "rodata", "data" or "bss"; "" for a part
};

struct BudgetCheck {
  std::string resource;  // "flash" or "RAM"
  int64_t used = 0, limit = 0;
  bool exceeds() const { return used > limit; }
  std::vector<BudgetPart> parts;    // what makes up `used`, largest first
  std::vector<BudgetPart> symbols;  // the firmware's largest functions and objects in it
};

struct BudgetResult {
  std::string target;  // the report's target
  std::vector<BudgetCheck> checks;  // one per limit set
  bool ok() const;
};

// The limits set in `budget` checked against the report. Flash is the report's flash
// figure (text, rodata, data's load image: the harness's test input included); RAM is
// its static RAM plus the stack high-water where the target measures one.
BudgetResult check_budget(const TargetReport& report, const Budget& budget);

// The table `run` and `compile` print: each limit, its use, and for one exceeded, by how
// much and the largest contributors.
std::string budget_text(const BudgetResult& result);
// The same as JSON: {"ok", "target", "checks": [{"resource", "used", "limit", "exceeds",
// "over_by", "parts": [{"name", "bytes"}], "symbols": [{"name", "bytes", "section"}]}]}.
nlohmann::json budget_json(const BudgetResult& result);

}  // namespace mtir::sim
