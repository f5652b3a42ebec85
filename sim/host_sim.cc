#include "sim/host_sim.h"
#include "sim/build_cache.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/c/codegen_c.h"
#include "sim/process.h"
#include "support/source_dir.h"

namespace mtir::sim {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void sim_error(const std::string& message) { user_error(Span{}, message); }

void write_bytes(const fs::path& path, const void* data, size_t n) {
  fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!f) sim_error("cannot write " + path.string());
}

std::string scalar_literal(const Var& p, const InterpArg& arg) {
  if (p->dtype.is_integer() && std::holds_alternative<double>(arg))
    sim_error("parameter '" + p->name + "' is " + p->dtype.str() + " but was given a float");
  if (const auto* i = std::get_if<int64_t>(&arg)) {
    // INT64_MIN has no literal; spell every value as a computation that cannot overflow.
    return "((int64_t)" + std::to_string(*i / 2) + " * 2 + (" + std::to_string(*i % 2) + "))";
  }
  if (const auto* d = std::get_if<double>(&arg)) {
    std::ostringstream os;
    os.precision(17);
    os << *d;
    return "(" + os.str() + ")";
  }
  sim_error("parameter '" + p->name + "' is a scalar but was given a tensor");
}


std::string symbol_of(const HostCall& call) {
  for (const auto& [name, symbol] : call.build->symbols)
    if (name == call.function) return symbol;
  sim_error("no function '" + call.function + "' in the artifact");
}

// main.c: static storage for every buffer, read from p<i>.bin, one call, then every
// buffer written to p<i>.out.
// The harness's file and allocation helpers: load() and store() move a buffer's bytes
// through a file; exact_alloc() gives each buffer its own heap block under the sanitizers.
constexpr const char* kFileHelpers =
    "\nstatic int load(const char* dir, const char* file, void* dst, size_t n) {\n"
    "  char path[4096];\n  FILE* f;\n  size_t got;\n"
    "  snprintf(path, sizeof path, \"%s/%s\", dir, file);\n"
    "  f = fopen(path, \"rb\");\n  if (!f) { fprintf(stderr, \"cannot open %s\\n\", path); return 1; }\n"
    "  got = fread(dst, 1, n, f);\n  fclose(f);\n  return got != n;\n}\n"
    "\nstatic int store(const char* dir, const char* file, const void* src, size_t n) {\n"
    "  char path[4096];\n  FILE* f;\n  size_t put;\n"
    "  snprintf(path, sizeof path, \"%s/%s\", dir, file);\n"
    "  f = fopen(path, \"wb\");\n  if (!f) { fprintf(stderr, \"cannot write %s\\n\", path); return 1; }\n"
    "  put = fwrite(src, 1, n, f);\n  return (fclose(f) != 0) || put != n;\n}\n"
    "\n#ifdef TVM_CRT_SEPARATE_ALLOCATIONS\n"
    "#include <stdlib.h>\n"
    "static void* exact_alloc(size_t n) {\n"
    "  /* 16-aligned, as the arena's blocks are; malloc(0) may be NULL */\n"
    "  void* p = NULL;\n"
    "  return posix_memalign(&p, 16, n > 0 ? n : 1) == 0 ? p : NULL;\n}\n#endif\n";

