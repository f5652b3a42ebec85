#include "artifact/c_interface.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "codegen/c/codegen_c.h"
#include "codegen/emit_common.h"
#include "executor/control_flow.h"
#include "ir/attrs.h"
#include "ops/devices.h"
#include "support/names.h"

namespace mtir {
// Workspace the artifact needs at most: every function's planned pool, nested as the
// calls nest (main's pool stays while an operator's own scratch pool is live), each
// block with the stack allocator's header and alignment, plus the slack for a buffer
// the application did not align.
std::string packed_linked_entry(const std::string& c_model) { return "tvmgen_" + c_model + "_run"; }

int64_t artifact_workspace_bytes(const IRModule& lowered, const std::string& main_kernel) {
  // A function's pools as the stack allocator takes them: one block per element type's
  // pool (PlanMemory's "workspace.block_bytes"), each with its header.
  auto blocks = [](const PrimFunc& f) -> int64_t {
    auto it = f->attrs.find("workspace.block_bytes");
    if (it != f->attrs.end() && std::holds_alternative<int64_t>(it->second)) return std::get<int64_t>(it->second);
    it = f->attrs.find("workspace.pool_bytes");
    int64_t n = it != f->attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : 0;
    return n > 0 ? 16 + ((n + 15) / 16) * 16 : 0;
  };
  // A subgraph function (IF/WHILE) holds its pools while main holds its own and while
  // its kernels hold theirs: all of them at once, at most.
  int64_t largest_op = 0, subgraphs = 0;
  for (const auto& [name, f] : lowered.functions) {
    if (name == main_kernel) continue;
    // The packed API splits a function into a wrapper and its kernel (tir.kernel_of),
    // both carrying the pools the kernel alone allocates: counted once, on the wrapper.
    if (f->attrs.count("tir.kernel_of")) continue;
    if (f->attrs.count(kSubgraphFunctionAttr)) subgraphs += blocks(f);
    else largest_op = std::max(largest_op, blocks(f));
  }
  PrimFunc main = lowered.lookup(main_kernel);
  return (main ? blocks(main) : 0) + subgraphs + largest_op + 15;
}

namespace {

// The packed signature's parameters, as the registry declares them.
constexpr const char* kPackedParams =
    "(TVMValue* args, int32_t* type_codes, int32_t num_args, TVMValue* out_ret_value, int32_t* out_ret_tcode, "
    "void* resource_handle)";

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}


int64_t bytes_of(const TensorType& t) { return t.num_elements() * t.dtype.bytes(); }

// The C element type of a linked constant, or "" for types the interface cannot write.
std::string linked_c_type(DataType t) {
  if (t.is_float() && t.bits() == 32) return "float";
  if (t.is_float() && t.bits() == 64) return "double";
  if ((t.is_int() || t.is_uint()) && (t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64))
    return std::string(t.is_uint() ? "uint" : "int") + std::to_string(t.bits()) + "_t";
  return "";
}

// Element i of `a` as a C literal of its linked type (exact: %.9g for float32, %.17g for
// float64; integers with the stdint macros, INT64_MIN spelled so it is not an overflow).
std::string c_literal(const NDArray& a, int64_t i) {
  char buf[48];
  if (a.dtype.is_float()) {
    const bool f32 = a.dtype.bits() == 32;
    std::snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", a.get_float(i));
    std::string s = buf;
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    return f32 ? s + "f" : s;
  }
  const int64_t v = a.get_int(i);
  if (a.dtype.is_uint()) return "UINT" + std::to_string(a.dtype.bits() == 64 ? 64 : 32) + "_C(" + std::to_string(static_cast<uint64_t>(v)) + ")";
  if (v == INT64_MIN) return "(-INT64_C(9223372036854775807) - 1)";
  return a.dtype.bits() == 64 ? "INT64_C(" + std::to_string(v) + ")" : std::to_string(v);
}

}  // namespace

