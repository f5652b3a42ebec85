// A static stack bound from the compiler's own data: GCC's -fcallgraph-info=su writes,
// per translation unit, a .ci file (VCG) with every function's frame size and its call
// edges. The bound of a function is the largest sum of frames over its call paths;
// recursion, indirect calls, unbounded dynamic frames and functions of ours without
// frame data make it "unbounded" with the reason. Library functions (the C library, the
// compiler's helpers) carry no frame data; they are listed, not counted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mtir::sim {

struct CallGraphFunction {
  std::string name;           // the .ci title: a static function's is "file:name"
  std::string file;           // where it is defined (or declared, for an external one)
  int64_t frame_bytes = -1;   // -1: no frame data (declared only: another unit or a library)
  std::string qualifier;      // GCC's: "static", "dynamic" or "dynamic,bounded"
  std::vector<std::string> callees;  // titles; "__indirect_call" for a call through a pointer
};

struct CallGraph {
  std::map<std::string, CallGraphFunction> functions;  // by title
};

// Adds one .ci file's functions and edges; a definition replaces a declaration seen in
// another unit. A user error naming `source` if the text is not GCC's VCG.
void add_callgraph_info(CallGraph& graph, const std::string& text, const std::string& source);

struct StackBound {
  bool bounded = false;
  int64_t bytes = 0;                       // the bound, when bounded
  std::string reason;                      // why not, when not bounded
  std::vector<std::string> path;           // the deepest call path, from the entry
  std::vector<std::string> library_calls;  // reached library functions: frames not counted
  std::vector<std::string> dynamic_bounded;  // functions whose frame is dynamic, bounded by GCC
};

// Which external functions are the library's: their declaration is in a system header
// or built into the compiler. Any other function without frame data (an LLVM object, a
// unit compiled elsewhere) leaves the bound unknown.
bool is_library_declaration(const std::string& file);

// The bound of `entry`'s stack: its frame plus the deepest chain of callees' frames.
StackBound stack_bound(const CallGraph& graph, const std::string& entry);

// The .ci files GCC wrote beside `program` (program-<unit>.ci) with -fcallgraph-info=su.
CallGraph read_callgraph(const std::string& program);

// What a firmware's call graph says about an artifact's stack.
struct ArtifactStackBounds {
  std::string entry;               // what main calls for a run: tvmgen_<model>_run, or TVMFuncCall (packed)
  StackBound run;                  // the bound of entry
  int64_t main_frame_bytes = -1;   // the harness main's frame: the measured high-water starts inside it
  // Every function of the generated code (defined under the artifact's codegen/), by name.
  std::vector<std::pair<std::string, StackBound>> functions;
};
ArtifactStackBounds artifact_stack_bounds(const CallGraph& graph, const std::string& entry,
                                          const std::string& codegen_dir);

// "1234 bytes" or "unbounded: <reason>", and the library functions not counted.
std::string describe(const StackBound& b);

// "" when the bound holds against a measured high-water (painting from inside main's
// frame, so main's frame is added to the bound; -1: not measured), or when the bound is
// not complete (unbounded, library calls not counted). Else what is wrong: a bound below
// a measurement is a bug in the bound, not in the program.
std::string stack_bound_violation(const ArtifactStackBounds& bounds, int64_t measured_bytes);

}  // namespace mtir::sim
