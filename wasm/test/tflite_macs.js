// An independent count of a .tflite model's nominal MACs, for the tests of the model
// view: the file is read here with a few lines of flatbuffer reading (not the core's
// frontend) and each operator counted from its tensors' shapes, as
// ../shared/tflite/README.md defines the count:
//   CONV_2D          out_h * out_w * out_c * k_h * k_w * in_c / groups  (filter [O, KH, KW, I/groups])
//   DEPTHWISE_CONV_2D out_h * out_w * out_c * k_h * k_w                (filter [1, KH, KW, O])
//   FULLY_CONNECTED  units * in_depth, per row of the input             (weights [units, in_depth])
//   TRANSPOSE_CONV   in_h * in_w * in_c * k_h * k_w * out_c              (filter [O, KH, KW, I])
// and as TFLM's figures count them (../shared/peers/tflm/README.md):
//   SVDF             per row: the feature and the time weights' elements
//   UNIDIRECTIONAL_SEQUENCE_LSTM  per time step and batch row: the gate matrices'
//                    elements (input and recurrent weights of the gates present)
// Other operators count 0.
'use strict';

// The builtin operator codes of TFLite's schema that count.
const CONV_2D = 3, DEPTHWISE_CONV_2D = 4, FULLY_CONNECTED = 9, SVDF = 27, LSTM = 44, TRANSPOSE_CONV = 67;
const NAMES = {
  [CONV_2D]: 'CONV_2D', [DEPTHWISE_CONV_2D]: 'DEPTHWISE_CONV_2D', [FULLY_CONNECTED]: 'FULLY_CONNECTED', [SVDF]: 'SVDF',
  [LSTM]: 'UNIDIRECTIONAL_SEQUENCE_LSTM', [TRANSPOSE_CONV]: 'TRANSPOSE_CONV',
};

// A flatbuffer table at byte `pos` of `buf`: field(i) is the absolute position of field i,
// or 0 when absent (the vtable's offset).
function table(buf, pos) {
  const vtable = pos - buf.readInt32LE(pos);
  const vsize = buf.readUInt16LE(vtable);
  return {
    field(i) {
      const at = 4 + 2 * i;
      if (at >= vsize) return 0;
      const off = buf.readUInt16LE(vtable + at);
      return off ? pos + off : 0;
    },
  };
}
const deref = (buf, p) => p + buf.readUInt32LE(p);
// The elements of a vector field: tables (their positions) or int32 scalars.
function vector(buf, t, i, read) {
  const f = t.field(i);
  if (!f) return [];
  const v = deref(buf, f);
  const n = buf.readUInt32LE(v);
  return Array.from({ length: n }, (_, k) => read(v + 4 + 4 * k));
}
const tables = (buf, t, i) => vector(buf, t, i, (p) => table(buf, deref(buf, p)));
const ints = (buf, t, i) => vector(buf, t, i, (p) => buf.readInt32LE(p));

// {ops: [{op, macs}] in execution order (op: the builtin code's name or its number), macs:
// the total, stateBytes: the variable tensors' bytes} of subgraph 0.
function tfliteMacs(bytes) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const model = table(buf, deref(buf, 0));
  // Model: 1 operator_codes, 2 subgraphs. OperatorCode: 0 deprecated_builtin_code (int8),
  // 3 builtin_code (int32): the code is the larger of the two.
  const codes = tables(buf, model, 1).map((c) => {
    const dep = c.field(0) ? buf.readInt8(c.field(0)) : 0;
    const code = c.field(3) ? buf.readInt32LE(c.field(3)) : 0;
    return Math.max(dep, code);
  });
  const sub = tables(buf, model, 2)[0];
  // SubGraph: 0 tensors, 3 operators. Tensor: 0 shape. Operator: 0 opcode_index, 1 inputs, 2 outputs.
  const tensors = tables(buf, sub, 0);
  const shapes = tensors.map((t) => ints(buf, t, 0));
  // Variable tensors (Tensor field 5, is_variable): the state TFLM keeps between Invokes.
  const BYTES = { 0: 4, 2: 4, 3: 1, 4: 8, 7: 2, 9: 1 };  // FLOAT32, INT32, UINT8, INT64, INT16, INT8
  const stateBytes = tensors.reduce((a, t, i) => {
    if (!t.field(5) || !buf.readUInt8(t.field(5))) return a;
    const type = t.field(1) ? buf.readInt8(t.field(1)) : 0;
    return a + shapes[i].reduce((n, d) => n * d, 1) * BYTES[type];
  }, 0);
  const count = (s) => s.reduce((a, d) => a * d, 1);
  const ops = tables(buf, sub, 3).map((o) => {
    const code = codes[o.field(0) ? buf.readUInt32LE(o.field(0)) : 0];
    const inputs = ints(buf, o, 1), outputs = ints(buf, o, 2);
    const out = shapes[outputs[0]];
    let macs = 0;
    if (code === CONV_2D) {
      const [, kh, kw, ci] = shapes[inputs[1]];
      macs = count(out) * kh * kw * ci;
    } else if (code === DEPTHWISE_CONV_2D) {
      const [, kh, kw] = shapes[inputs[1]];
      macs = count(out) * kh * kw;
    } else if (code === FULLY_CONNECTED) {
      const [units, depth] = shapes[inputs[1]];
      macs = (count(shapes[inputs[0]]) / depth) * units * depth;
    } else if (code === SVDF) {
      // inputs: data [batch, input_size], weights_feature [filters, input_size], weights_time [filters, memory].
      const [, size] = shapes[inputs[1]];
      macs = (count(shapes[inputs[0]]) / size) * (count(shapes[inputs[1]]) + count(shapes[inputs[2]]));
    } else if (code === LSTM) {
      // inputs: data [.., .., n_input], then the input (1-4) and recurrent (5-8) weights of the
      // input, forget, cell and output gates (-1: absent, as the input gate of a CIFG LSTM).
      const x = shapes[inputs[0]];
      const gates = inputs.slice(1, 9).filter((t) => t >= 0).reduce((a, t) => a + count(shapes[t]), 0);
      macs = (count(x) / x[x.length - 1]) * gates;
    } else if (code === TRANSPOSE_CONV) {
      // inputs: output shape, filter [O, KH, KW, I], data.
      const [o, kh, kw] = shapes[inputs[1]];
      macs = count(shapes[inputs[2]]) * kh * kw * o;
    }
    return { op: NAMES[code] || code, macs };
  });
  return { ops, macs: ops.reduce((a, x) => a + x.macs, 0), stateBytes };
}

module.exports = { tfliteMacs };
