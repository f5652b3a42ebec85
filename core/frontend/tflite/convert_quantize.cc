// QUANTIZE and DEQUANTIZE: float32 to int8 or int16 (`quantize`), int8, int16 or uint8
// to float32 (`dequantize`), and TFLM's integer-to-integer QUANTIZE (`requantize`: int8,
// int16, int32 or uint8 in, int8, int16, int32 or uint8 out, the pairs TFLM's kernel
// accepts); CAST
// (`cast`: TFLM's static_cast per element, quantization ignored).
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

namespace {
bool is(DataType t, int bits) { return t == DataType::Int(bits); }
bool is_u8(DataType t) { return t == DataType::UInt(8); }
}  // namespace

void TfliteConverter::quantize(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  TensorType xt = tensor_type(x), ot = tensor_type(out);
  std::string name = values_.at(out);
  Quant qo = quant(out, true);
  if (!qo.per_tensor()) unsupported("per-channel quantized activations");
  if (xt.dtype == DataType::Float(32)) {
    if (!is(ot.dtype, 8) && !is(ot.dtype, 16))
      unsupported("QUANTIZE from float32 to " + ot.dtype.str() + " (int8 and int16 are supported)");
    emit(name, "quantize", {value(x)}, {{"scale", qo.scale[0]}, {"zero_point", qo.zero_point[0]}, {"dtype", ot.dtype.str()}});
    return;
  }
  // TFLM's integer pairs (quantize_common.cc): int8 -> int8/int16/int32/uint8, int16 ->
  // int8/int16/int32, int32 -> int8/int16, uint8 -> int8 (an image input).
  const bool pair_ok = is(xt.dtype, 8)    ? (is(ot.dtype, 8) || is(ot.dtype, 16) || is(ot.dtype, 32) || is_u8(ot.dtype))
                       : is(xt.dtype, 16) ? (is(ot.dtype, 8) || is(ot.dtype, 16) || is(ot.dtype, 32))
                       : is(xt.dtype, 32) ? (is(ot.dtype, 8) || is(ot.dtype, 16))
                       : is_u8(xt.dtype)  ? is(ot.dtype, 8)
                                          : false;
  if (!pair_ok)
    unsupported("QUANTIZE from " + xt.dtype.str() + " to " + ot.dtype.str() +
                " (float32 to int8/int16, int8 to int8/int16/int32/uint8, int16 to int8/int16/int32, int32 to "
                "int8/int16, uint8 to int8 are supported)");
  Quant qi = quant(x, true);
  if (!qi.per_tensor()) unsupported("per-channel quantized activations");
  emit(name, "requantize", {value(x)},
       {{"input_scale", qi.scale[0]},
        {"input_zero_point", qi.zero_point[0]},
        {"output_scale", qo.scale[0]},
        {"output_zero_point", qo.zero_point[0]},
        {"dtype", ot.dtype.str()}});
}

void TfliteConverter::dequantize(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  TensorType xt = tensor_type(x), ot = tensor_type(out);
  if ((!is(xt.dtype, 8) && !is(xt.dtype, 16) && !is_u8(xt.dtype)) || ot.dtype != DataType::Float(32))
    unsupported("DEQUANTIZE from " + xt.dtype.str() + " to " + ot.dtype.str() +
                " (int8, int16 or uint8 to float32 is supported)");
  Quant q = quant(x, true);
  if (!q.per_tensor()) unsupported("per-channel quantized activations");
  emit(values_.at(out), "dequantize", {value(x)}, {{"scale", q.scale[0]}, {"zero_point", q.zero_point[0]}});
}

// TFLM's CAST (kernels/cast.cc): float32, int8, int16, int32 or bool in; int8, int16,
// int32 or float32 out (it has no int64, uint8 or bool output: TFLM would leave such an
// output unwritten, so it is refused).
void TfliteConverter::cast(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  const DataType from = tensor_type(x).dtype, to = tensor_type(out).dtype;
  if (is(from, 64)) unsupported("CAST from int64 (TFLM's CAST reads float32, int8, int16, int32 and bool)");
  if (!is(to, 8) && !is(to, 16) && !is(to, 32) && to != DataType::Float(32))
    unsupported("CAST to " + to.str() + " (TFLM's CAST writes int8, int16, int32 and float32)");
  emit(values_.at(out), "cast", {value(x)}, {{"dtype", to.str()}});
}

}  // namespace tflite_import
}  // namespace mtir
