// Runs a compiled artifact (a Model Library Format folder, as `microtir compile`
// writes it) on a target: generates the firmware main, builds it with the target's
// compiler against the artifact's own runtime/ (the CRT and its ports), runs it under
// QEMU, node or natively, always under a timeout, and reads the outputs, instruction
// counts and memory figures back. Native only: it spawns processes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/binary_size.h"
#include "sim/cross_targets.h"
#include "sim/stack_bound.h"
#include "driver/target.h"
#include "support/ndarray.h"

namespace mtir::sim {

// What metadata.json and the folder say about an artifact.
struct ArtifactInfo {
  std::string dir;
  std::string model_name;   // as in the graph
  std::string c_model;      // tvmgen_<c_model>
  int64_t workspace_bytes = 0;
  std::string graph_file;   // src/<graph>.json, the model the artifact was compiled from
  std::vector<std::string> devices;  // device instances, run on the simulated NPU (sim/npu)
  // An LLVM-built artifact: the triple and CPU of its objects (codegen/*/lib/*.o, or
  // compiled from codegen/*/src/*.ll when there are none); "" for the C backend.
  std::string llvm_triple;
  std::string llvm_cpu;
  // A wasm-target artifact: its module (codegen/host/lib/<model>.wasm); "" otherwise.
  std::string wasm_module;
  std::string target;              // the target string it was compiled for
  Target compiled_for;             // the same, parsed ("c" when the metadata has none)
  std::string interface_api = "c";  // c | packed
  bool link_params = true;          // false: the firmware passes the weights (parameters/*.npy)
  int64_t state_bytes = 0;          // the state (variable tensors) the artifact keeps in RAM
  // The schedule record it was compiled with (its copy in the artifact), or "".
  std::string schedule_record;
  int64_t weights_bytes = 0;        // the weights (metadata's main constants_size_bytes)
};
// A user error naming what is missing if `dir` is not a compiled artifact.
ArtifactInfo read_artifact_info(const std::string& dir);

struct ArtifactTensor {
  std::string name;  // the graph's name
  DataType dtype = DataType::Float(32);
  std::vector<int64_t> shape;
  std::string c_name;  // its member of the C interface's structs (AotModule::Param::c_name)
};

// One tensor parameter of the model's main, in main's order (the packed interface
// passes them in this order; a weight's bytes come from the artifact's parameters/).
struct ArtifactArg {
  enum class Role { kInput, kWeight, kOutput };
  std::string name;
  Role role = Role::kInput;
  DataType dtype = DataType::Float(32);
  std::vector<int64_t> shape;
  std::string c_name;  // main's parameter (AotModule::Param::c_name); a weight's file is parameters/<c_name>.npy
};

struct ArtifactRunOptions {
  // main's tensor parameters: needed for artifacts with the packed interface or
  // -link-params=0, ignored otherwise.
  std::vector<ArtifactArg> main_args;
  std::string target = "host";
  std::string work_dir;                               // sources, firmware, logs (must exist or be creatable)
  int timeout_seconds = 60;                           // per QEMU / node / host run
  std::function<void(const std::string&)> progress;  // one line per step, for stderr
  // Count each operator call of run() as well (the generated TVMGEN_PROFILE hooks); a
  // user error on a target without an instruction counter or an artifact without C.
  bool profile_layers = false;
};

// One operator call of run(), counted with profile_layers: the kernel it calls and its
// instructions, the cost of an empty hook pair subtracted.
struct LayerCount {
  std::string kernel;
  int64_t instructions = 0;  // all its calls together
  int64_t calls = 1;         // more than 1 for a call in a loop (a patch stage's interior bands)
};

struct TargetReport {
  std::string target, board, compiler;
  BinarySize size;                // sections of the firmware
  int64_t flash_bytes = 0;        // text + rodata + data's load image
  int64_t ram_bytes = 0;          // data + bss (workspace and I/O buffers included), without the stack
  int64_t workspace_bytes = 0;    // the model's arena (part of ram_bytes)
  int64_t io_bytes = 0;           // input and output buffers (part of ram_bytes)
  int64_t state_bytes = 0;        // the model's state, static in the artifact (part of ram_bytes)
  int64_t test_input_bytes = 0;   // the const input sets the harness keeps in flash (part of flash_bytes)
  int64_t stack_bytes = -1;       // high-water of run() (painting); -1 if not measured
  int64_t weights_bytes = 0;      // the linked weights (metadata's constants), 0 when the firmware passes them
  std::vector<SymbolSize> symbols;  // the firmware's sized functions and objects, largest first (ELF targets)
  // The static bound from the firmware's call graph (sim/stack_bound.h): never below
  // stack_bytes - main's frame; none (stack_bound_absent says why) without GCC.
  ArtifactStackBounds stack_bounds;
  std::string stack_bound_absent;
  std::vector<int64_t> instructions;  // per run, exact; empty without a deterministic counter
  std::vector<LayerCount> layers;     // the first run's operator calls, in order (profile_layers)
  int64_t layer_probe_instructions = -1;  // the empty hook pair subtracted from each
  std::string counter_method;     // how instructions were counted, or why they are not
  std::string firmware, build_log, run_log;  // paths in work_dir
};

struct ArtifactRunResult {
  std::vector<std::vector<NDArray>> outputs;  // [run][output], in the order given
  TargetReport report;
  // Per device instance, the simulated NPU's counters after the last run:
  // "npu0: 2 kernels, 23040 MACs, 5960 cycles".
  std::vector<std::string> devices;
};

// Runs the artifact in `info.dir` once per input set (samples[s][i] is input i of run s,
// with the dtype and shape of inputs[i]). User errors, each one line with the next
// step and the log file: a missing tool, a firmware that does not fit, a hang (timeout),
// a hard fault, a failing run.
ArtifactRunResult run_artifact(const ArtifactInfo& info, const std::vector<ArtifactTensor>& inputs,
                               const std::vector<std::vector<NDArray>>& samples,
                               const std::vector<ArtifactTensor>& outputs, const ArtifactRunOptions& options);

// A C program for a target: what run_artifact builds, also usable for other programs
// (the counting-method test). Sources and include folders are absolute paths; the
// port's folder and sources are added. Returns the program's path.
struct ProgramSpec {
  std::vector<std::string> sources;
  std::vector<std::string> include_dirs;
  std::vector<std::string> defines;  // NAME or NAME=VALUE, passed as -D
  std::vector<std::string> forced_includes;  // headers every source sees first (-include)
  std::string crt_dir;   // holds include/ and ports/<port>/
  std::string work_dir;
  std::string name = "firmware";
};
std::string build_program(const CrossTarget& target, const ProgramSpec& spec);

struct ProgramOutput {
  int exit_code = 0;   // 124: timed out
  std::string output;  // stdout and stderr
  std::string log;     // the file holding it
};
ProgramOutput run_program(const CrossTarget& target, const std::string& program, const std::string& work_dir,
                          int timeout_seconds);

// A one-line user error (naming the log) unless the program exited with status 0: a
// timeout (status 124, "a hang?"), a hard fault, or another failure with its message.
void check_program_exit(const CrossTarget& target, const ProgramOutput& run, int timeout_seconds);

// Instructions between two counter reads from raw counter deltas (the probe pair
// subtracted). -1 for targets without a counter.
int64_t instructions_from_counter(const CrossTarget& target, uint64_t raw, uint64_t probe_raw);

}  // namespace mtir::sim
