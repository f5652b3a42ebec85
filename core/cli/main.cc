// microtir: the command-line driver. Exit codes: 0 success, 1 user error (bad input,
// bad options, a located diagnostic), 2 internal error (a broken compiler invariant).
#include <CLI/CLI.hpp>
#include <iostream>
#include <new>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/onnx_model.h"
#include "cli/onnx_test_cmd.h"
#include "ops/schedules.h"
#include "support/diagnostic.h"
#include "support/timing.h"

namespace {

using mtir::Diagnostic;

// --time-passes (LLVM's spelling) on compile, run and build; compile -v also turns it on.
const char* const kTimePassesHelp =
    "Print the wall time and peak memory of each step (import, schedule, lower, codegen, ...), each lowering "
    "pass and each backend to stderr (with --json: as \"timing\" in the JSON)";
bool time_passes = false;

// CLI11's PositiveNumber/NonNegativeNumber name their range up to DBL_MAX in the error; a count says what
// it takes instead.
CLI::Validator whole_number_from(long long low) {
  std::string name = low == 0 ? "NONNEGATIVE" : "POSITIVE";
  return CLI::Validator(
      [low](std::string& text) -> std::string {
        try {
          size_t used = 0;
          long long value = std::stoll(text, &used);
          if (used == text.size() && value >= low) return "";
        } catch (const std::exception&) {
        }
        return "'" + text + "' is not a whole number of " + std::to_string(low) + " or more";
      },
      name);
}

nlohmann::json diagnostics_json(const std::vector<Diagnostic>& diags) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : diags) {
    nlohmann::json j = {{"severity", mtir::severity_name(d.severity)}, {"message", d.message}};
    if (d.span.defined()) {
      j["file"] = d.span.file ? d.span.file->name : "";
      j["line"] = d.span.line;
      j["col"] = d.span.col;
    }
    if (!d.notes.empty()) j["notes"] = d.notes;
    list.push_back(j);
  }
  return list;
}

// Reports a failure in both forms CI and people read; returns the exit code.
int report(const std::vector<Diagnostic>& diags, bool internal, bool json) {
  std::cerr << "microtir: " << mtir::render_all(diags);
  if (json) std::cout << nlohmann::json{{"ok", false}, {"diagnostics", diagnostics_json(diags)}}.dump(2) << "\n";
  return internal ? 2 : 1;
}

Diagnostic internal_diagnostic(const std::string& what) {
  Diagnostic d;
  d.severity = mtir::Severity::kInternal;
  d.message = what;
  d.notes.push_back("this is a bug in microtir; please report it with the input that caused it");
  return d;
}

// The timer's table on stderr after a command that ran with it (with --json it is in the JSON).
int timed(int exit_code, const std::optional<mtir::TimingSession>& session, bool json) {
  if (session && !json && mtir::active_timing_table()) std::cerr << mtir::active_timing_table()->text();
  return exit_code;
}

// The `parse` subcommand and its options.
CLI::App* add_parse(CLI::App& app, mtir::cli::ParseCommand& parse) {
  CLI::App* cmd = app.add_subcommand("parse", "Parse and check a TIR text file; print it in normal form");
  cmd->add_option("file", parse.file, "TIR text file ('-' for standard input)")->required();
  cmd->add_flag("--json", parse.json, "Print the result (or the diagnostics) as JSON on stdout");
  cmd->add_flag("--no-verify", parse.no_verify, "Skip the well-formedness check");

  return cmd;
}

// --max-flash / --max-ram, the budget gates of run and compile (docs/cli.md "Budget gates").
void add_budget_options(CLI::App* cmd, std::string& max_flash, std::string& max_ram, const std::string& measured) {
  cmd->add_option("--max-flash", max_flash,
                  "Exit 1 if the flash of " + measured + " exceeds this many bytes (65536, 64K, 1M), with a table "
                  "of what exceeds, by how much, and the largest contributors");
  cmd->add_option("--max-ram", max_ram,
                  "Exit 1 if the static RAM plus the measured stack high-water of " + measured +
                      " exceeds this many bytes (20480, 20K, 1M)");
}