// A packed call's DLTensor for parameter `i`: its shape (and strides) declared, its
// fields set in main(), its slot in the argument arrays.
void declare_packed_tensor(size_t i, const NDArray& arr, const Buffer& b, std::ostringstream& decls,
                           std::ostringstream& setup) {
  const NDArray* a = &arr;
  const std::string storage = "arg" + std::to_string(i);
  decls << "static int64_t shape" << i << "[" << (a->shape.empty() ? 1 : a->shape.size()) << "] = {";
  for (size_t k = 0; k < a->shape.size(); ++k) decls << (k ? ", " : "") << a->shape[k];
  decls << (a->shape.empty() ? "0" : "") << "};\n";
  decls << "static DLTensor tensor" << i << ";\n";
  if (!b->strides.empty()) {
    decls << "static int64_t strides" << i << "[" << b->strides.size() << "] = {";
    for (size_t k = 0; k < b->strides.size(); ++k) {
      const int64_t* s = as_const_int(b->strides[k]);
      if (!s) sim_error("the simulator needs constant strides for '" + b->name + "'");
      decls << (k ? ", " : "") << *s;
    }
    decls << "};\n";
  }
  setup << "  tensor" << i << ".data = " << storage << ";\n"
        << "  tensor" << i << ".device.device_type = kDLCPU;\n"
        << "  tensor" << i << ".device.device_id = 0;\n"
        << "  tensor" << i << ".ndim = " << a->shape.size() << ";\n"
        << "  tensor" << i << ".dtype.code = " << dl_type_code(b->dtype) << ";\n"
        << "  tensor" << i << ".dtype.bits = " << (b->dtype.is_bool() ? 8 : b->dtype.bits()) << ";\n"
        << "  tensor" << i << ".dtype.lanes = 1;\n"
        << "  tensor" << i << ".shape = shape" << i << ";\n"
        << "  tensor" << i << ".strides = " << (b->strides.empty() ? "NULL" : "strides" + std::to_string(i))
        << ";\n"
        << "  tensor" << i << ".byte_offset = 0;\n"
        << "  values[" << i << "].v_handle = &tensor" << i << ";\n"
        << "  codes[" << i << "] = kTVMDLTensorHandle;\n";
}