// Weights are megabytes of these: signed integers of up to 32 bits (c_literal's plain
// decimal) are written straight from their bytes.
std::string c_literal_list(const NDArray& a) {
  const int64_t n = a.num_elements();
  const int nbytes = a.dtype.bytes();
  const bool plain_int = a.dtype.is_int() && nbytes <= 4;
  std::string out;
  out.reserve(static_cast<size_t>(n) * (plain_int ? 2 + 2 * nbytes : 12) + 8);
  char buf[24];
  for (int64_t i = 0; i < n; ++i) {
    out += i % 6 ? " " : "\n    ";
    if (plain_int) {
      uint32_t raw = 0;
      for (int k = 0; k < nbytes; ++k) raw |= uint32_t{a.data[static_cast<size_t>(i * nbytes + k)]} << (8 * k);
      int64_t v = raw;
      if (raw >> (8 * nbytes - 1)) v -= int64_t{1} << (8 * nbytes);  // the sign bit set
      out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
    } else {
      out += c_literal(a, i);
    }
    if (i + 1 < n) out += ',';
  }
  return out;
}

namespace {

const char* role_name(AotModule::Role r) {
  switch (r) {
    case AotModule::Role::kInput: return "input";
    case AotModule::Role::kOutput: return "output";
    case AotModule::Role::kState: return "state";
    case AotModule::Role::kConstant: break;
  }
  return "constant";
}

bool has_role(const AotModule& aot, AotModule::Role role) {
  for (const auto& p : aot.params)
    if (p.role == role) return true;
  return false;
}

bool has_state(const AotModule& aot) { return has_role(aot, AotModule::Role::kState); }

// The C array of state `p`: `<prefix>_state_<name>`.
std::string state_array(const std::string& prefix, const AotModule::Param& p) {
  return prefix + "_state_" + p.c_name;
}

// Each state as a static array of the artifact (RAM), statically initialised to its
// initial value, and `<prefix>_reset()`, which restores those values. A state whose
// elements are all equal is reset by a loop; any other from a const copy of its
// initial value.
std::string state_definitions(const AotModule& aot, const Graph& g, const std::string& prefix) {
  std::ostringstream c, reset;
  c << "\n/* The model's state (variable tensors): kept here between runs, reset by " << prefix << "_reset(). */\n";
  for (const auto& p : aot.params) {
    if (p.role != AotModule::Role::kState) continue;
    const NDArray& a = g.state.at(p.name);
    const std::string type = linked_c_type(a.dtype);
    if (type.empty()) user_error(Span{}, "state '" + p.name + "': " + a.dtype.str() + " state is not supported");
    const std::string name = state_array(prefix, p);
    const int64_t n = std::max<int64_t>(a.num_elements(), 1);
    bool uniform = true, zero = true;
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      uniform = uniform && c_literal(a, i) == c_literal(a, 0);
      zero = zero && (a.dtype.is_float() ? a.get_float(i) == 0 && !std::signbit(a.get_float(i)) : a.get_int(i) == 0);
    }
    c << "static " << type << " " << name << "[" << n << "]";
    if (!zero) {
      c << " = {";
      c << c_literal_list(a);
      c << "}";
    }
    c << ";\n";
    if (uniform) {
      reset << "  for (i = 0; i < " << n << "; ++i) " << name << "[i] = " << c_literal(a, 0) << ";\n";
    } else {
      c << "static const " << type << " " << name << "_initial[" << n << "] = {";
      c << c_literal_list(a);
      c << "};\n";
      reset << "  for (i = 0; i < " << n << "; ++i) " << name << "[i] = " << name << "_initial[i];\n";
    }
  }
  c << "\nint32_t " << prefix << "_reset(void) {\n  int32_t i;\n" << reset.str() << "  return 0;\n}\n";
  return c.str();
}

