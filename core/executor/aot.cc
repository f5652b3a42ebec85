#include "executor/aot.h"

#include "support/names.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "executor/control_flow.h"
#include "executor/fuse_elementwise.h"
#include "executor/patch_calls.h"
#include "executor/patch_report.h"
#include "executor/patch_stages.h"
#include "ops/devices.h"

namespace mtir {

std::vector<Expr> shape_exprs(const TensorType& t) {
  std::vector<Expr> shape;
  for (int64_t d : t.shape) shape.push_back(IntImm(DataType::Int(32), d));
  return shape;
}

Expr whole(const Buffer& b) {
  std::vector<Expr> region = {BufferLoad(b, std::vector<Expr>(b->shape.size(), IntImm(DataType::Int(32), 0)))};
  region.insert(region.end(), b->shape.begin(), b->shape.end());
  return Call(DataType::Handle(), "tir_region", std::move(region));
}

namespace {


// Each node's C identifier (support/names.h): its kernel is tvmgen_<model>_<identifier>,
// its intermediate buffer in main <identifier>. Unique, so two names that sanitize alike
// ("a:0", "a_0") get two kernels.
using NodeIds = std::map<std::string, std::string>;
NodeIds node_identifiers(const Graph& g) {
  std::vector<std::string> names;
  for (const GraphNode& n : g.nodes) names.push_back(n.name);
  const std::vector<std::string> ids = unique_c_identifiers(names);
  NodeIds out;
  for (size_t i = 0; i < names.size(); ++i) out.emplace(names[i], ids[i]);
  return out;
}


// Nodes computed by one kernel: a producer and the elementwise consumers folded into it.
struct FusedGroup {
  std::vector<size_t> nodes;        // indices into g.nodes, in order
  std::vector<std::string> inputs;  // tensors the kernel reads, in parameter order
  std::string fname;
  PrimFunc func;
  // Positions in `inputs` that an elementwise op of the group reads: the kernel may
  // write its output over one of them (the memory planner checks the kernel first).
  std::vector<size_t> may_overwrite;
};

// A node that reads or updates state keeps its own kernel (nothing fuses into it, and it
// fuses into nothing) and is never a view: it runs where it is in node order, so it sees
// the state as the nodes before it left it (a resource variable's reads and assignments).
// Control flow (if, while and their further results) runs alone too.
bool touches_state(const Graph& g, const GraphNode& node) {
  if (is_control_flow(node) || node.op == "control_output") return true;
  const OpDef* op = find_op(node.op);
  if (op && !written_inputs(*op, node.attrs, node.inputs.size()).empty()) return true;
  for (const auto& in : node.inputs)
    if (g.state.count(in)) return true;
  return false;
}

OutputSharing sharing_of(const GraphNode& node) {
  const OpDef* op = find_op(node.op);
  return op && node.device.empty() ? op->sharing : OutputSharing::kNone;
}

// Grows a group from each node while its result has exactly one reader, is not a
// model output, and that reader's function fuses (see fuse_elementwise.h). The groups
// come back in the order of their last node, which keeps the calls topological.
// Nodes whose output is a view of their input (OutputSharing::kView: reshape, flatten):
// no kernel runs for them. A model output still gets its own bytes (the caller's
// buffer), and a device's node stays the device's call.
std::vector<bool> view_nodes(const Graph& g) {
  std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  std::vector<bool> view(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& node = g.nodes[i];
    const OpDef* op = find_op(node.op);
    view[i] = op && op->sharing == OutputSharing::kView && node.device.empty() && !outputs.count(node.name) &&
              node.inputs.size() == 1 && !touches_state(g, node);
  }
  return view;
}

std::vector<FusedGroup> group_nodes(const Graph& g, const std::vector<PrimFunc>& funcs, const std::string& prefix,
                                    const AotOptions& options, const std::vector<bool>& view,
                                    const std::vector<bool>& in_stage, const NodeIds& ids) {
  std::map<std::string, std::vector<size_t>> readers;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs) readers[in].push_back(i);
  std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  std::set<std::string> taken;
  for (size_t i = 0; i < g.nodes.size(); ++i) taken.insert(prefix + ids.at(g.nodes[i].name));

