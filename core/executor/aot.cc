#include "executor/aot.h"

#include "support/names.h"

#include <cctype>
#include <map>

namespace mtir {
namespace {


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

}  // namespace

AotModule build_aot(const Graph& g) {
  AotModule aot;
  const std::string prefix = "tvmgen_" + g.name + "_";
  aot.module.name = g.name;
  aot.module.attrs["model"] = g.name;
  aot.main = prefix + "__tvm_main__";  // TVM's spelling: tvmgen_<model>___tvm_main__

  auto main = std::make_shared<PrimFuncNode>();
  std::map<std::string, Buffer> buffers;  // graph name -> buffer of main
  auto add_param = [&](const std::string& name, const TensorType& t, AotModule::Role role) {
    Buffer b = MakeBuffer(to_c_identifier(name), t.dtype, shape_exprs(t));
    main->params.push_back(MakeVar(to_c_identifier(name), DataType::Handle()));
    main->param_buffers.push_back(b);
    buffers[name] = b;
    aot.params.push_back({name, role, t});
  };
  for (const auto& [name, type] : g.inputs) add_param(name, type, AotModule::Role::kInput);
  for (const auto& [name, array] : g.constants) add_param(name, TensorType{array.dtype, array.shape}, AotModule::Role::kConstant);
  for (const auto& out : g.outputs) {
    if (buffers.count(out)) continue;  // an input or constant returned as is: already a parameter
    add_param(out, g.type_of(out), AotModule::Role::kOutput);
  }

  // One function per node, and the call of it.
  std::vector<Stmt> calls;
  std::vector<Buffer> intermediates;
  for (const GraphNode& node : g.nodes) {
    const OpDef* op = find_op(node.op);
    if (!op) user_error(Span{}, "node '" + node.name + "': unknown op '" + node.op + "'");
    std::vector<TensorType> in_types;
    for (const auto& in : node.inputs) in_types.push_back(g.type_of(in));
    const std::string fname = prefix + to_c_identifier(node.name);
    PrimFunc f;
    try {
      f = op->build(fname, in_types, node.type, node.attrs);
    } catch (const DiagnosticError& e) {
      Diagnostic d = e.diagnostics().at(0);
      d.message = "node '" + node.name + "' (" + node.op + "): " + d.message;
      throw DiagnosticError(d);
    }
    aot.module.functions.emplace_back(fname, f);
    if (!buffers.count(node.name)) {
      Buffer b = MakeBuffer(to_c_identifier(node.name), node.type.dtype, shape_exprs(node.type));
      buffers[node.name] = b;
      intermediates.push_back(b);
    }
    std::vector<Expr> args = {StringImm(fname)};
    for (const auto& in : node.inputs) args.push_back(whole(buffers.at(in)));
    args.push_back(whole(buffers.at(node.name)));
    calls.push_back(Evaluate(Call(DataType::Int(32), "call_tir", std::move(args))));
  }
  Stmt body = SeqStmt(calls);
  for (size_t i = intermediates.size(); i-- > 0;) body = Allocate(intermediates[i], "global", body);
  main->body = body;
  main->attrs["global_symbol"] = aot.main;
  main->attrs["tir.noalias"] = true;
  aot.module.functions.emplace_back(aot.main, main);
  return aot;
}

}  // namespace mtir
