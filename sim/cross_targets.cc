#include "sim/cross_targets.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "support/diagnostic.h"
#include "support/names.h"

namespace mtir::sim {
namespace {

// A QEMU Arm board's memory map (a linker script of crt/ports/cortex-m
// that INCLUDEs cortex_m_sections.ld) and its FPGA I/O COUNTER (address and tick).
struct ArmBoard {
  const char* linker_script;
  const char* counter_address;  // "" for the port's default, the MPS2 boards' 0x40028018
  int counter_hz;
};

// MPS2 boards: COUNTER at 0x40028018, 25 MHz. The mps2-tz boards (AN505, AN547) carry the
// same FPGAIO block elsewhere, and QEMU leaves its prescale clock at 20 MHz there.
const ArmBoard kMps2{"cortex_m.ld", "", 25000000};
const ArmBoard kAn505{"an505.ld", "0x40302018u", 20000000};
const ArmBoard kAn547{"an547.ld", "0x49302018u", 20000000};

std::vector<std::string> arm_link(const ArmBoard& board) {
  return {"-nostartfiles", "--specs=nano.specs", "--specs=rdimon.specs", "-L{port}",
          std::string("-T{port}/") + board.linker_script, "-Wl,--gc-sections", "-lm"};
}

std::vector<std::string> mps2_runner(const std::string& machine) {
  return {"qemu-system-arm", "-M", machine, "-nographic", "-monitor", "none", "-serial", "none",
          "-semihosting-config", "enable=on,target=native", "-icount", "shift=" + std::to_string(kMps2IcountShift),
          "-kernel"};
}

CrossTarget cortex_m(const std::string& name, const std::string& machine, std::vector<std::string> arch,
                     const std::string& llvm_triple, const ArmBoard& board = kMps2) {
  CrossTarget t;
  t.llvm_triple = llvm_triple;
  t.llvm_cpu = name;
  t.name = name;
  t.port = "cortex-m";
  t.port_sources = {"startup.c", "platform.c"};
  t.cc = "arm-none-eabi-gcc";
  t.cc_package = "gcc-arm-none-eabi libnewlib-arm-none-eabi";
  t.arch_flags = std::move(arch);
  t.link_flags = arm_link(board);
  if (*board.counter_address) {
    t.port_defines = {std::string("MTIR_FPGAIO_COUNTER_ADDR=") + board.counter_address,
                      "MTIR_COUNTER_HZ=" + std::to_string(board.counter_hz)};
  }
  t.counter_tick_ns = 1000000000 / board.counter_hz;
  t.runner = mps2_runner(machine);
  t.runner_package = "qemu-system-arm";
  t.board = "QEMU " + machine;
  t.counter = CounterKind::kMps2Ticks;
  t.paint_stack = true;
  t.callgraph_info = true;
  return t;
}

}  // namespace

std::string CrossTarget::llvm_target() const {
  std::string s = "llvm -mtriple=" + llvm_triple;
  if (!llvm_cpu.empty()) s += " -mcpu=" + llvm_cpu;
  return s + " -executor=aot -interface-api=c -unpacked-api=1 -link-params=1";
}

namespace {

// The QEMU Arm boards, one table entry each.
std::vector<CrossTarget> arm_targets() {
  std::vector<CrossTarget> all;
  all.push_back(cortex_m("cortex-m3", "mps2-an385", {"-mcpu=cortex-m3", "-mthumb"}, "thumbv7m-none-eabi"));
  all.push_back(cortex_m("cortex-m4", "mps2-an386",
                         {"-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"},
                         "thumbv7em-none-eabihf"));
  all.push_back(cortex_m("cortex-m7", "mps2-an500",
                         {"-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-d16"},
                         "thumbv7em-none-eabihf"));
  // Armv8-M mainline with DSP and a single-precision FPU (the v8-m.main+fp/hard multilib).
  all.push_back(cortex_m("cortex-m33", "mps2-an505",
                         {"-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"},
                         "thumbv8m.main-none-eabihf", kAn505));
  // Armv8.1-M with Helium: -mfpu=auto turns on MVE with float (__ARM_FEATURE_MVE=3).
  all.push_back(cortex_m("cortex-m55", "mps3-an547", {"-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-mfpu=auto"},
                         "thumbv8.1m.main-none-eabihf", kAn547));
  return all;
}

std::vector<CrossTarget> make_targets() {
  std::vector<CrossTarget> all;
  CrossTarget host;
  host.name = "host";
  host.port = "host";
  host.port_sources = {"platform.c"};
  host.cc = "cc";
  host.cc_package = "gcc";
  host.link_flags = {"-lm"};
  host.board = "this machine";
  host.callgraph_info = true;  // Debian's cc is GCC (scripts/install-deps.sh)
  host.llvm_triple = "x86_64-pc-linux-gnu";
  all.push_back(host);

  for (auto& t : arm_targets()) all.push_back(std::move(t));

  CrossTarget rv;
  rv.name = "riscv32";
  rv.port = "riscv32";
  rv.port_sources = {"platform.c"};
  rv.cc = "riscv64-unknown-elf-gcc";
  rv.cc_package = "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf";
  // rv32imac/ilp32 is a multilib of Debian's toolchain; adding extensions to -march
  // would silently pick the 64-bit default one.
  rv.arch_flags = {"-march=rv32imac", "-mabi=ilp32"};
  rv.link_flags = {"--specs=picolibc.specs", "--oslib=semihost", "--crt0=semihost",
                   "-Wl,--defsym=__flash=0x80000000", "-Wl,--defsym=__flash_size=0x200000",
                   "-Wl,--defsym=__ram=0x80200000", "-Wl,--defsym=__ram_size=0x200000",
                   "-Wl,--gc-sections", "-lm"};
  rv.runner = {"qemu-system-riscv32", "-machine", "virt", "-display", "none", "-serial", "none", "-monitor", "none",
               "-bios", "none", "-chardev", "stdio,id=semi0",
               "-semihosting-config", "enable=on,target=native,chardev=semi0", "-icount", "shift=0,sleep=off",
               "-kernel"};
  rv.runner_package = "qemu-system-misc";
  rv.board = "QEMU virt (rv32imac)";
  rv.llvm_triple = "riscv32-unknown-elf";  // the backend builds rv32imac (+m,+a,+c) for it
  rv.counter = CounterKind::kMinstret;
  rv.paint_stack = true;
  rv.callgraph_info = true;
  all.push_back(rv);

  CrossTarget wasm;
  wasm.name = "wasm32";
  wasm.port = "wasm32";
  wasm.port_sources = {"platform.c"};
  wasm.cc = "clang-14";
  wasm.cc_package = "clang-14 wasi-libc libclang-rt-14-dev-wasm32";
  wasm.arch_flags = {"--target=wasm32-wasi"};
  // The stack first, at a fixed size: static data then starts right after it.
  wasm.link_flags = {"-Wl,--stack-first", "-Wl,-z,stack-size=65536", "-lm"};
  wasm.runner = {"node", "--no-warnings", "{work}/run_wasm.js"};
  wasm.runner_package = "nodejs (node 20 or newer, for its WASI module)";
  wasm.board = "node (WASI)";
  wasm.llvm_triple = "wasm32-unknown-unknown";
  wasm.elf = false;
  wasm.paint_stack = true;
  all.push_back(wasm);

  // The wasm target's own module (codegen/wasm through Binaryen), no C compiler involved.
  CrossTarget binaryen;
  binaryen.name = "wasm-binaryen";
  binaryen.runner = {"node", "--no-warnings", "{work}/run_module.mjs"};
  binaryen.runner_package = "nodejs";
  binaryen.board = "node (a module built by microtir and Binaryen)";
  binaryen.elf = false;
  all.push_back(binaryen);
  return all;
}

}  // namespace

const std::vector<CrossTarget>& cross_targets() {
  static const std::vector<CrossTarget> targets = make_targets();
  return targets;
}

std::vector<std::string> cross_target_names() {
  std::vector<std::string> names;
  for (const auto& t : cross_targets()) names.push_back(t.name);
  return names;
}

const CrossTarget& find_cross_target(const std::string& name) {
  for (const auto& t : cross_targets())
    if (t.name == name) return t;
  std::string list;
  for (const auto& n : cross_target_names()) list += (list.empty() ? "" : ", ") + n;
  std::string hint = closest_match(name, cross_target_names());
  user_error(Span{}, "unknown target '" + name + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                         "; the run targets are: " + list);
}

std::string dlpack_include_dir() { return MICROTIR_DLPACK_INCLUDE_DIR; }

std::string find_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void require_target_tools(const CrossTarget& t) {
  auto need = [&](const std::string& tool, const std::string& package) {
    if (find_in_path(tool).empty()) {
      user_error(Span{}, "target " + t.name + " needs '" + tool + "', which is not installed; install the Debian "
                             "package(s) " + package + " (bash scripts/install-deps.sh does)");
    }
  };
  if (!t.cc.empty()) need(t.cc, t.cc_package);
  if (!t.runner.empty()) need(t.runner[0], t.runner_package);
}

}  // namespace mtir::sim