  std::vector<FusedGroup> groups;
  std::vector<bool> absorbed(view);
  for (size_t i = 0; i < g.nodes.size(); ++i) absorbed[i] = absorbed[i] || g.nodes[i].op == "control_output";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (absorbed[i]) continue;
    FusedGroup group{{i}, g.nodes[i].inputs, funcs[i] ? symbol_of("", funcs[i]) : std::string(), funcs[i], {}};
    if (sharing_of(g.nodes[i]) == OutputSharing::kElementwise)
      for (size_t k = 0; k < group.inputs.size(); ++k) group.may_overwrite.push_back(k);
    // Device kernels are the device library's: nothing fuses into them.
    // A layer of a patch stage runs band by band as the op's own kernel.
    while (options.fuse_elementwise && g.nodes[i].device.empty() && !in_stage[i] && !touches_state(g, g.nodes[i]) &&
           group.nodes.size() < options.max_fused_ops) {
      const std::string& result = g.nodes[group.nodes.back()].name;
      auto r = readers.find(result);
      if (outputs.count(result) || r == readers.end() || r->second.size() != 1 || absorbed[r->second[0]]) break;
      size_t j = r->second[0];
      const GraphNode& consumer = g.nodes[j];
      if (!consumer.device.empty() || in_stage[j] || touches_state(g, consumer)) break;
      size_t input = std::find(consumer.inputs.begin(), consumer.inputs.end(), result) - consumer.inputs.begin();
      std::string fname = prefix + "fused";
      for (size_t k : group.nodes) fname += "_" + ids.at(g.nodes[k].name);
      fname += "_" + ids.at(consumer.name);
      while (taken.count(fname)) fname += "_";
      PrimFunc fused = fuse_elementwise(fname, group.func, funcs[j], input);
      if (!fused) break;
      taken.insert(fname);
      group.func = fused;
      group.fname = fname;
      group.nodes.push_back(j);
      for (size_t k = 0; k < consumer.inputs.size(); ++k) {
        if (k == input) continue;
        if (sharing_of(consumer) == OutputSharing::kElementwise) group.may_overwrite.push_back(group.inputs.size());
        group.inputs.push_back(consumer.inputs[k]);
      }
      absorbed[j] = true;
    }
    groups.push_back(std::move(group));
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const FusedGroup& a, const FusedGroup& b) { return a.nodes.back() < b.nodes.back(); });
  return groups;
}

// The address of a whole buffer's first element, for a device call.
Expr address(const Buffer& b) {
  return Call(DataType::Handle(), "address_of",
              {BufferLoad(b, std::vector<Expr>(b->shape.size(), IntImm(DataType::Int(32), 0)))});
}

// One function per node: the op's kernel, or the device's for a placed node.
std::vector<PrimFunc> build_node_functions(const Graph& g, const std::string& prefix, const NodeIds& ids) {
  const auto types = g.all_types();
  std::vector<PrimFunc> funcs;
  for (const GraphNode& node : g.nodes) {
    const OpDef* op = find_op(node.op);
    if (!op) user_error(Span{}, "node '" + node.name + "': unknown op '" + node.op + "'");
    std::vector<TensorType> in_types;
    for (const auto& in : node.inputs) in_types.push_back(types.at(in));
    try {
      if (is_control_flow(node) || node.op == "control_output") {  // no kernel: executor/control_flow.h
        funcs.push_back(nullptr);
        continue;
      }
      if (!node.device.empty()) {
        funcs.push_back(build_device_function(prefix + node.device + "_" + ids.at(node.name), node.device,
                                              node.op, in_types, node.type, node.attrs));
        continue;
      }
      funcs.push_back(op->build(prefix + ids.at(node.name), in_types, node.type, node.attrs));
    } catch (const DiagnosticError& e) {
      Diagnostic d = e.diagnostics().at(0);
      d.message = "node '" + node.name + "' (" + node.op + "): " + d.message;
      throw DiagnosticError(d);
    }
  }
  return funcs;
}

