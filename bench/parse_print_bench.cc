// Parses and prints a generated 10,000-line module; reports lines per second for each.
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>

#include "script/parser.h"
#include "script/printer.h"

namespace {

// About `lines` lines: functions of 50 lines each with loops, stores, arithmetic.
std::string generate_module(int lines) {
  std::ostringstream os;
  os << "@I.ir_module\nclass Module:\n";
  int written = 2, f = 0;
  while (written < lines) {
    os << "    @T.prim_func\n"
       << "    def f" << f++ << "(A: T.Buffer((64, 64), \"float32\"), B: T.Buffer((64, 64), \"float32\"), "
       << "C: T.Buffer((64,), \"int32\")):\n";
    written += 2;
    for (int k = 0; k < 16 && written < lines; ++k) {
      os << "        for i, j in T.grid(64, 64):\n"
         << "            B[i, j] = A[i, j] * T.float32(" << k << ".5) + T.max(A[j, i], T.float32(0))\n"
         << "            C[i] = T.truncdiv(C[i] + i * " << k + 1 << ", 3) % 7\n";
      written += 3;
    }
  }
  return os.str();
}

const std::string& module_text() {
  static const std::string text = generate_module(10000);
  return text;
}

int64_t count_lines(const std::string& s) {
  int64_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

void BM_Parse(benchmark::State& state) {
  const std::string& text = module_text();
  for (auto _ : state) {
    mtir::ParseResult r = mtir::parse_module(text, "bench.tir");
    if (!r.ok()) state.SkipWithError("generated module does not parse");
    benchmark::DoNotOptimize(r);
  }
  state.counters["lines_per_second"] =
      benchmark::Counter(static_cast<double>(count_lines(text)), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Parse)->Unit(benchmark::kMillisecond);

void BM_Print(benchmark::State& state) {
  mtir::IRModule m = mtir::parse_module_or_throw(module_text(), "bench.tir");
  int64_t lines = 0;
  for (auto _ : state) {
    std::string out = mtir::print_module(m);
    lines = count_lines(out);
    benchmark::DoNotOptimize(out);
  }
  state.counters["lines_per_second"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Print)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
