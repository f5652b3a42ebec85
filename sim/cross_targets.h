// The targets an artifact runs on: the host, Cortex-M3/M4/M7 on QEMU's MPS2 boards,
// Cortex-M33 (mps2-an505) and Cortex-M55 (mps3-an547),
// RV32 on QEMU's virt board, wasm32 under node. Each entry says how a firmware author
// compiles for it (compiler, flags, CRT port, link flags) and how it is run.
#pragma once

#include <string>
#include <vector>

namespace mtir::sim {

enum class CounterKind {
  kNone,       // no deterministic instruction counter (host, wasm32)
  kMps2Ticks,  // FPGAIO COUNTER ticks (counter_tick_ns) under -icount shift=kMps2IcountShift
  kMinstret,   // RISC-V minstret under -icount shift=0: retired instructions
};

// `-icount shift` for the MPS2 boards: 2^8 ns per instruction (see docs/targets.md).
constexpr int kMps2IcountShift = 8;

struct CrossTarget {
  std::string name;                     // as given to --target
  std::string port;                     // crt/ports/<port>
  std::vector<std::string> port_sources;  // port files compiled into the program
  std::string cc;                       // C compiler
  std::string cc_package;               // the Debian package that provides it
  std::vector<std::string> arch_flags;  // -mcpu ... (compile and link)
  std::vector<std::string> port_defines;  // -D for the port: the board's counter address and rate
  std::vector<std::string> link_flags;  // after the sources; "{port}" is the port folder
  std::vector<std::string> runner;      // argv before the program path ({} when it runs itself)
  std::string runner_package;           // Debian package of runner[0]
  std::string board;                    // what it runs on, for reports
  CounterKind counter = CounterKind::kNone;
  int counter_tick_ns = 0;              // kMps2Ticks: virtual ns per COUNTER tick (40 MPS2, 50 mps2-tz)
  bool elf = true;                      // sizes from ELF sections (else a wasm module)
  bool paint_stack = false;             // measure the stack high-water by painting
  bool callgraph_info = false;          // cc is GCC: -fcallgraph-info=su gives the static stack bound
  // What the LLVM backend builds for this target: `--target "llvm -mtriple=T -mcpu=C"`.
  // An LLVM-built artifact runs here only if its objects were built for this triple.
  std::string llvm_triple;
  std::string llvm_cpu;                 // "" for the triple's generic CPU
  // The LLVM target string for a model artifact of this target (compile's defaults).
  std::string llvm_target() const;
};

// "host", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "riscv32",
// "wasm32", "wasm-binaryen".
const std::vector<CrossTarget>& cross_targets();
std::vector<std::string> cross_target_names();
// A user error naming the known targets if `name` is not one.
const CrossTarget& find_cross_target(const std::string& name);

// A user error with the next step (the Debian package, scripts/install-deps.sh) unless
// the compiler and the runner of `t` are on PATH.
void require_target_tools(const CrossTarget& t);

// The folder holding dlpack/dlpack.h (DLTensor), which the CRT's headers include.
std::string dlpack_include_dir();

// The full path of `program` found in PATH, or "" if absent.
std::string find_in_path(const std::string& program);

}  // namespace mtir::sim