// The parameters of main that are the model's inputs and outputs (not its weights), by
// position: the memory planner reuses an output's bytes before its result, an input's
// after its last read under -reuse-io-buffers=1. An input
// the model also returns as is must keep its bytes: it is in neither list.
void mark_io_params(const Graph& g, const std::vector<AotModule::Param>& params, PrimFuncNode* main) {
  std::string inputs, outputs;
  const std::set<std::string> returned(g.outputs.begin(), g.outputs.end());
  for (size_t i = 0; i < params.size(); ++i) {
    const AotModule::Param& p = params[i];
    if (p.role == AotModule::Role::kConstant || p.role == AotModule::Role::kState ||
        (p.role == AotModule::Role::kInput && returned.count(p.name)))
      continue;
    std::string& list = p.role == AotModule::Role::kInput ? inputs : outputs;
    list += (list.empty() ? "" : ",") + std::to_string(i);
  }
  main->attrs[kInputParamsAttr] = inputs;
  main->attrs[kOutputParamsAttr] = outputs;
}

}  // namespace

const AotModule::Param* find_io_param(const AotModule& aot, const std::string& name) {
  auto io = [](const AotModule::Param& p) {
    return p.role == AotModule::Role::kInput || p.role == AotModule::Role::kOutput;
  };
  for (const auto& p : aot.params)
    if (io(p) && p.name == name) return &p;
  for (const auto& p : aot.params)
    if (io(p) && p.c_name == name) return &p;
  return nullptr;
}

namespace {

// The AOT main of one graph, built step by step: its parameters, the device contexts,
// one call per fused group (or patch stage), then the allocations and attributes.
class AotMainBuilder {
 public:
  AotMainBuilder(const Graph& g, const AotOptions& options)
      : g_(g), options_(options), prefix_("tvmgen_" + g.name + "_"), main_(std::make_shared<PrimFuncNode>()) {
    aot_.module.name = g.name;
    aot_.module.attrs["model"] = g.name;
    aot_.main = prefix_ + "__tvm_main__";  // TVM's spelling: tvmgen_<model>___tvm_main__
  }

  AotModule build() {
    declare_params();
    node_ids_ = node_identifiers(g_);
    const std::vector<PrimFunc> funcs = build_node_functions(g_, prefix_, node_ids_);
    const std::vector<bool> view = view_nodes(g_);
    patches_ = options_.patch ? plan_patch_stages(g_, options_.patch_max_recomputed_percent, options_.patch_overlap,
                                                  options_.patch_residual, options_.workspace_budget,
                                                  options_.patch_carry)
                              : PatchPlan{};
    stage_of_.assign(g_.nodes.size(), -1);
    for (size_t s = 0; s < patches_.stages.size(); ++s)
      for (size_t i : stage_members(patches_.stages[s])) stage_of_[i] = static_cast<int>(s);
    std::vector<bool> in_stage(g_.nodes.size());
    for (size_t i = 0; i < g_.nodes.size(); ++i) in_stage[i] = stage_of_[i] >= 0;
    std::vector<FusedGroup> groups = group_nodes(g_, funcs, prefix_, options_, view, in_stage, node_ids_);
    for (const FusedGroup& group : groups) taken_.insert(group.fname);
    declare_device_contexts(groups);
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (view[i]) view_node_[g_.nodes[i].name] = i;
    for (size_t gi = 0; gi < groups.size(); ++gi) call_group(gi, groups[gi]);
    finish();
    return std::move(aot_);
  }

