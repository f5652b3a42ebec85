// The pass registry and pipeline runner: order, lookup, per-pass records with the
// "changed" flag, and the note naming the pass that failed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "driver/pipeline.h"
#include "ir/structural_equal.h"
#include "transform/transform.h"

namespace mtir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const DataType i32 = DataType::Int(32);
Expr i(int64_t v) { return IntImm(i32, v); }

IRModule module_with_body(std::function<Stmt(const Buffer&)> make_body) {
  Buffer B = MakeBuffer("B", i32, {i(4)});
  auto fn = std::make_shared<PrimFuncNode>();
  fn->params.push_back(MakeVar("B", DataType::Handle()));
  fn->param_buffers.push_back(B);
  fn->body = make_body(B);
  IRModule m;
  m.functions.emplace_back("f", fn);
  return m;
}

// for i in range(4): B[i] = i * 1 + (3 + 4)
IRModule foldable_module() {
  return module_with_body([](const Buffer& B) {
    Var x = MakeVar("i", i32);
    Expr v = Binary(ExprKind::Add, Binary(ExprKind::Mul, x, i(1)), Binary(ExprKind::Add, i(3), i(4)));
    return For(x, i(0), i(4), ForKind::kSerial, BufferStore(B, v, {x}));
  });
}

// for i in range(4): B[i] = i + 7
IRModule simple_module() {
  return module_with_body([](const Buffer& B) {
    Var x = MakeVar("i", i32);
    return For(x, i(0), i(4), ForKind::kSerial, BufferStore(B, Binary(ExprKind::Add, x, i(7)), {x}));
  });
}

std::vector<std::string> names(const std::vector<Pass>& passes) {
  std::vector<std::string> out;
  for (const auto& p : passes) out.push_back(p.name);
  return out;
}

TEST(Pipeline, RegistryIsInPipelineOrder) {
  EXPECT_THAT(names(all_passes()), ElementsAre("verify_well_formed", "expand_vector_buffers", "lower_tvm_intrinsics", "lower_allocate_const", "simplify", "scalarize_vectors",
                                                "scalarize_vectors_simd128", "plan_memory", "flatten_buffer",
                                                "unroll_loops", "hoist_loop_invariants", "make_packed_api", "make_unpacked_api", "lower_call_tir", "lower_builtins",
                                                "merge_kernels"));
  EXPECT_THAT(names(default_pipeline()), ElementsAre("verify_well_formed", "simplify"));
}

TEST(Pipeline, LoweringHoistsUnlessSwitchedOff) {
  EXPECT_THAT(names(lowering_pipeline(true)),
              ElementsAre("verify_well_formed", "expand_vector_buffers", "lower_tvm_intrinsics", "lower_allocate_const", "simplify", "scalarize_vectors", "plan_memory", "flatten_buffer",
                          "unroll_loops", "simplify",
                          "hoist_loop_invariants", "make_unpacked_api", "lower_call_tir", "lower_builtins",
                          "merge_kernels", "verify_well_formed"));
  // merge_kernels needs unpacked calls, and -disabled-schedules=merge_kernels drops it.
  EXPECT_THAT(names(lowering_pipeline(true, true, true, false, /*merge_kernels=*/false)),
              ElementsAre("verify_well_formed", "expand_vector_buffers", "lower_tvm_intrinsics", "lower_allocate_const", "simplify", "scalarize_vectors", "plan_memory", "flatten_buffer",
                          "unroll_loops", "simplify", "hoist_loop_invariants", "make_unpacked_api", "lower_call_tir",
                          "lower_builtins", "verify_well_formed"));
  EXPECT_THAT(names(lowering_pipeline(false, false)),
              ElementsAre("verify_well_formed", "expand_vector_buffers", "lower_tvm_intrinsics", "lower_allocate_const", "simplify", "scalarize_vectors", "plan_memory", "flatten_buffer",
                          "unroll_loops", "simplify", "make_packed_api", "lower_call_tir", "lower_builtins",
                          "verify_well_formed"));
  // LLVM emits vectors itself: no scalarize_vectors.
  EXPECT_THAT(names(lowering_pipeline(false, false, /*scalarize_vectors=*/false)),
              ElementsAre("verify_well_formed", "expand_vector_buffers", "lower_tvm_intrinsics", "lower_allocate_const", "simplify", "plan_memory", "flatten_buffer", "unroll_loops", "simplify",
                          "make_packed_api", "lower_call_tir", "lower_builtins", "verify_well_formed"));
  // wasm keeps the stores it emits as SIMD128.
  EXPECT_THAT(names(lowering_pipeline(true, false, /*scalarize_vectors=*/true, /*keep_simd128=*/true)),
              ElementsAre("verify_well_formed", "expand_vector_buffers", "lower_tvm_intrinsics", "lower_allocate_const", "simplify", "scalarize_vectors_simd128", "plan_memory", "flatten_buffer",
                          "unroll_loops", "simplify", "make_unpacked_api", "lower_call_tir", "lower_builtins",
                          "merge_kernels", "verify_well_formed"));
}

