#include "driver/target.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "codegen/llvm/llvm_target.h"
#include "support/diagnostic.h"
#include "support/names.h"

namespace mtir {
namespace {

[[noreturn]] void target_error(const std::string& text, const std::string& message) {
  user_error(Span{}, "bad target \"" + text + "\": " + message);
}

bool parse_bool(const std::string& text, const std::string& key, const std::string& value) {
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  target_error(text, "-" + key + " takes 0 or 1, not '" + value + "'");
}

}  // namespace

std::string Target::str() const {
  std::ostringstream os;
  os << kind;
  if (!mtriple.empty()) os << " -mtriple=" << mtriple;
  if (!mcpu.empty()) os << " -mcpu=" << mcpu;
  if (!disabled_schedules.empty()) os << " -disabled-schedules=" << disabled_schedules;
  if (kind == "wasm") os << " -opt=" << opt;
  os << " -runtime=" << runtime << " -executor=" << executor << " -interface-api=" << interface_api
     << " -unpacked-api=" << (unpacked_api ? 1 : 0) << " -link-params=" << (link_params ? 1 : 0)
     << " -workspace-byte-alignment=" << workspace_byte_alignment;
  if (reuse_io_buffers) os << " -reuse-io-buffers=1";
  if (workspace_budget > 0) os << " -workspace-budget=" << workspace_budget;
  if (profile_hooks) os << " -profile-hooks=1";
  return os.str();
}

namespace {

// `value` as a whole decimal number, or 0 when it is not one (or is out of range).
int64_t whole_number(const std::string& value) {
  try {
    size_t used = 0;
    const int64_t n = std::stoll(value, &used);
    return used == value.size() ? n : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

// -workspace-byte-alignment: a power of two from 1 to 4096.
int parse_alignment(const std::string& text, const std::string& value) {
  const int64_t n = whole_number(value);
  if (n <= 0 || (n & (n - 1)) != 0 || n > 4096) {
    target_error(text, "-workspace-byte-alignment must be a power of two from 1 to 4096, not '" + value + "'");
  }
  return static_cast<int>(n);
}

// A count of bytes, 1 or more.
int64_t parse_bytes(const std::string& text, const std::string& key, const std::string& value) {
  const int64_t n = whole_number(value);
  if (n <= 0) target_error(text, "-" + key + " takes a number of bytes, 1 or more, not '" + value + "'");
  return n;
}

[[noreturn]] void unknown_option(const std::string& text, const std::string& key) {
  static const std::vector<std::string> known = {"runtime",     "executor", "interface-api",
                                                 "unpacked-api", "link-params",
                                                 "workspace-byte-alignment", "mtriple", "mcpu", "opt",
                                                 "disabled-schedules", "reuse-io-buffers", "workspace-budget",
                                                 "profile-hooks"};
  std::string message = "unknown option -" + key;
  std::string best = closest_match(key, known);
  if (!best.empty()) message += "; did you mean -" + best + "?";
  message += " (known:";
  for (const auto& k : known) message += " -" + k;
  target_error(text, message + ")");
}

// What the options of one target text set while it is read: the target, and the
// schedules -disabled-schedules switched off (every other one left on).
struct TargetReading {
  Target t;
  bool interface_given = false;
  ScheduleOptions kept;
  std::vector<std::string> given;  // the keys the text wrote
};

void apply_option(TargetReading& r, const std::string& text, const std::string& key, const std::string& value) {
  Target& t = r.t;
  r.given.push_back(key);
  if (key == "runtime") {
    if (value != "c") target_error(text, "-runtime=" + value + " is not supported; use -runtime=c (microtir builds for the C runtime)");
    t.runtime = value;
  } else if (key == "executor") {
    if (value != "aot") target_error(text, "-executor=" + value + " is not supported; use -executor=aot");
    t.executor = value;
  } else if (key == "interface-api") {
    if (value != "c" && value != "packed") target_error(text, "-interface-api takes c or packed, not '" + value + "'");
    t.interface_api = value;
    r.interface_given = true;
  } else if (key == "unpacked-api") {
    t.unpacked_api = parse_bool(text, key, value);
  } else if (key == "link-params") {
    t.link_params = parse_bool(text, key, value);
    t.link_params_given = true;
  } else if (key == "reuse-io-buffers") {
    t.reuse_io_buffers = parse_bool(text, key, value);
  } else if (key == "workspace-budget") {
    t.workspace_budget = parse_bytes(text, key, value);
  } else if (key == "profile-hooks") {
    // The C backend's TVMGEN_PROFILE macros are always there, defined away unless the
    // application defines them; a wasm module is timed per function instead.
    if (t.kind != "llvm")
      target_error(text, "-profile-hooks is an option of the llvm target, not of \"" + t.kind + "\"" +
                             (t.kind == "c" ? " (the C backend's AOT main always has its TVMGEN_PROFILE macros)" : ""));
    t.profile_hooks = parse_bool(text, key, value);
  } else if (key == "workspace-byte-alignment") {
    t.workspace_byte_alignment = parse_alignment(text, value);
  } else if (key == "mtriple") {
    if (t.kind != "llvm") target_error(text, "-mtriple is an option of the llvm target, not of \"" + t.kind + "\"");
    t.mtriple = value;
  } else if (key == "mcpu") {
    // For C the CPU only chooses schedules (smlad on CPUs with the DSP extension).
    if (t.kind == "wasm") target_error(text, "-mcpu is an option of the c and llvm targets, not of \"wasm\"");
    t.mcpu = value;
  } else if (key == "disabled-schedules") {
    ScheduleOptions s;
    s.smlad = s.sxtb16 = s.smmlar_requant = s.mve = s.smmlar_add = true;  // keep only the names listed: their default off would read as disabled
    disable_schedules(s, value, "bad target \"" + text + "\": -disabled-schedules");
    t.disabled_schedules = s.disabled();
    r.kept = s;
  } else if (key == "opt") {
    if (t.kind != "wasm") target_error(text, "-opt is an option of the wasm target, not of \"" + t.kind + "\"");
    static const std::vector<std::string> levels = {"O0", "O1", "O2", "O3", "Os", "Oz"};
    if (std::find(levels.begin(), levels.end(), value) == levels.end())
      target_error(text, "-opt takes O0, O1, O2, O3, Os or Oz, not '" + value + "'");
    t.opt = value;
  } else {
    unknown_option(text, key);
  }
}

// The schedules of a target: the CPU's and the kind's defaults, less what the target
// switched off (`kept` has those off and every other one on).
ScheduleOptions target_schedules(const Target& t, const ScheduleOptions& kept) {
  ScheduleOptions s;
  s.smlad = s.sxtb16 = t.kind != "wasm" && cpu_has_dsp(t.mcpu);
  // One SMMLAR where the DSP has it; elsewhere its 64-bit arithmetic costs about what
  // smlal_requant's does (riscv32 KWS +0.07%).
  s.smmlar_requant = s.smlad;
  // The residual adds' three roundings: one SMMLAR each instead of a 64-bit multiply
  // and its sign correction (IC's fused conv+add layers, about 13 instructions an output).
  s.smmlar_add = s.smlad;
  s.mve = t.kind != "wasm" && t.mcpu == "cortex-m55";  // Helium: Armv8.1-M with MVE
  // mve_depthwise (on by default) for both backends: through LLVM, with its int32x4
  // requantization as Helium intrinsics, KWS 1,124,919 instructions against the scalar
  // tiles' 1,363,715.
  // Its gathered table columns and scattered bytes are the C backend's Helium helpers;
  // through LLVM (VQRDMULH, but lane moves for the gathers and scatters) it costs more
  // than smmlar_requant's scalar chains: KWS 1,464,488 against 1,363,715 instructions.
  s.mve_pair_requant = t.kind != "llvm";
  s.mve_signed_requant = t.kind != "llvm";
  // mve_direct: measured through the C backend only; LLVM keeps the im2col column.
  s.mve_direct = t.kind != "llvm";
  // few_channel_pairs: GCC loads the first layer's gathered words one by one otherwise
  // (VWW's first layer 933,545 -> 777,056 instructions); LLVM pairs them itself and, with
  // the pairs in the TIR, spills the 3x2 tile's sums (743,236 -> 822,648).
  s.few_channel_pairs = t.kind != "llvm";
  // merge_kernels saves a microcontroller's flash. A wasm module keeps one function per
  // layer: Binaryen merges identical functions itself, and the playground times each
  // layer by wrapping its kernel's function (a shared one would time two layers as one).
  s.merge_kernels = t.kind != "wasm";
  for (const auto& name : schedule_list())
    if (!kept.get(name)) s.set(name, false);
  return s;
}

// The interface and kernel convention a text leaves open: the lean pair (C interface,
// plain pointers) unless the one key written asks for the packed side.
void default_interface(TargetReading& r) {
  Target& t = r.t;
  const bool unpacked_given = std::count(r.given.begin(), r.given.end(), "unpacked-api") > 0;
  if (!r.interface_given && unpacked_given && !t.unpacked_api) t.interface_api = "packed";
  if (!unpacked_given && r.interface_given && t.interface_api == "packed") t.unpacked_api = false;
}

void record_defaults(TargetReading& r) {
  Target& t = r.t;
  auto unwritten = [&](const char* key) { return std::count(r.given.begin(), r.given.end(), key) == 0; };
  auto note = [&](const char* key, const std::string& value) {
    if (unwritten(key)) t.defaulted.emplace_back(key, value);
  };
  if (t.kind != "wasm") note("mcpu", "");
  if (t.kind == "wasm") note("opt", t.opt);
  note("runtime", t.runtime);
  note("executor", t.executor);
  note("interface-api", t.interface_api);
  note("unpacked-api", t.unpacked_api ? "1" : "0");
  note("link-params", t.link_params ? "1" : "0");
  note("workspace-byte-alignment", std::to_string(t.workspace_byte_alignment));
}

}  // namespace

Target parse_target(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) target_error(text, "empty; expected \"c\", \"llvm\" or \"wasm\" followed by -key=value options");

  TargetReading r;
  r.kept.smlad = r.kept.sxtb16 = r.kept.smmlar_requant = r.kept.mve = r.kept.smmlar_add = true;
  Target& t = r.t;
  t.kind = words[0];
  if (t.kind != "c" && t.kind != "llvm" && t.kind != "wasm") {
    target_error(text, "unknown target kind '" + t.kind + "'; microtir targets are \"c\", \"llvm\" and \"wasm\"");
  }
  // A wasm module is called with plain pointers and holds its weights in data segments.
  if (t.kind == "wasm") t.interface_api = "c", t.unpacked_api = true, t.link_params = true;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    size_t eq = w.find('=');
    if (w.size() < 2 || w[0] != '-' || eq == std::string::npos || eq + 1 == w.size()) {
      target_error(text, "option '" + w + "' is not of the form -key=value");
    }
    std::string key = w.substr(w[1] == '-' ? 2 : 1, eq - (w[1] == '-' ? 2 : 1));
    apply_option(r, text, key, w.substr(eq + 1));
  }
  default_interface(r);
  if (t.kind == "wasm" && (t.interface_api != "c" || !t.unpacked_api || !t.link_params)) {
    target_error(text, "the wasm target needs -interface-api=c -unpacked-api=1 -link-params=1 (its run export "
                       "takes plain pointers and the module holds the weights)");
  }
  // As in TVM: with the C runtime, the C interface passes plain pointers.
  if (r.interface_given && t.interface_api == "c" && !t.unpacked_api) {
    target_error(text, "-interface-api=c with -runtime=c needs -unpacked-api=1");
  }
  t.schedules = target_schedules(t, r.kept);
  t.schedules.workspace_budget = t.workspace_budget;
  record_defaults(r);
  return t;
}

bool cpu_has_dsp(const std::string& mcpu) {
  return mcpu == "cortex-m4" || mcpu == "cortex-m7" || mcpu == "cortex-m33" || mcpu == "cortex-m55";
}

bool arm_dsp(const std::string& triple, const std::string& mcpu) {
  return (triple.rfind("thumb", 0) == 0 || triple.rfind("arm", 0) == 0) && cpu_has_dsp(mcpu);
}

bool llvm_machine_scheduling(const Target& target) {
  if (target.kind != "llvm" || !target.schedules.dsp_no_early_scheduling) return true;
  const LlvmTargetInfo& info = llvm_target(target.mtriple);
  return !arm_dsp(info.triple, target.mcpu) || info.features.find("+mve") != std::string::npos;
}

}  // namespace mtir