// The header's part on state: each state's size and the reset function.
std::string state_declarations(const AotModule& aot, const std::string& prefix, const std::string& macro) {
  std::ostringstream h;
  int64_t total = 0;
  for (const auto& p : aot.params)
    if (p.role == AotModule::Role::kState) total += bytes_of(p.type);
  h << "/* The model's state (TFLite variable tensors), " << total << " bytes of RAM inside the artifact:\n"
    << " * it starts at its initial value, each run updates it and the next run continues\n"
    << " * from it (as TFLite Micro's Invoke() does). " << prefix << "_reset() puts every\n"
    << " * state back to its initial value (as after AllocateTensors()); it returns 0. */\n";
  for (const auto& p : aot.params) {
    if (p.role != AotModule::Role::kState) continue;
    h << "/* state '" << p.name << "': " << p.type.str() << " */\n#define " << macro << "_STATE_"
      << upper(p.c_name) << "_SIZE " << bytes_of(p.type) << "\n";
  }
  h << "#define " << macro << "_STATE_SIZE " << total << "\nint32_t " << prefix << "_reset(void);\n\n";
  return h.str();
}

// The weights as static const arrays `<prefix>_<name>`, in flash; those main reads itself
// (`linked`, emit_common.h: linked_params) under the names main's source uses for them.
std::string linked_weights(const AotModule& aot, const Graph& g, const std::string& prefix,
                           const std::map<size_t, std::string>& linked = {}) {
  std::string c;  // megabytes for a large model: appended, not streamed
  for (size_t i = 0; i < aot.params.size(); ++i) {
    const AotModule::Param& p = aot.params[i];
    if (p.role != AotModule::Role::kConstant) continue;
    const NDArray& a = g.constants.at(p.name);
    const std::string type = linked_c_type(a.dtype);
    if (type.empty())
      user_error(Span{}, "constant '" + p.name + "': " + a.dtype.str() + " weights cannot be linked into the artifact yet "
                         "(float32, float64 and integer constants can)");
    c += "static const " + type + " " + (linked.count(i) ? linked.at(i) : prefix + "_" + p.c_name) + "[" +
         std::to_string(std::max<int64_t>(a.num_elements(), 1)) + "] = {";
    c += c_literal_list(a);
    c += "};\n";
  }
  return c;
}

// Whether main takes a bool tensor (a bool* parameter: C99 spells it with <stdbool.h>).
bool takes_bool(const AotModule& aot) {
  for (const auto& p : aot.params)
    if (p.type.dtype == DataType::Bool()) return true;
  return false;
}

