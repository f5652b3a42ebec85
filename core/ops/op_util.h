// Shared pieces of the operator library: attribute reading with precise user errors,
// input checks, and small IR-building helpers that fold trivial arithmetic (x * 1,
// x + 0, loops of extent 1) so the emitted loop nests read like hand-written TIR.
// Internal to core/ops; the public API is ops.h.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/function.h"
#include "ops/ops.h"

namespace mtir {
namespace ops {

// A user error "op: message" with no source location (callers add the node name).
[[noreturn]] void fail(const std::string& op, const std::string& message);

// "(1, 8, 8)" for a shape.
std::string shape_str(const std::vector<int64_t>& shape);

// Reads the attributes of one op. Constructing it rejects attributes that are not a
// JSON object (null is the empty object) and any key not in `known`, naming the key
// and listing the known ones.
class AttrReader {
 public:
  AttrReader(std::string op, const nlohmann::json& attrs, std::vector<std::string> known);

  bool has(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t def) const;
  double get_float(const std::string& key, double def) const;
  // Accepts true/false and the integers 0/1 (ONNX writes booleans as ints).
  bool get_bool(const std::string& key, bool def) const;
  // The value must be one of `choices`.
  std::string get_string(const std::string& key, const std::string& def, const std::vector<std::string>& choices) const;
  // A list of `n` integers (any length when n == 0), each >= `min_value`. `what`
  // describes the elements in errors ("positive integers"). Without a default the
  // attribute is required.
  std::vector<int64_t> get_ints(const std::string& key, size_t n, int64_t min_value, const std::string& what,
                                std::optional<std::vector<int64_t>> def) const;
  const nlohmann::json* raw(const std::string& key) const;
  [[noreturn]] void bad(const std::string& key, const std::string& requirement) const;

