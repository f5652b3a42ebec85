// The static stack bound (sim/stack_bound.h) on small call graphs in GCC's
// -fcallgraph-info=su format (VCG, as arm-none-eabi-gcc 12 writes it): frames summed along
// the deepest path, library calls listed and not counted, and no bound claimed through
// recursion, a function pointer, a dynamic frame or a function without frame data.
#include <gtest/gtest.h>

#include "sim/library_frames.h"
#include "sim/stack_bound.h"
#include "support/diagnostic.h"

namespace mtir::sim {
namespace {

// One unit: main.c defines run -> {kernel_a, kernel_b}, kernel_b -> expf (newlib's).
const char* kUnitMain = R"ci(graph: { title: "/a/codegen/host/src/lib0.c"
node: { title: "run" label: "run\n/a/codegen/host/src/lib0.c:10:9\n48 bytes (static)" }
node: { title: "kernel_a" label: "kernel_a\n/a/codegen/host/src/lib0.c:20:9\n120 bytes (static)" }
edge: { sourcename: "run" targetname: "kernel_a" label: "/a/codegen/host/src/lib0.c:12:3" }
node: { title: "kernel_b" label: "kernel_b\n/a/codegen/host/src/lib0.c:30:9\n16 bytes (static)" }
edge: { sourcename: "run" targetname: "kernel_b" label: "/a/codegen/host/src/lib0.c:13:3" }
node: { title: "expf" label: "expf\n/usr/include/newlib/math.h:361:14" shape : ellipse }
edge: { sourcename: "kernel_b" targetname: "expf" label: "/a/codegen/host/src/lib0.c:31:15" }
node: { title: "TVMBackendAllocWorkspace" label: "TVMBackendAllocWorkspace\n/a/runtime/include/tvm/runtime/c_backend_api.h:19:15" shape : ellipse }
edge: { sourcename: "kernel_b" targetname: "TVMBackendAllocWorkspace" label: "/a/codegen/host/src/lib0.c:32:15" }
node: { title: "memcpy" label: "__builtin_memcpy\n<built-in>" shape : ellipse }
edge: { sourcename: "kernel_a" targetname: "memcpy" }
}
)ci";

// The runtime's unit, defining the function lib0.c only declared.
const char* kUnitRuntime = R"ci(graph: { title: "/a/runtime/src/stack_allocator.c"
node: { title: "TVMBackendAllocWorkspace" label: "TVMBackendAllocWorkspace\n/a/runtime/src/stack_allocator.c:151:7\n144 bytes (static)" }
}
)ci";

CallGraph graph_of(std::initializer_list<const char*> units) {
  CallGraph g;
  for (const char* u : units) add_callgraph_info(g, u, "fixture.ci");
  return g;
}

TEST(StackBound, SumsTheDeepestPathAcrossUnitsAndListsLibraryCalls) {
  CallGraph g = graph_of({kUnitMain, kUnitRuntime});
  StackBound b = stack_bound(g, "run");
  ASSERT_TRUE(b.bounded) << b.reason;
  // run 48 + kernel_b 16 + TVMBackendAllocWorkspace 144 beats run 48 + kernel_a 120.
  EXPECT_EQ(b.bytes, 48 + 16 + 144);
  EXPECT_EQ(b.path, (std::vector<std::string>{"run", "kernel_b", "TVMBackendAllocWorkspace"}));
  EXPECT_EQ(b.library_calls, (std::vector<std::string>{"expf", "memcpy"}));
  EXPECT_TRUE(b.dynamic_bounded.empty());
  EXPECT_EQ(describe(b), "208 bytes (library calls not counted: expf, memcpy)");
  EXPECT_EQ(g.functions.at("TVMBackendAllocWorkspace").file, "/a/runtime/src/stack_allocator.c");
  StackBound a = stack_bound(g, "kernel_a");
  EXPECT_EQ(a.bytes, 120);
}

TEST(StackBound, AFunctionOfOursWithoutFrameDataIsNotBounded) {
  // Without the runtime's unit the allocator is declared in an artifact header only.
  StackBound b = stack_bound(graph_of({kUnitMain}), "run");
  EXPECT_FALSE(b.bounded);
  EXPECT_EQ(describe(b), "unbounded: TVMBackendAllocWorkspace has no stack data (it was not compiled here with -fcallgraph-info)");
}

