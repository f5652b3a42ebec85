#include "sim/binary_size.h"

#include <cstring>

#include "sim/process.h"
#include "support/diagnostic.h"

namespace mtir::sim {
namespace {

uint64_t read_le(const std::string& s, size_t at, size_t bytes, const std::string& path) {
  if (at + bytes > s.size()) user_error(Span{}, path + " is truncated (not a complete ELF file)");
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

}  // namespace

BinarySize elf_size(const std::string& path) {
  const std::string f = read_text(path);
  if (f.size() < 52 || f.compare(0, 4, "\x7f" "ELF") != 0 || f[5] != 1)
    user_error(Span{}, path + " is not a little-endian ELF file");
  const bool is64 = f[4] == 2;
  const uint64_t shoff = is64 ? read_le(f, 0x28, 8, path) : read_le(f, 0x20, 4, path);
  const uint64_t shentsize = read_le(f, is64 ? 0x3A : 0x2E, 2, path);
  const uint64_t shnum = read_le(f, is64 ? 0x3C : 0x30, 2, path);
  const uint64_t shstrndx = read_le(f, is64 ? 0x3E : 0x32, 2, path);
  auto section = [&](uint64_t i, size_t field32, size_t field64, size_t bytes32, size_t bytes64) {
    return read_le(f, shoff + i * shentsize + (is64 ? field64 : field32), is64 ? bytes64 : bytes32, path);
  };
  const uint64_t strtab = section(shstrndx, 16, 24, 4, 8);
  constexpr uint64_t kWrite = 1, kAlloc = 2, kExec = 4, kNoBits = 8;
  BinarySize out;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t name_at = strtab + section(i, 0, 0, 4, 4);
    const uint64_t type = section(i, 4, 4, 4, 4);
    const uint64_t flags = section(i, 8, 8, 4, 8);
    const int64_t size = static_cast<int64_t>(section(i, 20, 32, 4, 8));
    if (!(flags & kAlloc)) continue;
    const std::string name = name_at < f.size() ? std::string(f.c_str() + name_at) : "";
    // Reserves the linker script sets aside are not program data.
    if (name == ".stack" || name == ".heap") continue;
    if (flags & kExec) out.text += size;
    else if (!(flags & kWrite)) out.rodata += size;
    else if (type == kNoBits) out.bss += size;
    else out.data += size;
  }
  return out;
}

BinarySize wasm_size(const std::string& path) {
  const std::string f = read_text(path);
  if (f.size() < 8 || f.compare(0, 4, std::string("\0asm", 4)) != 0) user_error(Span{}, path + " is not a wasm module");
  BinarySize out;
  size_t at = 8;
  while (at < f.size()) {
    const int id = static_cast<unsigned char>(f[at++]);
    uint64_t size = 0;
    for (int shift = 0;; shift += 7) {  // LEB128
      if (at >= f.size() || shift > 28) user_error(Span{}, path + " is a broken wasm module");
      const unsigned char b = static_cast<unsigned char>(f[at++]);
      size |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (id == 10) out.text += static_cast<int64_t>(size);
    if (id == 11) out.data += static_cast<int64_t>(size);
    at += size;
  }
  return out;
}

}  // namespace mtir::sim