 private:
  std::string op_;
  const nlohmann::json* attrs_;
  std::vector<std::string> known_;
};

// The element types an op takes (all inputs of one type): float32 only; float32 or
// float64 for float math whose constants and intrinsics follow the type (exp, sqrt, ...);
// or any of float32, float64 and the integer types for ops whose meaning does not depend
// on it (max, arithmetic); or those and bool, for data movement (copies of elements).
enum class Dtypes { kFloat32, kFloat, kNumeric, kAny };

// Checks the number of inputs (`names` lists them, optional ones last), the element
// types (see Dtypes), and that every dimension is positive and the tensor fits int32
// indexing.
void check_inputs(const std::string& op, const std::vector<TensorType>& inputs, size_t min_count,
                  const std::vector<std::string>& names, Dtypes dtypes = Dtypes::kFloat32);
// Checks the rank of input `i`.
void check_rank(const std::string& op, const std::vector<TensorType>& inputs, size_t i, const std::string& name,
                size_t rank);
// Normalizes an axis in [-rank, rank) (or [-rank, rank] when `inclusive`).
int64_t normalize_axis(const std::string& op, const std::string& attr, int64_t axis, int64_t rank,
                       bool inclusive = false);

// OpDef::infer of an op whose output has its first input's type, once `check` (which
// may also return the op's parameters, unused here) accepts the inputs and attributes.
template <typename Check>
auto same_type_as_input(Check check) {
  return [check](const std::vector<TensorType>& in, const nlohmann::json& attrs) {
    check(in, attrs);
    return in[0];
  };
}

// ---- IR helpers ---------------------------------------------------------------
// The element types the kernels name most.
inline constexpr DataType kI8 = DataType::Int(8), kI16 = DataType::Int(16), kI32 = DataType::Int(32),
                          kI64 = DataType::Int(64), kF32 = DataType::Float(32);
Expr ci(int64_t v);   // int32 constant
Expr cf(double v);    // float32 constant
// A constant of type `t`; for an integer type, infinities become its smallest and
// largest values and finite values are truncated toward zero; for bool, v != 0.
Expr cv(DataType t, double v);
Var ivar(const std::string& name);  // int32 variable
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr fdiv(Expr a, Expr b);      // float division
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min_(Expr a, Expr b);
Expr max_(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
// Logical and; a null operand stands for "true".
Expr and_(Expr a, Expr b);
Expr load(const Buffer& b, std::vector<Expr> idx);
Stmt store(const Buffer& b, Expr value, std::vector<Expr> idx);
// if_then_else(cond, a, b), or a when cond is null.
Expr lazy_select(Expr cond, Expr a, Expr b);
Expr call(const std::string& op, std::vector<Expr> args);

// Loops around a body, outermost first. axis() returns the index expression for a
// new loop: a fresh int32 variable, or the constant 0 for an extent of 1 (no loop).
class LoopNest {
 public:
  Expr axis(const std::string& name, int64_t extent);
  // An axis per dimension of `shape`, named <prefix><k><suffix> (i0, i1, ...): the
  // index of every element.
  std::vector<Expr> axes(const std::vector<int64_t>& shape, const std::string& prefix = "i",
                         const std::string& suffix = "");
  Stmt wrap(Stmt body) const;

 private:
  std::vector<std::pair<Var, int64_t>> loops_;
};

// Builds a PrimFunc with buffer parameters in order.
class FuncBuilder {
 public:
  Buffer param(const std::string& name, const std::vector<int64_t>& shape, DataType dtype = DataType::Float(32));
  // Sets "global_symbol" and "tir.noalias".
  PrimFunc finish(const std::string& func_name, Stmt body) const;

 private:
  std::vector<Var> params_;
  std::vector<Buffer> buffers_;
};

// A scratch buffer (float32 unless told) to be Allocate'd.
Buffer scratch(const std::string& name, const std::vector<int64_t>& shape, DataType dtype = DataType::Float(32));
// A flat view of a whole buffer of n elements (same data, named <name>_flat); declare it
// (DeclBuffer) where it is used.
Buffer flat_view(const Buffer& b, int64_t n);

// Indices of an element of a row-major tensor of `shape` from a flat index.
std::vector<Expr> unflatten(const Expr& flat, const std::vector<int64_t>& shape);

// numpy broadcasting (trailing axes aligned; TFLite's too): the shape of the result, or a
// user error naming both shapes and the dimension that does not fit.
std::vector<int64_t> broadcast_shape(const std::string& op, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b);
// The indices into an operand of `shape` broadcast to `out_idx` (right-aligned; size-1
// axes read index 0).
std::vector<Expr> broadcast_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                                  const std::vector<Expr>& out_idx);

// Registration of each family of ops (called once by all_op_defs()).
void register_nn_ops(std::vector<OpDef>& ops);
void register_pool_ops(std::vector<OpDef>& ops);
void register_elemwise_ops(std::vector<OpDef>& ops);
void register_shape_ops(std::vector<OpDef>& ops);
void register_strided_slice_ops(std::vector<OpDef>& ops);
void register_quantized_ops(std::vector<OpDef>& ops);
void register_qconv_ops(std::vector<OpDef>& ops);
void register_qconv_s16_ops(std::vector<OpDef>& ops);
void register_onnx_quant_ops(std::vector<OpDef>& ops);
void register_svdf_ops(std::vector<OpDef>& ops);
void register_lstm_ops(std::vector<OpDef>& ops);
void register_space_batch_ops(std::vector<OpDef>& ops);  // space_batch.cc
void register_index_map_ops(std::vector<OpDef>& ops);    // index_map.cc: reverse, broadcast_to
void register_gather_ops(std::vector<OpDef>& ops);
void register_resize_ops(std::vector<OpDef>& ops);
void register_qactivation_ops(std::vector<OpDef>& ops);
void register_prelu_ops(std::vector<OpDef>& ops);
void register_qsquared_difference_ops(std::vector<OpDef>& ops);
void register_qdiv_ops(std::vector<OpDef>& ops);
void register_compare_ops(std::vector<OpDef>& ops);
void register_reduce_ops(std::vector<OpDef>& ops);
void register_variable_ops(std::vector<OpDef>& ops);  // variable.cc: read_variable, assign_variable
void register_cast_ops(std::vector<OpDef>& ops);      // cast.cc
void register_qbatch_matmul_ops(std::vector<OpDef>& ops);
void register_ql2_normalization_ops(std::vector<OpDef>& ops);
void register_qlog_softmax_ops(std::vector<OpDef>& ops);

}  // namespace ops
}  // namespace mtir