// -interface-api=packed -link-params=1: the weights, a DLTensor over each, and the
// registry's entry, which takes the inputs and outputs and calls main with the weights
// put in their places.
SourceFileOut packed_linked_source(const AotModule& aot, const Graph& g, const IRModule& lowered) {
  const std::string model = to_c_identifier(g.name);
  const std::string prefix = "tvmgen_" + model;
  const std::string entry = packed_linked_entry(model);
  std::ostringstream c;
  c << "/* Generated by microtir " << MICROTIR_VERSION << ": the packed entry of model \"" << g.name
    << "\" with its weights linked in. Do not edit. */\n"
    << "#include <stddef.h>\n#include <stdint.h>\n" << (takes_bool(aot) ? "#include <stdbool.h>\n" : "")
    << "#include <tvm/runtime/c_backend_api.h>\n"
    << "#include <tvm/runtime/c_runtime_api.h>\n#include <tvm/runtime/crt/error_codes.h>\n\n#include \"" << prefix
    << ".h\"\n\n" << c_signature(aot.main, lowered.lookup(aot.main)) << ";\n"
    << "int32_t " << entry << kPackedParams << ";\n\n" << linked_weights(aot, g, prefix)
    << (has_state(aot) ? state_definitions(aot, g, prefix) : "") << "\n";
  size_t io = 0;
  for (size_t i = 0; i < aot.params.size(); ++i) {
    const auto& p = aot.params[i];
    if (p.role != AotModule::Role::kConstant && p.role != AotModule::Role::kState) {
      ++io;
      continue;
    }
    // The shape and DLTensor are named by position: a name-derived symbol could be
    // another weight's (weights "w" and "w_shape").
    const std::string data = p.role == AotModule::Role::kState ? state_array(prefix, p) : prefix + "_" + p.c_name;
    const std::string shape = "mtir_shape_" + std::to_string(i);
    c << "static int64_t " << shape << "[" << std::max<size_t>(p.type.shape.size(), 1) << "] = {";
    for (size_t k = 0; k < p.type.shape.size(); ++k) c << (k ? ", " : "") << p.type.shape[k];
    if (p.type.shape.empty()) c << "1";
    // main only reads its weights: the const is cast away for DLTensor's data member.
    c << "};\nstatic DLTensor mtir_tensor_" << i << " = {(void*)" << data << ", {kDLCPU, 0}, " << p.type.shape.size()
      << ", {" << dl_type_code(p.type.dtype) << ", " << p.type.dtype.bits() << ", 1}, " << shape << ", NULL, 0};\n";
  }
  c << "\nint32_t " << entry << kPackedParams << " {\n"
    << "  TVMValue all[" << aot.params.size() << "];\n  int32_t codes[" << aot.params.size() << "];\n"
    << "  if (num_args != " << io << ") {\n"
    << "    TVMAPISetLastError(\"" << entry << ": expected " << io << " arguments (the inputs, then the outputs)\");\n"
    << "    return kTvmErrorFunctionCallNumArguments;\n  }\n";
  size_t k = 0;
  for (size_t i = 0; i < aot.params.size(); ++i) {
    const auto& p = aot.params[i];
    if (p.role == AotModule::Role::kConstant || p.role == AotModule::Role::kState) {
      c << "  all[" << i << "].v_handle = &mtir_tensor_" << i << ";\n"
        << "  codes[" << i << "] = kTVMDLTensorHandle;\n";
    } else {
      c << "  all[" << i << "] = args[" << k << "];\n  codes[" << i << "] = type_codes[" << k << "];\n";
      ++k;
    }
  }
  c << "  return " << aot.main << "(all, codes, " << aot.params.size()
    << ", out_ret_value, out_ret_tcode, resource_handle);\n}\n";
  return {"codegen/host/src/" + prefix + "_interface.c", c.str()};
}

}  // namespace

namespace {

// One model's interface as it is written: what it is written from and the names it uses.
struct Interface {
  const AotModule& aot;
  const Graph& g;
  const IRModule& lowered;
  const InterfaceOptions& options;
  std::string model, prefix, macro;
  bool packed, stateful;
  // The structs of run(): inputs, outputs and, unless linked, the weights.
  std::vector<std::pair<AotModule::Role, std::string>> structs;

