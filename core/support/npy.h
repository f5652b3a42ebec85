// NumPy .npy files (format versions 1.0 to 3.0, little-endian, C order), as bytes in
// and bytes out: file I/O stays in the CLI so the core needs no OS.
#pragma once

#include <string>

#include "support/ndarray.h"

namespace mtir {

// Throws DiagnosticError naming `what` (usually the file name) on malformed input,
// Fortran order, big-endian or unsupported dtypes.
NDArray read_npy(const std::string& bytes, const std::string& what);
std::string write_npy(const NDArray& a);

}  // namespace mtir