// The `run` subcommand and its options.
CLI::App* add_run(CLI::App& app, mtir::cli::RunCommand& run) {
  CLI::App* cmd = app.add_subcommand("run", "Interpret a PrimFunc on .npy inputs with the reference interpreter");
  cmd->add_option("file", run.file, "TIR text file ('-' for standard input), model.json, model.onnx, model.tflite, or a compiled model.tar / MLF folder")->required();
  cmd->add_option("--func", run.func, "Function to run (default: the only one)");
  cmd->add_option("--input", run.inputs, "Buffer input NAME=FILE.npy (repeatable; a model's input by its own name or its C identifier); buffers not given are outputs");
  cmd->add_option("--inout", run.inouts,
                  "Buffer NAME=FILE.npy that the function updates in place (repeatable): read like --input, "
                  "then printed, written and compared like an output");
  cmd->add_option("--scalar", run.scalars, "Scalar parameter NAME=VALUE (repeatable)");
  cmd->add_option("--output-dir", run.output_dir, "Write each output buffer to DIR/NAME.npy (a model's output: DIR/<its C identifier>.npy, docs/tflite.md \"Names\")");
  cmd->add_option("--print-limit", run.print_limit, "Elements printed per output")->check(whole_number_from(0));
  cmd->add_flag("--json", run.json, "Print outputs (or diagnostics) as JSON on stdout");
  cmd->add_option("--target", run.target,
                  "'host': also build the C artifact, run it natively and compare it with the interpreter; "
                  "for a compiled model (model.tar or its folder) also cortex-m3|cortex-m4|cortex-m7|cortex-m33|cortex-m55 (QEMU), "
                  "riscv32 (QEMU), wasm32 (node), wasm-binaryen (the wasm target's module, under node). "
                  "The host build runs under the sanitizers in $MICROTIR_HOST_SANITIZE (e.g. address,undefined; "
                  "docs/targets.md \"Sanitized host runs\")")
      ->check(CLI::IsMember({"host", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "riscv32", "wasm32", "wasm-binaryen"}));
  cmd->add_option("--unpacked-api", run.unpacked_api, "Calling convention of the host build: 0 packed, 1 unpacked")
      ->check(CLI::Range(0, 1));
  cmd->add_option("--backend", run.backend, "Backend: c (default) or llvm (host: LLVM IR compiled by clang; a model on a cross target: objects for its triple)")
      ->check(CLI::IsMember({"c", "llvm"}));
  cmd->add_option("--device", run.devices, "Place every node of these ops on a device instance, INSTANCE=OP[,OP...] (repeatable; e.g. npu0=conv2d,dense)");
  cmd->add_option("--disable-schedules", run.disabled_schedules,
                  "int8 kernel schedules to switch off, comma-separated: " + mtir::schedule_names() +
                      " (a model on --target; see docs/quantization.md)");
  cmd->add_flag("--reuse-io-buffers", run.reuse_io_buffers,
                "Build with -reuse-io-buffers=1: intermediates may live in the model's input and output buffers, "
                "so run() overwrites its input (docs/target-options.md)");
  cmd->add_option("--workspace-budget", run.workspace_budget,
                  "Build with -workspace-budget=BYTES: the band stages need only fit the workspace pool in BYTES, "
                  "at the fewest recomputed MACs (a model; docs/target-options.md)")
      ->check(whole_number_from(1));
  cmd->add_option("--keep-build", run.keep_build_dir, "Build the host program in DIR and keep it");
  cmd->add_flag("--time-passes", time_passes, kTimePassesHelp);
  cmd->add_option("--schedules", run.schedule_record,
                  "A schedule record (records.json from `microtir tune`, docs/schedule-records.md): per-layer int8 "
                  "schedules on top of the target's (a model, not a compiled artifact)");
  add_budget_options(cmd, run.max_flash, run.max_ram, "the build on --target");
  cmd->add_flag("--profile-layers", run.profile_layers,
                "Also count the instructions of each operator call of run() (a model on a target with an "
                "instruction counter: cortex-m3|m4|m7, riscv32; with --backend llvm the objects get -profile-hooks=1)");
  return cmd;
}

// The `build` subcommand and its options.
CLI::App* add_build(CLI::App& app, mtir::cli::BuildCommand& build) {
  CLI::App* cmd = app.add_subcommand("build", "Lower a TIR module and write the sources of the artifact (C, or LLVM IR and objects)");
  cmd->add_option("file", build.file, "TIR text file ('-' for standard input)")->required();
  cmd->add_option("--target", build.target,
                  "Target string (default \"c -unpacked-api=0\": packed functions, as TVM builds a TIR module), "
                  "e.g. \"c -unpacked-api=1\" or \"llvm -mtriple=thumbv7em-none-eabihf\"");
  cmd->add_option("--unpacked-api", build.unpacked_api, "0: packed calling convention, 1: unpacked")
      ->check(CLI::Range(0, 1));
  cmd->add_option("-o,--output-dir", build.output_dir, "Folder for the artifact")->required();
  cmd->add_option("--device", build.devices, "Place every node of these ops on a device instance, INSTANCE=OP[,OP...] (repeatable; e.g. npu0=conv2d,dense)");
  cmd->add_flag("--json", build.json, "Print the written files (or diagnostics) as JSON on stdout");
  cmd->add_flag("--time-passes", time_passes, kTimePassesHelp);

  return cmd;
}

