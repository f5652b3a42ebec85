#include "executor/aot.h"

#include "support/names.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "executor/fuse_elementwise.h"
#include "executor/patch_stages.h"
#include "ops/devices.h"

namespace mtir {
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

std::vector<Expr> shape_exprs(const TensorType& t) {
  std::vector<Expr> shape;
  for (int64_t d : t.shape) shape.push_back(IntImm(DataType::Int(32), d));
  return shape;
}

// A whole-buffer argument of call_tir.
Expr whole(const Buffer& b) {
  std::vector<Expr> region = {BufferLoad(b, std::vector<Expr>(b->shape.size(), IntImm(DataType::Int(32), 0)))};
  region.insert(region.end(), b->shape.begin(), b->shape.end());
  return Call(DataType::Handle(), "tir_region", std::move(region));
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
bool touches_state(const Graph& g, const GraphNode& node) {
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
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (absorbed[i]) continue;
    FusedGroup group{{i}, g.nodes[i].inputs, symbol_of("", funcs[i]), funcs[i], {}};
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

// Rows [row, row + rows) of a one-image NHWC buffer: a contiguous region.
Expr rows_of(const Buffer& b, int64_t row, int64_t rows) {
  std::vector<Expr> start(4, IntImm(DataType::Int(32), 0));
  start[1] = IntImm(DataType::Int(32), row);
  std::vector<Expr> region;
  region.push_back(BufferLoad(b, std::move(start)));
  region.push_back(b->shape[0]);
  region.push_back(IntImm(DataType::Int(32), rows));
  region.push_back(b->shape[2]);
  region.push_back(b->shape[3]);
  return Call(DataType::Handle(), "tir_region", std::move(region));
}

// The calls of a patch stage (patch_stages.h), band by band and layer by layer: a layer
// reads its band of the stage's input or the previous layer's band buffer and writes its
// own band buffer (one per band and layer, so the planner overlaps them) or its rows of
// the stage's output `result`. Each distinct band geometry of a layer is one kernel,
// the op's own on the band's shapes and padding.
std::vector<Stmt> patch_stage_calls(const Graph& g, const PatchStage& stage, const std::string& prefix,
                                    const std::function<Buffer(const std::string&)>& buffer_of, const Buffer& result,
                                    std::set<std::string>& taken, AotModule& aot, std::vector<Buffer>& intermediates,
                                    const NodeIds& ids) {
  const auto types = g.all_types();
  std::map<std::tuple<size_t, int64_t, int64_t, int64_t>, std::string> kernels;
  std::map<size_t, int> variants;  // per layer
  std::vector<Stmt> calls;
  for (size_t b = 0; b < stage.bands.size(); ++b) {
    Buffer previous;
    for (size_t l = 0; l < stage.nodes.size(); ++l) {
      const GraphNode& node = g.nodes[stage.nodes[l]];
      const PatchLayer& band = stage.bands[b][l];
      std::string& fname = kernels[{l, band.in_rows, band.pad_top, band.pad_bottom}];
      std::vector<TensorType> in_types;
      for (const auto& in : node.inputs) in_types.push_back(types.at(in));
      in_types[0].shape[1] = band.in_rows;
      TensorType out_type = node.type;
      out_type.shape[1] = band.out_rows;
      if (fname.empty()) {
        fname = prefix + ids.at(node.name) + "_band" + std::to_string(variants[l]++);
        while (taken.count(fname)) fname += "_";
        taken.insert(fname);
        nlohmann::json attrs = node.attrs;
        std::vector<int64_t> padding = {0, 0, 0, 0};
        if (attrs.contains("padding")) padding = attrs["padding"].get<std::vector<int64_t>>();
        padding[0] = band.pad_top, padding[2] = band.pad_bottom;
        attrs["padding"] = padding;
        try {
          aot.module.functions.emplace_back(fname, find_op(node.op)->build(fname, in_types, out_type, attrs));
        } catch (const DiagnosticError& e) {
          Diagnostic d = e.diagnostics().at(0);
          d.message = "node '" + node.name + "' (" + node.op + "), band " + std::to_string(b) + ": " + d.message;
          throw DiagnosticError(d);
        }
        if (!aot.kernel_of.count(node.name)) aot.kernel_of[node.name] = fname;
        aot.band_kernel_of[fname] = node.name;
      }
      std::vector<Expr> args;
      args.reserve(node.inputs.size() + 2);
      args.push_back(StringImm(fname));
      args.push_back(l == 0 ? rows_of(buffer_of(node.inputs[0]), band.in_begin, band.in_rows) : whole(previous));
      for (size_t k = 1; k < node.inputs.size(); ++k) args.push_back(whole(buffer_of(node.inputs[k])));
      if (l + 1 == stage.nodes.size()) {
        args.push_back(rows_of(result, band.out_begin, band.out_rows));
      } else {
        previous = MakeBuffer(ids.at(node.name) + "_band" + std::to_string(b), out_type.dtype,
                              shape_exprs(out_type));
        intermediates.push_back(previous);
        args.push_back(whole(previous));
      }
      calls.push_back(Evaluate(Call(DataType::Int(32), "call_tir", std::move(args))));
    }
  }
  return calls;
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
// position: the memory planner may reuse their bytes under -reuse-io-buffers=1. An input
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

AotModule build_aot(const Graph& g, const AotOptions& options) {
  AotModule aot;
  const std::string prefix = "tvmgen_" + g.name + "_";
  aot.module.name = g.name;
  aot.module.attrs["model"] = g.name;
  aot.main = prefix + "__tvm_main__";  // TVM's spelling: tvmgen_<model>___tvm_main__

  auto main = std::make_shared<PrimFuncNode>();
  std::map<std::string, Buffer> buffers;  // graph name -> buffer of main
  // One C identifier per parameter, inputs and outputs first so that they keep the
  // plainer names (support/names.h).
  std::vector<std::string> param_names;
  for (const auto& in : g.inputs) param_names.push_back(in.first);
  for (const auto& out : g.outputs) param_names.push_back(out);
  for (const auto& c : g.constants) param_names.push_back(c.first);
  for (const auto& st : g.state) param_names.push_back(st.first);
  const std::vector<std::string> ids = unique_c_identifiers(param_names);
  std::map<std::string, std::string> c_name_of;
  for (size_t i = 0; i < param_names.size(); ++i) c_name_of.emplace(param_names[i], ids[i]);
  auto add_param = [&](const std::string& name, const TensorType& t, AotModule::Role role) {
    const std::string& c_name = c_name_of.at(name);
    Buffer b = MakeBuffer(c_name, t.dtype, shape_exprs(t));
    main->params.push_back(MakeVar(c_name, DataType::Handle()));
    main->param_buffers.push_back(b);
    buffers[name] = b;
    aot.params.push_back({name, c_name, role, t});
  };
  for (const auto& [name, type] : g.inputs) add_param(name, type, AotModule::Role::kInput);
  for (const auto& [name, array] : g.constants) add_param(name, TensorType{array.dtype, array.shape}, AotModule::Role::kConstant);
  check_state_use(g);
  for (const auto& [name, array] : g.state) add_param(name, TensorType{array.dtype, array.shape}, AotModule::Role::kState);
  for (const auto& out : g.outputs) {
    if (buffers.count(out)) continue;  // an input or constant returned as is: already a parameter
    add_param(out, g.type_of(out), AotModule::Role::kOutput);
  }

  const NodeIds node_ids = node_identifiers(g);
  const std::vector<PrimFunc> funcs = build_node_functions(g, prefix, node_ids);
  const std::vector<bool> view = view_nodes(g);
  const PatchPlan patches = options.patch ? plan_patch_stages(g, options.patch_max_recomputed_percent) : PatchPlan{};
  std::vector<int> stage_of(g.nodes.size(), -1);
  for (size_t s = 0; s < patches.stages.size(); ++s)
    for (size_t i : patches.stages[s].nodes) stage_of[i] = static_cast<int>(s);
  std::vector<bool> in_stage(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) in_stage[i] = stage_of[i] >= 0;
  std::vector<FusedGroup> groups = group_nodes(g, funcs, prefix, options, view, in_stage, node_ids);
  std::set<std::string> taken;  // function names
  for (const FusedGroup& group : groups) taken.insert(group.fname);

  // Each device instance's context is a handle parameter of main, after the outputs;
  // the hooks bracket its first and last use.
  std::map<std::string, Var> contexts;
  std::map<std::string, std::pair<size_t, size_t>> uses;  // instance -> first, last group
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string& device = g.nodes[groups[i].nodes.front()].device;
    if (device.empty()) continue;
    if (!contexts.count(device)) contexts[device] = MakeVar(device, DataType::Handle()), uses[device] = {i, i};
    uses[device].second = i;
  }
  for (const auto& [device, var] : contexts) {
    aot.devices.push_back(device);
    main->params.push_back(var);
    main->param_buffers.push_back(nullptr);
  }
  // `rc = call; if rc != 0: return rc`, with the call marked as a device call.
  auto device_call = [&](const std::string& device, const std::string& symbol, std::vector<Expr> args) {
    args.insert(args.begin(), StringImm(symbol));
    args.push_back(contexts.at(device));
    Var rc = MakeVar("device_rc", DataType::Int(32));
    Expr call = Call(DataType::Int(32), "call_extern", std::move(args), Attrs{{kResourceHandleAttr, true}});
    Stmt fail = Evaluate(Call(DataType::Int(32), "tvm_return", {rc}));
    return LetStmt(rc, call, IfThenElse(Binary(ExprKind::NE, rc, IntImm(DataType::Int(32), 0)), fail));
  };
  auto hook = [&](const std::string& device, const char* which) {
    return device_call(device, device_kind_of(device).hook_prefix + which, {});
  };

  // One call per group, where its last node was, and a buffer for each group's result.
  std::vector<Stmt> calls;
  std::vector<Buffer> intermediates;
  std::vector<Buffer> views;  // declared after the allocations, on their memory
  // A view node's result: the buffer of its input under the node's shape, created when
  // a kernel first reads it (its input's producer has run by then).
  std::map<std::string, size_t> view_node;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (view[i]) view_node[g.nodes[i].name] = i;
  std::function<Buffer(const std::string&)> buffer_of = [&](const std::string& name) -> Buffer {
    auto it = buffers.find(name);
    if (it != buffers.end()) return it->second;
    const GraphNode& node = g.nodes[view_node.at(name)];
    Buffer base = buffer_of(node.inputs[0]);
    auto v = std::make_shared<BufferNode>(*MakeBuffer(node_ids.at(name), node.type.dtype, shape_exprs(node.type)));
    v->data = base->data;
    v->elem_offset = base->elem_offset;
    buffers[name] = v;
    views.push_back(v);
    return v;
  };
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const FusedGroup& group = groups[gi];
    const int stage = stage_of[group.nodes.front()];
    if (stage >= 0) {
      // The whole stage runs where its last layer was; the other layers have no call.
      const PatchStage& patch = patches.stages[stage];
      const size_t last = patch.nodes.back();
      if (group.nodes.front() != last) continue;
      const GraphNode& node = g.nodes[last];
      if (!buffers.count(node.name)) {
        Buffer b = MakeBuffer(node_ids.at(node.name), node.type.dtype, shape_exprs(node.type));
        buffers[node.name] = b;
        intermediates.push_back(b);
      }
      for (Stmt& call : patch_stage_calls(g, patch, prefix, buffer_of, buffers.at(node.name), taken, aot, intermediates, node_ids))
        calls.push_back(std::move(call));
      continue;
    }
    PrimFunc func = group.func;
    // A tensor read twice (mul(x, x)) reaches the kernel through two parameters: the
    // kernel must not promise distinct buffers (restrict in C, noalias in LLVM).
    if (std::set<std::string>(group.inputs.begin(), group.inputs.end()).size() != group.inputs.size()) {
      auto shared = std::make_shared<PrimFuncNode>(*func);
      shared->attrs["tir.noalias"] = false;
      func = shared;
    }
    aot.module.functions.emplace_back(group.fname, func);
    for (size_t k : group.nodes) aot.kernel_of[g.nodes[k].name] = group.fname;
    const std::string& result = g.nodes[group.nodes.back()].name;
    if (!buffers.count(result)) {
      const TensorType& t = g.nodes[group.nodes.back()].type;
      Buffer b = MakeBuffer(node_ids.at(result), t.dtype, shape_exprs(t));
      buffers[result] = b;
      intermediates.push_back(b);
    }
    const std::string& device = g.nodes[group.nodes.front()].device;
    if (!device.empty()) {
      std::vector<Expr> args;
      for (const auto& in : group.inputs) args.push_back(address(buffer_of(in)));
      args.push_back(address(buffers.at(result)));
      if (uses[device].first == gi) calls.push_back(hook(device, "Activate"));
      calls.push_back(hook(device, "Open"));
      calls.push_back(device_call(device, group.fname, std::move(args)));
      calls.push_back(hook(device, "Close"));
      if (uses[device].second == gi) calls.push_back(hook(device, "Deactivate"));
      continue;
    }
    std::vector<Expr> args = {StringImm(group.fname)};
    for (const auto& in : group.inputs) args.push_back(whole(buffer_of(in)));
    args.push_back(whole(buffers.at(result)));
    Attrs call_attrs;
    int64_t mask = 0;
    for (size_t k : group.may_overwrite) mask |= k < 62 ? int64_t{1} << k : 0;
    if (mask) call_attrs[kMayOverwriteAttr] = mask;
    calls.push_back(Evaluate(Call(DataType::Int(32), "call_tir", std::move(args), std::move(call_attrs))));
  }
  // A view read by no kernel (its only reader was another view that nothing reads)
  // needs no declaration; the others are declared inside the allocations they view.
  Stmt body = SeqStmt(calls);
  for (size_t i = views.size(); i-- > 0;) body = DeclBuffer(views[i], body);
  for (size_t i = intermediates.size(); i-- > 0;) body = Allocate(intermediates[i], "global", body);
  main->body = body;
  main->attrs["global_symbol"] = aot.main;
  mark_io_params(g, aot.params, main.get());
  if (!patches.stages.empty()) {
    main->attrs[kPatchWholeTensorBoundAttr] = patches.whole_tensor_bound;
    main->attrs[kPatchBoundAttr] = patches.patched_bound;
    std::string described;
    for (const PatchStage& s : patches.stages)
      described += (described.empty() ? "" : "; ") + g.nodes[s.nodes.front()].name + ".." + g.nodes[s.nodes.back()].name +
                   " in " + std::to_string(s.bands.size()) + " bands, " + std::to_string(s.recomputed_macs) +
                   " MACs recomputed";
    main->attrs[kPatchStagesAttr] = described;
  }
  main->attrs["tir.noalias"] = true;
  aot.module.functions.emplace_back(aot.main, main);
  return aot;
}

}  // namespace mtir
