// Packed vs unpacked calling convention, side by side in one run, at -O2 on the host:
//  (a) a chain of 20 calls of a small kernel, the packed ones through DLTensors and
//      TVMValues built on the caller's stack (what generated callers do);
//  (b) one 64x64 float32 matmul.
// Both conventions live in one translation unit, so the C compiler can see through the
// packed wrapper and its checks. Prints the time per call of each and the ratio.
// Usage: calling_convention_bench [WORK_DIR]
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "codegen/c/codegen_c.h"
#include "codegen/c/metadata_module.h"
#include "driver/pipeline.h"
#include "script/parser.h"
#include "sim/host_sim.h"
#include "sim/process.h"

namespace fs = std::filesystem;
using namespace mtir;

namespace {

const char* kKernels = R"(
@I.ir_module
class Module:
    @T.prim_func
    def KIND_small(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        T.func_attr({"global_symbol": "KIND_small", "tir.noalias": True})
        for i in range(16):
            B[i] = A[i] * T.float32(1.0001) + T.float32(0.5)

    @T.prim_func
    def KIND_matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        T.func_attr({"global_symbol": "KIND_matmul", "tir.noalias": True})
        for i, j in T.grid(64, 64):
            C[i, j] = T.float32(0)
            for k in range(64):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]
)";

// The generated caller of the packed chain: 20 T.tvm_call_packed with tensors on its
// stack, lowered by LowerBuiltins into direct calls of the packed wrapper.
std::string chain_caller() {
  std::string s =
      "\n    @T.prim_func\n"
      "    def packed_chain(X: T.Buffer((16,), \"float32\"), Y: T.Buffer((16,), \"float32\")):\n";
  for (int k = 0; k < 20; ++k) {
    const char* a = k % 2 ? "Y" : "X";
    const char* b = k % 2 ? "X" : "Y";
    s += std::string("        T.evaluate(T.tvm_call_packed(\"packed_small\", T.tvm_make_tensor(") + a +
         ".data, \"float32\", 16), T.tvm_make_tensor(" + b + ".data, \"float32\", 16)))\n";
  }
  return s;
}

IRModule lowered(const std::string& kind, bool unpacked) {
  std::string text = kKernels + (unpacked ? std::string() : chain_caller());
  for (size_t p; (p = text.find("KIND")) != std::string::npos;) text.replace(p, 4, kind);
  return run_pipeline(parse_module_or_throw(text, kind + ".tir"), lowering_pipeline(unpacked)).module;
}

// The harness: times each variant in interleaved rounds and keeps the best round.
const char* kHarness = R"(
#include <stdio.h>
#include <time.h>

static float x[16], y[16], ma[64 * 64], mb[64 * 64], mc[64 * 64];
static int64_t mat_shape[2] = {64, 64};

static void fill(DLTensor* t, void* data, int ndim, int64_t* shape) {
  t->data = data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = ndim;
  t->dtype.code = kDLFloat;
  t->dtype.bits = 32;
  t->dtype.lanes = 1;
  t->shape = shape;
  t->strides = NULL;
  t->byte_offset = 0;
}

/* Generated: 20 packed calls with stack DLTensors (see packed_chain_compute above). */
static int chain_packed(void) { return packed_chain_compute(x, y); }

static int chain_unpacked(void) {
  int k;
  for (k = 0; k < 20; ++k)
    if (unpacked_small(k % 2 ? y : x, k % 2 ? x : y) != 0) return 1;
  return 0;
}

static int matmul_packed(void) {
  DLTensor a, b, c;
  TVMValue values[3], ret;
  int32_t codes[3] = {kTVMDLTensorHandle, kTVMDLTensorHandle, kTVMDLTensorHandle};
  int32_t ret_code;
  fill(&a, ma, 2, mat_shape);
  fill(&b, mb, 2, mat_shape);
  fill(&c, mc, 2, mat_shape);
  values[0].v_handle = &a;
  values[1].v_handle = &b;
  values[2].v_handle = &c;
  return packed_matmul(values, codes, 3, &ret, &ret_code, NULL);
}

