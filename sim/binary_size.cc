#include "sim/binary_size.h"

#include <algorithm>
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

// An ELF file's section headers, read field by field.
struct ElfSections {
  const std::string& f;
  const std::string& path;
  bool is64;
  uint64_t shoff, shentsize, shnum;
  uint64_t field(uint64_t i, size_t field32, size_t field64, size_t bytes32, size_t bytes64) const {
    return read_le(f, shoff + i * shentsize + (is64 ? field64 : field32), is64 ? bytes64 : bytes32, path);
  }
  uint64_t type(uint64_t i) const { return field(i, 4, 4, 4, 4); }
  uint64_t flags(uint64_t i) const { return field(i, 8, 8, 4, 8); }
  uint64_t offset(uint64_t i) const { return field(i, 16, 24, 4, 8); }
  uint64_t size(uint64_t i) const { return field(i, 20, 32, 4, 8); }
  uint64_t link(uint64_t i) const { return field(i, 24, 40, 4, 4); }
};

ElfSections elf_sections(const std::string& f, const std::string& path) {
  if (f.size() < 52 || f.compare(0, 4, "\x7f" "ELF") != 0 || f[5] != 1)
    user_error(Span{}, path + " is not a little-endian ELF file");
  const bool is64 = f[4] == 2;
  return {f, path, is64, is64 ? read_le(f, 0x28, 8, path) : read_le(f, 0x20, 4, path),
          read_le(f, is64 ? 0x3A : 0x2E, 2, path), read_le(f, is64 ? 0x3C : 0x30, 2, path)};
}

constexpr uint64_t kWrite = 1, kAlloc = 2, kExec = 4, kNoBits = 8, kSymtab = 2;

// Which of BinarySize's counts a section's bytes go to.
const char* section_kind(uint64_t flags, uint64_t type) {
  if (flags & kExec) return "text";
  if (!(flags & kWrite)) return "rodata";
  return type == kNoBits ? "bss" : "data";
}

}  // namespace

std::vector<SymbolSize> elf_symbol_sizes(const std::string& path) {
  const std::string f = read_text(path);
  const ElfSections sh = elf_sections(f, path);
  std::vector<SymbolSize> out;
  for (uint64_t s = 0; s < sh.shnum; ++s) {
    if (sh.type(s) != kSymtab) continue;
    const uint64_t strings = sh.offset(sh.link(s)), entry = sh.is64 ? 24 : 16;
    for (uint64_t at = sh.offset(s); at + entry <= sh.offset(s) + sh.size(s); at += entry) {
      const uint64_t info = read_le(f, at + (sh.is64 ? 4 : 12), 1, path);
      const uint64_t shndx = read_le(f, at + (sh.is64 ? 6 : 14), 2, path);
      const int64_t bytes = static_cast<int64_t>(read_le(f, at + (sh.is64 ? 16 : 8), sh.is64 ? 8 : 4, path));
      const uint64_t kind = info & 0xf;  // STT_OBJECT 1, STT_FUNC 2
      if ((kind != 1 && kind != 2) || bytes <= 0 || shndx == 0 || shndx >= sh.shnum || !(sh.flags(shndx) & kAlloc)) continue;
      const uint64_t name_at = strings + read_le(f, at, 4, path);
      out.push_back({name_at < f.size() ? std::string(f.c_str() + name_at) : "", bytes,
                     section_kind(sh.flags(shndx), sh.type(shndx))});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SymbolSize& a, const SymbolSize& b) { return a.bytes > b.bytes; });
  return out;
}

BinarySize elf_size(const std::string& path) {
  const std::string f = read_text(path);
  const ElfSections sh = elf_sections(f, path);
  const uint64_t shstrndx = read_le(f, sh.is64 ? 0x3E : 0x32, 2, path);
  const uint64_t strtab = sh.offset(shstrndx);
  BinarySize out;
  for (uint64_t i = 0; i < sh.shnum; ++i) {
    const uint64_t name_at = strtab + sh.field(i, 0, 0, 4, 4);
    const uint64_t flags = sh.flags(i);
    const int64_t size = static_cast<int64_t>(sh.size(i));
    if (!(flags & kAlloc)) continue;
    const std::string name = name_at < f.size() ? std::string(f.c_str() + name_at) : "";
    // Reserves the linker script sets aside are not program data.
    if (name == ".stack" || name == ".heap") continue;
    const std::string kind = section_kind(flags, sh.type(i));
    (kind == "text" ? out.text : kind == "rodata" ? out.rodata : kind == "bss" ? out.bss : out.data) += size;
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
