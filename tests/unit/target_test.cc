// The target string parser: TVM spellings accepted, impossible combinations refused
// with the rule named.
#include <gtest/gtest.h>

#include "artifact/mlf.h"
#include "driver/target.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_target(text);
  } catch (const DiagnosticError& e) {
    return e.diagnostics().at(0).message;
  }
  return "";
}

TEST(Target, Defaults) {
  Target t = parse_target("c");
  EXPECT_EQ(t.kind, "c");
  EXPECT_TRUE(t.unpacked_api);
  EXPECT_EQ(t.interface_api, "c");
  EXPECT_EQ(t.str(),
            "c -runtime=c -executor=aot -interface-api=c -unpacked-api=1 -link-params=0 "
            "-workspace-byte-alignment=16");
}

std::string defaulted_text(const Target& t) {
  std::string s;
  for (const auto& [key, value] : t.defaulted) s += (s.empty() ? "" : " ") + key + "=" + value;
  return s;
}

// TVM's habit, naming only the CPU, gets the lean pair (C interface, plain-pointer
// kernels); each key written is honoured, and the one written decides the other.
TEST(Target, NamingOnlyTheCpuGivesTheLeanInterface) {
  Target m4 = parse_target("c -mcpu=cortex-m4");
  EXPECT_EQ(m4.interface_api, "c");
  EXPECT_TRUE(m4.unpacked_api);
  EXPECT_TRUE(m4.schedules.smlad);
  EXPECT_EQ(defaulted_text(m4),
            "runtime=c executor=aot interface-api=c unpacked-api=1 link-params=0 workspace-byte-alignment=16");
  Target packed = parse_target("c -mcpu=cortex-m4 -interface-api=packed");
  EXPECT_EQ(packed.interface_api, "packed");
  EXPECT_FALSE(packed.unpacked_api);
  Target packed_kernels = parse_target("c -unpacked-api=0");
  EXPECT_EQ(packed_kernels.interface_api, "packed");
  EXPECT_EQ(defaulted_text(packed_kernels),
            "mcpu= runtime=c executor=aot interface-api=packed link-params=0 workspace-byte-alignment=16");
  Target both = parse_target("c -interface-api=packed -unpacked-api=1");
  EXPECT_EQ(both.interface_api, "packed");
  EXPECT_TRUE(both.unpacked_api);
  EXPECT_NE(error_of("c -interface-api=c -unpacked-api=0").find("needs -unpacked-api=1"), std::string::npos);
  // Every key written: nothing defaulted but the CPU.
  EXPECT_EQ(defaulted_text(parse_target(parse_target("c").str())), "mcpu=");
  EXPECT_EQ(defaulted_text(parse_target("wasm")),
            "opt=O2 runtime=c executor=aot interface-api=c unpacked-api=1 link-params=1 workspace-byte-alignment=16");
}

TEST(Target, TvmSpellings) {
  Target t = parse_target("c -runtime=c -executor=aot -interface-api=c -unpacked-api=1 -workspace-byte-alignment=8");
  EXPECT_TRUE(t.unpacked_api);
  EXPECT_EQ(t.interface_api, "c");
  EXPECT_EQ(t.workspace_byte_alignment, 8);
  Target l = parse_target("  llvm   -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4 ");
  EXPECT_EQ(l.kind, "llvm");
  EXPECT_EQ(l.mtriple, "thumbv7em-none-eabihf");
  EXPECT_EQ(l.mcpu, "cortex-m4");
  // The canonical spelling parses back to the same target.
  EXPECT_EQ(parse_target(l.str()).str(), l.str());
}

