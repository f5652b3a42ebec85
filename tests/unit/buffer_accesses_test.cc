// analysis/buffer_accesses.h: pointers_used, the question the memory planner and
// call_overlap both ask of a statement (may it reach this memory?); and
// analysis/call_overlap.h: the order in which plan_memory tries the overlaps it proves.
#include "analysis/buffer_accesses.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/call_loops.h"
#include "analysis/call_overlap.h"

#include "script/parser.h"

namespace mtir {
namespace {

std::set<std::string> names(const std::set<const VarNode*>& vars) {
  std::set<std::string> out;
  for (const VarNode* v : vars) out.insert(v->name);
  return out;
}

// The calls of a module's main function, and its allocations' data variables by buffer
// name: what call_overlaps is given by plan_memory. No steps when the text does not parse.
struct MainCalls {
  ParseResult parsed;  // owns the nodes below
  std::map<std::string, const VarNode*> data;
  std::vector<Stmt> steps;
};

MainCalls main_calls(const char* text) {
  MainCalls out{parse_module(text), {}, {}};
  if (!out.parsed.ok()) return out;
  Stmt body = out.parsed.module->functions.back().second->body;  // main
  while (const auto* alloc = as<AllocateNode>(body)) {
    out.data[alloc->buffer->name] = alloc->buffer->data.get();
    body = alloc->body;
  }
  while (const auto* decl = as<DeclBufferNode>(body)) body = decl->body;
  if (const auto* seq = as<SeqStmtNode>(body)) out.steps = seq->seq;
  return out;
}

TEST(PointersUsed, BuffersDataAndVariablesOfTheStatementOnly) {
  const ParseResult parsed = parse_module(R"(@T.prim_func
def f(a: T.handle, b: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (8,), "int8")
    B = T.match_buffer(b, (8,), "int8")
    C = T.match_buffer(c, (8,), "int8")
    for i in range(n):
        A[i] = B[i]
    C[0] = T.int8(1)
)");
  ASSERT_TRUE(parsed.ok());
  const PrimFunc f = parsed.module->functions.at(0).second;
  const auto* seq = as<SeqStmtNode>(f->body);
  ASSERT_NE(seq, nullptr);
  const std::set<std::string> loop = names(pointers_used(seq->seq.at(0)));
  EXPECT_TRUE(loop.count("n") && loop.count("i"));
  EXPECT_EQ(loop.count("C") + loop.count("c"), 0u);
  EXPECT_EQ(names(pointers_used(seq->seq.at(1))).size(), 1u);  // C's data pointer alone
}

// Three banded copies T1 -> T2 (2 bands), T2 -> T3 (4 bands), T3 -> T4 (2 bands), each
// 64 bytes: a band's output may sit 32 (2 bands) or 16 bytes (4 bands) below its input.
// plan_memory takes the candidates in call_overlaps' order, so the order is the plan.
const char* kBandedChain = R"(@I.ir_module
class Module:
    @T.prim_func
    def copy(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
        for i in range(4):
            Y[i] = X[i]

    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        T1 = T.alloc_buffer((16,), "float32", scope="global")
        T2 = T.alloc_buffer((16,), "float32", scope="global")
        T3 = T.alloc_buffer((16,), "float32", scope="global")
        T4 = T.alloc_buffer((16,), "float32", scope="global")
        T.evaluate(T.call_tir("copy", A, T1))
        T.evaluate(T.call_tir("copy", T1[0:8], T2[0:8]))
        T.evaluate(T.call_tir("copy", T1[8:16], T2[8:16]))
        T.evaluate(T.call_tir("copy", T2[0:4], T3[0:4]))
        T.evaluate(T.call_tir("copy", T2[4:8], T3[4:8]))
        T.evaluate(T.call_tir("copy", T2[8:12], T3[8:12]))
        T.evaluate(T.call_tir("copy", T2[12:16], T3[12:16]))
        T.evaluate(T.call_tir("copy", T3[0:8], T4[0:8]))
        T.evaluate(T.call_tir("copy", T3[8:16], T4[8:16]))
        T.evaluate(T.call_tir("copy", T4, B))
)";

TEST(CallOverlaps, MostBytesSavedFirstThenAllocationOrder) {
  MainCalls calls = main_calls(kBandedChain);
  std::map<std::string, const VarNode*>& data = calls.data;
  const std::vector<Stmt>& steps = calls.steps;
  ASSERT_FALSE(steps.empty());
  ASSERT_EQ(data.size(), 4u);
  // Each tensor's first (written) and last (read) step.
  const std::map<const VarNode*, std::pair<int, int>> live = {
      {data["T1"], {0, 2}}, {data["T2"], {1, 6}}, {data["T3"], {3, 8}}, {data["T4"], {7, 9}}};
  std::vector<std::pair<const VarNode*, int64_t>> sizes;
  for (const char* name : {"T1", "T2", "T3", "T4"}) sizes.emplace_back(data[name], 64);
  std::map<const VarNode*, std::string> name_of;
  for (const auto& [name, p] : data) name_of[p] = name;
  auto order = [&](const std::vector<std::pair<const VarNode*, int64_t>>& in) {
    std::vector<std::string> out;
    for (const CallOverlap& o : call_overlaps(steps, in, live, 16)) {
      out.push_back(name_of.at(o.output) + " over " + name_of.at(o.input) + " " + std::to_string(o.shift) + " saves " +
                    std::to_string(o.saved));
    }
    return out;
  };
  // T3 over T2 saves 48 bytes and comes first, though T2 over T1 is allocated before it;
  // the two ties of 32 bytes follow in allocation order.
  EXPECT_EQ(order(sizes), (std::vector<std::string>{"T3 over T2 -16 saves 48", "T2 over T1 -32 saves 32",
                                                    "T4 over T3 -32 saves 32"}));
  // Another allocation order changes the ties' order alone (never the pointers' values).
  std::reverse(sizes.begin(), sizes.end());
  EXPECT_EQ(order(sizes), (std::vector<std::string>{"T3 over T2 -16 saves 48", "T4 over T3 -32 saves 32",
                                                    "T2 over T1 -32 saves 32"}));
  // A tensor without live steps (T2 here) takes part in no pair, as output or as input;
  // its lookup is done once per tensor, not once per pair.
  auto without_t2 = live;
  without_t2.erase(data["T2"]);
  std::vector<std::string> rest;
  for (const CallOverlap& o : call_overlaps(steps, sizes, without_t2, 16))
    rest.push_back(name_of.at(o.output) + " over " + name_of.at(o.input));
  EXPECT_EQ(rest, (std::vector<std::string>{"T4 over T3"}));
}

// A residual stage's band calls read the residual R where they write the output O
// (element by element: plan_memory passes those arguments as in-place reads). O then fits
// over R (shift 0); counted as an ordinary read, only 16 bytes below it. A later read of R
// above a write breaks shift 0, and in-place reads are offered at no other shift.
const char* kInPlaceBands = R"(@I.ir_module
class Module:
    @T.prim_func
    def copy(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
        for i in range(4):
            Y[i] = X[i]

    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((4,), "float32")):
        R = T.alloc_buffer((16,), "float32", scope="global")
        O = T.alloc_buffer((16,), "float32", scope="global")
        T.evaluate(T.call_tir("copy", A[0:4], R[0:4]))
        T.evaluate(T.call_tir("copy", A[4:8], R[4:8]))
        T.evaluate(T.call_tir("copy", A[8:12], R[8:12]))
        T.evaluate(T.call_tir("copy", A[12:16], R[12:16]))
        T.evaluate(T.call_tir("copy", R[0:4], O[0:4]))
        T.evaluate(T.call_tir("copy", R[4:8], O[4:8]))
        T.evaluate(T.call_tir("copy", R[8:12], O[8:12]))
        T.evaluate(T.call_tir("copy", R[12:16], O[12:16]))
        T.evaluate(T.call_tir("copy", R[4:8], C))
        T.evaluate(T.call_tir("copy", O, B))
)";

TEST(CallOverlaps, InPlaceReadsPlaceTheOutputOverTheInput) {
  MainCalls calls = main_calls(kInPlaceBands);
  std::map<std::string, const VarNode*>& data = calls.data;
  const std::vector<Stmt>& steps = calls.steps;
  ASSERT_FALSE(steps.empty());
  const std::vector<std::pair<const VarNode*, int64_t>> sizes = {{data["R"], 64}, {data["O"], 64}};
  auto describe = [&](int last, const std::vector<std::set<size_t>>& in_place) {
    std::map<const VarNode*, std::pair<int, int>> live = {{data["R"], {0, last}}, {data["O"], {4, 9}}};
    std::vector<Stmt> used(steps.begin(), steps.end());
    if (last < 8) used.erase(used.begin() + 8);  // without the late read of R
    std::string out;
    for (const CallOverlap& o : call_overlaps(used, sizes, live, 16))
      out += "shift " + std::to_string(o.shift) + " saves " + std::to_string(o.saved);
    for (const CallOverlap& o : call_overlaps(used, sizes, live, 16, in_place))
      out += " | shift " + std::to_string(o.shift) + " saves " + std::to_string(o.saved) + " in place " +
             std::to_string(o.in_place.size());
    return out;
  };
  const std::set<size_t> first = {1};  // call argument 1: the band's rows of R
  const std::vector<std::set<size_t>> in_place = {{}, {}, {}, {}, first, first, first, first, {}, {}};
  EXPECT_EQ(describe(7, in_place), "shift -16 saves 48 | shift 0 saves 64 in place 4");
  // R read above the last band's write: only the ordinary placement, 48 bytes below.
  EXPECT_EQ(describe(8, in_place), "shift -48 saves 16");
}

// kBandedChain's T2 -> T3 copy in 4 bands as a loop (executor/band_loops.h): read as the
// calls it makes (analysis/call_loops.h), the same overlap, T3 16 bytes below T2; a loop
// is one step the overlap proof cannot read, so without that none. The bands the other way
// round (the last rows first) write where later bands still read: no overlap either.
TEST(CallOverlaps, ALoopOfBandCallsIsReadAsItsCalls) {
  auto loop_main = [](const char* band) {
    return std::string(R"(@I.ir_module
class Module:
    @T.prim_func
    def copy(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
        for i in range(4):
            Y[i] = X[i]

    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        T2 = T.alloc_buffer((16,), "float32", scope="global")
        T3 = T.alloc_buffer((16,), "float32", scope="global")
        T.evaluate(T.call_tir("copy", A, T2))
        for band in range(4):
            T.evaluate(T.call_tir("copy", )") + band + R"())
        T.evaluate(T.call_tir("copy", T3, B))
)";
  };
  auto overlaps = [](const std::string& text, bool expand) {
    MainCalls calls = main_calls(text.c_str());
    std::vector<Stmt> steps = expand ? expand_call_loops(calls.steps) : calls.steps;
    const int last = static_cast<int>(steps.size()) - 1;
    std::map<const VarNode*, std::pair<int, int>> live = {{calls.data["T2"], {0, last - 1}},
                                                          {calls.data["T3"], {1, last}}};
    std::string out = std::to_string(steps.size()) + " steps";
    std::map<const VarNode*, std::string> name_of = {{calls.data["T2"], "T2"}, {calls.data["T3"], "T3"}};
    for (const CallOverlap& o : call_overlaps(steps, {{calls.data["T2"], 64}, {calls.data["T3"], 64}}, live, 16))
      out += ", " + name_of[o.output] + " at " + std::to_string(o.shift) + " from " + name_of[o.input];
    return out;
  };
  const std::string forward = loop_main("T2[band * 4:band * 4 + 4], T3[band * 4:band * 4 + 4]");
  EXPECT_EQ(overlaps(forward, true), "6 steps, T3 at -16 from T2");
  EXPECT_EQ(overlaps(forward, false), "3 steps");
  const std::string backward = loop_main("T2[12 - band * 4:12 - band * 4 + 4], T3[12 - band * 4:12 - band * 4 + 4]");
  EXPECT_EQ(overlaps(backward, true), "6 steps, T3 at 16 from T2");
  const std::string crossed = loop_main("T2[band * 4:band * 4 + 4], T3[12 - band * 4:12 - band * 4 + 4]");
  EXPECT_EQ(overlaps(crossed, true), "6 steps");
}

}  // namespace
}  // namespace mtir