 private:
  // One C identifier per parameter, inputs and outputs first so that they keep the
  // plainer names (support/names.h).
  void declare_params() {
    std::vector<std::string> param_names;
    for (const auto& in : g_.inputs) param_names.push_back(in.first);
    for (const auto& out : g_.outputs) param_names.push_back(out);
    for (const auto& c : g_.constants) param_names.push_back(c.first);
    for (const auto& st : g_.state) param_names.push_back(st.first);
    const std::vector<std::string> ids = unique_c_identifiers(param_names);
    std::map<std::string, std::string> c_name_of;
    for (size_t i = 0; i < param_names.size(); ++i) c_name_of.emplace(param_names[i], ids[i]);
    auto add_param = [&](const std::string& name, const TensorType& t, AotModule::Role role) {
      const std::string& c_name = c_name_of.at(name);
      Buffer b = MakeBuffer(c_name, t.dtype, shape_exprs(t));
      main_->params.push_back(MakeVar(c_name, DataType::Handle()));
      main_->param_buffers.push_back(b);
      buffers_[name] = b;
      aot_.params.push_back({name, c_name, role, t});
    };
    for (const auto& [name, type] : g_.inputs) add_param(name, type, AotModule::Role::kInput);
    for (const auto& [name, array] : g_.constants) add_param(name, TensorType{array.dtype, array.shape}, AotModule::Role::kConstant);
    check_state_use(g_);
    for (const auto& [name, array] : g_.state) add_param(name, TensorType{array.dtype, array.shape}, AotModule::Role::kState);
    for (const auto& out : g_.outputs) {
      // The frontends give every output its own node (graph.cc refuses, onnx_graph.cc copies).
      MTIR_ICHECK(!buffers_.count(out), "model output '" + out + "' is an input, constant or state");
      add_param(out, g_.type_of(out), AotModule::Role::kOutput);
    }
  }

