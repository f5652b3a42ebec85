// The Cortex-M4's register allocation of a 3x2 SMLAD tile kernel through the LLVM backend
// (codegen/llvm/native/register_allocator.h, redundant_reloads.h, invariant_gep_base.h),
// and what the kernel gives it to allocate: VWW's 128-channel 1x1 layer in small, with
// per-channel multipliers above 1 (TFLite's two-column table, the general
// requantization), compiled as the Cortex-M4 compiles it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include "codegen/llvm/llvm_target.h"
#include "driver/build.h"
#include "driver/target.h"
#include "ir/visitor.h"
#include "qconv_cases.h"
#include "sim/process.h"
#ifdef MICROTIR_HAVE_LLVM_NATIVE
#include "codegen/llvm/native/llvm_native.h"
#endif

namespace mtir {
namespace {

namespace fs = std::filesystem;
using namespace qconv_cases;

const char* const kM4 = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4 -unpacked-api=1";

// A 1x1 convolution of 128 channels to 128 over 6x6 pixels, prepared for the Cortex-M4
// with the 3x2 tile (as VWW's five such layers pay for it), its table in two columns.
Graph pointwise() {
  json scales = json::array();
  for (int c = 0; c < 128; ++c) scales.push_back(0.004 + 0.0003 * (c % 7));
  const Case k{"qconv2d", {1, 6, 6, 128}, {128, 1, 1, 128}, quant({{"output_scale", 0.0002}, {"activation", "relu"}}, scales)};
  ScheduleOptions o = parse_target(kM4).schedules;
  o.pixel_triples_stack = o.pixel_triples_code = false;
  return prepare_quantized(zero_weight_graph(k, "pw", true), o);
}

// The tile's channels oc0 + c read the table at oc0 * 2 + (2c + k): one row address for
// the tile, not (oc0 + 1) * 2 beside oc0 * 2 (in LLVM a second product, live across the
// tile loop and spilled under PBQP, reloaded for each of its loads).
TEST(LlvmRegisterAllocation, TwoColumnTableRowsOfATileShareOneAddress) {
  const Graph g = pointwise();
  const GraphNode& node = g.nodes.at(0);
  ASSERT_EQ(g.constants.at(node.inputs.back()).shape, (std::vector<int64_t>{128, 2}));
  struct TileProducts : Visitor {
    int n = 0;
    void visit_Mul(const MulNode* op) override {
      const auto* a = as<AddNode>(op->a);
      n += a && as_const_int(a->b);
      Visitor::visit_Mul(op);
    }
  };
  struct TableLoads : Visitor {
    int loads = 0;
    TileProducts products;
    void visit_BufferLoad(const BufferLoadNode* op) override {
      if (op->buffer->name == "requant_flat") {
        ++loads;
        for (const Expr& i : op->indices) products.visit(i);
      }
      Visitor::visit_BufferLoad(op);
    }
  } table;
  AotModule aot = build_aot(g);
  for (const auto& [name, f] : aot.module.functions)
    if (name != aot.main) table.visit(f->body);
  EXPECT_GE(table.loads, 4);  // two columns of two channels
  EXPECT_EQ(table.products.n, 0);
}

#ifdef MICROTIR_HAVE_LLVM_NATIVE
// The kernels' LLVM IR of a one-layer graph, prepared for the Cortex-M4 with the 3x2 tile.
std::string kernel_ir(const Case& k) {
  ScheduleOptions o = parse_target(kM4).schedules;
  o.pixel_triples_stack = o.pixel_triples_code = false;
  AotModule aot = build_aot(prepare_quantized(zero_weight_graph(k, "k", true), o));
  return build_llvm(aot.module, parse_target(kM4)).sources.at(0).text;
}

// The kernels' LLVM IR.
std::string pointwise_ir() {
  AotModule aot = build_aot(pointwise());
  return build_llvm(aot.module, parse_target(kM4)).sources.at(0).text;
}

std::string disassembly(const std::string& object, const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "f.o", std::ios::binary) << object;
  if (sim::run_process({"llvm-objdump-14", "-d", "--no-show-raw-insn", (dir / "f.o").string()}, dir / "dis.txt") != 0)
    ADD_FAILURE() << sim::read_text(dir / "dis.txt");
  return sim::read_text(dir / "dis.txt");
}

// The loads `ldr rX, [sp, #n]` of straight-line code (no branch or branch target between)
// after which rX already held slot n: stored there or loaded from there, not written since.
std::vector<std::string> redundant_reloads(const std::string& code) {
  struct Line {
    unsigned long at;
    std::string op, args;
  };
  std::vector<Line> lines;
  std::set<unsigned long> targets;
  std::istringstream in(code);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (!std::regex_search(line, m, std::regex("^\\s*([0-9a-f]+):\\s+(\\S+)\\s*([^@]*)"))) continue;
    lines.push_back({std::stoul(m[1], nullptr, 16), m[2], m[3]});
    std::smatch t;
    if (lines.back().op[0] == 'b' && std::regex_search(lines.back().args, t, std::regex("0x([0-9a-f]+)")))
      targets.insert(std::stoul(t[1], nullptr, 16));
  }
  const std::regex spill("^(ldr|str)(\\.w)?$"), slot("^(r\\d+|lr), \\[sp(, #(\\d+))?\\]\\s*$"), reg("\\b(r\\d+|lr)\\b");
  std::map<std::string, std::set<std::string>> held;  // slot -> registers holding it
  std::vector<std::string> found;
  for (const Line& l : lines) {
    if (targets.count(l.at) || l.op[0] == 'b' || l.op.rfind("pop", 0) == 0 || l.op.rfind("ldm", 0) == 0) held.clear();
    std::smatch s;
    if (std::regex_match(l.op, spill) && std::regex_match(l.args, s, slot)) {
      const std::string r = s[1], n = s[3];
      if (l.op[0] == 's') {
        held[n] = {r};
        continue;
      }
      if (held[n].count(r)) {
        found.push_back(l.op + " " + l.args);
        continue;
      }
      for (auto& [at, regs] : held) regs.erase(r);
      held[n].insert(r);
      continue;
    }
    if (l.op.rfind("str", 0) == 0 || l.op.rfind("stm", 0) == 0 || l.op.rfind("push", 0) == 0) {
      if (l.args.find("sp") != std::string::npos) held.clear();
      continue;
    }
    if (l.op.rfind("cmp", 0) == 0 || l.op.rfind("cmn", 0) == 0 || l.op.rfind("tst", 0) == 0 || l.op.rfind("it", 0) == 0)
      continue;
    // The first register is written; two for a pair load and the 64-bit multiplies.
    const bool two = std::regex_search(l.op, std::regex("^(ldrd|smlal|smull|umlal|umull)"));
    int defs = two ? 2 : 1;
    for (std::sregex_iterator it(l.args.begin(), l.args.end(), reg), end; it != end && defs > 0; ++it, --defs)
      for (auto& [at, regs] : held) regs.erase((*it)[1]);
  }
  return found;
}

