// Model Library Format: the files of a compiled model (kernels, metadata module, C
// interface, weights, the C runtime, metadata.json), as `microtir compile` writes them
// and as the browser build returns them. No I/O here: the caller hands in the graph's
// text, its weight files (through a FileReader) and the runtime sources.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "driver/build.h"
#include "executor/aot.h"
#include "frontend/graph.h"

namespace mtir {

// A JSON graph ready to build: batch norm folded (the graph holds the weights) and
// lowered to its AOT module, which is checked well-formed.
struct LoadedModel {
  Graph graph;
  AotModule aot;
};

// Throws DiagnosticError for any problem of the graph, its weights or its operators.
// `devices` places operators on device instances (specs "npu0=conv2d,dense", the CLI's
// --device; see frontend/graph.h place_on_devices). `schedules` are the int8 kernels'
// schedules (the target's: Target::schedules, driver/target.h).
LoadedModel load_model(const std::string& json_text, const std::string& filename, const FileReader& read,
                       const std::vector<std::string>& devices = {}, const ScheduleOptions& schedules = {});
// The same from a graph another frontend read (ONNX).
LoadedModel prepare_model(Graph g, const std::vector<std::string>& devices = {}, const ScheduleOptions& schedules = {});

// The target `compile` uses when none is given: "c", every key at its default (the C
// interface, unpacked kernels; compile links the weights).
extern const char* const kDefaultCompileTarget;

// metadata.json's "target_defaults": each key the target text left unwritten and the
// value it took (null for no -mcpu: the generic kernels).
nlohmann::json target_defaults_json(const Target& target);

// `target` as `compile` builds it: the weights linked unless the text said -link-params
// (its str() then names the artifact `compile` makes by default, as the tuner needs).
Target artifact_target(Target target);

struct MlfArtifact {
  Target target;                     // as parsed; link_params on unless the string sets it
  BuildResult built;                 // lowering records and the kernel sources
  nlohmann::json metadata;           // the contents of metadata.json
  std::vector<SourceFileOut> files;  // every file, metadata.json last
};

// What the artifact carries besides generated code: the graph text (stored as
// src/<graph_filename>) and the C runtime sources, paths relative to crt/ (include/...,
// src/..., ports/...), stored under runtime/ in path order.
struct MlfInputs {
  std::string graph_filename;
  std::string graph_text;
  std::vector<SourceFileOut> runtime;
  // The files the graph references (its weights), paths relative to the graph, stored
  // beside it in src/: the artifact's graph then loads on its own (the reference run).
  std::vector<SourceFileOut> graph_files;
};

// Compiles `model` for `target` (parsed by the caller; the weights are linked unless its
// text said -link-params): the C interface (tvmgen_<model>.h with structs
// and run(); -link-params=0 adds a params struct) or the packed one (a header for
// TVMFuncCall: main with every tensor for -link-params=0, otherwise the registry's
// tvmgen_<model>_run with the inputs and outputs only). Refused combinations are user
// errors naming the rule.
MlfArtifact build_mlf(const LoadedModel& model, const Target& target, const MlfInputs& inputs);

}  // namespace mtir
