// The CLI subcommands. Each returns the process exit code; user errors are thrown as
// DiagnosticError and turned into messages and exit code 1 by main().
#pragma once

#include <string>
#include <vector>

#include "ir/function.h"
#include "support/ndarray.h"

namespace mtir {
struct LoadedModel;
}

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
  std::string keep_build_dir;  // where the host build goes (default: a temporary folder, removed)
  std::vector<std::string> devices;  // --device INSTANCE=OP[,OP...]
  bool profile_layers = false;  // count each operator call of run() on the target
};

struct BuildCommand {
  std::string file;
  std::string target = "c";
  int unpacked_api = -1;  // -1: as the target string says
  std::string output_dir;
  bool json = false;
  std::vector<std::string> devices;  // --device INSTANCE=OP[,OP...]
};

struct PassesCommand {
  std::string file;
  std::string dump_ir_dir;
  std::vector<std::string> passes;  // empty: the C lowering pipeline for `target`
  std::string target = "c";
  bool json = false;
  std::vector<std::string> devices;  // --device INSTANCE=OP[,OP...]
};

int run_parse(const ParseCommand& c);
int run_run(const RunCommand& c);
int run_passes(const PassesCommand& c);
int run_build(const BuildCommand& c);

struct CompileCommand {
  std::string file;  // a JSON graph
  std::string target = "c -executor=aot -interface-api=c -unpacked-api=1";
  std::string output_dir;
  bool json = false;
  bool verbose = false;  // -v: list the files written (tvmc is quiet by default)
  std::vector<std::string> devices;  // --device INSTANCE=OP[,OP...]
};
int run_compile(const CompileCommand& c);

// `run model.tar|MLF_DIR --target host|cortex-m3|...` (run_artifact.cc): builds the
// artifact's firmware for the target, runs it, compares it with the interpreter on the
// artifact's own graph and prints the target report.
bool is_artifact_path(const std::string& path);
// The memory plan of a model's main (pools, lower bound, where each tensor lives), as
// `run` prints it: simplify and plan_memory, as the lowering runs them; `reuse_io_buffers`
// plans as -reuse-io-buffers=1 does.
std::string planned_memory_report(const IRModule& m, const std::string& main, bool reuse_io_buffers = false);
// `reference`: the model the artifact was just compiled from (with the artifact's target's
// schedules), so it is not converted a second time; null reads it back from the artifact.
int run_artifact(const RunCommand& c, const LoadedModel* reference = nullptr);

// "NAME: dtype (shape)" and the values numpy-style, at most `limit` of them.
std::string format_output(const std::string& name, const NDArray& a, int limit);

// The names of every registered pass, one per line (for `passes --list`).
std::string pass_list();

}  // namespace mtir::cli