  // Parameters the application passes: inputs and outputs, and the weights unless
  // linked; never the state, which the artifact keeps.
  bool passed(const AotModule::Param& p) const {
    return p.role == AotModule::Role::kInput || p.role == AotModule::Role::kOutput ||
           (p.role == AotModule::Role::kConstant && !options.link_params);
  }
};

// The header's opening: how to call the model, the include guard.
void header_preamble(std::ostringstream& h, const Interface& in) {
  const std::string& macro = in.macro;
  h << "/* Generated by microtir " << MICROTIR_VERSION << ": the " << (in.packed ? "packed" : "C")
    << " interface of model \"" << in.g.name << "\". Do not edit.\n";
  h << " *\n"
    << " * Declare the workspace with " << macro << "_WORKSPACE_SIZE bytes and give it to\n"
    << " * TVMCrtWorkspaceInit() once. ";
  if (in.packed) {
    h << "Then look up the model's main function with\n"
      << " * TVMFuncGetGlobal(" << macro << "_MAIN, &f) and call it with TVMFuncCall(): one\n"
      << " * DLTensor (type code kTVMDLTensorHandle) per argument, in the order listed below,\n"
      << " * each with the shape and dtype given here. It returns 0, or an error code with the\n"
      << " * message in TVMGetLastError(). */\n";
  } else {
    h << "Fill the structs below with pointers to buffers of\n"
      << " * the sizes below, and call " << in.prefix << "_run(). It returns 0, or an error code\n"
      << " * with the message in TVMGetLastError(). */\n";
  }
  h << "#ifndef " << macro << "_H_\n#define " << macro << "_H_\n\n#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
}

// Each passed tensor's size (and, packed, its shape and argument position), the state
// and the workspace size.
void header_sizes(std::ostringstream& h, const Interface& in) {
  const std::string& macro = in.macro;
  size_t num_args = 0;
  for (const auto& p : in.aot.params) num_args += in.passed(p);
  if (in.packed) {
    // With linked weights the registry's entry is a wrapper that takes only the inputs
    // and outputs (as TVM's packed main does with -link-params=1) and adds the weights.
    h << "#define " << macro << "_MAIN \"" << (in.options.link_params ? packed_linked_entry(in.model) : in.aot.main)
      << "\"\n"
      << "#define " << macro << "_NUM_ARGS " << num_args << "\n\n";
  }
  size_t arg = 0;
  for (size_t i = 0; i < in.aot.params.size(); ++i) {
    const auto& p = in.aot.params[i];
    if (!in.passed(p)) continue;
    const size_t argument = arg++;
    const std::string name = macro + "_" + upper(p.c_name);
    // The model's own name, and the identifier it became where they differ.
    h << "/* " << role_name(p.role) << " '" << c_escaped(p.name) << "'"
      << (p.c_name != p.name ? " (" + p.c_name + ")" : std::string()) << ": " << p.type.str();
    auto q = in.g.quantization.find(p.name);
    if (q != in.g.quantization.end()) {
      char text[96];  // %.9g: the float32 scale exactly
      std::snprintf(text, sizeof text, ", scale %.9g, zero point %lld (real = scale * (q - zero point))",
                    q->second.first, static_cast<long long>(q->second.second));
      h << text;
    }
    if (in.packed) h << ", argument " << argument;
    h << " */\n#define " << name << "_SIZE " << bytes_of(p.type) << "\n";
    if (in.packed) {
      h << "#define " << name << "_NDIM " << p.type.shape.size() << "\n#define " << name << "_SHAPE {";
      for (size_t k = 0; k < p.type.shape.size(); ++k) h << (k ? ", " : "") << p.type.shape[k];
      h << "}\n";
    }
  }
  if (in.stateful) h << "\n" << state_declarations(in.aot, in.prefix, macro);
  h << "/* the arena for intermediate tensors and operator scratch space */\n"
    << "#define " << macro << "_WORKSPACE_SIZE " << artifact_workspace_bytes(in.lowered, in.aot.main) << "\n\n";
}

// The C interface's structs, the devices' struct and hooks, and run()'s declaration;
// returns run()'s parameter list.
std::string header_run_api(std::ostringstream& h, const Interface& in) {
  const std::string& prefix = in.prefix;
  std::string run_params;
  for (const auto& [role, suffix] : in.structs) {
    if (role == AotModule::Role::kConstant)
      h << "/* The weights (-link-params=0): the application passes each one, as stored in\n"
        << " * parameters/<member>.npy of the artifact (row-major, little-endian). */\n";
    h << "struct " << prefix << suffix << " {\n";
    for (const auto& p : in.aot.params)
      if (p.role == role) h << "  " << (role == AotModule::Role::kConstant ? "const " : "") << "void* " << p.c_name << ";\n";
    h << "};\n\n";
    const std::string var = suffix.substr(1);
    run_params += (run_params.empty() ? "" : ", ") + std::string("struct ") + prefix + suffix + "* " + var;
  }
  if (!in.aot.devices.empty()) run_params += ", struct " + prefix + "_devices* devices";
  if (!in.aot.devices.empty()) {
    h << "/* The device instances the model runs operators on: set each member to that\n"
      << " * instance's context, which its kernels and hooks receive as their last argument. */\n"
      << "struct " << prefix << "_devices {\n";
    for (const auto& d : in.aot.devices) h << "  void* " << d << ";\n";
    h << "};\n\n"
      << "/* Hooks the device library implements, called by " << prefix << "_run in this order for\n"
      << " * each instance: Activate once before its first kernel, Open and Close around every\n"
      << " * kernel call, Deactivate after its last kernel. A hook or kernel that returns\n"
      << " * non-zero stops the run, and " << prefix << "_run returns that code. */\n";
    std::set<std::string> kinds;
    for (const auto& d : in.aot.devices) kinds.insert(device_kind_of(d).hook_prefix);
    for (const auto& k : kinds)
      for (const char* which : {"Activate", "Open", "Close", "Deactivate"})
        h << "int32_t " << k << which << "(void* context);\n";
    h << "\n";
  }
  h << "int32_t " << prefix << "_run(" << run_params << ");\n\n#ifdef __cplusplus\n}\n#endif\n#endif\n";
  return run_params;
}

// <prefix>_interface.c: the weights main does not read itself, the state, and run(),
// which checks its arguments and calls main.
std::string interface_source(const Interface& in, const std::string& run_params) {
  const AotModule& aot = in.aot;
  const std::string& prefix = in.prefix;
  std::ostringstream c;
  // The weights live in flash as const arrays: here, or in main's source (linked_source).
  PrimFunc main = in.lowered.lookup(aot.main);
  c << "/* Generated by microtir " << MICROTIR_VERSION << ": the C interface of model \"" << in.g.name
    << "\" and its weights. Do not edit. */\n"
    << "#include <stddef.h>\n#include <stdint.h>\n" << (takes_bool(aot) ? "#include <stdbool.h>\n" : "")
    << "#include <tvm/runtime/c_backend_api.h>\n"
    << "#include <tvm/runtime/crt/error_codes.h>\n\n#include \"" << prefix << ".h\"\n\n"
    << c_signature(aot.main, main) << ";\n\n";
  const std::map<size_t, std::string> linked = linked_params(main);
  if (in.options.link_params && linked.empty()) c << linked_weights(aot, in.g, prefix);
  if (in.stateful) c << state_definitions(aot, in.g, prefix);
  // A NULL struct or member is the caller's mistake: an error code and a message, never
  // a write through it.
  c << "\n#define MTIR_REQUIRE(p, what) \\\n"
    << "  if ((p) == NULL) { \\\n"
    << "    TVMAPISetLastError(\"" << prefix << "_run: \" what \" is NULL\"); \\\n"
    << "    return kTvmErrorNullArgument; \\\n  }\n";
  c << "\nint32_t " << prefix << "_run(" << run_params << ") {\n";
  for (const auto& [role, suffix] : in.structs) {
    const std::string var = suffix.substr(1);
    c << "  MTIR_REQUIRE(" << var << ", \"" << var << "\")\n";
    for (const auto& p : aot.params)
      if (p.role == role)
        c << "  MTIR_REQUIRE(" << var << "->" << p.c_name << ", \"" << role_name(role) << " '" << p.c_name << "'\")\n";
  }
  if (!aot.devices.empty()) c << "  MTIR_REQUIRE(devices, \"devices\")\n";
  c << "  return " << aot.main << "(";
  const char* separator = "";
  for (size_t i = 0; i < aot.params.size(); ++i) {
    const auto& p = aot.params[i];
    if (linked.count(i)) continue;  // main reads it itself
    c << separator;
    separator = ", ";
    if (p.role == AotModule::Role::kInput) c << "inputs->" << p.c_name;
    else if (p.role == AotModule::Role::kOutput) c << "outputs->" << p.c_name;
    else if (p.role == AotModule::Role::kState) c << state_array(prefix, p);
    else if (!in.options.link_params) c << "(void*)params->" << p.c_name;  // read only
    else c << "(" << linked_c_type(p.type.dtype) << "*)" << prefix << "_" << p.c_name;  // read only: main never writes its weights
  }
  for (const auto& d : aot.devices) c << separator << "devices->" << d, separator = ", ";
  c << ");\n}\n";
  return c.str();
}

// The file main's source includes when it reads the weights itself (kLinkedParamsAttr):
// the weights as static arrays, in main's translation unit only.
std::vector<SourceFileOut> linked_source(const Interface& in) {
  PrimFunc main = in.lowered.lookup(in.aot.main);
  const std::string file = linked_params_file(main);
  if (file.empty()) return {};
  return {{"codegen/host/src/" + file, "/* Generated by microtir " + std::string(MICROTIR_VERSION) +
                                           ": the weights of model \"" + in.g.name + "\", which " + in.aot.main +
                                           " reads; included by its source only. Do not edit. */\n" +
                                           linked_weights(in.aot, in.g, in.prefix, linked_params(main))}};
}

}  // namespace

