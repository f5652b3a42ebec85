// Resource variables (TFLite's READ_VARIABLE and ASSIGN_VARIABLE): a variable is a state
// of the graph (Graph::state), memory the artifact keeps between runs.
//
//   read_variable(state)           -> a copy of the state's value now
//   assign_variable(state, value)  -> writes `value` into the state in place
//                                     (OpDef::writes_inputs) and returns it, so that a
//                                     later read in the same run need not copy again
//
// Nodes that read or write a state run in node order (the AOT executor never fuses them
// and never makes them views), so a read sees what the assignments before it stored.
// Both are byte copies, as TFLM's MicroResourceVariables: any dtype, one shape.
#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

void check_same(const std::string& op, const TensorType& state, const TensorType& value) {
  if (state.dtype != value.dtype || state.shape != value.shape)
    fail(op, "the value is " + value.str() + " but the variable is " + state.str() +
                 " (a variable keeps the dtype and shape of its first assignment)");
}

TensorType read_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader("read_variable", attrs, {});
  if (in.size() != 1) fail("read_variable", "takes one input (the variable's state), got " + std::to_string(in.size()));
  return in[0];
}

TensorType assign_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader("assign_variable", attrs, {});
  if (in.size() != 2)
    fail("assign_variable", "takes two inputs (the variable's state, the value), got " + std::to_string(in.size()));
  check_same("assign_variable", in[0], in[1]);
  return in[1];
}

PrimFunc read_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json&) {
  FuncBuilder fb;
  Buffer state = fb.param("state", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  Expr i = nest.axis("i", out.num_elements());
  return fb.finish(fname, nest.wrap(store(o, load(state, unflatten(i, in[0].shape)), unflatten(i, out.shape))));
}

PrimFunc assign_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                      const json&) {
  FuncBuilder fb;
  Buffer state = fb.param("state", in[0].shape, in[0].dtype);
  Buffer value = fb.param("value", in[1].shape, in[1].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  Expr i = nest.axis("i", out.num_elements());
  std::vector<Expr> at = unflatten(i, out.shape);
  return fb.finish(fname, nest.wrap(SeqStmt({store(state, load(value, at), at), store(o, load(value, at), at)})));
}

}  // namespace

void register_variable_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"read_variable", read_infer, read_build});
  OpDef assign{"assign_variable", assign_infer, assign_build};
  assign.writes_inputs = [](const json&, size_t) { return std::vector<size_t>{0}; };
  ops.push_back(assign);
}

}  // namespace ops
}  // namespace mtir
