// The programs every backend runs (tests/programs/*.tir, the bundled example and the
// runnable text-format samples) and their deterministic inputs, shared by the C and
// LLVM backend tests.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "driver/build.h"
#include "interp/interpreter.h"
#include "ir/vector_buffers.h"
#include "sim/host_sim.h"
#include "support/ndarray.h"
#include "support/source_dir.h"

namespace mtir {
namespace testing_corpus {

namespace fs = std::filesystem;

inline std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// "# args: n=13 scale=0.5" lines give scalar arguments.
inline std::map<std::string, std::string> scalar_args(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# args:", 0) != 0) continue;
    std::istringstream words(line.substr(7));
    for (std::string w; words >> w;) {
      size_t eq = w.find('=');
      if (eq != std::string::npos) out[w.substr(0, eq)] = w.substr(eq + 1);
    }
  }
  return out;
}

// "# packed-only" programs use T.tvm_call_packed, which the unpacked API refuses.
inline bool packed_only(const std::string& text) { return text.find("\n# packed-only") != std::string::npos; }

inline void fill_random(NDArray* a, std::mt19937* rng) {
  for (int64_t i = 0; i < a->num_elements(); ++i) {
    DataType t = a->dtype;
    if (t.is_float()) {
      a->set_float(i, std::uniform_real_distribution<double>(-3, 3)(*rng));
    } else if (t.is_bool()) {
      a->set_int(i, (*rng)() & 1);
    } else if (t.bits() <= 16) {
      a->set_int(i, static_cast<int64_t>((*rng)()));  // wraps to the full range
    } else {
      // Wide integers: moderate values, never zero (programs divide by them).
      int64_t v = std::uniform_int_distribution<int64_t>(-1000, 999)(*rng);
      a->set_int(i, v >= 0 ? v + 1 : v);
    }
  }
}

struct Inputs {
  std::vector<NDArray> arrays;
  std::vector<InterpArg> args;
};

// An extent like `n + 1` from the scalar values and "# args:" sizes; false if it
// uses anything else.
inline bool eval_extent(const Expr& e, const std::map<const VarNode*, int64_t>& values,
                        const std::map<std::string, std::string>& scalars, int64_t* out) {
  if (const int64_t* c = as_const_int(e)) return *out = *c, true;
  if (const auto* v = as<VarNode>(e)) {
    if (values.count(v)) return *out = values.at(v), true;
    if (scalars.count(v->name)) return *out = std::stoll(scalars.at(v->name)), true;  // a T.match_buffer extent
    return false;
  }
  if (e->kind != ExprKind::Add && e->kind != ExprKind::Sub && e->kind != ExprKind::Mul) return false;
  const auto* b = static_cast<const BinaryNode*>(e.get());
  int64_t x, y;
  if (!eval_extent(b->a, values, scalars, &x) || !eval_extent(b->b, values, scalars, &y)) return false;
  *out = e->kind == ExprKind::Add ? x + y : e->kind == ExprKind::Sub ? x - y : x * y;
  return true;
}

inline Inputs make_inputs(const PrimFunc& signature, const std::map<std::string, std::string>& scalars, uint32_t seed) {
  // A buffer of vector type is an array with a dimension of lanes, as it runs.
  const PrimFunc f = expand_vector_buffers(signature);
  Inputs in;
  in.arrays.resize(f->params.size());
  in.args.resize(f->params.size());
  std::map<const VarNode*, int64_t> values;
  for (size_t i = 0; i < f->params.size(); ++i) {
    if (f->param_buffers[i]) continue;
    const Var& p = f->params[i];
    auto it = scalars.find(p->name);
    if (it == scalars.end()) throw std::runtime_error("no '# args:' value for scalar '" + p->name + "'");
    if (p->dtype.is_float()) {
      in.args[i] = std::stod(it->second);
    } else {
      values[p.get()] = std::stoll(it->second);
      in.args[i] = values[p.get()];
    }
  }
  std::mt19937 rng(seed);
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Buffer& b = f->param_buffers[i];
    if (!b) continue;
    std::vector<int64_t> shape;
    for (const auto& e : b->shape) {
      int64_t extent;
      if (!eval_extent(e, values, scalars, &extent))
        throw std::runtime_error("no size for the shape of '" + b->name + "': add it to '# args:'");
      shape.push_back(extent);
    }
    in.arrays[i] = NDArray::zeros(b->dtype, shape);
    fill_random(&in.arrays[i], &rng);
  }
  for (size_t i = 0; i < f->params.size(); ++i)
    if (f->param_buffers[i]) in.args[i] = &in.arrays[i];
  return in;
}

inline std::vector<fs::path> corpus() {
  std::vector<fs::path> files = {fs::path(mtir::source_dir()) / "examples" / "matmul.tir"};
  for (const auto& e : fs::directory_iterator(fs::path(mtir::source_dir()) / "tests" / "programs"))
    if (e.path().extension() == ".tir") files.push_back(e.path());
  // The text-format programs that run (they say so with an "# args:" line).
  for (const auto& e : fs::directory_iterator(fs::path(mtir::source_dir()) / "tests" / "script" / "valid"))
    if (e.path().extension() == ".tir" && read(e.path()).find("# args:") != std::string::npos) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Function `name` of `built` run on the host on the inputs make_inputs gives `f` (seed
// 1234): the arrays afterwards. `tag` names the temporary build folder.
inline Inputs run_built_on_host(const BuildResult& built, const std::string& name, const PrimFunc& f,
                                const std::map<std::string, std::string>& scalars, const std::string& tag) {
  Inputs in = make_inputs(f, scalars, 1234);
  sim::HostSimOptions options;
  options.work_dir = (fs::temp_directory_path() / ("microtir-" + tag + "-" + std::to_string(getpid()))).string();
  sim::run_on_host({&built, name, expand_vector_buffers(f)}, in.args, options);
  fs::remove_all(options.work_dir);
  return in;
}

}  // namespace testing_corpus
}  // namespace mtir
