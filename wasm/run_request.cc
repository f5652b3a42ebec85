#include "run_request.h"

#include <set>

#include "interp/interpreter.h"
#include "ir/visitor.h"
#include "support/diagnostic.h"

namespace mtir::wasm {
namespace {

using nlohmann::json;

constexpr int64_t kMaxReturnedElements = 4096;  // per buffer: the page shows a prefix
constexpr int64_t kMaxSteps = int64_t{1} << 28;  // a runaway loop is an error, not a hang

// xorshift64*: the same numbers on every platform (no library distributions).
struct Random {
  uint64_t s;
  explicit Random(uint64_t seed) : s(seed ? seed : 0x9e3779b97f4a7c15ull) {}
  double uniform() {  // [-1, 1)
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return static_cast<double>((s * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
};

void fill_random(NDArray& a, Random& r) {
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double u = r.uniform();
    if (a.dtype.is_float()) a.set_float(i, u);
    else if (a.dtype.is_bool()) a.set_int(i, u >= 0);
    else a.set_int(i, static_cast<int64_t>(u * 8));  // small integers: no overflow surprises
  }
}

void fill_given(NDArray& a, const json& values, const std::string& name) {
  if (!values.is_array() || static_cast<int64_t>(values.size()) != a.num_elements())
    user_error({}, "run: input '" + name + "' needs a flat list of " + std::to_string(a.num_elements()) + " numbers");
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const json& v = values[static_cast<size_t>(i)];
    if (!v.is_number() && !v.is_boolean()) user_error({}, "run: input '" + name + "' holds a non-number");
    if (a.dtype.is_float()) a.set_float(i, v.get<double>());
    else a.set_int(i, v.is_boolean() ? v.get<bool>() : v.get<int64_t>());
  }
}

json buffer_json(const std::string& name, const std::string& role, const NDArray& a) {
  json values = json::array();
  const int64_t n = std::min(a.num_elements(), kMaxReturnedElements);
  for (int64_t i = 0; i < n; ++i) {
    if (a.dtype.is_float()) values.push_back(a.get_float(i));
    else values.push_back(a.get_int(i));
  }
  return {{"name", name}, {"role", role}, {"dtype", a.dtype.str()}, {"shape", a.shape}, {"values", values},
          {"truncated", a.num_elements() > n}};
}

const json& object_or_empty(const json& run, const char* key) {
  static const json empty = json::object();
  auto it = run.find(key);
  if (it == run.end()) return empty;
  if (!it->is_object()) user_error({}, std::string("run: '") + key + "' must be an object");
  return *it;
}

uint64_t seed_of(const json& run) {
  auto it = run.find("seed");
  return it != run.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 1;
}

// The data pointers a function stores through: its parameters that are outputs.
class StoredBuffers : public Visitor {
 public:
  std::set<const VarNode*> data;