static int matmul_unpacked(void) { return unpacked_matmul(ma, mb, mc); }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Best time per call over `rounds` rounds of `n` calls. */
static double best(int (*fn)(void), long n, int rounds) {
  double b = 1e30;
  int r;
  long i;
  for (r = 0; r < rounds; ++r) {
    double t0 = now();
    for (i = 0; i < n; ++i)
      if (fn() != 0) {
        fprintf(stderr, "call failed: %s\n", TVMGetLastError());
        return -1;
      }
    t0 = (now() - t0) / n;
    if (t0 < b) b = t0;
  }
  return b;
}

int main(void) {
  int i, round;
  double cp = 1e30, cu = 1e30, mp = 1e30, mu = 1e30;
  for (i = 0; i < 16; ++i) x[i] = (float)i * 0.01f;
  for (i = 0; i < 64 * 64; ++i) ma[i] = mb[i] = (float)(i % 7) * 0.1f;
  /* Interleaved, so drift in machine load hits both conventions alike. */
  for (round = 0; round < 5; ++round) {
    double t;
    if ((t = best(chain_packed, 20000, 3)) < cp) cp = t;
    if ((t = best(chain_unpacked, 20000, 3)) < cu) cu = t;
    if ((t = best(matmul_packed, 200, 3)) < mp) mp = t;
    if ((t = best(matmul_unpacked, 200, 3)) < mu) mu = t;
  }
  printf("chain of 20 small kernels: packed %.1f ns, unpacked %.1f ns, ratio %.3f\n", cp * 1e9, cu * 1e9, cp / cu);
  printf("64x64 matmul:              packed %.1f us, unpacked %.1f us, ratio %.3f\n", mp * 1e6, mu * 1e6, mp / mu);
  return 0;
}
)";

}  // namespace

int main(int argc, char** argv) {
  try {
    fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / ("microtir-ccbench-" + std::to_string(getpid()));
    fs::create_directories(dir);
    // One module holding both conventions: one translation unit for the compiler.
    IRModule both = lowered("packed", false);
    for (const auto& f : lowered("unpacked", true).functions) both.functions.push_back(f);
    std::ofstream(dir / "bench.c") << codegen_c(both) << kHarness;
    std::ofstream(dir / "registry.c") << codegen_c_metadata_module({"packed_small", "packed_matmul", "packed_chain"},
                                                                   "bench");
    const std::string crt = sim::default_crt_dir();
    std::vector<std::string> cmd = {"cc", "-std=c99", "-D_POSIX_C_SOURCE=199309L", "-O2", "-Wall", "-Wextra", "-Werror", "-I" + crt + "/include",
                                    (dir / "bench.c").string(), (dir / "registry.c").string()};
    for (const auto& c : sim::crt_host_sources(crt)) cmd.push_back(c);
    cmd.insert(cmd.end(), {"-lm", "-o", (dir / "bench").string()});
    if (sim::run_process(cmd, dir / "build.log") != 0) {
      std::cerr << sim::read_text(dir / "build.log");
      return 2;
    }
    int rc = sim::run_process({(dir / "bench").string()}, dir / "run.log");
    std::cout << sim::read_text(dir / "run.log");
    // What the packed path still pays at run time: the checks left in the generated
    // caller. LowerBuiltins resolves them at compile time when the callee is in the
    // module and the tensors have constant shapes; the wrapper keeps them for callers
    // from outside (TVMFuncCall), where nothing is known in advance.
    std::string source = sim::read_text(dir / "bench.c");
    size_t begin = source.find("static int32_t packed_chain_compute(float* X, float* Y) {");
    size_t end = source.find("\n}\n", begin);
    size_t runtime_checks = 0, packed_calls = 0;
    for (size_t p = begin; p < end && (p = source.find("mtir_set_error(", p)) < end; ++p) ++runtime_checks;
    for (size_t p = begin; p < end && (p = source.find("mtir_call_packed", p)) < end; ++p) ++packed_calls;
    std::cout << "what remains in the generated packed chain: " << runtime_checks << " run-time argument checks and "
              << packed_calls << " calls through the packed wrapper (all 20 calls were checked at compile time and "
              << "call the kernel directly); source: " << (dir / "bench.c").string() << "\n";
    return rc;
  } catch (const DiagnosticError& e) {
    std::cerr << render_all(e.diagnostics());
    return 1;
  }
}
