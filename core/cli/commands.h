// The CLI subcommands. Each returns the process exit code; user errors are thrown as
// DiagnosticError and turned into messages and exit code 1 by main().
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "artifact/mlf.h"
#include "frontend/schedule_records.h"
#include "ir/function.h"
#include "sim/budget.h"
#include "support/ndarray.h"

namespace mtir::cli {

struct ParseCommand {
  std::string file;
  bool json = false;
  bool no_verify = false;
};

struct RunCommand {
  std::string file;
  std::string func;
  std::vector<std::string> inputs;   // NAME=FILE.npy
  std::vector<std::string> inouts;   // NAME=FILE.npy: read, updated in place, printed and compared
  std::vector<std::string> scalars;  // NAME=VALUE
  std::string output_dir;
  bool json = false;
  int print_limit = 64;  // elements printed per output
  std::string target;    // "" (interpreter only) or "host": also build and run the C artifact
  int unpacked_api = 0;  // calling convention of the host build
  std::string backend = "c";  // backend of the host build: c or llvm
  std::string disabled_schedules;  // "block,smlad": int8 schedules switched off (a model on a target)
  bool reuse_io_buffers = false;   // -reuse-io-buffers=1 on the build
  int64_t workspace_budget = 0;    // -workspace-budget=N on the build (a model); 0: none
  std::string keep_build_dir;  // where the host build goes (default: a temporary folder, removed)
  std::vector<std::string> devices;  // --device INSTANCE=OP[,OP...]
  bool profile_layers = false;  // count each operator call of run() on the target
  std::string schedule_record;  // --schedules records.json: per-layer schedules (a model, not an artifact)
  std::string max_flash, max_ram;  // --max-flash / --max-ram: "64K", "1M", "65536"; "" no limit
};

struct BuildCommand {
  std::string file;
  std::string target = "c -unpacked-api=0";  // a TIR module: packed functions, as TVM builds them
  int unpacked_api = -1;  // -1: as the target string says
  std::string output_dir;
  bool json = false;
  std::vector<std::string> devices;  // --device INSTANCE=OP[,OP...]
};

struct PassesCommand {
  std::string file;
  std::string dump_ir_dir;
  std::vector<std::string> passes;  // empty: the C lowering pipeline for `target`
  std::string target = "c -unpacked-api=0";  // as build's
  bool json = false;
  std::vector<std::string> devices;  // --device INSTANCE=OP[,OP...]
};

int run_parse(const ParseCommand& c);
int run_run(const RunCommand& c);
int run_passes(const PassesCommand& c);
int run_build(const BuildCommand& c);

struct CompileCommand {
  std::string file;  // a JSON graph
  std::string target = "c";  // kDefaultCompileTarget
  std::string output_dir;
  bool json = false;
  bool verbose = false;  // -v: the target and its defaulted keys, the files written (tvmc is quiet by default)
  std::vector<std::string> devices;  // --device INSTANCE=OP[,OP...]
  std::string board;                 // --board: build and measure the artifact on this target
  std::string max_flash, max_ram;    // budgets checked on the board's measurement
  std::string schedule_record;  // --schedules records.json: per-layer schedules
};
int run_compile(const CompileCommand& c);

// --max-flash / --max-ram read (a user error for a bad value, before anything is built).
sim::Budget budget_options(const std::string& max_flash, const std::string& max_ram);
// The budget table (text) or a "budget" object in `out` (JSON); returns 1 if the report
// exceeds a limit (naming it on stderr), else 0.
int check_budget_gate(const sim::TargetReport& report, const sim::Budget& budget, bool json, nlohmann::json* out);
// The artifact in `dir` built for `target` and run once on zero inputs, for its sizes and
// memory (compile --board); progress on stderr.
sim::TargetReport measure_artifact(const std::string& dir, const std::string& target, const std::string& keep_build_dir);
// The target report as `run` prints it.
std::string target_report_text(const sim::TargetReport& r);
nlohmann::json target_report_json(const sim::TargetReport& r);

// `microtir tune MODEL --target T ...`: --space prints the search space (per layer, the
// schedules that apply) as JSON; otherwise the tuner (tools/microtir_tune.py) runs.
struct TuneCommand {
  std::string model, target, output, scheduler, cache;
  std::string max_flash, max_ram;  // budgets for the tuned model, as run's --max-flash / --max-ram take them
  int64_t trials = 0, workers = 0;  // 0: not given
  std::vector<std::string> inputs;  // NAME=FILE.npy
  bool space = false;
};
int run_tune(const TuneCommand& c, const std::string& self);

// `run model.tar|MLF_DIR --target host|cortex-m3|...` (run_artifact.cc): builds the
// artifact's firmware for the target, runs it, compares it with the interpreter on the
// artifact's own graph and prints the target report.
bool is_artifact_path(const std::string& path);
// The memory plan of a model's main (pools, lower bound, where each tensor lives), as
// `run` prints it: simplify and plan_memory, as the lowering runs them; `reuse_io_buffers`
// plans as -reuse-io-buffers=1 does.
// `peak`, when given, gets the peak's JSON (artifact/memory_peak.h).
std::string planned_memory_report(const IRModule& m, const std::string& main, bool reuse_io_buffers = false,
                                  nlohmann::json* peak = nullptr);
// `reference`: the model the artifact was just compiled from (with the artifact's target's
// schedules), so it is not converted a second time; null reads it back from the artifact.
int run_artifact(const RunCommand& c, const LoadedModel* reference = nullptr);

// The same run on arrays: `file` is model.tar or an MLF folder; `inputs` by the model's
// input name (or C identifier), each with where it came from for messages ("x.npy").
struct ArtifactInput {
  NDArray array;
  std::string source;
};
struct ArtifactRunSettings {
  bool profile_layers = false;
  std::string keep_build_dir;                         // "" : a temporary folder, removed
  std::function<void(const std::string&)> progress;  // one line per step (the CLI: stderr)
};
struct ArtifactOutput {
  std::string name, identifier;  // the model's name, its C identifier
  NDArray value;                 // what the artifact computed
};
struct ArtifactRun {
  std::string model_name, target;
  std::vector<ArtifactOutput> outputs;
  bool all_match = true;  // every output agrees with the interpreter
  nlohmann::json compare, outputs_json;
  nlohmann::json report;    // `run --json`'s "report": memory, stack, instructions (layers with profile_layers)
  sim::TargetReport target_report;  // the same figures, for the budget gate
  std::string compare_text;  // the lines `run` prints: the comparison,
  std::string report_text;   // the target report (per-layer counts, devices),
  std::string memory_plan;   // and where the intermediate tensors live
  std::vector<std::string> devices;
};
ArtifactRun run_artifact_inputs(const std::string& file, const std::string& target,
                                std::map<std::string, ArtifactInput> inputs, const ArtifactRunSettings& settings,
                                const LoadedModel* reference = nullptr);

// "NAME: dtype (shape)" and the values numpy-style, at most `limit` of them.
std::string format_output(const std::string& name, const NDArray& a, int limit);

// The library half of the subcommands, which the Python package (python/) calls too.

// A .json graph, .onnx or .tflite file (by its extension).
bool is_graph_file(const std::string& path);
// A model file as `compile` reads it: a JSON graph with its weights (paths relative to the
// JSON file; `read_files`, if given, receives each file it references), an ONNX or a
// TFLite model, batch norm folded, as an AOT module.
LoadedModel load_model_file(const std::string& file, std::vector<SourceFileOut>* read_files = nullptr,
                            const std::vector<std::string>& devices = {}, const ScheduleOptions& schedules = {});
// The Model Library Format artifact of a model file, as `compile` writes it, with the C
// runtime and the graph's own files; `loaded` receives the model it was compiled from.
// `schedule_record`, if given, is a record file (frontend/schedule_records.h) applied
// on top of the target's schedules; the artifact then holds it (schedule_record.json) and
// metadata.json names it ("schedule_record": its path and hash).
MlfArtifact compile_artifact(const std::string& file, const Target& target, const std::vector<std::string>& devices,
                             LoadedModel* loaded = nullptr, const std::string& schedule_record = "");

// Schedule records on files (schedule_record_file.cc). The model file's operators as a
// record names them; `graph`, if given, receives the graph as the schedules see it.
ModelOperators model_operators(const std::string& file, Graph* graph = nullptr);
struct AppliedRecord {
  std::string path, text;
  ScheduleRecord record;
  ScheduleOptions schedules;  // the target's with the record's per-layer choices
};
// Reads the record at `record_path`, checks it against `model_file` and applies it on `target`.
AppliedRecord apply_record_file(const std::string& model_file, const std::string& record_path, const ScheduleOptions& target);
// The tuner's search space for `model_file` on `target` (`tune --space`).
nlohmann::json schedule_space_json(const std::string& model_file, const Target& target, const std::string& target_name);
// Where an artifact keeps the record it was compiled with.
constexpr const char* kArtifactRecordFile = "schedule_record.json";
// Writes an artifact's files into the folder `output`, or into one archive if it ends in .tar.
void write_artifact(const std::vector<SourceFileOut>& files, const std::string& output);
// The target string `run MODEL --target T --backend B` compiles the model with: the
// default C target with T's CPU (-mcpu picks the int8 schedules), T's triple for llvm.
std::string compile_target_for_run(const std::string& run_target, const std::string& backend = "c");

// The function `requested` of `m`, or its only function when "" (a user error otherwise).
std::string pick_function(const IRModule& m, const std::string& requested);
// `run FILE.tir` without a target: the reference interpreter on `func` ("" for the only
// one). Buffers in `inputs` are read, in `inouts` read and written, the others are
// outputs (zeros, shaped by `scalars`, NAME -> value text, when symbolic).
struct TirRun {
  std::string func;
  std::vector<std::pair<std::string, NDArray>> outputs;  // by buffer name, in parameter order (inouts too)
  std::optional<int64_t> returned;                       // the function's returned value, if any
};
TirRun interpret_function(const IRModule& m, const std::string& func, std::map<std::string, NDArray> inputs,
                          std::map<std::string, NDArray> inouts, const std::map<std::string, std::string>& scalars);

// The names of every registered pass, one per line (for `passes --list`).
std::string pass_list();

}  // namespace mtir::cli