// The `compile` subcommand and its options.
CLI::App* add_compile(CLI::App& app, mtir::cli::CompileCommand& compile) {
  CLI::App* cmd = app.add_subcommand("compile", "Compile a model (JSON graph, .onnx or .tflite) into a C artifact with its C interface");
  cmd->add_option("file", compile.file, "The model: a JSON graph, .onnx or .tflite")->required();
  cmd->add_option("--target", compile.target,
                  "Target string (default \"c\"; keys not written take the lean defaults: -interface-api=c "
                  "-unpacked-api=1, and the weights linked; -v and metadata.json name them)");
  cmd->add_option("-o,--output", compile.output_dir, "Folder for the artifact, or FILE.tar for an archive")
      ->required();
  cmd->add_option("--device", compile.devices, "Place every node of these ops on a device instance, INSTANCE=OP[,OP...] (repeatable; e.g. npu0=conv2d,dense)");
  cmd->add_option("--schedules", compile.schedule_record,
                  "A schedule record (records.json from `microtir tune`, docs/schedule-records.md): per-layer int8 "
                  "schedules on top of the target's; metadata.json names it");
  cmd->add_flag("--json", compile.json, "Print the artifact's metadata (or diagnostics) as JSON on stdout");
  cmd->add_option("--board", compile.board,
                  "Also build the artifact for this target and run it once (zero inputs) to measure its flash, RAM "
                  "and stack: cortex-m3|cortex-m4|cortex-m7|cortex-m33|cortex-m55 (QEMU), riscv32 (QEMU), host, wasm32 (node)")
      ->check(CLI::IsMember({"host", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "riscv32", "wasm32"}));
  add_budget_options(cmd, compile.max_flash, compile.max_ram, "the --board build");
  cmd->add_flag("-v,--verbose", compile.verbose,
                "Print the target, the keys it defaulted and to what, the files written, and time the steps as "
                "--time-passes does");
  cmd->add_flag("--time-passes", time_passes, kTimePassesHelp);

  return cmd;
}

// The `tune` subcommand and its options (run_tune hands them to the Python tuner).
CLI::App* add_tune(CLI::App& app, mtir::cli::TuneCommand& tune) {
  CLI::App* cmd = app.add_subcommand(
      "tune", "Choose per-layer int8 schedules on exact instruction counts (QEMU, --profile-layers), measured on a "
              "dask.distributed cluster; writes a schedule record (docs/schedule-records.md)");
  cmd->add_option("model", tune.model, "The model: .tflite, .onnx or a JSON graph")->required();
  cmd->add_option("--target", tune.target, "A target with an instruction counter: cortex-m3|m4|m7|m33|m55, riscv32")->required();
  cmd->add_option("-o,--output", tune.output, "The schedule record to write (records.json)");
  cmd->add_option("--max-flash", tune.max_flash,
                  "Flash budget of the tuned model's firmware (65536, 64K, 1M): run's budget gate on each measurement; "
                  "layers go back to the default until the chosen record fits");
  cmd->add_option("--max-ram", tune.max_ram, "RAM budget (static RAM plus the stack high-water), as --max-flash");
  cmd->add_option("--trials", tune.trials, "At most this many candidates besides the default (default 64)")->check(whole_number_from(1));
  auto* workers = cmd->add_option("--workers", tune.workers, "Worker processes of the local Dask cluster (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--scheduler", tune.scheduler, "A running Dask scheduler (tcp://HOST:8786) instead of a local cluster")->excludes(workers);
  cmd->add_option("--input", tune.inputs, "Model input NAME=FILE.npy (repeatable; default: a fixed pseudo-random input)");
  cmd->add_option("--cache", tune.cache, "Measurement cache folder (default ~/.cache/microtir/tune; 'off' for none)");
  cmd->add_flag("--space", tune.space, "Print the search space (per layer, the schedules that change its kernel) as JSON, measure nothing");
  return cmd;
}

// The `import` subcommand and its options.
CLI::App* add_import(CLI::App& app, mtir::cli::ImportCommand& import) {
  CLI::App* cmd = app.add_subcommand("import", "Convert an ONNX or TFLite model into a JSON graph (constants inline), the graph compile reads from it");
  cmd->add_option("file", import.file, "The .onnx or .tflite model");
  cmd->add_option("-o,--output", import.output, "The JSON graph to write (default: standard output)");
  cmd->add_flag("--layer-outputs", import.layer_outputs,
                "TFLite: make every operator's output a graph output, in operator order (to compare layer by layer)");
  cmd->add_flag("--list-ops", import.list_ops,
                "Print the TFLite operators and the dtypes each is read in (the operator x dtype table), no model");
  cmd->add_flag("--json", import.json, "With --list-ops: the table as JSON");

  return cmd;
}

