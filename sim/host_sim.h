// The host simulator: builds generated C with the host C compiler and the CRT, as a
// user's own build would, runs it on real data and copies the results back.
// Native only (it spawns processes); the core library never depends on it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "driver/build.h"
#include "interp/interpreter.h"

namespace mtir::sim {

// The sanitizers hosted builds of generated C use (run --target host, the host
// simulator): $MICROTIR_HOST_SANITIZE if set ("address,undefined"; "" or "none": none),
// else the build's default ("address,undefined" in a build with -DMICROTIR_SANITIZE=ON
// and -DMICROTIR_SANITIZE_ARTIFACTS=ON; none otherwise).
std::string host_sanitizers();

// The compiler flags and defines for `sanitizers` (empty when ""): -fsanitize=..., no
// recovery, frame pointers, -O0 (the compile is most of a sanitized run's time), and
// TVM_CRT_SEPARATE_ALLOCATIONS.
std::vector<std::string> sanitizer_cflags(const std::string& sanitizers);

struct HostSimOptions {
  std::string work_dir;  // where sources, binary and data files go
  std::string cc = "cc";  // host C compiler
  std::string llvm_cc = "clang";  // compiles the LLVM backend's .ll files (clang 14 reads LLVM 14 IR)
  std::string crt_dir;    // the crt/ folder (headers, sources, host port); default_crt_dir() if empty
  std::vector<std::string> extra_cflags;
  // Sanitizers for the program (-fsanitize=<list>), "" for none; host_sanitizers() by
  // default. With them every buffer and workspace block is a separate exact-size heap
  // allocation (TVM_CRT_SEPARATE_ALLOCATIONS), so an overrun between them is reported.
  std::string sanitize = host_sanitizers();
  size_t workspace_bytes = 1 << 20;  // the arena given to TVMCrtWorkspaceInit
};

// One call of one function of a built artifact.
struct HostCall {
  const BuildResult* build = nullptr;
  std::string function;  // name in the module
  PrimFunc signature;    // the function before lowering: parameter kinds, dtypes, shapes
};

// Compiles the artifact's sources with a generated main that calls the function with
// `args` (through TVMFuncGetGlobal/TVMFuncCall with DLTensors for the packed API, or
// directly for the unpacked one), runs it, and writes every buffer argument back into
// its NDArray. Throws DiagnosticError when compiling or running fails, quoting the
// compiler's or the program's messages. A function with a return type (-> T.int32)
// gives back the value it returned.
std::optional<int64_t> run_on_host(const HostCall& call, const std::vector<InterpArg>& args,
                                   const HostSimOptions& options);

// Compiles one LLVM IR file to an object with options.llvm_cc at -O2; returns the
// object's path. Throws DiagnosticError quoting clang's messages.
std::string compile_llvm_ir(const std::filesystem::path& ll, const std::filesystem::path& object,
                            const HostSimOptions& options);

// The crt/ folder: $MICROTIR_CRT_DIR if set, else the source tree's.
std::string default_crt_dir();

// The simulated NPU's C library (sim/npu): sim_npu.h and sim_npu.c.
std::string sim_npu_dir();

// The C sources a hosted program links from `crt_dir`: the runtime and the host port.
std::vector<std::string> crt_host_sources(const std::string& crt_dir);

}  // namespace mtir::sim