TEST(Target, Schedules) {
  EXPECT_TRUE(parse_target("c").schedules.hoist);
  EXPECT_FALSE(parse_target("c").schedules.smlad);
  EXPECT_TRUE(parse_target("c -mcpu=cortex-m4").schedules.smlad);
  EXPECT_FALSE(parse_target("c -mcpu=cortex-m3").schedules.smlad);
  // Armv8-M mainline and Armv8.1-M have the DSP extension: the M4's schedules, C and LLVM.
  for (const char* t : {"c -mcpu=cortex-m33", "c -mcpu=cortex-m55", "llvm -mtriple=thumbv8m.main-none-eabihf -mcpu=cortex-m33",
                        "llvm -mtriple=thumbv8.1m.main-none-eabihf -mcpu=cortex-m55"}) {
    const ScheduleOptions s = parse_target(t).schedules;
    EXPECT_TRUE(s.smlad && s.sxtb16 && s.smmlar_requant) << t;
  }
  // smmlar_requant follows the DSP extension too.
  EXPECT_TRUE(parse_target("c -mcpu=cortex-m4").schedules.smmlar_requant);
  EXPECT_FALSE(parse_target("c").schedules.smmlar_requant);
  Target off = parse_target("wasm -disabled-schedules=unroll,hoist");
  EXPECT_FALSE(off.schedules.hoist);
  EXPECT_FALSE(off.schedules.unroll);
  EXPECT_TRUE(off.schedules.block);
  // Spelled only when set, in the fixed order, and the spelling parses back.
  EXPECT_EQ(parse_target("c").str().find("schedules"), std::string::npos);
  EXPECT_NE(off.str().find(" -disabled-schedules=unroll,hoist"), std::string::npos) << off.str();
  EXPECT_EQ(parse_target("c -disabled-schedules=hoist,block").disabled_schedules, "block,hoist");
  EXPECT_FALSE(parse_target(off.str()).schedules.hoist);
  EXPECT_FALSE(parse_target("c -mcpu=cortex-m7 -disabled-schedules=smlad").schedules.smlad);
  // Helium only on the Cortex-M55, and switchable there.
  EXPECT_TRUE(parse_target("c -mcpu=cortex-m55").schedules.mve);
  EXPECT_TRUE(parse_target("llvm -mcpu=cortex-m55").schedules.mve);
  for (const char* other : {"c", "c -mcpu=cortex-m4", "c -mcpu=cortex-m7", "c -mcpu=cortex-m33", "llvm", "wasm"})
    EXPECT_FALSE(parse_target(other).schedules.mve) << other;
  Target no_mve = parse_target("c -mcpu=cortex-m55 -disabled-schedules=mve");
  EXPECT_FALSE(no_mve.schedules.mve);
  EXPECT_TRUE(no_mve.schedules.smlad);
  EXPECT_EQ(no_mve.disabled_schedules, "mve");
  // The Helium depthwise kernel for both backends; mve_pair_requant in C only.
  EXPECT_TRUE(parse_target("c -mcpu=cortex-m55").schedules.mve_depthwise);
  EXPECT_TRUE(parse_target("llvm -mcpu=cortex-m55").schedules.mve_depthwise);
  EXPECT_TRUE(parse_target("c -mcpu=cortex-m55").schedules.mve_pair_requant);
  EXPECT_FALSE(parse_target("llvm -mcpu=cortex-m55").schedules.mve_pair_requant);
  EXPECT_EQ(parse_target("llvm -mcpu=cortex-m55").disabled_schedules, "");
}

