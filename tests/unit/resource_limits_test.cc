// Resource limits: inputs far larger or deeper than any real model end in a result
// within bounded time and memory, or in a clear error, never in a stack overflow.
#include <gtest/gtest.h>

#include <string>

#include "analysis/well_formed.h"
#include "driver/pipeline.h"
#include "executor/aot.h"
#include "frontend/graph.h"
#include "script/parser.h"

namespace mtir {
namespace {

// A graph of 100,000 relu nodes in a chain: loading, the AOT executor (which fuses
// them 16 at a time), the verifier and the memory planner all stay linear.
TEST(ResourceLimits, AGraphWithOneHundredThousandNodesBuilds) {
  const int n = 100000;
  std::string nodes;
  nodes.reserve(static_cast<size_t>(n) * 60);
  for (int i = 0; i < n; ++i) {
    nodes += std::string(i ? "," : "") + "{\"name\": \"n" + std::to_string(i) + "\", \"op\": \"relu\", \"inputs\": [\"" +
             (i ? "n" + std::to_string(i - 1) : std::string("x")) + "\"]}";
  }
  const std::string text = "{\"format\": \"microtir-graph\", \"version\": 1, \"name\": \"big\", \"inputs\": "
                           "[{\"name\": \"x\", \"shape\": [1, 4], \"dtype\": \"float32\"}], \"constants\": [], "
                           "\"nodes\": [" + nodes + "], \"outputs\": [\"n" + std::to_string(n - 1) + "\"]}";
  FileReader no_files = [](const std::string& rel) -> std::string { user_error(Span{}, "no file " + rel); };
  Graph g = load_graph_json(text, "big.json", no_files);
  ASSERT_EQ(g.nodes.size(), static_cast<size_t>(n));
  AotModule aot = build_aot(g);
  EXPECT_EQ(aot.module.functions.size(), static_cast<size_t>(n / 16 + (n % 16 ? 1 : 0) + 1));
  EXPECT_TRUE(check_well_formed(aot.module).empty());
  PipelineResult planned = run_pipeline(aot.module, {*find_pass("simplify"), *find_pass("plan_memory")});
  PrimFunc main = planned.module.lookup(aot.main);
  // Two 16-byte tensors are ever live at once as whole tensors; each relu kernel writes
  // over its dead input, so the chain needs one.
  EXPECT_EQ(std::get<int64_t>(main->attrs.at("workspace.lower_bound_bytes")), 32);
  EXPECT_EQ(std::get<int64_t>(main->attrs.at("workspace.shared_lower_bound_bytes")), 16);
  EXPECT_EQ(std::get<int64_t>(main->attrs.at("workspace.pool_bytes")), 16);
}

// Nesting deeper than the parser allows is a located error, not a stack overflow.
TEST(ResourceLimits, DeepNestingIsALocatedError) {
  std::string loops = "@T.prim_func\ndef f(A: T.Buffer((1,), \"float32\")):\n";
  for (int i = 0; i < 10000; ++i) loops += std::string(static_cast<size_t>(i) + 1, ' ') + "for i" + std::to_string(i) + " in range(1):\n";
  loops += std::string(10001, ' ') + "A[0] = T.float32(1)\n";
  ParseResult r = parse_module(loops, "deep.tir");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics[0].message.find("nesting too deep"), std::string::npos) << r.diagnostics[0].message;

  // A 1 MB expression: 1,000,000 bytes of parentheses, and a sum of 200,000 terms.
  std::string parens = "@T.prim_func\ndef f(A: T.Buffer((1,), \"int32\")):\n    A[0] = " + std::string(500000, '(') +
                       "1" + std::string(500000, ')') + "\n";
  r = parse_module(parens, "parens.tir");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics[0].message.find("nesting too deep"), std::string::npos);
  std::string sum = "@T.prim_func\ndef f(A: T.Buffer((1,), \"int32\")):\n    A[0] = 1";
  for (int i = 0; i < 200000; ++i) sum += " + 1";
  r = parse_module(sum + "\n", "sum.tir");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics[0].message.find("expression nesting too deep"), std::string::npos) << r.diagnostics[0].message;
}

}  // namespace
}  // namespace mtir
