// The playground's one request: compile TIR text or a JSON graph for a target and
// return everything a person wants to look at (wasm/README.md documents the schema).
#pragma once

#include <nlohmann/json.hpp>

namespace mtir::wasm {

// Never throws: every failure, including a malformed request and an internal error of
// the compiler, becomes a diagnostic in the response ({"ok": false, ...}).
nlohmann::json compile_request(const nlohmann::json& request);

// The same from and to JSON text (what the C ABI carries).
std::string compile_request_text(const std::string& request_json);

}  // namespace mtir::wasm
