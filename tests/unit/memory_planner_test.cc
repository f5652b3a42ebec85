// The static memory planner: hand cases with a known optimum, alignment, zero sizes,
// random DAG schedules checked by check_plan, the checker on broken plans, the report
// text, and rejected inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "artifact/memory_peak.h"
#include "memory/planner.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TensorLifetime T(const std::string& name, int64_t size, int first, int last) {
  return TensorLifetime{name, size, first, last};
}

PlannerOptions opts(int64_t alignment = 16, int iterations = 2000, uint64_t seed = 1) {
  PlannerOptions o;
  o.alignment = alignment;
  o.improvement_iterations = iterations;
  o.seed = seed;
  return o;
}

// Plans, checks the plan is valid and returns it.
MemoryPlan plan_checked(const std::vector<TensorLifetime>& ts, const PlannerOptions& o = opts()) {
  MemoryPlan plan = plan_memory(ts, o);
  EXPECT_THAT(check_plan(ts, plan, o.alignment), IsEmpty()) << plan_report(ts, plan);
  EXPECT_EQ(plan.offsets.size(), ts.size());
  EXPECT_EQ(plan.lower_bound, memory_lower_bound(ts, o.alignment));
  return plan;
}

TEST(MemoryPlanner, EmptyInput) {
  MemoryPlan plan = plan_checked({});
  EXPECT_EQ(plan.pool_size, 0);
  EXPECT_EQ(plan.lower_bound, 0);
  EXPECT_FALSE(plan.algorithm.empty());
}

TEST(MemoryPlanner, ChainReachesLowerBound) {
  // Each layer reads the previous output: only neighbours overlap in time.
  std::vector<TensorLifetime> ts = {T("a", 100, 0, 1), T("b", 200, 1, 2), T("c", 50, 2, 3),
                                    T("d", 300, 3, 4), T("e", 10, 4, 5)};
  MemoryPlan plan = plan_checked(ts);
  EXPECT_EQ(plan.lower_bound, 64 + 304);  // c and d, aligned to 16
  EXPECT_EQ(plan.pool_size, plan.lower_bound);
}

TEST(MemoryPlanner, DiamondReachesLowerBound) {
  // x -> a, x -> b, (a, b) -> y, scheduled x, a, b, y.
  std::vector<TensorLifetime> ts = {T("x", 64, 0, 2), T("a", 32, 1, 3), T("b", 32, 2, 3),
                                    T("y", 64, 3, 3)};
  MemoryPlan plan = plan_checked(ts);
  EXPECT_EQ(plan.lower_bound, 128);
  EXPECT_EQ(plan.pool_size, 128);
}

TEST(MemoryPlanner, AllLiveAtOnceIsTheSum) {
  std::vector<TensorLifetime> ts = {T("a", 48, 0, 5), T("b", 16, 0, 5), T("c", 160, 0, 5),
                                    T("d", 32, 0, 5)};
  MemoryPlan plan = plan_checked(ts);
  EXPECT_EQ(plan.pool_size, 48 + 16 + 160 + 32);
  EXPECT_EQ(plan.lower_bound, plan.pool_size);
}

TEST(MemoryPlanner, DisjointLifetimesIsTheMax) {
  std::vector<TensorLifetime> ts = {T("a", 48, 0, 0), T("b", 160, 1, 2), T("c", 16, 3, 3),
                                    T("d", 96, 4, 9)};
  MemoryPlan plan = plan_checked(ts);
  EXPECT_EQ(plan.pool_size, 160);
  for (int64_t offset : plan.offsets) EXPECT_EQ(offset, 0);
}

