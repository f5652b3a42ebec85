// The C backend's helper functions: texts emitted once each into a generated source
// that uses them (c_helpers.cc), and the C type of a scalar TIR type.
#pragma once

#include <string>

#include "ir/dtype.h"
#include "support/diagnostic.h"

namespace mtir::c_helpers {

// C type of a scalar TIR type; a user error for one C has no type for.
std::string c_type(DataType t, const Span& span);

extern const char* const kSetErrorHelper;
extern const char* const kTensorInitHelper;
extern const char* const kCallDirectHelper;
extern const char* const kCallByNameHelper;
extern const char* const kProfileHooks;
extern const char* const kSmladHelper;
extern const char* const kHeliumSchedulingPragma;
extern const char* const kDspSchedulingPragma;
extern const char* const kVmladavaHelper;
extern const char* const kSmlabbHelper;
extern const char* const kSmmlarHelper;
extern const char* const kDspOneRegionPragma;
extern const char* const kSxtb16Helper;
extern const char* const kReadWordHelper;
extern const char* const kPackBytesHelper;
extern const char* const kWordPairHelper;
extern const char* const kPackHalvesHelper;

// Leading zero bits of a `bits`-wide unsigned `ut`, in portable C99.
std::string clz_helper(const std::string& name, const std::string& ut, int bits);
// x clamped to a signed `bits`-bit range (one SSAT where the CPU has it).
std::string ssat_helper(const std::string& name, int bits);
// mtir_abs*, mtir_div*, mtir_mod*, mtir_floordiv*, mtir_floormod*, mtir_min*, mtir_max* of `t`.
std::string helper_definition(const std::string& name, DataType t);

// `s` as a C string literal: quotes, backslashes and newlines escaped, other bytes
// outside printable ASCII in octal.
std::string c_string_literal(const std::string& s);

// Whether `s` is a C keyword or a name the generated C may not take (main, NULL, NAN).
bool is_reserved_c_word(const std::string& s);

}  // namespace mtir::c_helpers
