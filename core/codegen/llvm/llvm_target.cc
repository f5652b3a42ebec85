#include "codegen/llvm/llvm_target.h"

#include <cstdio>

#include "support/diagnostic.h"

namespace mtir {

const std::vector<LlvmTargetInfo>& llvm_targets() {
  // The data layouts are what clang 14 emits for each triple; a mismatch makes LLVM
  // warn and lay structs out differently from the C runtime, so they are exact.
  static const std::vector<LlvmTargetInfo> targets = {
      {"x86_64-pc-linux-gnu", "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128", 64, ""},
      {"thumbv7m-none-eabi", "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64", 32, ""},
      {"thumbv7em-none-eabihf", "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64", 32, ""},
      // Cortex-M33 (DSP) and Cortex-M55 (Helium with float); -mcpu implies the same.
      {"thumbv8m.main-none-eabihf", "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64", 32, "+dsp"},
      {"thumbv8.1m.main-none-eabihf", "e-m:e-p:32:32-Fi8-i64:64-v128:64:128-a:0:32-n32-S64", 32, "+dsp,+mve,+mve.fp"},
      {"riscv32-unknown-elf", "e-m:e-p:32:32-i64:64-n32-S128", 32, "+m,+a,+c"},
      {"wasm32-unknown-unknown", "e-m:e-p:32:32-p10:8:8-p20:8:8-i64:64-n32:64-S128-ni:1:10:20", 32, ""},
  };
  return targets;
}

const LlvmTargetInfo& llvm_target(const std::string& triple) {
  const std::string wanted = triple.empty() ? kDefaultLlvmTriple : triple;
  std::string known;
  for (const auto& t : llvm_targets()) {
    if (t.triple == wanted) return t;
    known += (known.empty() ? "" : ", ") + t.triple;
  }
  user_error(Span{}, "-mtriple=" + wanted + " is not supported by the LLVM backend; use one of: " + known);
}

std::string llvm_module_header(const LlvmTargetInfo& target) {
  return "target datalayout = \"" + target.datalayout + "\"\ntarget triple = \"" + target.triple + "\"\n";
}

std::string llvm_c_string(const std::string& s) {
  std::string out = "c\"";
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "\\%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\\00\"";
}

}  // namespace mtir
