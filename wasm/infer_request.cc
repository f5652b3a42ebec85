// See infer_request.h.
#include "infer_request.h"

#include "ops/ops.h"
#include "support/diagnostic.h"

namespace mtir::wasm {

using nlohmann::json;

namespace {

json failure(const std::string& message, bool internal) {
  return {{"ok", false}, {"message", message}, {"internal", internal}};
}

}  // namespace

json infer_request(const json& request) {
  try {
    const OpDef* def = find_op(request.at("op").get<std::string>());
    if (!def) return failure("unknown op '" + request.at("op").get<std::string>() + "'", false);
    std::vector<TensorType> inputs;
    for (const auto& in : request.at("inputs")) {
      auto dtype = DataType::parse(in.at("dtype").get<std::string>());
      if (!dtype) return failure("unknown dtype " + in.at("dtype").dump(), false);
      inputs.push_back(TensorType{*dtype, in.at("shape").get<std::vector<int64_t>>()});
    }
    json attrs = request.contains("attrs") ? request["attrs"] : json::object();
    TensorType t = def->infer(inputs, attrs);
    return {{"ok", true}, {"type", {{"dtype", t.dtype.str()}, {"shape", t.shape}}}};
  } catch (const DiagnosticError& e) {
    return failure(e.diagnostics().empty() ? "invalid" : e.diagnostics()[0].message, e.internal());
  } catch (const std::exception& e) {
    return failure(std::string("malformed infer request: ") + e.what(), false);
  }
}

std::string infer_request_text(const std::string& request_json) {
  json request;
  try {
    request = json::parse(request_json);
  } catch (const json::exception& e) {
    return failure(std::string("malformed infer request: ") + e.what(), false).dump();
  }
  return infer_request(request).dump();
}

}  // namespace mtir::wasm
