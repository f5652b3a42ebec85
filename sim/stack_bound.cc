#include "sim/stack_bound.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support/diagnostic.h"

namespace mtir::sim {

namespace {

constexpr const char* kIndirectCall = "__indirect_call";

[[noreturn]] void fail(const std::string& message) { user_error(Span{}, message); }

// The `key: "value"` pairs of one `node: { ... }` or `edge: { ... }` record.
using Record = std::map<std::string, std::string>;

// Reads the record whose '{' is at text[at]; returns the index after its '}'.
size_t read_record(const std::string& text, size_t at, Record& record, const std::string& source) {
  size_t i = at + 1;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    if (i < text.size() && text[i] == '}') return i + 1;
    size_t colon = text.find(':', i);
    if (colon == std::string::npos) break;
    std::string key = text.substr(i, colon - i);
    i = colon + 1;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i < text.size() && text[i] == '"') {
      std::string value;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '"') ++i;
        value += text[i];
      }
      record[key] = value;
      ++i;
    } else {
      // An unquoted value (`shape : ellipse`): up to the next blank or '}'.
      while (i < text.size() && text[i] != ' ' && text[i] != '}' && text[i] != '\n') ++i;
    }
  }
  fail(source + " is not a GCC call-graph file (-fcallgraph-info): a record is not closed");
}

// GCC's label: "name\nfile:line:col\nN bytes (qualifier)", the last line only for a
// function defined in the unit ("\n" is the two characters).
void read_label(const std::string& label, CallGraphFunction& f, const std::string& source) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t at; (at = label.find("\\n", start)) != std::string::npos; start = at + 2)
    lines.push_back(label.substr(start, at - start));
  lines.push_back(label.substr(start));
  f.file = lines.size() > 1 ? lines[1] : "";
  // file:line:col, unless it is "<built-in>"
  for (int k = 0; k < 2 && f.file.rfind(':') != std::string::npos && f.file[0] != '<'; ++k)
    f.file = f.file.substr(0, f.file.rfind(':'));
  if (lines.size() < 3) return;
  const std::string& usage = lines[2];
  size_t open = usage.find(" bytes (");
  if (open == std::string::npos || usage.back() != ')')
    fail(source + ": '" + usage + "' is not GCC's stack usage (N bytes (qualifier)); compile with -fcallgraph-info=su");
  f.frame_bytes = std::strtoll(usage.c_str(), nullptr, 10);
  f.qualifier = usage.substr(open + 8, usage.size() - open - 9);
}

}  // namespace

void add_callgraph_info(CallGraph& graph, const std::string& text, const std::string& source) {
  if (text.compare(0, 6, "graph:") != 0) fail(source + " is not a GCC call-graph file (-fcallgraph-info): no graph");
  for (size_t i = 6; i < text.size();) {
    size_t node = text.find("node: {", i), edge = text.find("edge: {", i);
    size_t at = std::min(node, edge);
    if (at == std::string::npos) break;
    Record r;
    i = read_record(text, text.find('{', at), r, source);
    if (at == edge) {
      if (!r.count("sourcename") || !r.count("targetname")) fail(source + ": an edge without its two ends");
      auto& callees = graph.functions[r["sourcename"]].callees;
      if (std::find(callees.begin(), callees.end(), r["targetname"]) == callees.end()) callees.push_back(r["targetname"]);
      continue;
    }
    if (!r.count("title")) fail(source + ": a node without a title");
    CallGraphFunction f;
    f.name = r["title"];
    read_label(r.count("label") ? r["label"] : "", f, source);
    CallGraphFunction& known = graph.functions[r["title"]];
    if (f.frame_bytes >= 0 || known.name.empty()) {
      // A definition wins over declarations seen in other units; edges stay.
      f.callees = std::move(known.callees);
      known = std::move(f);
    }
  }
}

bool is_library_declaration(const std::string& file) {
  return file == "<built-in>" || file.compare(0, 5, "/usr/") == 0;
}

namespace {

// A memoized walk of the call graph; `active` is the chain being walked, for cycles.
class BoundWalker {
 public:
  explicit BoundWalker(const CallGraph& graph) : graph_(graph) {}

  StackBound walk(const std::string& title) {
    if (auto it = done_.find(title); it != done_.end()) return it->second;
    StackBound b = compute(title);
    done_[title] = b;
    return b;
  }

 private:
  static StackBound unbounded(const std::string& why) {
    StackBound b;
    b.reason = why;
    return b;
  }