TEST(MemoryPlanner, SizesAreAlignedUp) {
  std::vector<TensorLifetime> ts = {T("a", 1, 0, 1), T("b", 17, 0, 1), T("c", 33, 0, 1)};
  EXPECT_EQ(plan_checked(ts, opts(1)).pool_size, 51);
  EXPECT_EQ(plan_checked(ts, opts(16)).pool_size, 16 + 32 + 48);
  MemoryPlan plan = plan_checked(ts, opts(64));
  EXPECT_EQ(plan.pool_size, 3 * 64);
  for (int64_t offset : plan.offsets) EXPECT_EQ(offset % 64, 0);
  EXPECT_EQ(memory_lower_bound(ts, 8), 8 + 24 + 40);
}

TEST(MemoryPlanner, ZeroSizeTensorsGetOffsetZeroAndNeverConflict) {
  std::vector<TensorLifetime> ts = {T("a", 64, 0, 3), T("empty", 0, 0, 3), T("b", 64, 1, 2),
                                    T("none", 0, 2, 2)};
  MemoryPlan plan = plan_checked(ts);
  EXPECT_EQ(plan.offsets[1], 0);
  EXPECT_EQ(plan.offsets[3], 0);
  EXPECT_EQ(plan.pool_size, 128);
}

TEST(MemoryPlanner, LowerBoundHandlesNegativeAndLargeSteps) {
  std::vector<TensorLifetime> ts = {T("a", 16, -5, -1), T("b", 16, -1, 2147483647),
                                    T("c", 16, 2147483647, 2147483647)};
  EXPECT_EQ(memory_lower_bound(ts, 16), 32);
  EXPECT_EQ(plan_checked(ts).pool_size, 32);
}

TEST(MemoryPlanner, EveryHeuristicGivesAValidPlanAndTheBestIsReturned) {
  std::vector<TensorLifetime> ts = {T("a", 100, 0, 2), T("b", 300, 1, 4), T("c", 20, 2, 3),
                                    T("d", 250, 3, 6), T("e", 90, 4, 5),  T("f", 400, 5, 8),
                                    T("g", 60, 6, 7),  T("h", 130, 7, 9), T("i", 10, 0, 9)};
  const MemoryPlan best = plan_checked(ts);
  for (PlannerHeuristic h : all_heuristics()) {
    MemoryPlan plan = plan_memory_with(ts, h, opts());
    EXPECT_THAT(check_plan(ts, plan, 16), IsEmpty()) << heuristic_name(h);
    EXPECT_EQ(plan.algorithm, heuristic_name(h));
    EXPECT_LE(best.pool_size, plan.pool_size) << heuristic_name(h);
  }
}

TEST(MemoryPlanner, ImprovementSearchBeatsTheGreedyOrders) {
  // Found by searching random instances: every greedy order leaves a gap here, and the
  // hill-climb closes it.
  std::vector<TensorLifetime> ts = {T("t0", 48, 5, 5), T("t1", 32, 2, 3), T("t2", 48, 4, 6),
                                    T("t3", 32, 3, 4), T("t4", 48, 0, 2), T("t5", 48, 1, 1),
                                    T("t6", 32, 6, 6)};
  int64_t best_greedy = -1;
  for (PlannerHeuristic h : all_heuristics()) {
    if (h == PlannerHeuristic::kHillClimb) continue;
    int64_t pool = plan_memory_with(ts, h, opts()).pool_size;
    best_greedy = best_greedy < 0 ? pool : std::min(best_greedy, pool);
  }
  EXPECT_EQ(best_greedy, 112);
  MemoryPlan plan = plan_checked(ts);
  EXPECT_EQ(plan.lower_bound, 96);
  EXPECT_EQ(plan.pool_size, 96);
  EXPECT_EQ(plan.algorithm, "hill_climb");
  MemoryPlan no_search = plan_checked(ts, opts(16, 0));
  EXPECT_EQ(no_search.pool_size, best_greedy);
  EXPECT_NE(no_search.algorithm, "hill_climb");
}