std::string generate_main(const HostCall& call, const std::vector<InterpArg>& args, size_t workspace_bytes) {
  const PrimFunc& f = call.signature;
  const std::string symbol = symbol_of(call);
  const bool packed = !call.build->target.unpacked_api;
  std::ostringstream decls, setup, io_in, io_out, direct_args, allocs, frees;
  for (size_t i = 0; i < f->params.size(); ++i) {
    std::string storage = "arg" + std::to_string(i);
    if (const Buffer& b = f->param_buffers[i]) {
      NDArray* const* slot = std::get_if<NDArray*>(&args[i]);
      if (!slot || !*slot) sim_error("parameter '" + b->name + "' is a buffer but was given a scalar");
      const NDArray* a = *slot;
      size_t bytes = a->data.size();
      // uint64_t storage keeps every element type aligned; under the sanitizers each
      // buffer is a heap block of exactly its bytes, so an overrun past it is reported.
      decls << "#ifdef TVM_CRT_SEPARATE_ALLOCATIONS\nstatic uint64_t* " << storage << ";\n#else\n"
            << "static uint64_t " << storage << "[" << (bytes + 7) / 8 + 1 << "];\n#endif\n";
      allocs << "  if (!(" << storage << " = (uint64_t*)exact_alloc(" << bytes << "))) return 6;\n";
      frees << "  free(" << storage << ");\n";
      io_in << "  if (load(dir, \"p" << i << ".bin\", " << storage << ", " << bytes << ")) return 4;\n";
      io_out << "  if (store(dir, \"p" << i << ".out\", " << storage << ", " << bytes << ")) return 4;\n";
      if (packed) {
        declare_packed_tensor(i, *a, b, decls, setup);
      } else {
        direct_args << (i ? ", " : "") << "(void*)" << storage;
      }
    } else if (packed) {
      bool is_float = f->params[i]->dtype.is_float();
      setup << "  values[" << i << "]." << (is_float ? "v_float64" : "v_int64") << " = "
            << scalar_literal(f->params[i], args[i]) << ";\n"
            << "  codes[" << i << "] = " << (is_float ? "kTVMArgFloat" : "kTVMArgInt") << ";\n";
    } else {
      direct_args << (i ? ", " : "") << scalar_literal(f->params[i], args[i]);
    }
  }
  std::ostringstream os;
  os << "/* Generated by the microtir host simulator: calls " << symbol << " once. */\n"
     << "#ifdef TVM_CRT_SEPARATE_ALLOCATIONS\n#define _POSIX_C_SOURCE 200112L /* posix_memalign */\n#endif\n"
     << "#include <stdbool.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n"
     << "#include <tvm/runtime/c_runtime_api.h>\n#include <tvm/runtime/crt/stack_allocator.h>\n\n";
  if (!packed) os << c_signature(symbol, call.build->lowered.module.lookup(call.function)) << ";\n\n";
  os << decls.str() << "static uint8_t workspace[" << workspace_bytes << "];\n"
     << kFileHelpers
     << "\nint main(int argc, char** argv) {\n  const char* dir;\n  int rc;\n";
  const size_t n = f->params.size();
  if (packed) {
    os << "  TVMValue values[" << (n ? n : 1) << "];\n  int codes[" << (n ? n : 1) << "];\n"
       << "  TVMValue ret;\n  int ret_code = 0;\n  TVMFunctionHandle fn = NULL;\n";
  }
  // A function of scalars alone reads and writes no files.
  os << "  if (argc != 2) return 5;\n  dir = argv[1];\n  (void)dir;\n  (void)load;\n  (void)store;\n"
     << "  if (TVMCrtWorkspaceInit(workspace, sizeof workspace) != 0) return 6;\n"
     << "#ifdef TVM_CRT_SEPARATE_ALLOCATIONS\n  (void)exact_alloc;\n" << allocs.str() << "#endif\n"
     << io_in.str() << setup.str();
  const bool returns = !f->ret_type.is_void();
  if (packed) {
    os << "  if (TVMFuncGetGlobal(\"" << symbol << "\", &fn) != 0) {\n"
       << "    fprintf(stderr, \"%s\\n\", TVMGetLastError());\n    return 3;\n  }\n"
       << "  rc = TVMFuncCall(fn, values, codes, " << n << ", &ret, &ret_code);\n";
    // A function with a return type puts its value in the packed return slot.
    if (returns) os << "  if (rc == 0) printf(\"return %lld\\n\", (long long)ret.v_int64);\n";
  } else if (returns) {
    // Unpacked, the value is the C return value itself; there is no error code.
    os << "  printf(\"return %lld\\n\", (long long)" << symbol << "(" << direct_args.str() << "));\n  rc = 0;\n";
  } else {
    os << "  rc = " << symbol << "(" << direct_args.str() << ");\n";
  }
  os << "  if (rc != 0) {\n    fprintf(stderr, \"" << symbol << " returned %d: %s\\n\", rc, TVMGetLastError());\n"
     << "    return 3;\n  }\n"
     << io_out.str() << "#ifdef TVM_CRT_SEPARATE_ALLOCATIONS\n" << frees.str() << "#endif\n"
     << "  return 0;\n}\n";
  return os.str();
}

}  // namespace

std::string compile_llvm_ir(const fs::path& ll, const fs::path& object, const HostSimOptions& options) {
  std::vector<std::string> cmd = {options.llvm_cc, "-O2", "-c", ll.string(), "-o", object.string()};
  if (run_process(cmd, object.string() + ".log") != 0) {
    sim_error(options.llvm_cc + " rejected the generated LLVM IR " + ll.filename().string() + ":\n" +
              read_text(object.string() + ".log"));
  }
  return object.string();
}

std::vector<std::string> crt_host_sources(const std::string& crt_dir) {
  std::vector<std::string> out;
  for (const char* src : {"src/runtime.c", "src/func_registry.c", "src/stack_allocator.c", "ports/host/platform.c"})
    out.push_back((fs::path(crt_dir) / src).string());
  return out;
}

std::string host_sanitizers() {
  if (const char* env = std::getenv("MICROTIR_HOST_SANITIZE")) {
    const std::string s = env;
    return s == "none" ? "" : s;
  }
#ifdef MICROTIR_HOST_SANITIZE_DEFAULT
  return MICROTIR_HOST_SANITIZE_DEFAULT;
#else
  return "";
#endif
}

