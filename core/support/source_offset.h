// The span of a byte offset in a source text, for readers that find errors by offset
// (a JSON parser's byte position): the JSON graph loader and schedule records.
#pragma once

#include <cstddef>
#include <memory>

#include "support/diagnostic.h"

namespace mtir {

// The span of byte `offset` of `file`'s text (line and column counted from 1).
Span span_at_offset(const std::shared_ptr<const SourceFile>& file, size_t offset);

}  // namespace mtir
