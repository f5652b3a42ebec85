#include "support/timing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

namespace mtir {
namespace {

thread_local TimingTable* active_table = nullptr;
thread_local TimingScope* innermost_scope = nullptr;

double now_ms() {
  using clock = std::chrono::steady_clock;
  static const clock::time_point origin = clock::now();
  return std::chrono::duration<double, std::milli>(clock::now() - origin).count();
}

#if defined(__EMSCRIPTEN__)
// The linear memory only grows: its size is the heap's high-water mark.
int64_t high_water_bytes() { return static_cast<int64_t>(__builtin_wasm_memory_size(0)) * 65536; }
int64_t current_bytes() { return high_water_bytes(); }
bool reset_high_water() { return true; }
const char* const kMemoryKind = "wasm_memory_growth";
#elif defined(__linux__)
// "VmHWM:    1234 kB" from /proc/self/status, in bytes (0 if unreadable).
int64_t status_field(const char* key) {
  std::ifstream in("/proc/self/status");
  const std::string prefix = std::string(key) + ":";
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, prefix.size(), prefix) == 0) return std::stoll(line.substr(prefix.size())) * 1024;
  return 0;
}
int64_t high_water_bytes() { return status_field("VmHWM"); }
int64_t current_bytes() { return status_field("VmRSS"); }
// Writing 5 to clear_refs resets VmHWM to the current resident set (Linux 4.0 and later).
bool reset_high_water() {
  static bool refused = false;
  if (refused) return false;
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  refused = !out.good();
  return !refused;
}
const char* const kMemoryKind = "rss_peak";
#else
int64_t high_water_bytes() { return 0; }
int64_t current_bytes() { return 0; }
bool reset_high_water() { return false; }
const char* const kMemoryKind = "none";
#endif

// Whether the kernel lets us reset the high-water mark (decided at the first scope).
bool resettable() {
  static const bool ok = reset_high_water();
  return ok;
}

}  // namespace

const char* memory_kind() {
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
  return resettable() ? kMemoryKind : "rss_hwm_growth";
#else
  return kMemoryKind;
#endif
}

std::string TimingTable::text() const {
  std::string s = "time and memory per step, pass and backend (wall ms, peak memory: ";
  s += memory_kind();
  s += ")\n";
  for (const auto& r : rows) {
    char line[192];
    const std::string label = std::string(2 * r.depth, ' ') + r.name;
    std::snprintf(line, sizeof line, "  %-8s %-60s %10.2f ms %10.1f MiB\n", r.kind.c_str(), label.c_str(), r.wall_ms,
                  static_cast<double>(r.peak_bytes) / (1024.0 * 1024.0));
    s += line;
  }
  return s;
}

nlohmann::json TimingTable::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows)
    list.push_back({{"kind", r.kind}, {"name", r.name}, {"depth", r.depth}, {"wall_ms", r.wall_ms},
                    {"peak_bytes", r.peak_bytes}});
  return {{"memory", memory_kind()}, {"rows", list}};
}

TimingTable* active_timing_table() { return active_table; }

TimingSession::TimingSession(TimingTable* table) : previous_(active_table) { active_table = table; }
TimingSession::~TimingSession() { active_table = previous_; }

TimingScope::TimingScope(const char* kind, std::string name) : table_(active_table) {
  if (!table_) return;
  outer_ = innermost_scope;
  innermost_scope = this;
  row_ = table_->rows.size();
  TimingRow row;
  row.kind = kind;
  row.name = std::move(name);
  for (TimingScope* s = outer_; s; s = s->outer_) ++row.depth;
  table_->rows.push_back(std::move(row));
  if (resettable()) {
    // The peak so far belongs to the scopes around this one; then measure from here.
    const int64_t hwm = high_water_bytes();
    for (TimingScope* s = outer_; s; s = s->outer_) s->peak_seen_ = std::max(s->peak_seen_, hwm);
    reset_high_water();
    start_bytes_ = current_bytes();
  } else {
    start_bytes_ = high_water_bytes();
  }
  peak_seen_ = start_bytes_;
  start_ms_ = now_ms();
}

TimingScope::~TimingScope() {
  if (!table_) return;
  const double end_ms = now_ms();
  const int64_t hwm = high_water_bytes();
  peak_seen_ = std::max(peak_seen_, hwm);
  for (TimingScope* s = outer_; s; s = s->outer_) s->peak_seen_ = std::max(s->peak_seen_, hwm);
  TimingRow& row = table_->rows[row_];
  row.wall_ms = std::max(0.0, end_ms - start_ms_);
  row.peak_bytes = std::max<int64_t>(0, peak_seen_ - start_bytes_);
  innermost_scope = outer_;
}

void TimingScope::record_elsewhere(const char* kind, std::string name, double wall_ms) {
  if (!active_table) return;
  TimingRow row;
  row.kind = kind;
  row.name = std::move(name);
  for (TimingScope* s = innermost_scope; s; s = s->outer_) ++row.depth;
  row.wall_ms = wall_ms;
  active_table->rows.push_back(std::move(row));
}

}  // namespace mtir
