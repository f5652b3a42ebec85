// The AOT executor's IF and WHILE (executor/control_flow.h). TFLM's semantics
// (micro/kernels/if.cc, while.cc), with the copies it needs and no others:
//
//   if:    if cond[0]: then(args..., results...)  else: else(args..., results...)
//   while: results = inputs (a copy kernel per tensor: the inputs stay intact)
//          cond_fn(results..., c)
//          while c[0]: body(results..., next...); results = next; cond_fn(results..., c)
//
// The body writes `next`, not `results`: its kernels may write an output before they
// have read every input. The memory planner sees the IfThenElse or While as one step of
// main, so every buffer it touches stays live through the whole loop.
#include "executor/control_flow.h"

#include "ir/attrs.h"
#include "support/names.h"

namespace mtir {
namespace {

const DataType kI32 = DataType::Int(32);

Stmt call_tir(const std::string& fname, const std::vector<Buffer>& buffers) {
  std::vector<Expr> args = {StringImm(fname)};
  for (const Buffer& b : buffers) args.push_back(whole(b));
  return Evaluate(Call(kI32, "call_tir", std::move(args)));
}

Expr first_element(const Buffer& b) {
  return BufferLoad(b, std::vector<Expr>(b->shape.size(), IntImm(kI32, 0)));
}

std::vector<size_t> positions(const GraphNode& node, const std::string& key) {
  std::vector<size_t> out;
  for (int64_t k : node.attrs.at(key).get<std::vector<int64_t>>()) out.push_back(static_cast<size_t>(k));
  return out;
}

[[noreturn]] void refuse(const GraphNode& node, const std::string& what) {
  user_error({}, "node '" + node.name + "' (" + node.op + "): " + what);
}

// Compiles graph function `name` once into a PrimFunc of the module, named
// tvmgen_<model>_<name>: its inputs, then its outputs, as buffer parameters.
std::string compile_function(ControlFlowContext& cx, const GraphNode& node, const std::string& name) {
  auto done = cx.compiled.find(name);
  if (done != cx.compiled.end()) return done->second;
  const Graph* f = cx.g.function(name);
  if (!f) refuse(node, "the graph has no function '" + name + "'");
  if (!f->constants.empty() || !f->state.empty())
    refuse(node, "function '" + name + "' has constants or state of its own (they are the caller's inputs)");
  Graph sub = *f;
  sub.name = cx.g.name + "_" + name;
  sub.functions = cx.g.functions;  // the functions its own control flow calls
  AotModule built = build_aot(sub, cx.options);
  if (built.params.size() != sub.inputs.size() + sub.outputs.size())
    refuse(node, "function '" + name + "' returns one of its inputs, or one tensor twice (each result needs its "
                 "own buffer: copy it)");
  const std::string fname = "tvmgen_" + sub.name;
  for (auto& [fn, func] : built.module.functions) {
    std::string target = fn == built.main ? fname : fn;
    if (cx.aot.module.lookup(target))
      refuse(node, "function '" + name + "' compiles to '" + target + "', a name the model already uses");
    if (fn == built.main) {
      auto m = std::make_shared<PrimFuncNode>(*func);
      m->attrs.erase(kInputParamsAttr);  // its inputs are the caller's tensors: never scratch memory
      m->attrs.erase(kOutputParamsAttr);
      m->attrs["global_symbol"] = fname;
      m->attrs[kSubgraphFunctionAttr] = true;
      func = m;
    }
    cx.aot.module.functions.emplace_back(target, func);
  }
  cx.compiled[name] = fname;
  return fname;
}

// The buffers a function takes: the node inputs at the positions attribute `key` lists,
// where a loop-carried input (a position below carried.size()) reads its current value.
std::vector<Buffer> args_of(ControlFlowContext& cx, const GraphNode& node, const std::string& key,
                            const std::vector<Buffer>& carried) {
  std::vector<Buffer> args;
  for (size_t k : positions(node, key)) args.push_back(k < carried.size() ? carried[k] : cx.buffer_of(node.inputs[k]));
  return args;
}

std::vector<Buffer> operator+(std::vector<Buffer> a, const std::vector<Buffer>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A kernel copying one tensor of type `t`, once per type.
std::string copy_function(ControlFlowContext& cx, const TensorType& t) {
  std::string fname = cx.prefix + "copy_" + t.dtype.str();
  for (int64_t d : t.shape) fname += "_" + std::to_string(d);
  if (!cx.aot.module.lookup(fname))
    cx.aot.module.functions.emplace_back(fname, find_op("reshape")->build(fname, {t}, t, {{"newshape", t.shape}}));
  return fname;
}

Stmt if_stmt(ControlFlowContext& cx, const GraphNode& node, const std::vector<Buffer>& results) {
  const std::string then_fn = compile_function(cx, node, node.attrs.at("then").get<std::string>());
  const std::string else_fn = compile_function(cx, node, node.attrs.at("else").get<std::string>());
  Stmt then_call = call_tir(then_fn, args_of(cx, node, "then_args", {}) + results);
  Stmt else_call = call_tir(else_fn, args_of(cx, node, "else_args", {}) + results);
  return IfThenElse(first_element(cx.buffer_of(node.inputs[0])), then_call, else_call);
}

Stmt while_stmt(ControlFlowContext& cx, const GraphNode& node, const std::vector<Buffer>& results) {
  const std::string cond_name = node.attrs.at("cond").get<std::string>();
  const std::string cond_fn = compile_function(cx, node, cond_name);
  const std::string body_fn = compile_function(cx, node, node.attrs.at("body").get<std::string>());
  const Graph& cond_graph = *cx.g.function(cond_name);
  if (cond_graph.outputs.size() != 1) refuse(node, "its cond function must return one tensor, a bool");
  const TensorType flag_type = cond_graph.type_of(cond_graph.outputs[0]);
  if (flag_type.dtype != DataType::Bool()) refuse(node, "its cond function returns " + flag_type.str() + ", not bool");
  const Buffer flag = cx.scratch("cond", flag_type);
  std::vector<Buffer> next;
  std::vector<Stmt> start, step;
  const std::vector<TensorType> types = control_results(cx.g, node);
  for (size_t k = 0; k < results.size(); ++k) {
    next.push_back(cx.scratch("next" + std::to_string(k), types[k]));
    start.push_back(call_tir(copy_function(cx, types[k]), {cx.buffer_of(node.inputs[k]), results[k]}));
  }
  Stmt test = call_tir(cond_fn, args_of(cx, node, "cond_args", results) + std::vector<Buffer>{flag});
  step.push_back(call_tir(body_fn, args_of(cx, node, "body_args", results) + next));
  for (size_t k = 0; k < results.size(); ++k)
    step.push_back(call_tir(copy_function(cx, types[k]), {next[k], results[k]}));
  step.push_back(test);
  start.push_back(test);
  start.push_back(While(first_element(flag), SeqStmt(step)));
  return SeqStmt(start);
}

}  // namespace

bool is_control_flow(const GraphNode& node) { return node.op == "if" || node.op == "while"; }

std::vector<TensorType> control_results(const Graph& g, const GraphNode& node) {
  std::vector<TensorType> out;
  if (node.op == "while") {
    const size_t carried = node.attrs.at("carried").get<size_t>();
    for (size_t k = 0; k < carried; ++k) out.push_back(g.type_of(node.inputs[k]));
    return out;
  }
  for (const auto& t : node.attrs.at("outputs"))
    out.push_back(TensorType{*DataType::parse(t.at("dtype").get<std::string>()), t.at("shape").get<std::vector<int64_t>>()});
  return out;
}

Stmt control_flow_stmt(ControlFlowContext& cx, const GraphNode& node, const std::vector<Buffer>& results) {
  return node.op == "if" ? if_stmt(cx, node, results) : while_stmt(cx, node, results);
}

}  // namespace mtir