 protected:
  void visit_BufferStore(const BufferStoreNode* op) override {
    data.insert(op->buffer->data.get());
    Visitor::visit_BufferStore(op);
  }
};

}  // namespace

json run_tir(const IRModule& m, const json& run) {
  if (!run.is_object()) user_error({}, "run: expected an object");
  if (m.functions.empty()) user_error({}, "run: the module has no function");
  std::string fname = m.functions[0].first;
  if (auto it = run.find("function"); it != run.end() && it->is_string()) fname = it->get<std::string>();
  PrimFunc f = m.lookup(fname);
  if (!f) user_error({}, "run: no function '" + fname + "' in the module");
  const json& inputs = object_or_empty(run, "inputs");
  const json& scalars = object_or_empty(run, "scalars");
  Random rng(seed_of(run));
  std::map<const VarNode*, int64_t> scalar_values;
  std::vector<InterpArg> args(f->params.size());
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Var& p = f->params[i];
    if (f->param_buffers[i]) continue;
    auto it = scalars.find(p->name);
    if (it == scalars.end() || !it->is_number()) user_error({}, "run: scalar parameter '" + p->name + "' of '" + fname + "' needs a value");
    if (p->dtype.is_float()) {
      args[i] = it->get<double>();
    } else {
      args[i] = it->get<int64_t>();
      scalar_values[p.get()] = it->get<int64_t>();
    }
  }
  std::vector<NDArray> arrays(f->params.size());
  std::vector<std::string> roles(f->params.size());
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Buffer& b = f->param_buffers[i];
    if (!b) continue;
    std::vector<int64_t> shape;
    for (const auto& e : b->shape) {
      if (const int64_t* v = as_const_int(e)) shape.push_back(*v);
      else if (const auto* var = as<VarNode>(e); var && scalar_values.count(var)) shape.push_back(scalar_values[var]);
      else user_error({}, "run: buffer '" + b->name + "' has a shape that is not constant and not a given scalar");
    }
    arrays[i] = NDArray::zeros(b->dtype, shape);
    if (auto it = inputs.find(b->name); it != inputs.end()) {
      fill_given(arrays[i], *it, b->name);
      roles[i] = "given";
    } else {
      fill_random(arrays[i], rng);
      roles[i] = "random";
    }
    args[i] = &arrays[i];
  }
  // A TIR function does not say which buffers are outputs: those it stores to, or (through
  // the functions it calls) whose contents the run changed, are; `filled` keeps how they
  // started.
  StoredBuffers stored;
  stored.visit_func(f);
  std::vector<std::vector<uint8_t>> before(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) before[i] = arrays[i].data;
  InterpOptions options;
  options.max_steps = kMaxSteps;
  interpret(m, fname, args, options);
  json buffers = json::array();
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Buffer& b = f->param_buffers[i];
    if (!b) continue;
    const bool written = stored.data.count(b->data.get()) > 0 || arrays[i].data != before[i];
    json j = buffer_json(b->name, written ? "output" : roles[i], arrays[i]);
    if (written) j["filled"] = roles[i];
    buffers.push_back(std::move(j));
  }
  return {{"function", fname}, {"buffers", buffers}};
}

json run_model(const LoadedModel& model, const json& run) {
  if (!run.is_object()) user_error({}, "run: expected an object");
  const IRModule& m = model.aot.module;
  PrimFunc f = m.lookup(model.aot.main);
  const json& inputs = object_or_empty(run, "inputs");
  Random rng(seed_of(run));
  std::vector<NDArray> arrays(f->params.size());
  std::vector<InterpArg> args(f->params.size());
  std::vector<std::string> roles(f->params.size());
  for (size_t i = 0; i < model.aot.params.size() && i < f->params.size(); ++i) {
    const auto& p = model.aot.params[i];
    const Buffer& b = f->param_buffers[i];
    if (p.role == AotModule::Role::kConstant) {
      arrays[i] = model.graph.constants.at(p.name);
      roles[i] = "constant";
    } else if (p.role == AotModule::Role::kState) {
      arrays[i] = model.graph.state.at(p.name);  // one run from the initial state
      roles[i] = "state";
    } else {
      std::vector<int64_t> shape;
      for (const auto& e : b->shape) {
        const int64_t* v = as_const_int(e);
        MTIR_ICHECK(v, "a model's tensors have constant shapes");
        shape.push_back(*v);
      }
      arrays[i] = NDArray::zeros(b->dtype, shape);
      if (p.role == AotModule::Role::kOutput) {
        roles[i] = "output";
      } else if (auto it = inputs.find(p.name); it != inputs.end()) {
        fill_given(arrays[i], *it, p.name);
        roles[i] = "given";
      } else {
        fill_random(arrays[i], rng);
        roles[i] = "random";
      }
    }
    args[i] = &arrays[i];
  }
  InterpOptions options;
  options.max_steps = kMaxSteps;
  interpret(m, model.aot.main, args, options);
  json buffers = json::array();
  for (size_t i = 0; i < model.aot.params.size(); ++i) {
    if (roles[i] == "constant") continue;
    json b = buffer_json(model.aot.params[i].name, roles[i], arrays[i]);
    b["identifier"] = model.aot.params[i].c_name;  // the C member, the wasm module's input:/output: export
    buffers.push_back(std::move(b));
  }
  return {{"function", model.aot.main}, {"buffers", buffers}};
}

}  // namespace mtir::wasm