TEST(MemoryPlanner, IsDeterministic) {
  std::vector<TensorLifetime> ts;
  std::mt19937 rng(7);
  for (int i = 0; i < 60; ++i) {
    const int first = static_cast<int>(rng() % 40);
    const int64_t size = 1 + rng() % 5000;
    const int last = first + static_cast<int>(rng() % 8);
    ts.push_back(T("t" + std::to_string(i), size, first, last));
  }
  MemoryPlan a = plan_checked(ts, opts(16, 2000, 3));
  MemoryPlan b = plan_checked(ts, opts(16, 2000, 3));
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.pool_size, b.pool_size);
  EXPECT_EQ(a.algorithm, b.algorithm);
  plan_checked(ts, opts(16, 2000, 99));  // another seed: still valid
}

// A random DAG of ops, scheduled in a random topological order; each op's output
// tensor is live from its producer's step to its last consumer's step (outputs of the
// graph stay live to the end).
std::vector<TensorLifetime> random_schedule(std::mt19937& rng) {
  const int n = 2 + static_cast<int>(rng() % 40);
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  for (int op = 1; op < n; ++op) {
    const int inputs = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < inputs; ++k) {
      // Mostly recent producers, like real networks, sometimes far back (skips).
      const int reach = rng() % 4 == 0 ? op : std::min(op, 3);
      const int back = 1 + static_cast<int>(rng() % reach);
      int producer = op - back;
      if (std::find(consumers[producer].begin(), consumers[producer].end(), op) !=
          consumers[producer].end())
        continue;
      consumers[producer].push_back(op);
      ++pending[op];
    }
  }
  std::vector<int> ready = {0}, step_of(n, -1);
  for (int op = 1; op < n; ++op)
    if (pending[op] == 0) ready.push_back(op);
  int step = 0;
  while (!ready.empty()) {
    const size_t pick = rng() % ready.size();
    const int op = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    step_of[op] = step++;
    for (int c : consumers[op])
      if (--pending[c] == 0) ready.push_back(c);
  }
  std::vector<TensorLifetime> ts;
  for (int op = 0; op < n; ++op) {
    int last = consumers[op].empty() ? step - 1 : step_of[op];
    for (int c : consumers[op]) last = std::max(last, step_of[c]);
    int64_t size = rng() % 10 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 8192);
    ts.push_back(T("op" + std::to_string(op), size, step_of[op], last));
  }
  return ts;
}

TEST(MemoryPlanner, RandomDagSchedulesGiveValidPlans) {
  std::mt19937 rng(2026);
  int at_bound = 0;
  for (int round = 0; round < 200; ++round) {
    std::vector<TensorLifetime> ts = random_schedule(rng);
    const int64_t alignment = int64_t{1} << (rng() % 7);
    MemoryPlan plan = plan_memory(ts, opts(alignment, 2000, round));
    ASSERT_THAT(check_plan(ts, plan, alignment), IsEmpty()) << "round " << round << "\n"
                                                            << plan_report(ts, plan);
    ASSERT_GE(plan.pool_size, plan.lower_bound);
    int64_t sum = 0;
    for (const auto& t : ts) sum += (t.size_bytes + alignment - 1) / alignment * alignment;
    ASSERT_LE(plan.pool_size, sum);
    for (PlannerHeuristic h : all_heuristics()) {
      MemoryPlan single = plan_memory_with(ts, h, opts(alignment, 2000, round));
      ASSERT_THAT(check_plan(ts, single, alignment), IsEmpty()) << heuristic_name(h);
      ASSERT_LE(plan.pool_size, single.pool_size) << heuristic_name(h);
    }
    at_bound += plan.pool_size == plan.lower_bound;
  }
  // The bound is not always reachable, but the search reaches it on most random
  // schedules (194 of these 200 when written; the greedy orders alone reach 110).
  EXPECT_GE(at_bound, 180);
}