// Switching one schedule off leaves the others as the CPU chose them (smlad on Cortex-M4).
TEST(Target, DisabledSchedulesKeepTheRest) {
  Target t = parse_target("c -mcpu=cortex-m4 -disabled-schedules=hoist");
  EXPECT_EQ(t.disabled_schedules, "hoist");
  ScheduleOptions s = t.schedules;
  EXPECT_FALSE(s.hoist);
  EXPECT_TRUE(s.smlad && s.sxtb16 && s.block && s.unroll && s.fold_zero_point && s.interleave);
  EXPECT_FALSE(parse_target("c -mcpu=cortex-m4 -disabled-schedules=smlad").schedules.smlad);
  // Weights as int16 pairs: smlad stays on, only the int8 storage goes.
  ScheduleOptions pairs = parse_target("c -mcpu=cortex-m4 -disabled-schedules=sxtb16").schedules;
  EXPECT_TRUE(pairs.smlad);
  EXPECT_FALSE(pairs.sxtb16);
  EXPECT_FALSE(parse_target("c -mcpu=cortex-m3").schedules.sxtb16);
  // The first layers' unchecked gather: on by default, its own switch.
  EXPECT_TRUE(s.few_channels);
  ScheduleOptions few_off = parse_target("c -mcpu=cortex-m4 -disabled-schedules=few_channels").schedules;
  EXPECT_FALSE(few_off.few_channels);
  EXPECT_TRUE(few_off.smlad && few_off.sxtb16);
  // The channel pairs' weights in their own rows again: the packing, not the CPU, changes.
  Target plain = parse_target("c -mcpu=cortex-m4 -disabled-schedules=interleave,sxtb16");
  EXPECT_EQ(plain.disabled_schedules, "sxtb16,interleave");
  EXPECT_FALSE(plain.schedules.interleave);
  EXPECT_TRUE(plain.schedules.smlad);
}

TEST(Target, Refusals) {
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("cuda").find("unknown target kind 'cuda'"), std::string::npos);
  EXPECT_NE(error_of("c -runtime=cpp").find("use -runtime=c"), std::string::npos);
  EXPECT_NE(error_of("c -executor=graph").find("use -executor=aot"), std::string::npos);
  // -interface-api=c alone takes -unpacked-api=1 (the lean default); written against it, refused.
  EXPECT_NE(error_of("c -interface-api=c -unpacked-api=0").find("needs -unpacked-api=1"), std::string::npos);
  EXPECT_EQ(error_of("c -interface-api=c"), "");
  EXPECT_NE(error_of("c -interface-api=rust").find("c or packed"), std::string::npos);
  EXPECT_NE(error_of("c -unpacked-api=yes").find("0 or 1"), std::string::npos);
  EXPECT_NE(error_of("c -workspace-byte-alignment=3").find("power of two"), std::string::npos);
  EXPECT_NE(error_of("c -workspace-byte-alignment=x").find("power of two"), std::string::npos);
  EXPECT_NE(error_of("c -workspace-byte-alignment=16b").find("not '16b'"), std::string::npos);
  EXPECT_NE(error_of("c -workspace-byte-alignment=4294967312").find("power of two"), std::string::npos);
  EXPECT_NE(error_of("c -mtriple=x86_64").find("llvm target"), std::string::npos);
  EXPECT_NE(error_of("c -frobnicate=1").find("unknown option -frobnicate"), std::string::npos);
  EXPECT_NE(error_of("c -frobnicate=1").find("(known: -runtime -executor -interface-api"), std::string::npos);
  EXPECT_EQ(error_of("c -frobnicate=1").find("did you mean"), std::string::npos);
  // A near miss names the closest known key, and still lists them all.
  std::string near = error_of("c -interface_api=c");
  EXPECT_NE(near.find("unknown option -interface_api"), std::string::npos) << near;
  EXPECT_NE(near.find("did you mean -interface-api?"), std::string::npos) << near;
  EXPECT_NE(near.find("-workspace-byte-alignment -mtriple -mcpu -opt -disabled-schedules -reuse-io-buffers "
                      "-workspace-budget -profile-hooks)"),
            std::string::npos)
      << near;
  EXPECT_NE(error_of("c -reuse-io-buffers=yes").find("-reuse-io-buffers takes 0 or 1"), std::string::npos);
  // The canonical string spells -reuse-io-buffers only when it is on.
  EXPECT_TRUE(parse_target("c -reuse-io-buffers=1").reuse_io_buffers);
  EXPECT_NE(parse_target("c -reuse-io-buffers=1").str().find(" -reuse-io-buffers=1"), std::string::npos);
  EXPECT_EQ(parse_target("c -reuse-io-buffers=0").str().find("reuse-io-buffers"), std::string::npos);
  // -workspace-budget: bytes, spelled only when given, and carried to the AOT executor
  // with the schedules (prepare_model reads them).
  EXPECT_EQ(parse_target("c -workspace-budget=30000").workspace_budget, 30000);
  EXPECT_EQ(parse_target("c -workspace-budget=30000").schedules.workspace_budget, 30000);
  EXPECT_NE(parse_target("c -workspace-budget=30000").str().find(" -workspace-budget=30000"), std::string::npos);
  EXPECT_EQ(parse_target(parse_target("c -workspace-budget=30000").str()).workspace_budget, 30000);
  EXPECT_EQ(parse_target("c").str().find("workspace-budget"), std::string::npos);
  EXPECT_NE(error_of("c -workspace-budget=0").find("-workspace-budget takes a number of bytes, 1 or more, not '0'"),
            std::string::npos);
  EXPECT_NE(error_of("c -workspace-budget=20k").find("not '20k'"), std::string::npos);
  EXPECT_NE(error_of("c -workspace-budget=99999999999999999999").find("1 or more"), std::string::npos);
  EXPECT_NE(error_of("c -disabled-schedules=fast").find("unknown schedule 'fast'"), std::string::npos);
  EXPECT_NE(error_of("wasm -mcpu=cortex-m4").find("-mcpu is an option of the c and llvm targets"), std::string::npos);
  EXPECT_NE(error_of("c -link-param=1").find("did you mean -link-params?"), std::string::npos);
  EXPECT_NE(error_of("c unpacked").find("-key=value"), std::string::npos);
  EXPECT_NE(error_of("c -unpacked-api=").find("-key=value"), std::string::npos);
}

}  // namespace

