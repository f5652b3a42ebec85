// The playground's one request: compile TIR text or a JSON graph for a target and
// return everything a person wants to look at (wasm/README.md documents the schema).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mtir::wasm {

// Never throws: every failure, including a malformed request and an internal error of
// the compiler, becomes a diagnostic in the response ({"ok": false, ...}).
nlohmann::json compile_request(const nlohmann::json& request);

// The texts a compile deferred (its request's return.ir or return.tar false), from the
// last compile, which the core keeps for this: request {"ir": true, "tar": false};
// response {"ok", "diagnostics", "input_ir", "passes": [{name, changed, ir}], "tar",
// "timing"}. Refused (ok false) when the last compile kept nothing. Never throws.
nlohmann::json compile_details_request(const nlohmann::json& request);

// The same from and to JSON text (what the C ABI carries).
std::string compile_request_text(const std::string& request_json);
std::string compile_details_text(const std::string& request_json);

}  // namespace mtir::wasm