  StackBound compute(const std::string& title) {
    auto it = graph_.functions.find(title);
    if (it == graph_.functions.end() || it->second.name.empty())
      return unbounded(title + " is not among the compiled functions");
    const CallGraphFunction& f = it->second;
    if (f.frame_bytes < 0) {
      if (!is_library_declaration(f.file))
        return unbounded(f.name + " has no stack data (it was not compiled here with -fcallgraph-info)");
      StackBound lib;
      lib.bounded = true;
      lib.path = {f.name};
      lib.library_calls = {f.name};
      return lib;
    }
    if (f.qualifier == "dynamic") return unbounded(f.name + "'s frame is dynamic (alloca or a variable-length array)");
    if (std::find(active_.begin(), active_.end(), title) != active_.end()) {
      std::string cycle;
      for (auto a = std::find(active_.begin(), active_.end(), title); a != active_.end(); ++a) cycle += *a + " -> ";
      return unbounded("recursion: " + cycle + title);
    }
    active_.push_back(title);
    StackBound b = over_callees(f);
    active_.pop_back();
    return b;
  }

  // The function's frame plus its deepest callee; library calls and GCC's dynamic but
  // bounded frames collected along every path.
  StackBound over_callees(const CallGraphFunction& f) {
    StackBound b;
    b.bounded = true;
    std::set<std::string> library, dynamic;
    if (f.qualifier != "static") dynamic.insert(f.name);
    StackBound deepest;
    deepest.bounded = true;
    for (const auto& callee : f.callees) {
      if (callee == kIndirectCall) return unbounded(f.name + " calls through a function pointer");
      StackBound c = walk(callee);
      if (!c.bounded) return c;
      library.insert(c.library_calls.begin(), c.library_calls.end());
      dynamic.insert(c.dynamic_bounded.begin(), c.dynamic_bounded.end());
      if (deepest.path.empty() || c.bytes > deepest.bytes) deepest = c;
    }
    b.bytes = f.frame_bytes + deepest.bytes;
    b.path = {f.name};
    b.path.insert(b.path.end(), deepest.path.begin(), deepest.path.end());
    b.library_calls.assign(library.begin(), library.end());
    b.dynamic_bounded.assign(dynamic.begin(), dynamic.end());
    return b;
  }

  const CallGraph& graph_;
  std::map<std::string, StackBound> done_;
  std::vector<std::string> active_;
};

}  // namespace

StackBound stack_bound(const CallGraph& graph, const std::string& entry) { return BoundWalker(graph).walk(entry); }

CallGraph read_callgraph(const std::string& program) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(program).parent_path();
  const std::string prefix = fs::path(program).filename().string() + "-";
  CallGraph g;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) == 0 && e.path().extension() == ".ci") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    add_callgraph_info(g, text.str(), f.string());
  }
  return g;
}

ArtifactStackBounds artifact_stack_bounds(const CallGraph& graph, const std::string& entry,
                                          const std::string& codegen_dir) {
  ArtifactStackBounds out;
  out.entry = entry;
  BoundWalker walker(graph);
  out.run = walker.walk(entry);
  if (auto main = graph.functions.find("main"); main != graph.functions.end()) out.main_frame_bytes = main->second.frame_bytes;
  const std::string prefix = codegen_dir + "/";
  for (const auto& [title, f] : graph.functions)
    if (f.frame_bytes >= 0 && f.file.compare(0, prefix.size(), prefix) == 0) out.functions.emplace_back(f.name, walker.walk(title));
  return out;
}

std::string describe(const StackBound& b) {
  if (!b.bounded) return "unbounded: " + b.reason;
  std::string s = std::to_string(b.bytes) + " bytes";
  for (size_t i = 0; i < b.library_calls.size(); ++i)
    s += (i ? ", " : " (library calls not counted: ") + b.library_calls[i];
  return s + (b.library_calls.empty() ? "" : ")");
}

std::string stack_bound_violation(const ArtifactStackBounds& bounds, int64_t measured_bytes) {
  const StackBound& b = bounds.run;
  if (measured_bytes < 0 || !b.bounded || !b.library_calls.empty() || bounds.main_frame_bytes < 0) return "";
  if (b.bytes + bounds.main_frame_bytes >= measured_bytes) return "";
  return "the static stack bound of " + bounds.entry + " (" + std::to_string(b.bytes) + " bytes, with main's frame " +
         std::to_string(b.bytes + bounds.main_frame_bytes) + ") is below the measured high-water (" +
         std::to_string(measured_bytes) + " bytes)";
}

}  // namespace mtir::sim
