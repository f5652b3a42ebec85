// Base64 (RFC 4648, with padding) for the binary files that travel in the JSON request
// and response: weights (.npy) and the MLF archive.
#pragma once

#include <string>

namespace mtir::wasm {

std::string base64_encode(const std::string& bytes);
// Throws DiagnosticError (a user error naming `what`) on a character outside the
// alphabet or a bad length. Whitespace is skipped.
std::string base64_decode(const std::string& text, const std::string& what);

}  // namespace mtir::wasm
