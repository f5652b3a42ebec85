// The LLVM IR split for parallel code generation (codegen/llvm/module_parts.h): every
// function is defined in exactly one part; small and local callees, and the local
// constants a function reads, stay in their user's part; other parts declare what they
// call; the split depends on the IR only. With the native helpers, the parts' objects
// (compiled on threads) link into a program that prints what the whole module's object
// prints, whatever the thread count; a Thumb function's code does not depend on where it
// lands in its object, an SMLAD tile's loop steps one pointer per buffer, and a short
// tile reads its column from sp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include "codegen/llvm/llvm_target.h"
#include "codegen/llvm/module_parts.h"
#include "driver/build.h"
#include "script/parser.h"
#include "sim/process.h"
#ifdef MICROTIR_HAVE_LLVM_NATIVE
#include "codegen/llvm/native/llvm_native.h"
#endif

namespace mtir {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A function of `n` instruction lines: a chain of arithmetic on %x, then `tail`.
std::string chain(const std::string& name, int n, const std::string& tail) {
  std::string s = "define i32 @" + name + "(i32 %x) #0 {\nentry:\n  %v0 = add i32 %x, 1\n";
  for (int i = 1; i < n; ++i) {
    const char* op = i % 3 == 0 ? "xor" : i % 3 == 1 ? "mul" : "add";
    s += "  %v" + std::to_string(i) + " = " + op + " i32 %v" + std::to_string(i - 1) + ", " + std::to_string(i * 7 + 3) +
         "\n";
  }
  return s + "  %last = add i32 %v" + std::to_string(n - 1) + ", 0\n" + tail + "}\n";
}

// Four large kernels (one reads a local helper that reads a private string), a small
// function the entry point calls, and the entry point summing them all.
std::string module_text() {
  std::string ir = "; a test module\nsource_filename = \"parts\"\n" + llvm_module_header(llvm_target("")) + "\n";
  ir += "@.str.0 = private unnamed_addr constant [4 x i8] c\"abc\\00\", align 1\n\n";
  ir += "define internal i32 @helper(i32 %x) #0 {\nentry:\n"
        "  %c = load i8, i8* getelementptr inbounds ([4 x i8], [4 x i8]* @.str.0, i32 0, i32 1), align 1\n"
        "  %w = zext i8 %c to i32\n  %r = add i32 %x, %w\n  ret i32 %r\n}\n\n";
  ir += "define i32 @small(i32 %x) #0 {\nentry:\n  %r = mul i32 %x, 3\n  ret i32 %r\n}\n\n";
  ir += chain("big0", 1100, "  ret i32 %last\n") + "\n";
  ir += chain("big1", 1200, "  %h = call i32 @helper(i32 %last)\n  ret i32 %h\n") + "\n";
  ir += chain("big2", 1300, "  ret i32 %last\n") + "\n";
  ir += chain("big3", 1400, "  ret i32 %last\n") + "\n";
  ir += "define i32 @entry(i32 %x) #0 {\nentry:\n";
  std::string sum = "%x";
  for (const char* f : {"small", "big0", "big1", "big2", "big3"}) {
    ir += "  %" + std::string(f) + ".r = call i32 @" + f + "(i32 " + sum + ")\n";
    ir += "  %" + std::string(f) + ".s = add i32 %" + f + ".r, " + sum + "\n";
    sum = "%" + std::string(f) + ".s";
  }
  return ir + "  ret i32 " + sum + "\n}\n\nattributes #0 = { nounwind }\n";
}

// The part that defines `name` (-1 if none, -2 if several).
int defining_part(const std::vector<LlvmModulePart>& parts, const std::string& name) {
  int found = -1;
  for (size_t p = 0; p < parts.size(); ++p)
    if (has(parts[p].text, "@" + name + "(i32 %x) #0 {") || has(parts[p].text, "\n@" + name + " = "))
      found = found == -1 ? static_cast<int>(p) : -2;
  return found;
}

TEST(LlvmModuleParts, FunctionsAreDefinedOnceWithTheirLocalAndSmallCallees) {
  const std::string ir = module_text();
  std::vector<LlvmModulePart> parts = split_llvm_module(ir, 3);
  ASSERT_EQ(parts.size(), 3u);
  int functions = 0;
  for (const auto& p : parts) {
    functions += p.functions;
    EXPECT_TRUE(has(p.text, "target triple = \"x86_64-pc-linux-gnu\"")) << p.text.substr(0, 300);
    EXPECT_TRUE(has(p.text, "attributes #0 = { nounwind }"));
  }
  EXPECT_EQ(functions, 7);
  for (const char* f : {"helper", "small", "big0", "big1", "big2", "big3", "entry"}) EXPECT_GE(defining_part(parts, f), 0) << f;
  EXPECT_EQ(defining_part(parts, "helper"), defining_part(parts, "big1"));  // local: with its caller
  EXPECT_EQ(defining_part(parts, ".str.0"), defining_part(parts, "big1"));  // and the string it reads
  EXPECT_EQ(defining_part(parts, "small"), defining_part(parts, "entry"));  // the inliner may take it
  EXPECT_EQ(defining_part(parts, "helper"), 0);  // the first part holds the module's first function
  // The entry point's part declares the kernels it calls; the local helper is never declared.
  const std::string& entry_part = parts[static_cast<size_t>(defining_part(parts, "entry"))].text;
  EXPECT_TRUE(has(entry_part, "declare i32 @big2(i32 %x) #0\n") || defining_part(parts, "big2") == defining_part(parts, "entry"));
  for (const auto& p : parts) EXPECT_FALSE(has(p.text, "declare internal")) << p.text;
  // The largest groups are spread: no part holds two of the three largest kernels.
  EXPECT_NE(defining_part(parts, "big3"), defining_part(parts, "big2"));
  EXPECT_NE(defining_part(parts, "big3"), defining_part(parts, "big1"));
  EXPECT_NE(defining_part(parts, "big2"), defining_part(parts, "big1"));
  // The IR alone decides.
  std::vector<LlvmModulePart> again = split_llvm_module(ir, 3);
  for (size_t p = 0; p < parts.size(); ++p) EXPECT_EQ(again[p].text, parts[p].text);
}

TEST(LlvmModuleParts, ModulesThatStayWhole) {
  const std::string ir = module_text();
  EXPECT_TRUE(split_llvm_module(ir, 1).empty());
  EXPECT_TRUE(split_llvm_module(ir, 0).empty());  // 5,000 instructions are one part's worth
  EXPECT_EQ(split_llvm_module(ir, 9).size(), 5u);  // one part per group at most
  std::string quoted = ir;
  quoted.replace(quoted.find("@big0("), 6, "@\"big0\"(");
  EXPECT_TRUE(split_llvm_module(quoted, 3).empty());
  std::string external_variable = ir;
  external_variable.replace(external_variable.find("private unnamed_addr"), 20, "global");
  EXPECT_TRUE(split_llvm_module(external_variable, 3).empty());
  std::string unterminated = ir.substr(0, ir.rfind("\n}\n") + 1);
  EXPECT_TRUE(split_llvm_module(unterminated, 3).empty());
}

#ifdef MICROTIR_HAVE_LLVM_NATIVE
namespace fs = std::filesystem;

// What a host program linking `objects` with a main calling @entry prints.
std::string run_linked(const std::vector<std::string>& objects, const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<std::string> cmd = {"cc", "-o", (dir / "prog").string(), (dir / "main.c").string()};
  std::ofstream(dir / "main.c") << "#include <stdio.h>\nint entry(int);\n"
                                   "int main(void) {\n  for (int i = 0; i < 4; ++i) printf(\"%d\\n\", entry(i * 1234567));\n"
                                   "  return 0;\n}\n";
  for (size_t k = 0; k < objects.size(); ++k) {
    const fs::path o = dir / ("part" + std::to_string(k) + ".o");
    std::ofstream(o, std::ios::binary) << objects[k];
    cmd.push_back(o.string());
  }
  if (sim::run_process(cmd, dir / "cc.log") != 0) return "link failed: " + sim::read_text(dir / "cc.log");
  if (sim::run_process({(dir / "prog").string()}, dir / "out.txt") != 0) return "run failed";
  return sim::read_text(dir / "out.txt");
}

TEST(LlvmModuleParts, PartsCompiledOnThreadsLinkAndPrintWhatTheWholeModulePrints) {
  const std::string ir = module_text();
  const fs::path dir = fs::temp_directory_path() / ("microtir-parts-" + std::to_string(getpid()));
  llvm_native::Options options;
  const std::string whole = run_linked({llvm_native::compile_to_object(ir, "parts.ll", options)}, dir / "whole");
  EXPECT_EQ(std::count(whole.begin(), whole.end(), '\n'), 4) << whole;
  options.parts = 3;
  options.threads = 2;
  std::vector<std::string> objects = llvm_native::compile_to_objects(ir, "parts.ll", options);
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(run_linked(objects, dir / "split"), whole);
  options.threads = 1;  // the same bytes whatever the thread count
  EXPECT_EQ(llvm_native::compile_to_objects(ir, "parts.ll", options), objects);
  options.parts = 0;  // small: one object, the whole module's
  EXPECT_EQ(llvm_native::compile_to_objects(ir, "parts.ll", options).size(), 1u);
  fs::remove_all(dir);
}

// The instructions of `function` in a Thumb object, without addresses or encodings.
std::string thumb_disassembly(const std::string& object, const std::string& function, const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "f.o", std::ios::binary) << object;
  if (sim::run_process({"llvm-objdump-14", "-d", "--no-show-raw-insn", "--no-leading-addr",
                        "--disassemble-symbols=" + function, (dir / "f.o").string()},
                       dir / "dis.txt") != 0)
    return "llvm-objdump-14 failed: " + sim::read_text(dir / "dis.txt");
  const std::string text = sim::read_text(dir / "dis.txt");
  // Branch targets as offsets in the function (<sum+0x18>), not as addresses in the object.
  return std::regex_replace(text.substr(std::min(text.size(), text.find("<" + function + ">:"))),
                            std::regex("0x[0-9a-f]+ <"), "<");
}