std::vector<std::string> sanitizer_cflags(const std::string& sanitizers) {
  if (sanitizers.empty()) return {};
  for (char ch : sanitizers)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != ',' && ch != '-' && ch != '_')
      sim_error("MICROTIR_HOST_SANITIZE='" + sanitizers + "' is not a list of sanitizers (e.g. address,undefined)");
  // -O0 (after the build's -O2, so it wins): every check is there at any level, and a
  // sanitized model is built for one run: VWW's C compiles in 33 s of CPU at -O0, over
  // 116 s at -O1 and more at -O2.
  return {"-fsanitize=" + sanitizers, "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O0",
          "-DTVM_CRT_SEPARATE_ALLOCATIONS"};
}

std::string default_crt_dir() {
  if (const char* env = std::getenv("MICROTIR_CRT_DIR")) return env;
  return (fs::path(source_dir()) / "crt").string();
}

std::string sim_npu_dir() { return (fs::path(source_dir()) / "sim" / "npu").string(); }

std::optional<int64_t> run_on_host(const HostCall& call, const std::vector<InterpArg>& args,
                                   const HostSimOptions& options) {
  const PrimFunc& f = call.signature;
  if (args.size() != f->params.size()) {
    sim_error(call.function + " takes " + std::to_string(f->params.size()) + " arguments, got " +
              std::to_string(args.size()));
  }
  fs::path dir = options.work_dir;
  fs::create_directories(dir);
  fs::path crt = options.crt_dir.empty() ? default_crt_dir() : options.crt_dir;
  if (!fs::exists(crt / "include" / "tvm" / "runtime" / "c_runtime_api.h")) {
    sim_error("the C runtime is not at " + crt.string() + " (set MICROTIR_CRT_DIR)");
  }
  // The flags a careful firmware build uses: generated code must be warning-free.
  std::vector<std::string> flags = {options.cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic",
                                    "-I" + (crt / "include").string()};
  flags.insert(flags.end(), options.extra_cflags.begin(), options.extra_cflags.end());
  for (const auto& flag : sanitizer_cflags(options.sanitize)) flags.push_back(flag);
  std::vector<std::string> inputs;
  for (const auto& src : call.build->sources) {
    write_bytes(dir / src.path, src.text.data(), src.text.size());
    if (fs::path(src.path).extension() == ".ll") {
      inputs.push_back(compile_llvm_ir(dir / src.path, dir / (src.path + ".o"), options));
    } else {
      inputs.push_back((dir / src.path).string());
    }
  }
  std::string main_c = generate_main(call, args, options.workspace_bytes);
  write_bytes(dir / "main.c", main_c.data(), main_c.size());
  inputs.push_back((dir / "main.c").string());
  for (const auto& src : crt_host_sources(crt.string())) inputs.push_back(src);
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto* const* a = std::get_if<NDArray*>(&args[i])) {
      write_bytes(dir / ("p" + std::to_string(i) + ".bin"), (*a)->data.data(), (*a)->data.size());
    }
  }
  // Unit by unit: the runtime's objects, and a kernel's on other data, come from the cache.
  if (build_units_with_cache(flags, inputs, {"-lm"}, dir / "sim", dir / "build.log") != 0)
    sim_error("the host C compiler rejected the generated code:\n" + read_text(dir / "build.log"));
  int rc = run_process({(dir / "sim").string(), dir.string()}, dir / "run.log");
  if (rc != 0) sim_error("the compiled program failed (exit " + std::to_string(rc) + "): " + read_text(dir / "run.log"));
  std::optional<int64_t> returned;
  if (!call.signature->ret_type.is_void()) {
    const std::string log = read_text(dir / "run.log");
    const size_t at = log.rfind("return ");
    if (at == std::string::npos) sim_error("the compiled program printed no return value: " + log);
    returned = std::stoll(log.substr(at + 7));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto* const* a = std::get_if<NDArray*>(&args[i])) {
      std::string out = read_text(dir / ("p" + std::to_string(i) + ".out"));
      if (out.size() != (*a)->data.size()) sim_error("the compiled program wrote a short output");
      (*a)->data.assign(out.begin(), out.end());
    }
  }
  return returned;
}

}  // namespace mtir::sim
