// Splitting the LLVM IR text the backend emits into modules that optimize and compile
// on threads of their own (libLLVM's O2 pipeline and instruction selection are most of
// an LLVM build). A part holds whole groups of functions, chosen so that every function
// gets the machine code the whole module gives it: each callee the O2 inliner could take
// (a small or local one) and each local symbol a function uses stays in the user's part.
// The functions a part calls but does not hold are declared from their definitions.
//
// The split works on the text alone (no libLLVM), in the emitter's layout: a function
// from a `define` line to a line `}`, globals as single `@name = ...` lines outside
// functions, every other line (header, types, declarations, attributes, metadata)
// shared by all parts. How many parts depends on the IR only, never on the machine.
#pragma once

#include <string>
#include <vector>

namespace mtir {

struct LlvmModulePart {
  std::string text;      // a module of its own
  int functions = 0;     // functions defined in it
  int instructions = 0;  // their instruction lines (the weight the parts are balanced by)
};

constexpr int kMaxLlvmModuleParts = 4;

// At most `parts` parts of `ir` (0: by size: 1, 2 from 12,000 instructions, 4 from 24,000), in the text order of their first function or constant. Empty
// when the module stays whole: a small module, a single group, or something the split
// does not handle (quoted names, non-local variables, a function without its `}`).
std::vector<LlvmModulePart> split_llvm_module(const std::string& ir, int parts);

}  // namespace mtir