std::string linked_weights_file(const Graph& g) { return "tvmgen_" + to_c_identifier(g.name) + "_weights.inc"; }

IRModule main_reading_linked_weights(const IRModule& m, const AotModule& aot, const Graph& g, const Target& target) {
  if (target.kind != "c" || target.interface_api != "c" || !target.unpacked_api || !target.link_params) return m;
  PrimFunc main = m.lookup(aot.main);
  if (!main || !main->attrs.count(kConstantSymbolsAttr)) return m;  // no weights
  auto linked = std::make_shared<PrimFuncNode>(*main);
  linked->attrs[kLinkedParamsAttr] = linked_weights_file(g);
  IRModule out = m;
  for (auto& [name, f] : out.functions)
    if (f == main) f = linked;
  return out;
}

std::vector<SourceFileOut> c_interface(const AotModule& aot, const Graph& g, const IRModule& lowered,
                                       const InterfaceOptions& options) {
  const std::string model = to_c_identifier(g.name);
  Interface in{aot, g, lowered, options, model, "tvmgen_" + model, "TVMGEN_" + upper(model),
               options.interface_api == "packed", has_state(aot), {}};
  if (in.packed && !aot.devices.empty())
    user_error(Span{}, "the model runs operators on devices, which need -interface-api=c -unpacked-api=1");
  if (in.packed && !options.link_params && in.stateful)
    user_error(Span{}, "unsupported: the model has state (TFLite variable tensors), which lives in the artifact: "
                       "-interface-api=packed needs -link-params=1 for it (or use -interface-api=c)");
  std::ostringstream h;
  header_preamble(h, in);
  header_sizes(h, in);
  if (in.packed) {
    h << "#ifdef __cplusplus\n}\n#endif\n#endif\n";
    std::vector<SourceFileOut> files = {{"codegen/host/include/" + in.prefix + ".h", h.str()}};
    if (options.link_params) files.push_back(packed_linked_source(aot, g, lowered));
    return files;
  }
  in.structs = {{AotModule::Role::kInput, "_inputs"}, {AotModule::Role::kOutput, "_outputs"}};
  // A model without weights has nothing to pass: no params struct (an empty struct is
  // not C99) and run() takes the inputs and outputs only.
  if (!options.link_params && has_role(aot, AotModule::Role::kConstant)) in.structs.push_back({AotModule::Role::kConstant, "_params"});
  const std::string run_params = header_run_api(h, in);
  std::vector<SourceFileOut> files = {{"codegen/host/include/" + in.prefix + ".h", h.str()},
                                      {"codegen/host/src/" + in.prefix + "_interface.c", interface_source(in, run_params)}};
  if (options.link_params)
    for (auto& f : linked_source(in)) files.push_back(std::move(f));
  return files;
}

}  // namespace mtir
