// The browser's half of the ONNX import: decodes an .onnx file with protobufjs (and the
// ONNX schema of Debian's libonnx-dev) into the protobuf-free model the C++ converter
// reads (core/frontend/onnx_model.h), as the JSON of wasm/onnx_import.h. The wasm core's
// mtir_import_onnx converts it with the converter `microtir import` runs natively, so
// the page and the CLI give the same graph and the same messages by construction.
// Nothing here knows an ONNX operator: this file only decodes.
//
// CommonJS, so node's tests require() it; esbuild bundles it into the page's worker.
'use strict';
const protobuf = require('protobufjs/light');

// A file protobuf cannot decode (the converter reports everything else).
class OnnxImportError extends Error {
  constructor(message) {
    super(message);
    this.name = 'OnnxImportError';
  }
}

const hasOwn = (m, f) => m != null && Object.prototype.hasOwnProperty.call(m, f) && m[f] != null;
const isLong = (v) => v != null && typeof v === 'object' && 'low' in v && 'high' in v;
const big = (v) => (isLong(v) ? BigInt(v.toString()) : BigInt(v));
// An int64 for the JSON: a number while exact, else a decimal string (onnx_import.h).
function int64(v) {
  if (v == null) return 0;
  if (typeof v === 'number') return v;
  return Number.isSafeInteger(v.toNumber()) ? v.toNumber() : v.toString();
}
// A float for the JSON: what a JSON number cannot say as a string.
function float(x) {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return Object.is(x, -0) ? '-0' : x;
}
// A bytes field (a Uint8Array, or protobufjs's default [] when absent) as UTF-8 text.
const text = (bytes) => (typeof bytes === 'string' ? bytes : new TextDecoder().decode(Uint8Array.from(bytes || [])));

function base64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

// TensorProto.DataType codes -> the typed field holding their values and how one value
// is stored as a little-endian element (as the C++ NDArray stores it: integers wrap to
// the width, bool is 0 or 1, float16 is the low 16 bits of int32_data).
const kTypedFields = {
  1: ['float_data', 4, (d, i, x) => d.setFloat32(i, x, true)],
  2: ['int32_data', 1, (d, i, x) => d.setUint8(i, x & 0xff)],
  3: ['int32_data', 1, (d, i, x) => d.setInt8(i, x)],
  4: ['int32_data', 2, (d, i, x) => d.setUint16(i, x & 0xffff, true)],
  5: ['int32_data', 2, (d, i, x) => d.setInt16(i, x, true)],
  6: ['int32_data', 4, (d, i, x) => d.setInt32(i, x, true)],
  7: ['int64_data', 8, (d, i, x) => d.setBigInt64(i, BigInt.asIntN(64, big(x)), true)],
  9: ['int32_data', 1, (d, i, x) => d.setUint8(i, x !== 0 ? 1 : 0)],
  10: ['int32_data', 2, (d, i, x) => d.setUint16(i, x & 0xffff, true)],
  11: ['double_data', 8, (d, i, x) => d.setFloat64(i, x, true)],
  12: ['uint64_data', 4, (d, i, x) => d.setUint32(i, Number(BigInt.asUintN(32, big(x))), true)],
  13: ['uint64_data', 8, (d, i, x) => d.setBigUint64(i, BigInt.asUintN(64, big(x)), true)],
};

// TensorProto -> TENSOR: raw_data as it is, or the dtype's typed field as elements.
function tensor(t) {
  const out = {
    name: t.name || '', data_type: t.data_type || 0, dims: (t.dims || []).map(int64),
    external: t.data_location === 1 || (t.external_data || []).length > 0, segmented: hasOwn(t, 'segment'),
  };
  if (hasOwn(t, 'raw_data')) {
    out.bytes = base64(t.raw_data);
  } else if (kTypedFields[out.data_type]) {
    const [field, size, store] = kTypedFields[out.data_type];
    const values = t[field] || [];
    const bytes = new Uint8Array(values.length * size);
    const view = new DataView(bytes.buffer);
    values.forEach((x, i) => store(view, i * size, x));
    out.bytes = base64(bytes);
    out.typed_values = values.length;
  }
  return out;
}

// Graph attributes and sparse tensors keep only their type: no mapped op takes them.
function attribute(a) {
  const out = {
    name: a.name || '', ref_attr_name: a.ref_attr_name || '', type: a.type || 0,
    i: int64(a.i), f: float(a.f == null ? 0 : a.f), s: text(a.s),
    ints: (a.ints || []).map(int64), floats: (a.floats || []).map(float), strings: (a.strings || []).map(text),
  };
  if (hasOwn(a, 't')) out.t = tensor(a.t);
  return out;
}

function node(n) {
  return {
    op_type: n.op_type || '', domain: n.domain || '', name: n.name || '',
    input: n.input || [], output: n.output || [], attribute: (n.attribute || []).map(attribute),
  };
}

function valueInfo(v) {
  const isTensor = hasOwn(v.type, 'tensor_type');
  const tt = isTensor ? v.type.tensor_type : {};
  const dims = ((tt.shape && tt.shape.dim) || []).map((d) => ({
    ...(hasOwn(d, 'dim_value') ? { value: int64(d.dim_value) } : {}),
    ...(hasOwn(d, 'dim_param') ? { param: d.dim_param } : {}),
  }));
  return { name: v.name || '', tensor: isTensor, elem_type: tt.elem_type || 0, has_shape: hasOwn(tt, 'shape'), dims };
}

function graph(g) {
  return {
    name: g.name || '', node: (g.node || []).map(node), initializer: (g.initializer || []).map(tensor),
    sparse_initializer_count: (g.sparse_initializer || []).length,
    input: (g.input || []).map(valueInfo), output: (g.output || []).map(valueInfo),
  };
}

// The protobuf root of the ONNX schema, from its JSON descriptor (made at build time from
// Debian's onnx.proto: onnx_schema.js).
function onnxRoot(descriptor) {
  return protobuf.Root.fromJSON(descriptor);
}

// `bytes` (the .onnx file, a Uint8Array) -> the model JSON text of wasm/onnx_import.h.
// Throws OnnxImportError, with the native reader's message, when protobuf cannot decode it.
function onnxModelJson(bytes, { root, filename = 'model.onnx' }) {
  if (bytes.length === 0) throw new OnnxImportError(`'${filename}' is empty, not an ONNX model`);
  let m;
  try {
    m = root.lookupType('onnx.ModelProto').decode(bytes);
  } catch (e) {
    throw new OnnxImportError(`'${filename}' is not a valid ONNX model: the protobuf data is malformed or truncated`);
  }
  const model = {
    ir_version: int64(m.ir_version),
    opset_import: (m.opset_import || []).map((op) => ({ domain: op.domain || '', version: int64(op.version) })),
  };
  if (hasOwn(m, 'graph')) model.graph = graph(m.graph);
  return JSON.stringify(model);
}

// The whole import: decode, then `convert(modelJson, filename)` (the core's
// mtir_import_onnx) -> {ok: true, graph: TEXT, notes} or {ok: false, message, internal}.
function importOnnx(bytes, { root, filename = 'model.onnx', convert }) {
  let json;
  try {
    json = onnxModelJson(bytes, { root, filename });
  } catch (e) {
    if (e.name !== 'OnnxImportError') throw e;
    return { ok: false, message: e.message, internal: false };
  }
  return convert(json, filename);
}

module.exports = { importOnnx, onnxModelJson, onnxRoot, OnnxImportError };