TEST(StackBound, RecursionIsUnbounded) {
  CallGraph g = graph_of({R"ci(graph: { title: "r.c"
node: { title: "top" label: "top\nr.c:1:5\n8 bytes (static)" }
node: { title: "even" label: "even\nr.c:2:5\n16 bytes (static)" }
node: { title: "r.c:odd" label: "odd\nr.c:3:12\n16 bytes (static)" }
edge: { sourcename: "top" targetname: "even" }
edge: { sourcename: "even" targetname: "r.c:odd" }
edge: { sourcename: "r.c:odd" targetname: "even" }
}
)ci"});
  StackBound b = stack_bound(g, "top");
  EXPECT_FALSE(b.bounded);
  EXPECT_EQ(b.reason, "recursion: even -> r.c:odd -> even");
}

TEST(StackBound, DynamicFramesAndFunctionPointers) {
  CallGraph g = graph_of({R"ci(graph: { title: "d.c"
node: { title: "vla" label: "vla\nd.c:1:5\n32 bytes (dynamic)" }
node: { title: "capped" label: "capped\nd.c:2:5\n64 bytes (dynamic,bounded)" }
node: { title: "via_pointer" label: "via_pointer\nd.c:3:5\n8 bytes (static)" }
node: { title: "__indirect_call" label: "Indirect Call Placeholder" shape : ellipse }
edge: { sourcename: "via_pointer" targetname: "__indirect_call" }
node: { title: "entry" label: "entry\nd.c:4:5\n24 bytes (static)" }
edge: { sourcename: "entry" targetname: "capped" }
}
)ci"});
  EXPECT_EQ(describe(stack_bound(g, "vla")), "unbounded: vla's frame is dynamic (alloca or a variable-length array)");
  EXPECT_EQ(describe(stack_bound(g, "via_pointer")), "unbounded: via_pointer calls through a function pointer");
  StackBound capped = stack_bound(g, "entry");
  ASSERT_TRUE(capped.bounded);
  EXPECT_EQ(capped.bytes, 24 + 64);  // GCC's bound of the dynamic frame counts
  EXPECT_EQ(capped.dynamic_bounded, std::vector<std::string>{"capped"});
  EXPECT_EQ(describe(stack_bound(g, "missing")), "unbounded: missing is not among the compiled functions");
}

// The check every run on a measuring target makes (sim/artifact_runner.cc): the bound
// plus main's frame must reach the painted high-water; an incomplete bound claims nothing.
TEST(StackBound, ViolationOnlyWhenACompleteBoundIsBelowTheMeasurement) {
  ArtifactStackBounds s = artifact_stack_bounds(graph_of({kUnitMain, kUnitRuntime}), "run", "/a/codegen");
  s.main_frame_bytes = 40;
  ASSERT_TRUE(s.run.bounded);
  s.run.library_calls.clear();  // as on the cross targets, whose library frames are counted
  EXPECT_EQ(stack_bound_violation(s, 208 + 40), "");
  EXPECT_EQ(stack_bound_violation(s, -1), "");  // not measured (the host)
  EXPECT_EQ(stack_bound_violation(s, 208 + 41),
            "the static stack bound of run (208 bytes, with main's frame 248) is below the measured high-water (249 bytes)");
  StackBound partial = s.run;
  s.run.library_calls = {"expf"};  // the bound leaves expf's frame out: nothing to claim
  EXPECT_EQ(stack_bound_violation(s, 100000), "");
  s.run = partial;
  s.run.bounded = false;
  EXPECT_EQ(stack_bound_violation(s, 100000), "");
}

TEST(StackBound, TextThatIsNotACallGraphIsADiagnosticError) {
  CallGraph g;
  EXPECT_THROW(add_callgraph_info(g, "int main(void) { return 0; }", "x.ci"), DiagnosticError);
  EXPECT_THROW(add_callgraph_info(g, "graph: { node: { title: \"f\" label: \"f\\nf.c:1:1\\nlots\" } }", "x.ci"),
               DiagnosticError);
}

// The library's frames from `objdump -d -t` of the firmware (arm-none-eabi-objdump's
// layout): pushes, vpush and sub sp summed, a tail branch followed, alias symbols found,
// a return through `ldr pc, [sp]` accepted and a call through a register refused.
const char* kThumbListing = R"dis(
SYMBOL TABLE:
00000af4 g     F .text	0000007c expf
00000b70 g     F .text	000001dc __ieee754_expf
00000b70 g     F .text	000001dc __expf_alias
00001330 g     F .text	00000014 __aeabi_fcmpgt
00001400 g     F .text	00000010 qsort_like

Disassembly of section .text:

00000af4 <expf>:
     af4:	push	{r3, lr}
     af6:	vpush	{d8}
     afe:	bl	b70 <__ieee754_expf>
     b0e:	beq.n	b36 <expf+0x42>
     b3e:	pop	{r3, pc}

