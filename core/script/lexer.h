// Tokenizer for the TVMScript-style text format: Python's token rules (INDENT/DEDENT,
// newlines ignored inside brackets, `#` comments), reduced to what TIR needs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/diagnostic.h"

namespace mtir {
namespace script {

enum class TokKind { kName, kInt, kFloat, kString, kOp, kNewline, kIndent, kDedent, kEof };

struct Token {
  TokKind kind = TokKind::kEof;
  std::string text;  // identifier, operator, decoded string, or number spelling
  uint64_t int_value = 0;
  double float_value = 0;
  int line = 0, col = 0;  // 1-based
};

// Describes a token for messages: "name 'x'", "':'", "end of line", ...
std::string describe(const Token& t);

// Splits `file->text` into tokens ending with kEof. Throws DiagnosticError on a lexical
// error (bad character, tab in indentation, unterminated string, ...).
std::vector<Token> tokenize(const std::shared_ptr<const SourceFile>& file);

}  // namespace script
}  // namespace mtir