// A loop head is not padded with NOPs on Thumb: its function's code is the same after a
// 2-byte and after a 4-byte predecessor (as in a part of a split module or the whole).
TEST(LlvmModuleParts, ThumbFunctionsAreTheSameWhereverTheyLand) {
  if (std::system("llvm-objdump-14 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "llvm-objdump-14 is not installed";
  const std::string sum =
      "define i32 @sum(i32* %p, i32 %n) #0 {\nentry:\n  br label %loop\n"
      "loop:\n  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]\n  %acc = phi i32 [ 0, %entry ], [ %acc.next, %loop ]\n"
      "  %q = getelementptr inbounds i32, i32* %p, i32 %i\n  %v = load i32, i32* %q, align 4\n"
      "  %m = mul i32 %v, %acc\n  %acc.next = add i32 %m, %v\n  %i.next = add nsw i32 %i, 1\n"
      "  %c = icmp slt i32 %i.next, %n\n  br i1 %c, label %loop, label %exit\n"
      "exit:\n  ret i32 %acc.next\n}\n";
  llvm_native::Options m4;
  m4.triple = "thumbv7em-none-eabihf";
  m4.cpu = "cortex-m4";
  const std::string header = llvm_module_header(llvm_target(m4.triple));
  const std::string attributes = "attributes #0 = { nounwind \"target-cpu\"=\"cortex-m4\" }\n";
  const std::string after2 = header + "define i32 @pad(i32 %x) #0 {\nentry:\n  ret i32 %x\n}\n" + sum + attributes;
  const std::string after4 =
      header + "define i32 @pad(i32 %x) #0 {\nentry:\n  %y = add i32 %x, 1\n  ret i32 %y\n}\n" + sum + attributes;
  const fs::path dir = fs::temp_directory_path() / ("microtir-thumb-" + std::to_string(getpid()));
  const std::string a = thumb_disassembly(llvm_native::compile_to_object(after2, "after2.ll", m4), "sum", dir);
  const std::string b = thumb_disassembly(llvm_native::compile_to_object(after4, "after4.ll", m4), "sum", dir);
  fs::remove_all(dir);
  EXPECT_TRUE(has(a, "ldr")) << a;  // the loop is there
  EXPECT_EQ(a, b);
  EXPECT_FALSE(has(a, "nop")) << a;
}

// Loop strength reduction prefers post-indexed addresses on Cortex-M (the native helper
// sets it; LLVM 14 does so itself only with Helium): the loop of an SMLAD tile that reads
// 16 words of each of two buffers per step steps both pointers and reads every word pair
// at an immediate offset of one of them, as GCC does. Pre-indexed, it stepped one counter,
// added it to each base (register-register ADDs) and reloaded bases from the stack.
TEST(LlvmModuleParts, ThumbTileLoopsStepOnePointerPerBuffer) {
  if (std::system("llvm-objdump-14 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "llvm-objdump-14 is not installed";
  std::string tir =
      "@T.prim_func\n"
      "def tile(W: T.Buffer((64,), \"int32\"), C: T.Buffer((64,), \"int32\"), Out: T.Buffer((2,), \"int32\")):\n"
      "    T.func_attr({\"tir.noalias\": True})\n"
      "    acc = T.alloc_buffer((2,), \"int32\", scope=\"local\")\n"
      "    acc[0] = 0\n"
      "    acc[1] = 0\n"
      "    for k in range(4):\n";
  for (int j = 0; j < 8; ++j) {
    const std::string at = "k * 16 + " + std::to_string(2 * j), next = "k * 16 + " + std::to_string(2 * j + 1);
    const std::string n = std::to_string(j);
    tir += "        w" + n + ": T.int32 = W[" + at + "]\n        v" + n + ": T.int32 = W[" + next + "]\n" +
           "        x" + n + ": T.int32 = C[" + at + "]\n        y" + n + ": T.int32 = C[" + next + "]\n" +
           "        acc[0] = T.smlad(y" + n + ", T.sxtb16_ror8(w" + n + "), T.smlad(x" + n + ", T.sxtb16(w" + n + "), acc[0]))\n" +
           "        acc[1] = T.smlad(y" + n + ", T.sxtb16_ror8(v" + n + "), T.smlad(x" + n + ", T.sxtb16(v" + n + "), acc[1]))\n";
  }
  tir += "    Out[0] = acc[0]\n    Out[1] = acc[1]\n";
  const std::string ir = build_llvm(parse_module_or_throw(tir, "tile.tir"),
                                    parse_target("llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4 -unpacked-api=1"))
                             .sources.at(0)
                             .text;
  llvm_native::Options m4;
  m4.triple = "thumbv7em-none-eabihf";
  m4.cpu = "cortex-m4";
  const fs::path dir = fs::temp_directory_path() / ("microtir-tile-" + std::to_string(getpid()));
  const std::string code = thumb_disassembly(llvm_native::compile_to_object(ir, "tile.ll", m4), "tile", dir);
  fs::remove_all(dir);
  size_t ldrd = 0;
  std::istringstream lines(code);
  for (std::string line; std::getline(lines, line);) {
    if (has(line, "ldrd")) ++ldrd;
    EXPECT_FALSE(has(line, "ldr") && has(line, "[sp")) << line << "\n" << code;  // no base reloaded
    const bool adds_registers = std::regex_search(line, std::regex("\\badds?(\\.w)?\\s+r\\d+, r\\d+(, r\\d+)?\\s*$"));
    EXPECT_FALSE(adds_registers) << line << "\n" << code;  // no address as base + counter
  }
  EXPECT_EQ(ldrd, 32u) << code;  // two steps an iteration: the tile is unrolled twice (codegen_llvm.cc)
}
// A 3x2 SMLAD tile of eight reduction steps a loop iteration (VWW's 128-channel pointwise
// layers): six accumulators, two pointers, four widened weights and two columns fill the
// 14 registers, and the loop's end is a fifteenth. Greedy kept an accumulator in a stack
// slot it loaded and stored every two SMLADs (17 stack accesses an iteration); the function
// is marked for PBQP (register_allocator.h), which spills one value once an iteration.
// A 2x2 tile (four accumulators) keeps greedy.
std::string tile_tir(int pixels) {
  std::string tir =
      "@T.prim_func\n"
      "def tile(W: T.Buffer((64,), \"int32\"), C: T.Buffer((192,), \"int32\"), Out: T.Buffer((6,), \"int32\")):\n"
      "    T.func_attr({\"tir.noalias\": True})\n"
      "    acc = T.alloc_buffer((6,), \"int32\", scope=\"local\")\n"
      "    for i in range(6):\n        acc[i] = 0\n"
      "    for k in range(4):\n";
  for (int s = 0; s < 8; ++s) {
    const std::string n = std::to_string(s);
    tir += "        w" + n + ": T.int32 = W[k * 16 + " + std::to_string(2 * s) + "]\n";
    tir += "        v" + n + ": T.int32 = W[k * 16 + " + std::to_string(2 * s + 1) + "]\n";
    for (int p = 0; p < pixels; ++p) {
      const std::string x = "x" + n + "_" + std::to_string(p), y = "y" + n + "_" + std::to_string(p);
      tir += "        " + x + ": T.int32 = C[k * 16 + " + std::to_string(p * 64 + 2 * s) + "]\n";
      tir += "        " + y + ": T.int32 = C[k * 16 + " + std::to_string(p * 64 + 2 * s + 1) + "]\n";
      for (int ch = 0; ch < 2; ++ch) {
        const std::string a = "acc[" + std::to_string(2 * p + ch) + "]", w = (ch ? "v" : "w") + n;
        tir += "        " + a + " = T.smlad(" + y + ", T.sxtb16_ror8(" + w + "), T.smlad(" + x + ", T.sxtb16(" + w + "), " + a +
               "))\n";
      }
    }
  }
  return tir + "    for i in range(6):\n        Out[i] = acc[i]\n";
}

// Each loop of the function's object: its instructions from a backward branch's target
// to the branch, in address order (llvm-objdump-14's disassembly, kept in dir/dis.txt).
std::vector<std::vector<std::string>> loop_bodies(const std::string& object, const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "f.o", std::ios::binary) << object;
  if (sim::run_process({"llvm-objdump-14", "-d", "--no-show-raw-insn", (dir / "f.o").string()}, dir / "dis.txt") != 0)
    ADD_FAILURE() << sim::read_text(dir / "dis.txt");
  std::vector<std::pair<unsigned long, std::string>> code;
  std::istringstream lines(sim::read_text(dir / "dis.txt"));
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, m, std::regex("^\\s*([0-9a-f]+):\\s+(.*)$"))) code.emplace_back(std::stoul(m[1], nullptr, 16), m[2]);
  std::vector<std::vector<std::string>> loops;
  for (const auto& [at, text] : code) {
    if (!std::regex_search(text, m, std::regex("^b\\S*\\s+0x([0-9a-f]+)")) || std::stoul(m[1], nullptr, 16) >= at) continue;
    const unsigned long head = std::stoul(m[1], nullptr, 16);
    std::vector<std::string> body;
    for (const auto& c : code)
      if (c.first >= head && c.first <= at) body.push_back(c.second);
    loops.push_back(std::move(body));
  }
  return loops;
}

// The stack accesses of the function's first loop.
size_t stack_accesses_in_loop(const std::string& object, const fs::path& dir) {
  const std::vector<std::vector<std::string>> loops = loop_bodies(object, dir);
  if (loops.empty()) {
    ADD_FAILURE() << "no loop in\n" << sim::read_text(dir / "dis.txt");
    return 0;
  }
  return static_cast<size_t>(std::count_if(loops[0].begin(), loops[0].end(), [](const std::string& t) { return has(t, "[sp"); }));
}

TEST(LlvmModuleParts, ThreeByTwoTileLoopsKeepTheirAccumulatorsInRegisters) {
  const std::string target = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4 -unpacked-api=1";
  auto ir_of = [&](int pixels) {
    return build_llvm(parse_module_or_throw(tile_tir(pixels), "tile.tir"), parse_target(target)).sources.at(0).text;
  };
  llvm_native::Options m4;
  m4.triple = "thumbv7em-none-eabihf";
  m4.cpu = "cortex-m4";
  m4.machine_scheduler = false;  // as schedule dsp_no_early_scheduling compiles for the Cortex-M4
  const std::string ir = ir_of(3);
  EXPECT_TRUE(has(llvm_native::lower_loops(ir, "tile.ll", m4), "\"mtir-regalloc\"=\"pbqp\""));
  EXPECT_FALSE(has(llvm_native::lower_loops(ir_of(2), "tile.ll", m4), "mtir-regalloc"));
  llvm_native::Options m55 = m4;  // low-overhead loops: the counter is free there
  m55.triple = "thumbv8.1m.main-none-eabihf";
  m55.cpu = "cortex-m55";
  EXPECT_FALSE(has(llvm_native::lower_loops(ir, "tile.ll", m55), "mtir-regalloc"));
  if (std::system("llvm-objdump-14 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "llvm-objdump-14 is not installed";
  const fs::path dir = fs::temp_directory_path() / ("microtir-tile32-" + std::to_string(getpid()));
  EXPECT_LE(stack_accesses_in_loop(llvm_native::compile_to_object(ir, "tile.ll", m4), dir), 3u);
  fs::remove_all(dir);
}

// A short tile (VWW's pair_records): three pixels' columns unpacked once into a local
// buffer, then a channel loop that reads them with word_pair, two reduction steps, a
// channel pair's six accumulators.
std::string short_tile_tir() {
  std::string tir =
      "@T.prim_func\n"
      "def short(D: T.Buffer((96,), \"int32\"), W: T.Buffer((128,), \"int32\"), Out: T.Buffer((192,), \"int32\")):\n"
      "    T.func_attr({\"tir.noalias\": True})\n"
      "    col = T.alloc_buffer((12,), \"int32\", scope=\"local\")\n"
      "    acc = T.alloc_buffer((6,), \"int32\", scope=\"local\")\n"
      "    for pp in range(4):\n"
      "        for pg in range(3):\n";
  for (int w = 0; w < 2; ++w) {
    const std::string word = "D[pp * 24 + pg * 8 + " + std::to_string(4 * w) + "]";
    tir += "            col[pg * 4 + " + std::to_string(2 * w) + "] = T.sxtb16(" + word + ")\n";
    tir += "            col[pg * 4 + " + std::to_string(2 * w + 1) + "] = T.sxtb16_ror8(" + word + ")\n";
  }
  tir += "        for ob in range(8):\n";
  for (int i = 0; i < 6; ++i) tir += "            acc[" + std::to_string(i) + "] = W[ob * 16 + " + std::to_string(8 + i % 2) + "]\n";
  auto lo = [](const std::string& v) { return "T.Cast(\"int32\", " + v + ")"; };
  auto hi = [](const std::string& v) { return "T.Cast(\"int32\", T.shift_right(" + v + ", T.int64(32)))"; };
  for (int h = 0; h < 2; ++h) {
    const std::string a = "wa" + std::to_string(h), b = "wb" + std::to_string(h);
    tir += "            " + a + ": T.int64 = T.word_pair(W[ob * 16 + " + std::to_string(4 * h) + "], W[ob * 16 + " +
           std::to_string(4 * h + 1) + "])\n";
    tir += "            " + b + ": T.int64 = T.word_pair(W[ob * 16 + " + std::to_string(4 * h + 2) + "], W[ob * 16 + " +
           std::to_string(4 * h + 3) + "])\n";
    for (int p = 0; p < 3; ++p) {
      const std::string c = "c" + std::to_string(h) + std::to_string(p), at = std::to_string(4 * p + 2 * h);
      tir += "            " + c + ": T.int64 = T.word_pair(col[" + at + "], col[" + at + " + 1])\n";
      for (int ch = 0; ch < 2; ++ch) {
        const std::string acc = "acc[" + std::to_string(2 * p + ch) + "]";
        const std::string wa = ch ? hi(a) : lo(a), wb = ch ? hi(b) : lo(b);
        tir += "            " + acc + " = T.smlad(" + hi(c) + ", " + wb + ", T.smlad(" + lo(c) + ", " + wa + ", " + acc + "))\n";
      }
    }
  }
  for (int i = 0; i < 6; ++i)
    tir += "            Out[pp * 48 + ob * 6 + " + std::to_string(i) + "] = acc[" + std::to_string(i) + "]\n";
  return tir;
}

// The instructions of the innermost loop (between a backward branch and its target) that
// has an SMLAD, in the function's object.
std::vector<std::string> smlad_loop(const std::string& object, const fs::path& dir) {
  std::vector<std::string> best;
  for (const std::vector<std::string>& body : loop_bodies(object, dir)) {
    const bool smlad = std::any_of(body.begin(), body.end(), [](const std::string& t) { return has(t, "smlad"); });
    if (smlad && (best.empty() || body.size() < best.size())) best = body;
  }
  return best;
}

// The short tile's channel loop reads each column pair with one LDRD at an offset from
// sp, as GCC does. With the fill loop unrolled, SROA split the column into 8-byte frame
// objects whose addresses LLVM 14 put in registers (ADDs from sp in the loop, and spills);
// the column's first pair, at its frame object's offset 0, did too.
TEST(LlvmModuleParts, ShortTileColumnsAreReadFromTheStackPointer) {
  if (std::system("llvm-objdump-14 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "llvm-objdump-14 is not installed";
  const std::string target = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4 -unpacked-api=1";
  const std::string ir = build_llvm(parse_module_or_throw(short_tile_tir(), "short.tir"), parse_target(target)).sources.at(0).text;
  EXPECT_TRUE(has(ir, "!{!\"llvm.loop.unroll.disable\"}")) << ir;  // the fill loop
  llvm_native::Options m4;
  m4.triple = "thumbv7em-none-eabihf";
  m4.cpu = "cortex-m4";
  m4.machine_scheduler = false;  // as schedule dsp_no_early_scheduling compiles for the Cortex-M4
  const fs::path dir = fs::temp_directory_path() / ("microtir-short-" + std::to_string(getpid()));
  const std::vector<std::string> loop = smlad_loop(llvm_native::compile_to_object(ir, "short.ll", m4), dir);
  fs::remove_all(dir);
  std::string text;
  size_t sp_pairs = 0, sp_adds = 0;
  for (const std::string& line : loop) {
    text += line + "\n";
    sp_pairs += std::regex_search(line, std::regex("^ldrd\\s+\\w+, \\w+, \\[sp, #\\d+\\]"));
    sp_adds += std::regex_search(line, std::regex("^add(\\.w)?\\s+\\w+, sp, #"));
  }
  EXPECT_EQ(sp_pairs, 6u) << text;  // three pixels, two steps
  EXPECT_EQ(sp_adds, 0u) << text;
}
#endif

}  // namespace
}  // namespace mtir
