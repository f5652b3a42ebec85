// What the operator tests share: running one op in the interpreter (and recording it
// for the backends), checking a refusal's message, and TFLite's fixed-point multiplier
// written independently of core/ops/quant_util.cc (by scaling and floor divisions, not
// frexp and shifts), so a shared mistake there cannot hide.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend_cases.h"
#include "interp/interpreter.h"
#include "ops/ops.h"
#include "script/printer.h"
#include "support/diagnostic.h"

namespace mtir {
namespace op_test {

using json = nlohmann::json;

// Emits `op` for the inputs' types (checked and round-tripped), interprets it and records
// the case, with the inputs as they were, for the backends; returns the output. Inputs
// the kernel updates in place (a recurrent op's states) come back updated.
inline NDArray run_op_in_place(const std::string& op, std::vector<NDArray>& inputs, const json& attrs) {
  const OpDef* def = find_op(op);
  EXPECT_NE(def, nullptr) << op;
  if (!def) return {};
  std::vector<TensorType> types;
  for (const auto& a : inputs) types.push_back(TensorType{a.dtype, a.shape});
  TensorType out;
  PrimFunc f = backend_cases::build_checked_kernel(*def, types, attrs, &out);
  IRModule m;
  m.set(op + "_kernel", f);
  std::vector<NDArray> arrays = inputs;
  arrays.push_back(NDArray::zeros(out.dtype, out.shape));
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  try {
    interpret(m, op + "_kernel", args);
    std::string what = op;
    for (const auto& t : types) what += " " + t.str();
    std::vector<NDArray> recorded = inputs;
    recorded.push_back(arrays.back());
    backend_cases::record_kernel(what + " " + attrs.dump(), f, recorded);
  } catch (const DiagnosticError& e) {
    ADD_FAILURE() << "interpreter: " << render_all(e.diagnostics()) << "\n" << print_module(m);
  }
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = arrays[i];
  return arrays.back();
}

inline NDArray run_op(const std::string& op, const std::vector<NDArray>& inputs, const json& attrs) {
  std::vector<NDArray> copy = inputs;
  return run_op_in_place(op, copy, attrs);
}

// Expects infer (or, with `at_build`, build) to throw a user error starting with the op
// name and containing `needle`.
inline void expect_error(const std::string& op, const std::vector<TensorType>& types, const json& attrs,
                         const std::string& needle, bool at_build = false) {
  const OpDef* def = find_op(op);
  ASSERT_NE(def, nullptr) << op;
  try {
    TensorType out = def->infer(types, attrs);
    if (at_build) def->build("k", types, out, attrs);
    ADD_FAILURE() << op << ": expected an error containing \"" << needle << "\" for attrs " << attrs.dump();
  } catch (const DiagnosticError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    EXPECT_FALSE(e.internal()) << e.what();
    const std::string& msg = e.diagnostics()[0].message;
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to contain: " << needle;
    EXPECT_EQ(msg.rfind(op + ": ", 0), 0u) << "message should start with the op name: " << msg;
  }
}

// TFLite's QuantizeMultiplier: m = M * 2^(shift - 31) with M in [2^30, 2^31), found by
// scaling m into [2^30, 2^31) one power of two at a time, then rounding; a mantissa that
// rounds up to 2^31 is halved; shift < -31 means M = 0 (TFLite's cut-off).
struct RefMult {
  int64_t M;
  int shift;  // > 0 shifts left first, < 0 divides at the end
};
inline RefMult ref_multiplier(double m) {
  int e = 0;
  double x = m * 2147483648.0;  // m * 2^31
  while (x >= 2147483648.0) x /= 2, ++e;
  while (x < 1073741824.0) x *= 2, --e;
  int64_t M = static_cast<int64_t>(std::floor(x + 0.5));
  if (M == (int64_t{1} << 31)) M /= 2, ++e;
  if (e < -31) return {0, 0};
  return {M, e};
}

inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// TFLite's MultiplyByQuantizedMultiplier as exact rational steps: x * 2^left (int32
// wrap), then the high multiply: floor(x * M / 2^31 + 1/2) (round half up; M >= 0, so
// no saturation), then the divide by 2^right rounding half away from zero.
inline int64_t ref_requant(int64_t acc, const RefMult& r) {
  const int left = std::max(r.shift, 0), right = std::max(-r.shift, 0);
  int64_t x = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(acc) << left));
  int64_t high = floor_div(2 * x * r.M + (int64_t{1} << 31), int64_t{1} << 32);
  if (right == 0) return high;
  int64_t mag = floor_div(std::abs(high) * 2 + (int64_t{1} << right), int64_t{1} << (right + 1));
  return high < 0 ? -mag : mag;
}

}  // namespace op_test
}  // namespace mtir