TEST(Pipeline, FindPass) {
  const Pass* p = find_pass("simplify");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "simplify");
  EXPECT_EQ(find_pass("no_such_pass"), nullptr);
}

TEST(Pipeline, RecordsEveryPassAndWhetherItChanged) {
  IRModule m = foldable_module();
  PipelineResult r = run_pipeline(m, default_pipeline());
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].name, "verify_well_formed");
  EXPECT_FALSE(r.records[0].changed);
  EXPECT_TRUE(structural_equal(r.records[0].module, m));
  EXPECT_EQ(r.records[1].name, "simplify");
  EXPECT_TRUE(r.records[1].changed);
  EXPECT_TRUE(structural_equal(r.module, simple_module())) << structural_diff(r.module, simple_module());
  EXPECT_TRUE(structural_equal(r.records[1].module, r.module));
}

TEST(Pipeline, ChangedIsFalseWhenNothingChanges) {
  PipelineResult r = run_pipeline(simple_module(), default_pipeline());
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_FALSE(r.records[0].changed);
  EXPECT_FALSE(r.records[1].changed);
}

TEST(Pipeline, ChangedIsStructuralNotIdentity) {
  // A pass that rebuilds the function (new object, same IR) did not change anything.
  Pass copy = MakeFunctionPass("copy", [](const PrimFunc& f) { return WithBody(f, f->body); });
  PipelineResult r = run_pipeline(simple_module(), {copy});
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_FALSE(r.records[0].changed);
}

TEST(Pipeline, EmptyPipelineReturnsTheInput) {
  IRModule m = simple_module();
  PipelineResult r = run_pipeline(m, {});
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.module.functions[0].second, m.functions[0].second);
}

TEST(Pipeline, FailureNamesThePass) {
  IRModule bad = module_with_body([](const Buffer& B) {
    return BufferStore(B, FloatImm(DataType::Float(32), 1), {i(0)});
  });
  try {
    run_pipeline(bad, default_pipeline());
    FAIL() << "expected a DiagnosticError";
  } catch (const DiagnosticError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    EXPECT_THAT(e.diagnostics()[0].message, HasSubstr("value stored into 'B'"));
    EXPECT_THAT(e.diagnostics()[0].notes, ElementsAre("in pass 'verify_well_formed'"));
  }
}

TEST(Pipeline, FailureInALaterPassNamesThatPass) {
  Pass exploding{"simplify", [](const IRModule&) -> IRModule { user_error({}, "cannot simplify this"); }};
  try {
    run_pipeline(simple_module(), {*find_pass("verify_well_formed"), exploding});
    FAIL() << "expected a DiagnosticError";
  } catch (const DiagnosticError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(e.diagnostics()[0].message, "cannot simplify this");
    EXPECT_THAT(e.diagnostics()[0].notes, ElementsAre("in pass 'simplify'"));
    EXPECT_THAT(e.what(), HasSubstr("in pass 'simplify'"));
  }
}

TEST(MakeFunctionPass, AppliesToEveryFunctionAndKeepsUnchangedOnes) {
  IRModule m = foldable_module();
  IRModule other = simple_module();
  m.functions.emplace_back("g", other.functions[0].second);
  IRModule out = find_pass("simplify")->run(m);
  ASSERT_EQ(out.functions.size(), 2u);
  EXPECT_EQ(out.functions[0].first, "f");
  EXPECT_NE(out.functions[0].second, m.functions[0].second);
  EXPECT_EQ(out.functions[1].first, "g");
  EXPECT_EQ(out.functions[1].second, m.functions[1].second);  // same object
}

}  // namespace
}  // namespace mtir
