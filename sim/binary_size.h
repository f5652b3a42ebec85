// Memory footprint of a built program, read from the file itself (no binutils needed):
// ELF section headers for the QEMU targets and the host, the section table of a wasm
// module for wasm32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtir::sim {

struct BinarySize {
  int64_t text = 0;    // code (ELF: allocated, executable sections; wasm: the code section)
  int64_t rodata = 0;  // read-only data (ELF: allocated, neither writable nor executable)
  int64_t data = 0;    // initialized writable data (in flash as its load image, and in RAM)
  int64_t bss = 0;     // zero-initialized data (RAM only); stack and heap reserves excluded
};

// Sizes of an ELF file (32- or 64-bit, little-endian). A user error if the file is not one.
BinarySize elf_size(const std::string& path);

// One sized function or object of an ELF file, with the kind of section it lives in.
struct SymbolSize {
  std::string name;
  int64_t bytes = 0;
  std::string section;  // "text", "rodata", "data" or "bss", as BinarySize counts them
};
// The functions and objects of an ELF file's symbol table with a size, largest first
// (none when the file is stripped).
std::vector<SymbolSize> elf_symbol_sizes(const std::string& path);

// Code and data-segment bytes of a wasm module (text, data). RAM is not in the file:
// static data ends at the __data_end the program reports.
BinarySize wasm_size(const std::string& path);

}  // namespace mtir::sim