// The target is read once, at the edge (the CLI, the wasm API, an artifact's metadata):
// what later stages need of the text is in the Target, parsed then.
TEST(Target, CarriesWhatTheTextSaid) {
  EXPECT_FALSE(parse_target("c").link_params_given);
  EXPECT_TRUE(parse_target("c -link-params=0").link_params_given);
  EXPECT_TRUE(parse_target("c -interface-api=packed -link-params=1").link_params_given);
  // The schedules are decided at parse time, and the canonical spelling carries them.
  const Target t = parse_target("c -mcpu=cortex-m7 -disabled-schedules=hoist,sxtb16");
  const Target again = parse_target(t.str());
  for (const auto& name : schedule_list()) EXPECT_EQ(t.schedules.get(name), again.schedules.get(name)) << name;
  EXPECT_TRUE(t.schedules.smlad);
  EXPECT_FALSE(t.schedules.sxtb16 || t.schedules.hoist);
  EXPECT_FALSE(parse_target("wasm").schedules.merge_kernels);
  EXPECT_TRUE(parse_target("llvm").schedules.merge_kernels);
  // The last -disabled-schedules wins, as in the canonical spelling.
  const Target twice = parse_target("c -disabled-schedules=block -disabled-schedules=unroll");
  EXPECT_EQ(twice.disabled_schedules, "unroll");
  EXPECT_TRUE(twice.schedules.block);
  EXPECT_FALSE(twice.schedules.unroll);
}

// What `compile` builds from a text: the weights linked unless the text said otherwise, in
// the canonical spelling too (`tune --space` hands it to the tuner, which must measure the
// firmware `run` deploys, not a params-struct build with another AOT main).
TEST(Target, ArtifactTargetLinksTheWeightsUnlessTold) {
  const Target t = artifact_target(parse_target("c -mcpu=cortex-m4"));
  EXPECT_TRUE(t.link_params);
  EXPECT_NE(t.str().find("-link-params=1"), std::string::npos) << t.str();
  EXPECT_TRUE(parse_target(t.str()).link_params);
  EXPECT_FALSE(artifact_target(parse_target("c -link-params=0")).link_params);
  for (const auto& [key, value] : t.defaulted) {
    if (key == "link-params") {
      EXPECT_EQ(value, "1");
    }
  }
}

}  // namespace mtir
