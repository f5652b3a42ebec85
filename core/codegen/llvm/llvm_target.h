// The five LLVM targets microtir emits IR for: each triple's data layout (what clang 14
// writes for it) and the C types whose width depends on it. Struct layouts (DLTensor,
// TVMValue, the registry) follow from the data layout, so one IR text serves every
// pointer size.
#pragma once

#include <string>
#include <vector>

namespace mtir {

struct LlvmTargetInfo {
  std::string triple;
  std::string datalayout;
  int pointer_bits = 64;
  // Target features every function gets (and the object's target machine): RV32 builds
  // rv32imac so the objects link with the rv32imac/ilp32 multilib the riscv32 port uses.
  std::string features;
  std::string size_type() const { return pointer_bits == 64 ? "i64" : "i32"; }  // size_t, uintptr_t
};

// The default triple of `--target llvm`.
inline constexpr const char* kDefaultLlvmTriple = "x86_64-pc-linux-gnu";

// The triples with a known data layout, in a fixed order.
const std::vector<LlvmTargetInfo>& llvm_targets();

// The target of `triple` ("" means the default). A user error naming the supported
// triples for any other.
const LlvmTargetInfo& llvm_target(const std::string& triple);

// `target triple` and `target datalayout` lines for a module.
std::string llvm_module_header(const LlvmTargetInfo& target);

// An LLVM string constant body, c"..." with \XX escapes, NUL-terminated.
std::string llvm_c_string(const std::string& s);

}  // namespace mtir