00000b70 <__ieee754_expf>:
     b70:	stmdb	sp!, {r4, r5, r6, lr}
     b74:	sub	sp, #16	@ 0x10
     b76:	str.w	r7, [sp, #-8]!
     b7a:	b.w	1330 <__aeabi_fcmpgt>

00001330 <__aeabi_fcmpgt>:
    1330:	str.w	lr, [sp, #-8]!
    133e:	ldr.w	pc, [sp], #8

00001400 <qsort_like>:
    1400:	push	{r4, lr}
    1402:	blx	r3
    1404:	pop	{r4, pc}
)dis";

TEST(LibraryFrames, ThumbFramesFromTheDisassembly) {
  CallGraph g = graph_of({R"ci(graph: { title: "k.c"
node: { title: "kernel" label: "kernel\nk.c:1:5\n40 bytes (static)" }
node: { title: "expf" label: "expf\n/usr/include/newlib/math.h:361:14" shape : ellipse }
node: { title: "__expf_alias" label: "__expf_alias\n<built-in>" shape : ellipse }
node: { title: "qsort_like" label: "qsort_like\n/usr/include/stdlib.h:1:1" shape : ellipse }
node: { title: "sorter" label: "sorter\nk.c:9:5\n8 bytes (static)" }
edge: { sourcename: "kernel" targetname: "expf" }
edge: { sourcename: "kernel" targetname: "__expf_alias" }
edge: { sourcename: "sorter" targetname: "qsort_like" }
}
)ci"});
  add_library_frames(g, kThumbListing, DisassemblyArch::kThumb);
  EXPECT_EQ(g.functions.at("expf").frame_bytes, 8 + 8);
  EXPECT_EQ(g.functions.at("__ieee754_expf").frame_bytes, 16 + 16 + 8);
  EXPECT_EQ(g.functions.at("__expf_alias").frame_bytes, 40);  // the same address
  StackBound b = stack_bound(g, "kernel");
  ASSERT_TRUE(b.bounded) << b.reason;
  EXPECT_EQ(b.bytes, 40 + 16 + 40 + 8);  // kernel, expf, __ieee754_expf, its tail branch
  EXPECT_TRUE(b.library_calls.empty());
  EXPECT_EQ(describe(stack_bound(g, "sorter")), "unbounded: qsort_like calls through a function pointer");
}

// RISC-V: -msave-restore's millicode (jal t0) moves its decrement into the caller; a
// switch's table jump is not a call; a jump through a loaded pointer is.
TEST(LibraryFrames, RiscvMillicodeAndJumpTables) {
  const char* listing = R"dis(
8000338a g     F .text	00000244 expf
80001a10 g     F .text	00000010 __riscv_save_4
80001100 g     F .text	00000100 __divsf3
80001200 g     F .text	00000010 call_hook

8000338a <expf>:
8000338a:	jal	t0,80001a10 <__riscv_save_4>
800033c0:	jal	80001100 <__divsf3>
800033ae:	j	80001a44 <__riscv_restore_4>

80001a10 <__riscv_save_4>:
80001a10:	add	sp,sp,-32
80001a12:	sw	s0,24(sp)
80001a14:	jr	t0

80001100 <__divsf3>:
80001100:	add	sp,sp,-16
8000114c:	auipc	a4,0x5
80001156:	add	a5,a5,a4
80001158:	lw	a5,0(a5)
8000115a:	add	a5,a5,a4
8000115c:	jr	a5
80001160:	ret

80001200 <call_hook>:
80001200:	lw	a5,8(a0)
80001204:	jr	a5
)dis";
  CallGraph g = graph_of({R"ci(graph: { title: "k.c"
node: { title: "kernel" label: "kernel\nk.c:1:5\n32 bytes (static)" }
node: { title: "expf" label: "expf\n/usr/lib/picolibc/riscv64-unknown-elf/include/math.h:1:1" shape : ellipse }
node: { title: "call_hook" label: "call_hook\n<built-in>" shape : ellipse }
edge: { sourcename: "kernel" targetname: "expf" }
}
)ci"});
  add_library_frames(g, listing, DisassemblyArch::kRiscv);
  EXPECT_EQ(g.functions.at("expf").frame_bytes, 32);
  StackBound b = stack_bound(g, "kernel");
  ASSERT_TRUE(b.bounded) << b.reason;
  // kernel, expf with its millicode's 32, __divsf3; __riscv_restore_4 is not in the
  // listing, so it stays a library call without data.
  EXPECT_EQ(b.bytes, 32 + 32 + 16);
  EXPECT_EQ(b.library_calls, std::vector<std::string>{"__riscv_restore_4"});
  EXPECT_EQ(describe(stack_bound(g, "call_hook")), "unbounded: call_hook calls through a function pointer");
}

}  // namespace
}  // namespace mtir::sim
