// The pass and backend timer (`--time-passes`, `-v`, the playground's table): wall time
// and peak memory of each step of a compile, each lowering pass and each backend's code
// generation. Recording is off unless a TimingSession is open on the thread, so the
// scopes sprinkled through the driver cost one thread-local read when nobody asks.
//
// Memory is a high-water figure, as the platform offers one:
// - Linux: the peak resident set (VmHWM) during the scope minus the resident set (VmRSS)
//   at its start. Each scope resets the kernel's high-water mark (/proc/self/clear_refs),
//   after passing the peak so far to the scopes around it, so nested scopes stay right.
//   Where the reset is refused, the growth of VmHWM over the scope (a lower bound).
// - wasm: the growth of the linear memory over the scope (it only grows: a high-water
//   mark of the allocator's heap).
// - elsewhere: 0, with `memory_kind` saying so.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mtir {

struct TimingRow {
  std::string kind;  // "step" (load, schedule, lower, codegen, export), "pass" or "backend"
  std::string name;  // the step's, the pass's (its pipeline name) or "<backend>: <part>"
  int depth = 0;     // nesting: a pass inside "lower" is one deeper
  double wall_ms = 0;
  int64_t peak_bytes = 0;  // see memory_kind()
};

struct TimingTable {
  std::vector<TimingRow> rows;  // in the order the scopes opened
  // Text as `--time-passes` prints it: one line per row, indented by depth.
  std::string text() const;
  // {"memory": memory_kind(), "rows": [{kind, name, depth, wall_ms, peak_bytes}, ...]}
  nlohmann::json to_json() const;
};

// What TimingRow::peak_bytes measures on this build: "rss_peak" (Linux, peak resident
// set over the scope), "rss_hwm_growth" (the reset was refused), "wasm_memory_growth" or
// "none".
const char* memory_kind();

// The table of the session open on this thread, or null (commands that print JSON add it).
TimingTable* active_timing_table();

// Records every TimingScope opened on this thread into `table` while it lives.
class TimingSession {
 public:
  explicit TimingSession(TimingTable* table);
  ~TimingSession();
  TimingSession(const TimingSession&) = delete;
  TimingSession& operator=(const TimingSession&) = delete;

 private:
  TimingTable* previous_;
};

// One row of the open session's table (nothing without a session), filled in when the
// scope closes, also when it is left by an exception.
class TimingScope {
 public:
  TimingScope(const char* kind, std::string name);
  ~TimingScope();
  TimingScope(const TimingScope&) = delete;
  TimingScope& operator=(const TimingScope&) = delete;

  // A row for work timed on another thread (the timer records this thread's scopes
  // only), nested in the innermost open scope. Its peak memory is unknown (0): the
  // enclosing scope's figure includes it.
  static void record_elsewhere(const char* kind, std::string name, double wall_ms);

 private:
  TimingTable* table_;
  size_t row_ = 0;
  double start_ms_ = 0;
  int64_t start_bytes_ = 0;
  int64_t peak_seen_ = 0;  // the highest high-water mark read while open (inner scopes reset it)
  TimingScope* outer_ = nullptr;
};

}  // namespace mtir