TEST(CheckPlan, ReportsAnOverlapNamingBothTensors) {
  std::vector<TensorLifetime> ts = {T("x", 64, 0, 2), T("a", 32, 1, 3), T("b", 32, 2, 3),
                                    T("y", 64, 3, 3)};
  MemoryPlan plan = plan_checked(ts);
  plan.offsets[2] = plan.offsets[1];  // b on top of a
  std::vector<std::string> problems = check_plan(ts, plan, 16);
  ASSERT_EQ(problems.size(), 1u);
  const std::string a = std::to_string(plan.offsets[1]);
  const std::string range = "[" + a + ", " + std::to_string(plan.offsets[1] + 32) + ")";
  EXPECT_EQ(problems[0], "tensors 'a' (bytes " + range + ", steps 1..3) and 'b' (bytes " + range +
                             ", steps 2..3) overlap at bytes " + range +
                             " while both are live at steps 2..3");
}

TEST(CheckPlan, ReportsEveryKindOfProblem) {
  std::vector<TensorLifetime> ts = {T("a", 32, 0, 1), T("b", 32, 1, 2)};
  MemoryPlan plan;
  plan.offsets = {8, 16};
  plan.pool_size = 40;
  std::vector<std::string> problems = check_plan(ts, plan, 16);
  ASSERT_EQ(problems.size(), 4u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[0], "tensor 'a' has offset 8, not a multiple of the alignment 16");
  EXPECT_EQ(problems[1], "tensor 'b' (bytes [16, 48)) extends beyond the pool of 40 bytes");
  EXPECT_THAT(problems[2], HasSubstr("tensors 'a' (bytes [8, 40), steps 0..1) and 'b'"));
  EXPECT_EQ(problems[3], "pool of 40 bytes is below the lower bound of 64 bytes");

  plan.offsets = {-16, 32};
  plan.pool_size = 64;
  EXPECT_THAT(check_plan(ts, plan, 16),
              ::testing::ElementsAre("tensor 'a' has negative offset -16"));
  plan.offsets = {0};
  EXPECT_THAT(check_plan(ts, plan, 16), ::testing::ElementsAre("plan has 1 offsets for 2 tensors"));
  plan.offsets = {0, 0};
  plan.pool_size = 32;
  EXPECT_THAT(check_plan({T("a", 32, 0, 1), T("b", 32, 2, 3)}, plan, 16), IsEmpty());
}

TEST(PlanReport, ExactText) {
  std::vector<TensorLifetime> ts = {T("input", 640, 0, 1), T("dense_1", 512, 1, 2),
                                    T("out", 40, 2, 3)};
  MemoryPlan plan = plan_memory(ts, opts());
  EXPECT_EQ(plan_report(ts, plan),
            "tensor   size  offset  steps\n"
            "input     640       0  0..1\n"
            "dense_1   512     640  1..2\n"
            "out        40       0  2..3\n"
            "pool 1152 bytes, lower bound 1152 bytes, ratio 1.000, algorithm greedy_by_size\n");
}

TEST(MemoryPlanner, RejectsBadInput) {
  EXPECT_THROW(plan_memory({T("a", -1, 0, 1)}, opts()), DiagnosticError);
  EXPECT_THROW(plan_memory({T("a", 16, 3, 2)}, opts()), DiagnosticError);
  for (int64_t alignment : {0, -16, 3, 24}) {
    EXPECT_THROW(plan_memory({T("a", 16, 0, 1)}, opts(alignment)), DiagnosticError) << alignment;
    EXPECT_THROW(memory_lower_bound({T("a", 16, 0, 1)}, alignment), DiagnosticError);
    EXPECT_THROW(check_plan({T("a", 16, 0, 1)}, MemoryPlan{}, alignment), DiagnosticError);
  }
  EXPECT_THROW(plan_memory({T("a", 16, 0, 1)}, opts(16, -1)), DiagnosticError);
  EXPECT_THROW(plan_memory({T("a", int64_t{1} << 60, 0, 1)}, opts()), DiagnosticError);
  try {
    plan_memory({T("weights", -8, 0, 1)}, opts());
    FAIL() << "no error";
  } catch (const DiagnosticError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_THAT(e.diagnostics()[0].message, HasSubstr("'weights' has negative size -8"));
  }
  try {
    plan_memory({T("a", 16, 0, 1)}, opts(12));
    FAIL() << "no error";
  } catch (const DiagnosticError& e) {
    EXPECT_THAT(e.diagnostics()[0].message, HasSubstr("alignment 12 is not a power of two"));
  }
}

}  // namespace
}  // namespace mtir