// PBQP does not split live ranges: it stores a spilled value after its definition and
// loads it before each use, also where the register still holds it (the requantization
// after the tile loop stored a value and loaded it back at once, or loaded one slot
// twice into one register). Those reloads are gone.
TEST(LlvmRegisterAllocation, PbqpKernelsReloadNoValueTheirRegisterHolds) {
  if (std::system("llvm-objdump-14 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "llvm-objdump-14 is not installed";
  const std::string ir = pointwise_ir();
  llvm_native::Options m4;
  m4.triple = "thumbv7em-none-eabihf";
  m4.cpu = "cortex-m4";
  m4.machine_scheduler = false;  // as schedule dsp_no_early_scheduling compiles for the Cortex-M4
  ASSERT_NE(llvm_native::lower_loops(ir, "pw.ll", m4).find("\"mtir-regalloc\"=\"pbqp\""), std::string::npos);
  const fs::path dir = fs::temp_directory_path() / ("microtir-reloads-" + std::to_string(getpid()));
  const std::string code = disassembly(llvm_native::compile_to_object(ir, "pw.ll", m4), dir);
  fs::remove_all(dir);
  ASSERT_NE(code.find("smlad"), std::string::npos) << code;
  ASSERT_NE(code.find("[sp, #"), std::string::npos) << "the kernel spills nothing any more: the test shows nothing";
  const std::vector<std::string> found = redundant_reloads(code);
  EXPECT_TRUE(found.empty()) << found.size() << " redundant reloads, the first " << found.at(0) << "\n" << code;
}

// Stores to out + (m + row k) for two invariant rows in a loop around another loop (as a
// tile kernel's channel loop stores its pixels' outputs; m from the inner loop, so that
// loop strength reduction does not step the addresses itself) address from out + row k,
// set before the loop: out and the rows are no longer live in it. One row is left alone.
std::string rows_ir(int rows) {
  std::string ir = llvm_module_header(llvm_target("thumbv7em-none-eabihf")) +
                   "define void @rows(i8* noalias %out, i32* noalias %w, i32 %r0, i32 %r1, i32 %n) #0 {\n"
                   "entry:\n  br label %outer\n"
                   "outer:\n  %i = phi i32 [ 0, %entry ], [ %i.next, %latch ]\n  br label %inner\n"
                   "inner:\n  %k = phi i32 [ 0, %outer ], [ %k.next, %inner ]\n"
                   "  %acc = phi i32 [ 0, %outer ], [ %acc.next, %inner ]\n"
                   "  %i16 = shl i32 %i, 4\n  %j = add i32 %i16, %k\n"
                   "  %q = getelementptr inbounds i32, i32* %w, i32 %j\n  %v = load i32, i32* %q, align 4\n"
                   "  %acc.next = add i32 %acc, %v\n  %k.next = add nuw nsw i32 %k, 1\n"
                   "  %c = icmp eq i32 %k.next, 16\n  br i1 %c, label %latch, label %inner, !llvm.loop !0\n"
                   "latch:\n  %b = trunc i32 %acc.next to i8\n  %m = and i32 %acc.next, 63\n";
  for (int r = 0; r < rows; ++r) {
    const std::string n = std::to_string(r);
    ir += "  %a" + n + " = add i32 %m, %r" + n + "\n  %p" + n + " = getelementptr inbounds i8, i8* %out, i32 %a" + n +
          "\n  store i8 %b, i8* %p" + n + ", align 1\n";
  }
  return ir + "  %i.next = add nuw nsw i32 %i, 1\n  %d = icmp eq i32 %i.next, %n\n"
              "  br i1 %d, label %exit, label %outer, !llvm.loop !2\nexit:\n  ret void\n}\n"
              "attributes #0 = { nounwind \"mtir-regalloc\"=\"pbqp\" \"target-cpu\"=\"cortex-m4\" }\n"
              "!0 = distinct !{!0, !1}\n!1 = !{!\"llvm.loop.unroll.disable\"}\n!2 = distinct !{!2, !1}\n";
}

TEST(LlvmRegisterAllocation, OutputRowsAreAddressedFromPointersSetBeforeTheLoop) {
  llvm_native::Options m4;
  m4.triple = "thumbv7em-none-eabihf";
  m4.cpu = "cortex-m4";
  const std::string two = llvm_native::lower_loops(rows_ir(2), "rows.ll", m4);
  llvm_native::verify(two, "rows.ll");
  // Both rows in the entry block (the loop's preheader), the stores' addresses from them.
  const size_t outer = two.find("outer:");
  ASSERT_NE(outer, std::string::npos) << two;
  const std::string before = two.substr(0, outer), in = two.substr(outer);
  EXPECT_TRUE(std::regex_search(before, std::regex("%row\\d* = getelementptr i8, i8\\* %out, i32 %r0"))) << two;
  EXPECT_TRUE(std::regex_search(before, std::regex("%row\\d* = getelementptr i8, i8\\* %out, i32 %r1"))) << two;
  EXPECT_EQ(in.find("i8* %out,"), std::string::npos) << two;
  const std::string one = llvm_native::lower_loops(rows_ir(1), "rows.ll", m4);
  EXPECT_EQ(one.find("%row"), std::string::npos) << one;
}

// PBQP for the short tiles (a 1x1 layer of 8 to 32 channels: weights and columns as word
// pairs, the reduction in one iteration), greedy for the tiles that read their weights as
// single words: a first layer's im2col tile, a 64-channel 1x1 layer (KWS's).
TEST(LlvmRegisterAllocation, ShortTilesGetPbqpFirstLayersAndLongerReductionsGreedy) {
  llvm_native::Options m4;
  m4.triple = "thumbv7em-none-eabihf";
  m4.cpu = "cortex-m4";
  auto pbqp = [&](const Case& k) {
    return llvm_native::lower_loops(kernel_ir(k), "k.ll", m4).find("\"mtir-regalloc\"=\"pbqp\"") != std::string::npos;
  };
  const json scales = {0.02, 0.03, 0.01, 0.04, 0.02, 0.05, 0.03, 0.02};
  const json relu = quant({{"activation", "relu"}}, scales);
  EXPECT_TRUE(pbqp({"qconv2d", {1, 6, 6, 16}, {8, 1, 1, 16}, relu})) << "K = 16 (VWW's layer 4)";
  EXPECT_TRUE(pbqp({"qconv2d", {1, 6, 6, 32}, {8, 1, 1, 32}, relu})) << "K = 32 (VWW's layers 6 and 8)";
  EXPECT_FALSE(pbqp({"qconv2d", {1, 6, 6, 64}, {8, 1, 1, 64}, relu})) << "K = 64 (KWS's 1x1 layers)";
  EXPECT_FALSE(pbqp({"qconv2d", {1, 12, 12, 3}, {8, 3, 3, 3}, quant({{"activation", "relu"}, {"strides", {2, 2}},
                                                                      {"padding", {0, 0, 1, 1}}}, scales)}))
      << "a first layer's im2col tile";
}
#endif

}  // namespace
}  // namespace mtir