  // Each device instance's context is a handle parameter of main, after the outputs;
  // the hooks bracket its first and last use.
  void declare_device_contexts(const std::vector<FusedGroup>& groups) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string& device = g_.nodes[groups[i].nodes.front()].device;
      if (device.empty()) continue;
      if (!contexts_.count(device)) contexts_[device] = MakeVar(device, DataType::Handle()), uses_[device] = {i, i};
      uses_[device].second = i;
    }
    for (const auto& [device, var] : contexts_) {
      aot_.devices.push_back(device);
      main_->params.push_back(var);
      main_->param_buffers.push_back(nullptr);
    }
  }

  // `rc = call; if rc != 0: return rc`, with the call marked as a device call.
  Stmt device_call(const std::string& device, const std::string& symbol, std::vector<Expr> args) const {
    args.insert(args.begin(), StringImm(symbol));
    args.push_back(contexts_.at(device));
    Var rc = MakeVar("device_rc", DataType::Int(32));
    Expr call = Call(DataType::Int(32), "call_extern", std::move(args), Attrs{{kResourceHandleAttr, true}});
    Stmt fail = Evaluate(Call(DataType::Int(32), "tvm_return", {rc}));
    return LetStmt(rc, call, IfThenElse(Binary(ExprKind::NE, rc, IntImm(DataType::Int(32), 0)), fail));
  }
  Stmt hook(const std::string& device, const char* which) const {
    return device_call(device, device_kind_of(device).hook_prefix + which, {});
  }

  // A view node's result: the buffer of its input under the node's shape, created when
  // a kernel first reads it (its input's producer has run by then).
  Buffer buffer_of(const std::string& name) {
    auto it = buffers_.find(name);
    if (it != buffers_.end()) return it->second;
    const GraphNode& node = g_.nodes[view_node_.at(name)];
    Buffer base = buffer_of(node.inputs[0]);
    auto v = std::make_shared<BufferNode>(*MakeBuffer(node_ids_.at(name), node.type.dtype, shape_exprs(node.type)));
    v->data = base->data;
    v->elem_offset = base->elem_offset;
    buffers_[name] = v;
    views_.push_back(v);
    return v;
  }

  // The buffer of a group's result: a parameter, or a new allocation of main.
  const Buffer& result_buffer(const std::string& name, const TensorType& t) {
    if (!buffers_.count(name)) {
      Buffer b = MakeBuffer(node_ids_.at(name), t.dtype, shape_exprs(t));
      buffers_[name] = b;
      intermediates_.push_back(b);
    }
    return buffers_.at(name);
  }

  // One call per group, where its last node was: the kernel by call_tir, a device
  // kernel between its hooks, or a whole patch stage where its last layer was (the
  // stage's other layers have no call).
  void call_group(size_t gi, const FusedGroup& group) {
    const int stage = stage_of_[group.nodes.front()];
    if (stage >= 0) {
      const PatchStage& patch = patches_.stages[stage];
      const size_t last = patch.nodes.back();
      if (group.nodes.front() != last) return;
      const GraphNode& node = g_.nodes[patch.fused ? *patch.fused : last];  // a residual stage: the add's output
      const Buffer& result = result_buffer(node.name, node.type);
      const StageCallContext cx{g_, prefix_, [this](const std::string& name) { return buffer_of(name); },
                                taken_, aot_, intermediates_, node_ids_,
                                options_.patch_edge_rows, options_.band_loops};
      for (Stmt& call : patch_stage_calls(cx, patch, result)) calls_.push_back(std::move(call));
      return;
    }
    if (is_control_flow(g_.nodes[group.nodes.front()])) return call_control_flow(g_.nodes[group.nodes.front()]);
    PrimFunc func = group.func;
    // A tensor read twice (mul(x, x)) reaches the kernel through two parameters: the
    // kernel must not promise distinct buffers (restrict in C, noalias in LLVM).
    if (std::set<std::string>(group.inputs.begin(), group.inputs.end()).size() != group.inputs.size()) {
      auto shared = std::make_shared<PrimFuncNode>(*func);
      shared->attrs["tir.noalias"] = false;
      func = shared;
    }
    aot_.module.functions.emplace_back(group.fname, func);
    for (size_t k : group.nodes) aot_.kernel_of[g_.nodes[k].name] = group.fname;
    const GraphNode& last = g_.nodes[group.nodes.back()];
    const Buffer result = result_buffer(last.name, last.type);
    const std::string& device = g_.nodes[group.nodes.front()].device;
    if (!device.empty()) {
      std::vector<Expr> args;
      for (const auto& in : group.inputs) args.push_back(address(buffer_of(in)));
      args.push_back(address(result));
      if (uses_[device].first == gi) calls_.push_back(hook(device, "Activate"));
      calls_.push_back(hook(device, "Open"));
      calls_.push_back(device_call(device, group.fname, std::move(args)));
      calls_.push_back(hook(device, "Close"));
      if (uses_[device].second == gi) calls_.push_back(hook(device, "Deactivate"));
      return;
    }
    std::vector<Expr> args = {StringImm(group.fname)};
    for (const auto& in : group.inputs) args.push_back(whole(buffer_of(in)));
    args.push_back(whole(result));
    Attrs call_attrs;
    int64_t mask = 0;
    for (size_t k : group.may_overwrite) mask |= k < 62 ? int64_t{1} << k : 0;
    if (mask) call_attrs[kMayOverwriteAttr] = mask;
    calls_.push_back(Evaluate(Call(DataType::Int(32), "call_tir", std::move(args), std::move(call_attrs))));
  }

  // An if or while node: its results' buffers (the node's own, its control_output
  // nodes', scratch for a result nothing reads), then its statement.
  void call_control_flow(const GraphNode& node) {
    const std::vector<TensorType> types = control_results(g_, node);
    std::vector<Buffer> results = {result_buffer(node.name, node.type)};
    for (size_t k = 1; k < types.size(); ++k) {
      const GraphNode* reader = nullptr;
      for (const GraphNode& n : g_.nodes)
        if (n.op == "control_output" && n.inputs.at(0) == node.name && n.attrs.value("index", 0) == static_cast<int>(k))
          reader = &n;
      results.push_back(reader ? result_buffer(reader->name, reader->type)
                               : scratch(node_ids_.at(node.name) + "_cf_result" + std::to_string(k), types[k]));
    }
    ControlFlowContext cx{g_, options_, prefix_, aot_, compiled_functions_,
                          [this](const std::string& n) { return buffer_of(n); },
                          [&](const std::string& what, const TensorType& t) {
                            return scratch(node_ids_.at(node.name) + "_cf_" + what, t);
                          }};
    calls_.push_back(control_flow_stmt(cx, node, results));
    aot_.kernel_of[node.name] = compiled_functions_.at(node.attrs.at(node.op == "if" ? "then" : "body").get<std::string>());
  }

  // The C array each weight is linked as (c_interface.h): `tvmgen_<model>_<c_name>`, made
  // distinct from every function's symbol, since main may reference it directly.
  void mark_constant_symbols() {
    std::set<std::string> symbols = {aot_.main};
    for (const auto& [name, f] : aot_.module.functions) symbols.insert(symbol_of(name, f));
    std::string list;
    for (size_t i = 0; i < aot_.params.size(); ++i) {
      if (aot_.params[i].role != AotModule::Role::kConstant) continue;
      std::string symbol = "tvmgen_" + to_c_identifier(g_.name) + "_" + aot_.params[i].c_name;
      while (symbols.count(symbol)) symbol += "_";
      symbols.insert(symbol);
      list += (list.empty() ? "" : ",") + std::to_string(i) + ":" + symbol;
    }
    if (!list.empty()) main_->attrs[kConstantSymbolsAttr] = list;
  }

  Buffer scratch(const std::string& base, const TensorType& t) {
    std::string name = base;
    while (taken_.count(name)) name += "_";
    taken_.insert(name);
    Buffer b = MakeBuffer(name, t.dtype, shape_exprs(t));
    intermediates_.push_back(b);
    return b;
  }

  // The calls inside the allocations, main's attributes, and main into the module.
  void finish() {
    // A view read by no kernel (its only reader was another view that nothing reads)
    // needs no declaration; the others are declared inside the allocations they view.
    Stmt body = SeqStmt(calls_);
    for (size_t i = views_.size(); i-- > 0;) body = DeclBuffer(views_[i], body);
    for (size_t i = intermediates_.size(); i-- > 0;) body = Allocate(intermediates_[i], "global", body);
    main_->body = body;
    main_->attrs["global_symbol"] = aot_.main;
    mark_io_params(g_, aot_.params, main_.get());
    mark_constant_symbols();
    if (options_.workspace_budget > 0) main_->attrs[kWorkspaceBudgetAttr] = options_.workspace_budget;
    if (!patches_.stages.empty() || (options_.patch && options_.workspace_budget > 0)) {
      main_->attrs[kPatchWholeTensorBoundAttr] = patches_.whole_tensor_bound;
      main_->attrs[kPatchBoundAttr] = patches_.patched_bound;
      main_->attrs[kPatchLowestBoundAttr] = patches_.lowest_bound;
      main_->attrs[kPatchStagesAttr] = describe_patch_stages(g_, patches_);
      aot_.patch_plan = patch_plan_json(g_, patches_);
    }
    main_->attrs["tir.noalias"] = true;
    aot_.module.functions.emplace_back(aot_.main, main_);
  }

  const Graph& g_;
  const AotOptions& options_;
  const std::string prefix_;
  AotModule aot_;
  std::shared_ptr<PrimFuncNode> main_;
  std::map<std::string, Buffer> buffers_;  // graph name -> buffer of main
  NodeIds node_ids_;
  PatchPlan patches_;
  std::vector<int> stage_of_;  // node -> its patch stage, or -1
  std::set<std::string> taken_;  // function names
  std::map<std::string, Var> contexts_;  // device instance -> its context parameter
  std::map<std::string, std::pair<size_t, size_t>> uses_;  // instance -> first, last group
  std::map<std::string, size_t> view_node_;  // a view node's name -> its index
  std::vector<Stmt> calls_;
  std::vector<Buffer> intermediates_;
  std::vector<Buffer> views_;  // declared after the allocations, on their memory
  std::map<std::string, std::string> compiled_functions_;  // graph function -> its PrimFunc (control_flow.h)
};

}  // namespace

AotModule build_aot(const Graph& g, const AotOptions& options) { return AotMainBuilder(g, options).build(); }

}  // namespace mtir