// The `passes` subcommand and its options.
CLI::App* add_passes(CLI::App& app, mtir::cli::PassesCommand& passes, bool& list_passes) {
  CLI::App* cmd = app.add_subcommand("passes", "Run the pass pipeline and show the module after each pass");
  cmd->add_option("file", passes.file, "TIR text file ('-' for standard input)");
  cmd->add_option("--dump-ir", passes.dump_ir_dir, "Write NN-passname.tir after each pass into DIR");
  cmd->add_option("--passes", passes.passes, "Comma-separated passes to run instead of the default pipeline")
      ->delimiter(',');
  cmd->add_flag("--list", list_passes, "List the registered passes in pipeline order");
  cmd->add_option("--target", passes.target, "Target whose lowering pipeline runs (default \"c -unpacked-api=0\", as build's)");
  cmd->add_option("--device", passes.devices, "Place every node of these ops on a device instance, INSTANCE=OP[,OP...] (repeatable; e.g. npu0=conv2d,dense)");
  cmd->add_flag("--json", passes.json, "Print pass records (or diagnostics) as JSON on stdout");

  return cmd;
}

// The `onnx-test` subcommand and its options.
CLI::App* add_onnx_test(CLI::App& app, mtir::cli::OnnxTestCommand& onnx_test) {
  CLI::App* cmd = app.add_subcommand("onnx-test", "Run the ONNX backend node tests (conformance) through the host C artifact");
  cmd->add_option("dir", onnx_test.dir, "The node-test folder (e.g. /usr/share/libonnx-testdata/data/node) or one test")
      ->required();
  cmd->add_option("--filter", onnx_test.filter, "Only tests whose folder name contains this text");
  cmd->add_option("-j,--jobs", onnx_test.jobs, "Worker processes (default 2)")->check(CLI::Range(1, 64));
  cmd->add_flag("--json", onnx_test.json, "Print the report as JSON on stdout");
  cmd->add_flag("--list", onnx_test.list_tests, "Print every test's status and reason");
  cmd->add_option("--floor", onnx_test.floor_file,
                  "floor.json: exit 1 if the pass count is below it or any test fails or errors");

  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"microtir: a tensor-program compiler for microcontrollers (TIR in, C runtime artifacts out)", "microtir"};
  app.set_version_flag("--version", std::string("microtir ") + MICROTIR_VERSION);
  app.require_subcommand(1);
  // Every error of the tool starts the same way, the parser's too.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("microtir: error: ") + e.what() + "\nRun with --help for more information.\n";
  });

  mtir::cli::ParseCommand parse;
  CLI::App* parse_cmd = add_parse(app, parse);
  mtir::cli::RunCommand run;
  CLI::App* run_cmd = add_run(app, run);
  mtir::cli::BuildCommand build;
  CLI::App* build_cmd = add_build(app, build);
  mtir::cli::CompileCommand compile;
  CLI::App* compile_cmd = add_compile(app, compile);
  mtir::cli::ImportCommand import;
  CLI::App* import_cmd = add_import(app, import);
  mtir::cli::PassesCommand passes;
  bool list_passes = false;
  add_passes(app, passes, list_passes);  // the remaining subcommand: no flag to test
  mtir::cli::OnnxTestCommand onnx_test;
  CLI::App* onnx_test_cmd = add_onnx_test(app, onnx_test);
  mtir::cli::TuneCommand tune;
  CLI::App* tune_cmd = add_tune(app, tune);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }

  bool json = parse.json || run.json || passes.json || build.json || compile.json || onnx_test.json;
  mtir::TimingTable timing;
  std::optional<mtir::TimingSession> timing_session;
  if (time_passes || compile.verbose) timing_session.emplace(&timing);
  try {
    if (*parse_cmd) return mtir::cli::run_parse(parse);
    if (*run_cmd) return timed(mtir::cli::run_run(run), timing_session, json);
    if (*build_cmd) return timed(mtir::cli::run_build(build), timing_session, json);
    if (*compile_cmd) return timed(mtir::cli::run_compile(compile), timing_session, json);
    if (*onnx_test_cmd) return mtir::cli::run_onnx_test(onnx_test);
    if (*tune_cmd) return mtir::cli::run_tune(tune, argv[0]);
    if (*import_cmd) return mtir::cli::run_import(import);
    if (list_passes) {
      std::cout << mtir::cli::pass_list();
      return 0;
    }
    if (passes.file.empty()) {
      std::cerr << "microtir passes: a FILE is required (or --list)\n";
      return 1;
    }
    return mtir::cli::run_passes(passes);
  } catch (const mtir::DiagnosticError& e) {
    return report(e.diagnostics(), e.internal(), json);
  } catch (const std::bad_alloc&) {
    return report({internal_diagnostic("out of memory")}, true, json);
  } catch (const std::exception& e) {
    return report({internal_diagnostic(e.what())}, true, json);
  }
}