namespace mtir {
namespace {

// A residual block as the AOT main schedules it: x is read by conv (step 1) and by the
// add (step 3); y = conv(x) lives 1..2 and h = conv(y) 2..3; the add writes `sum` at
// step 3, where x and h die. Whole tensors: x, h and sum live at step 3.
std::vector<TensorLifetime> residual_block() {
  return {TensorLifetime{"x", 1024, 0, 3}, TensorLifetime{"y", 1024, 1, 2}, TensorLifetime{"h", 1024, 2, 3},
          TensorLifetime{"sum", 1024, 3, 4}};
}

TEST(MemorySharing, AddWritesOverADeadInput) {
  const auto ts = residual_block();
  PlannerOptions o;
  MemoryPlan plan = plan_memory(ts, o, {{3, 0}, {3, 2}});
  ASSERT_EQ(plan.shared.size(), 1u);
  EXPECT_EQ(plan.shared[0].output, 3);
  EXPECT_EQ(plan.shared[0].input, 0);  // the first candidate wins; an output takes one input
  EXPECT_EQ(plan.offsets[3], plan.offsets[0]);
  EXPECT_EQ(plan.lower_bound, 3072);         // x, y, h or x, h, sum
  EXPECT_EQ(plan.shared_lower_bound, 3072);  // step 2 (x, y, h) still holds three
  EXPECT_THAT(check_plan(ts, plan, o.alignment), IsEmpty()) << plan_report(ts, plan);
  EXPECT_THAT(plan_report(ts, plan), HasSubstr("sum is written over x\n"));
}

TEST(MemorySharing, SharingGoesBelowTheWholeTensorBound) {
  // The add is the peak: a, b and out are all live at step 2 as whole tensors.
  std::vector<TensorLifetime> ts = {T("a", 512, 0, 2), T("b", 512, 1, 2), T("out", 512, 2, 3), T("next", 256, 3, 4)};
  PlannerOptions o;
  MemoryPlan whole = plan_memory(ts, o);
  EXPECT_EQ(whole.pool_size, 1536);
  MemoryPlan plan = plan_memory(ts, o, {{2, 1}});
  EXPECT_EQ(plan.lower_bound, 1536);
  EXPECT_EQ(plan.shared_lower_bound, 1024);
  EXPECT_EQ(plan.pool_size, 1024);
  EXPECT_EQ(plan.offsets[2], plan.offsets[1]);
  EXPECT_THAT(check_plan(ts, plan, o.alignment), IsEmpty()) << plan_report(ts, plan);
  EXPECT_EQ(memory_lower_bound(ts, o.alignment, {{2, 1}}), 1024);
}

TEST(MemorySharing, ChainsOfInPlaceOpsShareOneSlot) {
  // relu(add(a, b)) not fused: out1 over a, out2 over out1.
  std::vector<TensorLifetime> ts = {T("a", 256, 0, 1), T("b", 256, 0, 1), T("out1", 256, 1, 2), T("out2", 256, 2, 3)};
  MemoryPlan plan = plan_memory(ts, PlannerOptions{}, {{2, 0}, {3, 2}});
  EXPECT_EQ(plan.shared.size(), 2u);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_EQ(plan.offsets[2], plan.offsets[3]);
  EXPECT_EQ(plan.pool_size, 512);
  EXPECT_THAT(check_plan(ts, plan, 16), IsEmpty()) << plan_report(ts, plan);
}

TEST(MemorySharing, RefusesWhereUnsafe) {
  // The input is read after the output is written (a later reader), sizes differ, an
  // input offered to two outputs: each refused, and nothing overlaps.
  std::vector<TensorLifetime> ts = {T("x", 256, 0, 3), T("out", 256, 1, 2),  // x still read at step 3
                                    T("small", 128, 0, 2), T("wide", 256, 2, 3),
                                    T("z", 256, 3, 4), T("o1", 256, 4, 5), T("o2", 256, 4, 5)};
  PlannerOptions o;
  MemoryPlan plan = plan_memory(ts, o, {{1, 0}, {3, 2}, {5, 4}, {6, 4}});
  ASSERT_EQ(plan.shared.size(), 1u);
  EXPECT_EQ(plan.shared[0].output, 5);
  EXPECT_EQ(plan.shared[0].input, 4);
  EXPECT_THAT(check_plan(ts, plan, o.alignment), IsEmpty()) << plan_report(ts, plan);
  EXPECT_THROW(plan_memory(ts, o, {{1, 1}}), DiagnosticError);
  EXPECT_THROW(plan_memory(ts, o, {{1, 9}}), DiagnosticError);
}

TEST(MemorySharing, CheckerRejectsUnsoundSharings) {
  std::vector<TensorLifetime> ts = {T("a", 256, 0, 2), T("out", 256, 1, 3)};
  MemoryPlan plan;
  plan.offsets = {0, 0};
  plan.pool_size = 256;
  plan.shared = {{1, 0}};  // a is read at step 2, after out is written at step 1
  std::vector<std::string> problems = check_plan(ts, plan, 16);
  ASSERT_EQ(problems.size(), 3u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[0],
            "output 'out' may not share the bytes of input 'a': the input's last step 2 is not the output's first step 1");
  EXPECT_THAT(problems[1], HasSubstr("overlap at bytes [0, 256) while both are live at steps 1..2"));
  EXPECT_EQ(problems[2], "pool of 256 bytes is below the lower bound of 512 bytes");

  ts = {T("a", 256, 0, 1), T("out", 256, 1, 2)};
  plan.offsets = {0, 256};
  plan.pool_size = 512;
  EXPECT_THAT(check_plan(ts, plan, 16),
              ::testing::ElementsAre("output 'out' may not share the bytes of input 'a': they have different offsets"));
  plan.offsets = {0, 0};
  plan.pool_size = 256;
  EXPECT_THAT(check_plan(ts, plan, 16), IsEmpty());
  plan.shared = {};
  EXPECT_THAT(check_plan(ts, plan, 16), ::testing::Contains(HasSubstr("overlap at bytes [0, 256)")));
}


// Overlaps (memory/planner.h: OverlapCandidate): an output a proved shift from an input it
// overlaps while both are live. A chain of them alternating sides stays within one tensor
// plus the shifts; members of a group keep apart only while both live; a link that would
// make two untied members share bytes is refused; check_plan wants each at its shift.
TEST(MemoryOverlap, AlternatingChainStaysInOneSlotPlusTheShift) {
  // a -> b (b 32 below a) -> c (c 32 above b: where a was), plus a small t beside.
  std::vector<TensorLifetime> ts = {T("a", 256, 0, 2), T("b", 256, 1, 4), T("c", 256, 3, 5), T("t", 64, 2, 3)};
  PlannerOptions o;
  EXPECT_EQ(plan_memory(ts, o).pool_size, 576);
  MemoryPlan plan = plan_memory(ts, o, {}, {{1, 0, -32}, {2, 1, 32}});
  ASSERT_EQ(plan.overlapped.size(), 2u);
  EXPECT_EQ(plan.offsets[1], plan.offsets[0] - 32);
  EXPECT_EQ(plan.offsets[2], plan.offsets[0]);
  EXPECT_EQ(plan.shared_lower_bound, 288 + 64);  // a and b span 288 bytes; t beside them
  EXPECT_EQ(plan.pool_size, 352);
  EXPECT_THAT(check_plan(ts, plan, o.alignment), IsEmpty()) << plan_report(ts, plan);
  // Each side: 32 bytes below or above.
  EXPECT_EQ(memory_lower_bound(ts, 16, {}, {{1, 0, -32}}), 256 + 256 + 64);  // b, c and t apart at step 3
  // A member placed where an untied one still lives is refused: c over a while both live.
  std::vector<TensorLifetime> long_a = {T("a", 256, 0, 4), T("b", 256, 1, 4), T("c", 256, 3, 5)};
  MemoryPlan refused = plan_memory(long_a, o, {}, {{1, 0, -32}, {2, 1, 32}});
  ASSERT_EQ(refused.overlapped.size(), 1u);
  EXPECT_THAT(check_plan(long_a, refused, o.alignment), IsEmpty()) << plan_report(long_a, refused);
  EXPECT_THROW(plan_memory(ts, o, {}, {{1, 0, -24}}), DiagnosticError);  // not aligned
  EXPECT_THROW(plan_memory(ts, o, {}, {{1, 1, 0}}), DiagnosticError);
  // The checker: an overlap off its shift.
  MemoryPlan moved = plan;
  moved.offsets[1] += 16;
  EXPECT_THAT(check_plan(ts, moved, o.alignment), ::testing::Contains(HasSubstr("is not placed at its shift -32")));
}

// A group's members keep other tensors out only while they live: a tensor that lives
// after the group's first member died may take its bytes.
TEST(MemoryOverlap, GroupsKeepApartOnlyWhileMembersLive) {
  std::vector<TensorLifetime> ts = {T("a", 512, 0, 1), T("b", 256, 1, 3), T("late", 256, 2, 3)};
  PlannerOptions o;
  MemoryPlan plan = plan_memory(ts, o, {}, {{1, 0, 256}});  // b inside a's upper half
  ASSERT_EQ(plan.overlapped.size(), 1u);
  EXPECT_EQ(plan.pool_size, 512);  // late takes a's lower half once a is dead
  EXPECT_THAT(check_plan(ts, plan, o.alignment), IsEmpty()) << plan_report(ts, plan);
}

// The peak names the first step with the most bytes and every later step with as many
// (IC: two blocks at 32,768 bytes): lowering one alone leaves the peak.
TEST(MemoryPeak, NamesTheStepsTiedWithThePeak) {
  FunctionMemoryPlan plan;
  plan.planned = true;
  plan.steps = 4;
  plan.step_callees = {"a", "b", "c", "d"};
  // A and B at step 1 (96 bytes), C over A's bytes at step 2 (64), D and E at step 3 (96).
  plan.tensors = {{"A", "pool", 0, 64, 0, 1},  {"B", "pool", 64, 32, 1, 2}, {"C", "pool", 0, 32, 2, 3},
                  {"D", "pool", 32, 32, 3, 3}, {"E", "pool", 64, 32, 3, 3}};
  const MemoryPeak peak = memory_peak(plan);
  EXPECT_EQ(peak.bytes, 96);
  EXPECT_EQ(peak.step, 1);
  EXPECT_EQ(peak.callee, "b");
  EXPECT_EQ(peak.tied_steps, std::vector<int>{3});
  EXPECT_THAT(peak_text(peak), ::testing::HasSubstr("as many bytes at step 3: lowering one step alone leaves the peak\n"));
  EXPECT_EQ(peak_json(peak)["tied_steps"], nlohmann::json::array({3}));
  // A higher step later drops the ties before it.
  plan.tensors.push_back({"F", "pool", 96, 16, 3, 3});
  EXPECT_TRUE(memory_peak(plan).tied_steps.empty());
}

}  // namespace
}  // namespace mtir
