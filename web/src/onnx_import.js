// The browser's ONNX frontend: an .onnx file (decoded with protobufjs and the ONNX schema
// of Debian's libonnx-dev) -> our JSON graph (docs/graph-format.md), by the same rules as
// the native frontend (core/frontend/onnx*.cc, docs/onnx.md): the same op mapping,
// attributes, padding, names of nodes and temporaries, constants, and the same messages
// ("unsupported: ..." for what we do not map). `microtir import model.onnx` writes the
// JSON graph the native frontend reads; web/test/onnx_import.test.js checks both agree.
//
// Each node's output type comes from the core's own type inference (the wasm build's
// mtir_infer), passed in as `infer`, so shapes are inferred by one piece of code.
// CommonJS, so node's tests require() it; esbuild bundles it into the page's worker.
'use strict';
const protobuf = require('protobufjs/light');

// A user error, with the native frontend's message.
class OnnxImportError extends Error {
  constructor(message, internal = false) {
    super(message);
    this.name = 'OnnxImportError';
    this.internal = internal;
  }
}

function fail(message) {
  throw new OnnxImportError(message);
}

// ---------------------------------------------------------------- protobuf helpers

const hasOwn = (m, f) => m != null && Object.prototype.hasOwnProperty.call(m, f) && m[f] != null;
// int64 fields decode as Long (protobufjs with `long`) or as numbers.
const num = (v) => (v == null ? 0 : typeof v === 'number' ? v : v.toNumber());
const text = (bytes) => (typeof bytes === 'string' ? bytes : new TextDecoder().decode(bytes || new Uint8Array()));

// ONNX TensorProto.DataType codes: our dtype names and byte sizes (the ones the CRT holds).
const kDtypes = {
  1: ['float32', 4], 2: ['uint8', 1], 3: ['int8', 1], 4: ['uint16', 2], 5: ['int16', 2], 6: ['int32', 4],
  7: ['int64', 8], 9: ['bool', 1], 10: ['float16', 2], 11: ['float64', 8], 12: ['uint32', 4], 13: ['uint64', 8],
};
const kDtypeNames = ['undefined', 'float32', 'uint8', 'int8', 'uint16', 'int16', 'int32', 'int64', 'string', 'bool',
  'float16', 'float64', 'uint32', 'uint64', 'complex64', 'complex128', 'bfloat16'];
const onnxDtypeName = (code) => (code >= 0 && code < kDtypeNames.length ? kDtypeNames[code] : `dtype code ${code}`);
const isFloat = (dtype) => dtype.startsWith('float');
const isInteger = (dtype) => /^u?int/.test(dtype);
const FLOAT = 1;
const INT32_BITS = { int8: 8, uint8: 8, int16: 16, uint16: 16, int32: 32, uint32: 32 };

// What the C++ NDArray keeps when an integer is stored in a narrower dtype.
function wrapInt(dtype, v) {
  const bits = INT32_BITS[dtype];
  if (dtype === 'bool') return v !== 0 ? 1 : 0;
  if (!bits) return v;
  const m = 2 ** bits;
  let r = ((v % m) + m) % m;
  if (dtype.startsWith('int') && r >= m / 2) r -= m;
  return r;
}

function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

// A tensor: {dtype, shape, values} (values as numbers, like NDArray's get_float/get_int).
function tensorToArray(t, what) {
  const code = t.data_type || 0;
  if (!kDtypes[code]) fail(`unsupported: ${what} has dtype ${onnxDtypeName(code)}`);
  const [dtype, size] = kDtypes[code];
  if (t.data_location === 1 || (t.external_data || []).length > 0) fail(`unsupported: ${what} keeps its data in an external file`);
  if (hasOwn(t, 'segment')) fail(`unsupported: ${what} is a segmented tensor`);
  const shape = (t.dims || []).map(num);
  for (const d of shape) if (d < 0) fail(`${what} has a negative dimension ${d}`);
  for (const d of shape) if (d === 0) fail(`unsupported: ${what} has a zero-sized dimension`);
  let n = 1;
  for (const d of shape) {
    n *= d;
    if (n > 2 ** 31 - 1) fail(`${what} has more than 2^31 - 1 elements`);
  }
  const values = new Array(n);
  if (hasOwn(t, 'raw_data')) {
    const raw = t.raw_data;
    if (raw.length !== n * size) fail(`${what} has ${raw.length} bytes of raw data but its shape and dtype need ${n * size}`);
    const v = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const read = {
      float32: (i) => v.getFloat32(4 * i, true), float64: (i) => v.getFloat64(8 * i, true),
      float16: (i) => halfToFloat(v.getUint16(2 * i, true)), int8: (i) => v.getInt8(i), uint8: (i) => v.getUint8(i),
      bool: (i) => v.getUint8(i), int16: (i) => v.getInt16(2 * i, true), uint16: (i) => v.getUint16(2 * i, true),
      int32: (i) => v.getInt32(4 * i, true), uint32: (i) => v.getUint32(4 * i, true),
      int64: (i) => Number(v.getBigInt64(8 * i, true)), uint64: (i) => Number(v.getBigInt64(8 * i, true)),
    }[dtype];
    for (let i = 0; i < n; ++i) values[i] = read(i);
    return { dtype, shape, values };
  }
  const take = (list, conv) => {
    list = list || [];
    if (list.length !== n) fail(`${what} has ${list.length} values but its shape needs ${n}`);
    for (let i = 0; i < n; ++i) values[i] = conv(list[i]);
  };
  switch (dtype) {
    case 'float32': take(t.float_data, (x) => x); break;
    case 'float64': take(t.double_data, (x) => x); break;
    case 'int64': take(t.int64_data, num); break;
    // uint64_data as int64: NDArray's uint64 values wrap; uint32 keeps the low 32 bits.
    case 'uint32': take(t.uint64_data, (x) => wrapInt(dtype, typeof x === 'number' ? x : x.toSigned().toNumber())); break;
    case 'uint64': take(t.uint64_data, (x) => (typeof x === 'number' ? x : x.toSigned().toNumber())); break;
    case 'float16': take(t.int32_data, (x) => halfToFloat(x & 0xffff)); break;
    default: take(t.int32_data, (x) => wrapInt(dtype, x)); break;
  }
  return { dtype, shape, values };
}

// Protobuf parsing accepts many byte strings that are not models, so a parsed model must
// also have what every exporter writes.
function parseModel(ModelProto, bytes, filename) {
  if (bytes.length === 0) fail(`'${filename}' is empty, not an ONNX model`);
  let m;
  try {
    m = ModelProto.decode(bytes);
  } catch (e) {
    fail(`'${filename}' is not a valid ONNX model: the protobuf data is malformed or truncated`);
  }
  if (num(m.ir_version) <= 0 || !hasOwn(m, 'graph'))
    fail(`'${filename}' is not an ONNX model: it has no ir_version or no graph (wrong file type?)`);
  return m;
}

function defaultOpset(m, filename) {
  let version = -1;
  for (const op of m.opset_import || []) if (!op.domain || op.domain === 'ai.onnx') version = num(op.version);
  if (version < 0) {
    const domains = (m.opset_import || []).map((op) => `'${op.domain || ''}'`).join(', ');
    fail(`unsupported: '${filename}' imports no opset of the default ONNX domain (it imports ${domains || 'none'})`);
  }
  if (version < 1 || version > 17)
    fail(`unsupported: opset version ${version} of the default domain; microtir reads opsets 1 to 17 (7 to 17 fully)`);
  return version;
}

// The C identifier the native to_c_identifier makes, byte by byte of the UTF-8 name.
function toCIdentifier(s) {
  let out = '';
  for (const b of new TextEncoder().encode(s)) out += /[A-Za-z0-9_]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : '_';
  if (out === '' || /^[0-9]/.test(out)) out = `t_${out}`;
  return out;
}

const eqArrays = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// AttributeProto.AttributeType codes.
const ATTR = { FLOAT: 1, INT: 2, STRING: 3, INTS: 7 };

// ---------------------------------------------------------------- the graph walk (onnx_graph.cc)

class Converter {
  constructor(graph, opset, infer) {
    this.graph = graph;
    this.opset = opset;
    this.infer = infer;
    this.g = { name: '', inputs: [], constants: new Map(), nodes: [], outputs: [] };
    this.types = new Map();
    this.aliases = new Map();
    this.names = new Set();
    this.pending = new Map(); // run-time inputs not yet declared
    this.node = null;
    this.attrsRead = new Set();
  }

  where() {
    if (!this.node) return 'the graph';
    const out = this.node.output.length > 0 ? this.node.output[0] : this.node.name || '';
    return `node '${out}' (${this.node.op_type || ''})`;
  }
  unsupported(what) { fail(`unsupported: ${this.where()}: ${what}`); }
  invalid(what) { fail(`${this.where()}: ${what}`); }

  resolve(name) { return this.aliases.has(name) ? this.aliases.get(name) : name; }
  numInputs() { return this.node.input.length; }
  input(i) { return i >= this.numInputs() ? '' : this.resolve(this.node.input[i]); }

  typeOf(name) {
    if (this.types.has(name)) return this.types.get(name);
    if (this.pending.has(name)) {
      const vi = this.pending.get(name);
      const tt = vi.type && vi.type.tensor_type;
      if (!vi.type || !hasOwn(vi.type, 'tensor_type')) fail(`unsupported: model input '${name}' is not a tensor`);
      const dims = (tt.shape && tt.shape.dim) || [];
      dims.forEach((d, k) => {
        if (!hasOwn(d, 'dim_value') || num(d.dim_value) <= 0)
          fail(`unsupported: model input '${name}' has a dynamic shape (dimension ${k} is ${hasOwn(d, 'dim_param') ? `'${d.dim_param}'` : 'unknown'}); give it a fixed shape`);
      });
      fail(`unsupported: model input '${name}' has no shape; give it a fixed shape`);
    }
    this.invalid(`input '${name}' is not defined`);
  }

  staticValue(i, role) {
    const name = this.input(i);
    if (name === '') this.invalid(`input ${i} (${role}) is missing`);
    if (this.g.constants.has(name)) return this.g.constants.get(name);
    const isInput = this.g.inputs.some((x) => x.name === name) || this.pending.has(name);
    this.unsupported(`input '${role}' must be a compile-time constant (an initializer or a Constant), but '${name}' is ${isInput ? 'a model input' : 'computed at run time'}`);
  }
  staticInts(i, role) {
    const a = this.staticValue(i, role);
    if (!isInteger(a.dtype)) this.invalid(`input '${role}' must hold integers, not ${a.dtype}`);
    return a.values.slice();
  }

  hasAttr(name) { return (this.node.attribute || []).some((a) => a.name === name); }
  attr(name) {
    this.attrsRead.add(name);
    for (const a of this.node.attribute || []) {
      if (a.name === name) {
        if (a.ref_attr_name) this.unsupported(`attribute '${name}' refers to a function attribute`);
        return a;
      }
    }
    return null;
  }
  attrInt(name, def) {
    const a = this.attr(name);
    if (!a) return def;
    if ((a.type || 0) !== ATTR.INT) this.invalid(`attribute '${name}' must be an integer`);
    return num(a.i);
  }
  attrFloat(name, def) {
    const a = this.attr(name);
    if (!a) return def;
    if ((a.type || 0) !== ATTR.FLOAT) this.invalid(`attribute '${name}' must be a float`);
    return a.f || 0;
  }
  attrString(name, def) {
    const a = this.attr(name);
    if (!a) return def;
    if ((a.type || 0) !== ATTR.STRING) this.invalid(`attribute '${name}' must be a string`);
    return text(a.s);
  }
  attrInts(name, def) {
    const a = this.attr(name);
    if (!a) return def;
    if ((a.type || 0) !== ATTR.INTS) this.invalid(`attribute '${name}' must be a list of integers`);
    return (a.ints || []).map(num);
  }

  temp(hint) {
    const base = `${this.node && this.node.output.length ? this.node.output[0] : 't'}__${hint}`;
    let name = base;
    for (let k = 1; this.names.has(name); ++k) name = base + k;
    this.names.add(name);
    return name;
  }
  alias(out, name) { this.aliases.set(out, this.resolve(name)); }
  addConstant(name, value) {
    this.types.set(name, { dtype: value.dtype, shape: value.shape });
    this.g.constants.set(name, value);
  }

  emit(out, op, inputs, attrs = {}) {
    const inTypes = inputs.map((x) => this.typeOf(x));
    const r = this.infer(op, inTypes, attrs);
    if (!r.ok) {
      if (r.internal) throw new OnnxImportError(`internal error: ${r.message}`, true);
      const m = r.message;
      // Our ops refuse what they do not implement with these words; keep the class.
      const refusal = m.includes('not supported') || m.includes('only float32') || m.includes('unsupported');
      fail(`${refusal ? 'unsupported: ' : ''}${this.where()}: ${m}`);
    }
    this.names.add(out);
    this.types.set(out, r.type);
    const node = { name: out, op, inputs: inputs.slice() };
    if (Object.keys(attrs).length > 0) node.attrs = attrs;
    this.g.nodes.push(node);
    return out;
  }

  declareInputs() {
    const inits = new Set();
    for (const t of this.graph.initializer || []) {
      if (!t.name) fail('an initializer has no name');
      if (this.names.has(t.name)) fail(`initializer '${t.name}' is defined twice`);
      this.names.add(t.name);
      inits.add(t.name);
      this.addConstant(t.name, tensorToArray(t, `initializer '${t.name}'`));
    }
    if ((this.graph.sparse_initializer || []).length > 0) fail('unsupported: sparse initializers');
    for (const vi of this.graph.input || []) {
      const name = vi.name || '';
      if (inits.has(name)) continue; // IR < 4 lists initializers as inputs too
      if (this.names.has(name)) fail(`model input '${name}' is defined twice`);
      this.names.add(name);
      const tp = vi.type;
      if (!tp || !hasOwn(tp, 'tensor_type')) fail(`unsupported: model input '${name}' is not a tensor (a sequence, map or optional)`);
      const tt = tp.tensor_type;
      let ok = hasOwn(tt, 'shape');
      const shape = [];
      if (ok) {
        for (const d of tt.shape.dim || []) {
          if (!hasOwn(d, 'dim_value') || num(d.dim_value) <= 0) ok = false;
          shape.push(num(d.dim_value));
        }
      }
      const code = tt.elem_type || 0;
      if (ok && code !== FLOAT) {
        if (code !== 0 && kDtypes[code]) {
          this.types.set(name, { dtype: kDtypes[code][0], shape });
          this.g.inputs.push({ name, shape, dtype: kDtypes[code][0] });
          continue;
        }
        fail(`unsupported: model input '${name}' has an element type we cannot hold (code ${code})`);
      }
      if (ok) {
        this.types.set(name, { dtype: 'float32', shape });
        this.g.inputs.push({ name, shape, dtype: 'float32' });
      } else {
        this.pending.set(name, vi);
      }
    }
  }

  sortedNodes() {
    const nodes = this.graph.node || [];
    const producer = new Map();
    nodes.forEach((n, i) => {
      for (const o of n.output) {
        if (!o) continue;
        if (this.names.has(o) || producer.has(o)) fail(`tensor '${o}' is defined twice (output of node ${i}, '${n.op_type || ''}')`);
        producer.set(o, i);
      }
    });
    const pending = nodes.map(() => 0);
    const consumers = nodes.map(() => []);
    nodes.forEach((n, i) => {
      for (const x of n.input) {
        if (!x) continue;
        if (producer.has(x)) {
          ++pending[i];
          consumers[producer.get(x)].push(i);
        } else if (!this.names.has(x) && !this.pending.has(x)) {
          const out = n.output.length ? n.output[0] : n.name || '';
          fail(`node '${out}' (${n.op_type || ''}): input '${x}' is not defined: not a model input, an initializer or the output of a node (a missing initializer?)`);
        }
      }
    });
    // Kahn's algorithm in file order: a graph in order keeps its order.
    const ready = new Set();
    pending.forEach((p, i) => p === 0 && ready.add(i));
    const order = [];
    while (ready.size > 0) {
      const i = Math.min(...ready);
      ready.delete(i);
      order.push(nodes[i]);
      for (const c of consumers[i]) if (--pending[c] === 0) ready.add(c);
    }
    if (order.length !== nodes.length) {
      const stuck = [];
      nodes.forEach((n, i) => pending[i] > 0 && stuck.push(`'${n.output.length ? n.output[0] : n.name || ''}' (${n.op_type || ''})`));
      fail(`the graph has a cycle: nodes ${stuck.join(', ')} depend on each other's outputs`);
    }
    return order;
  }

  convert(n) {
    this.node = n;
    this.attrsRead.clear();
    if (n.domain && n.domain !== 'ai.onnx') this.unsupported(`operator domain '${n.domain}' (only the default ONNX domain is supported)`);
    for (const o of n.output) this.names.add(o);
    const mapping = kMappings[n.op_type || ''];
    if (!mapping) this.unsupported(`operator '${n.op_type || ''}'`);
    if (n.output.length < 1 || !n.output[0]) this.invalid('the node has no output');
    mapping(this);
    for (const a of n.attribute || []) if (!this.attrsRead.has(a.name)) this.unsupported(`attribute '${a.name}'`);
    this.node = null;
  }

  finishOutputs() {
    for (const o of this.graph.output || []) {
      let name = this.resolve(o.name);
      if (!this.types.has(name) && !this.pending.has(name)) fail(`graph output '${o.name}' is not computed by any node`);
      const isNode = this.g.nodes.some((n) => n.name === name);
      const taken = this.g.outputs.includes(name);
      if (!isNode || taken || name !== o.name) {
        // An output that is an input, a constant, an alias or listed twice gets its own
        // copy, so each output is a distinct tensor named as in the model.
        let copy = o.name;
        if (this.names.has(copy) && copy === name) copy = this.temp('out');
        const t = this.typeOf(name);
        if (t.shape.length === 0) fail(`unsupported: graph output '${o.name}' is a scalar copy of an input`);
        this.emit(copy, 'reshape', [name], { newshape: t.shape.slice() });
        name = copy;
      }
      this.g.outputs.push(name);
    }
  }

  run() {
    this.g.name = this.graph.name ? toCIdentifier(this.graph.name) : 'model';
    this.declareInputs();
    for (const n of this.sortedNodes()) this.convert(n);
    this.finishOutputs();
    // Run-time inputs must be float32, float64 or integers (what the ops take; each op
    // refuses the types it does not compute on); unused ones stay in the signature.
    for (const name of [...this.pending.keys()].sort(byteOrder)) this.typeOf(name);
    for (const x of this.g.inputs)
      if (x.dtype !== 'float32' && x.dtype !== 'float64' && !isInteger(x.dtype))
        fail(`unsupported: model input '${x.name}' has dtype ${x.dtype}; only float32, float64 and integer run-time inputs are supported`);
    if (this.g.nodes.length === 0) fail('unsupported: the graph has no operator');
    return this.g;
  }
}

// std::map's order (the native graph's constants are a std::map).
function byteOrder(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------- the op mappings (onnx_ops.cc)

const out0 = (c) => c.node.output[0];
const rankOf = (c, name) => c.typeOf(name).shape.length;

function singleOutput(c) {
  for (let k = 1; k < c.node.output.length; ++k)
    if (c.node.output[k]) c.unsupported(`output ${k} ('${c.node.output[k]}')`);
}

function expectInputs(c, lo, hi) {
  let n = c.numInputs();
  while (n > 0 && !c.node.input[n - 1]) --n;
  if (n < lo || n > hi) c.invalid(`expected ${lo}${hi !== lo ? ` to ${hi}` : ''} inputs, got ${n}`);
}

function unary(c, op, attrs = {}) {
  expectInputs(c, 1, 1);
  singleOutput(c);
  c.emit(out0(c), op, [c.input(0)], attrs);
}

function binary(c, op) {
  expectInputs(c, 2, 2);
  singleOutput(c);
  c.emit(out0(c), op, [c.input(0), c.input(1)]);
}

// The spatial window attributes shared by Conv and the pools, as explicit paddings;
// 1-D windows become 2-D ones of height 1. 3-D windows (5-D data, with `threeD`: pools
// and Conv) are returned as read, with pads [d, h, w begins, d, h, w ends].
function readWindow(c, data, kernelFromWeight, threeD = false) {
  const shape = c.typeOf(data).shape;
  if (shape.length !== 4 && shape.length !== 3 && !(threeD && shape.length === 5))
    c.unsupported(`only 1-D and 2-D windows (3-D or 4-D data)${threeD ? ' and 3-D ones (5-D data)' : ''} are supported; the data has rank ${shape.length}`);
  const dims = shape.length - 2;
  const w = {};
  w.kernel = c.attrInts('kernel_shape', kernelFromWeight);
  if (w.kernel.length !== dims) c.invalid(`attribute 'kernel_shape' must have ${dims} values`);
  if (kernelFromWeight.length && !eqArrays(w.kernel, kernelFromWeight)) c.invalid("attribute 'kernel_shape' does not match the weight's spatial shape");
  w.strides = c.attrInts('strides', new Array(dims).fill(1));
  w.dilations = c.attrInts('dilations', new Array(dims).fill(1));
  let pads = c.attrInts('pads', new Array(2 * dims).fill(0));
  if (w.strides.length !== dims || w.dilations.length !== dims || pads.length !== 2 * dims)
    c.invalid(`attributes 'strides' and 'dilations' need ${dims} values and 'pads' ${2 * dims}`);
  const autoPad = c.attrString('auto_pad', 'NOTSET');
  if (autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER') {
    // Output = ceil(input / stride); the odd pixel at the end (UPPER) or the start (LOWER).
    for (let k = 0; k < dims; ++k) {
      const inp = shape[2 + k];
      const s = w.strides[k];
      const extent = (w.kernel[k] - 1) * w.dilations[k] + 1;
      const total = Math.max((Math.trunc((inp + s - 1) / s) - 1) * s + extent - inp, 0);
      const small = Math.trunc(total / 2);
      const big = total - small;
      pads[k] = autoPad === 'SAME_UPPER' ? small : big;
      pads[k + dims] = autoPad === 'SAME_UPPER' ? big : small;
    }
  } else if (autoPad === 'VALID') {
    pads = new Array(2 * dims).fill(0);
  } else if (autoPad !== 'NOTSET') {
    c.invalid(`attribute 'auto_pad' is '${autoPad}'`);
  }
  if (dims === 1) {
    w.kernel.unshift(1);
    w.strides.unshift(1);
    w.dilations.unshift(1);
    pads = [0, pads[0], 0, pads[1]];
  }
  w.pads = pads; // ONNX [h_begin, w_begin, h_end, w_end] is our [top, left, bottom, right]
  return w;
}

function emitWindowed(c, op, ins, attrs, out = '') {
  if (!out) out = out0(c);
  const shape = c.typeOf(ins[0]).shape;
  if (shape.length === 4) {
    c.emit(out, op, ins, attrs);
    return;
  }
  ins = ins.slice();
  ins[0] = c.emit(c.temp('2d'), 'reshape', [ins[0]], { newshape: [shape[0], shape[1], 1, shape[2]] });
  if (op === 'conv2d') {
    const ws = c.typeOf(ins[1]).shape;
    ins[1] = c.emit(c.temp('w2d'), 'reshape', [ins[1]], { newshape: [ws[0], ws[1], 1, ws[2]] });
  }
  const r = c.emit(c.temp(op), op, ins, attrs);
  const os = c.typeOf(r).shape;
  c.emit(out, 'reshape', [r], { newshape: [os[0], os[1], os[3]] });
}

// A 3-D convolution (NCDHW data, OIDHW weight) is our conv3d; pads [d, h, w begins,
// d, h, w ends] are its `padding`.
function conv3d(c) {
  const data = c.input(0);
  const weight = c.input(1);
  const ws = c.typeOf(weight).shape;
  if (c.typeOf(data).shape.length !== 5) c.invalid('the data and the weight have different ranks');
  const w = readWindow(c, data, ws.slice(2), true);
  const attrs = { strides: w.strides, padding: w.pads, dilation: w.dilations, groups: c.attrInt('group', 1) };
  const ins = [data, weight];
  if (c.input(2)) ins.push(c.input(2));
  c.emit(out0(c), 'conv3d', ins, attrs);
}

function conv(c) {
  expectInputs(c, 2, 3);
  singleOutput(c);
  const data = c.input(0);
  const weight = c.input(1);
  const ws = c.typeOf(weight).shape;
  if (ws.length === 5) return conv3d(c);
  if (ws.length !== 4 && ws.length !== 3) c.unsupported(`only 1-D, 2-D and 3-D convolutions are supported; the weight has rank ${ws.length}`);
  if (ws.length !== c.typeOf(data).shape.length) c.invalid('the data and the weight have different ranks');
  const w = readWindow(c, data, ws.slice(2));
  const attrs = { strides: w.strides, padding: w.pads, dilation: w.dilations, groups: c.attrInt('group', 1) };
  const ins = [data, weight];
  if (c.input(2)) ins.push(c.input(2));
  emitWindowed(c, 'conv2d', ins, attrs);
}

// A 3-D pool as two 2-D ones: over (H, W) with the depth folded into the channels,
// then over D with H·W flattened. Exact for max, and for the average too: a window's
// count of positions inside the (padded) input is the product of its counts per axis,
// so the mean over the box is the mean over D of the means over (H, W).
function pool3d(c, op, data, w, attrs) {
  const s = c.typeOf(data).shape; // N, C, D, H, W
  const x = c.emit(c.temp('hw'), 'reshape', [data], { newshape: [s[0], s[1] * s[2], s[3], s[4]] });
  const hwAttrs = { ...attrs, pool_size: [w.kernel[1], w.kernel[2]], strides: [w.strides[1], w.strides[2]],
    dilation: [w.dilations[1], w.dilations[2]], padding: [w.pads[1], w.pads[2], w.pads[4], w.pads[5]] };
  const hw = c.emit(c.temp(`${op}_hw`), op, [x], hwAttrs);
  const o = c.typeOf(hw).shape; // N, C·D, OH, OW
  const y = c.emit(c.temp('d'), 'reshape', [hw], { newshape: [s[0], s[1], s[2], o[2] * o[3]] });
  const dAttrs = { ...attrs, pool_size: [w.kernel[0], 1], strides: [w.strides[0], 1], dilation: [w.dilations[0], 1],
    padding: [w.pads[0], 0, w.pads[3], 0] };
  const d = c.emit(c.temp(`${op}_d`), op, [y], dAttrs);
  const od = c.typeOf(d).shape[2];
  c.emit(out0(c), 'reshape', [d], { newshape: [s[0], s[1], od, o[2], o[3]] });
}

function pool(c, op) {
  expectInputs(c, 1, 1);
  // MaxPool's optional output 1 is the Indices (max_pool2d with `indices`).
  const outs = c.node.output;
  const indices = op === 'max_pool2d' && outs.length > 1 ? outs[1] : '';
  for (let k = indices ? 2 : 1; k < outs.length; ++k) if (outs[k]) c.unsupported(`output ${k} ('${outs[k]}')`);
  const data = c.input(0);
  const w = readWindow(c, data, [], true);
  if (!c.hasAttr('kernel_shape')) c.invalid("missing attribute 'kernel_shape'");
  // storage_order only changes the Indices output: column-major (h, w) positions.
  const columnMajor = c.attrInt('storage_order', 0) !== 0;
  const attrs = { pool_size: w.kernel, strides: w.strides, padding: w.pads, dilation: w.dilations, ceil_mode: c.attrInt('ceil_mode', 0) !== 0 };
  if (op === 'avg_pool2d') attrs.count_include_pad = c.attrInt('count_include_pad', 0) !== 0;
  const n = w.kernel.length;
  for (let k = 0; k < n; ++k)
    if (w.pads[k] >= w.kernel[k] || w.pads[k + n] >= w.kernel[k])
      c.unsupported(`a padding as large as the window (pads ${JSON.stringify(w.pads)}, kernel ${JSON.stringify(w.kernel)})`);
  if (indices && n === 3) c.unsupported('the Indices output of a 3-D MaxPool');
  if (n === 3) {
    pool3d(c, op, data, w, attrs);
    return;
  }
  emitWindowed(c, op, [data], attrs);
  // A 1-D pool runs on (N, C, 1, L): the same flat indices as (N, C, L).
  if (indices) {
    const iAttrs = { ...attrs, indices: true };
    if (columnMajor) iAttrs.column_major_indices = true;
    emitWindowed(c, op, [data], iAttrs, indices);
  }
}

function globalAvgPool(c) {
  expectInputs(c, 1, 1);
  singleOutput(c);
  if (rankOf(c, c.input(0)) !== 4) c.unsupported(`only 4-D (NCHW) data is supported; the data has rank ${rankOf(c, c.input(0))}`);
  c.emit(out0(c), 'global_avg_pool2d', [c.input(0)]);
}

function gemm(c) {
  expectInputs(c, 2, 3);
  singleOutput(c);
  const attrs = { alpha: c.attrFloat('alpha', 1.0), beta: c.attrFloat('beta', 1.0), transA: c.attrInt('transA', 0), transB: c.attrInt('transB', 0) };
  const ins = [c.input(0), c.input(1)];
  if (c.input(2)) ins.push(c.input(2));
  // The usual fully connected layer (A·Bᵀ + bias of shape (N,)) is our dense op.
  let plain = attrs.alpha === 1 && attrs.beta === 1 && attrs.transA === 0 && attrs.transB === 1;
  if (plain && ins.length === 3) {
    const bias = c.typeOf(ins[2]).shape;
    const b = c.typeOf(ins[1]).shape;
    // A rank-0 weight is an internal error natively too (std::vector::at throws).
    if (b.length === 0) throw new OnnxImportError(`internal error: ${c.where()}: Gemm's B has rank 0`, true);
    plain = bias.length === 1 && bias[0] === b[0];
  }
  if (plain && rankOf(c, ins[0]) === 2 && rankOf(c, ins[1]) === 2) {
    c.emit(out0(c), 'dense', ins);
    return;
  }
  c.emit(out0(c), 'gemm', ins, attrs);
}

function matmul(c) {
  expectInputs(c, 2, 2);
  singleOutput(c);
  const a = c.input(0);
  const b = c.input(1);
  if (rankOf(c, a) < 2 || rankOf(c, b) < 2) c.unsupported('1-D operands of MatMul (reshape them to 2-D first)');
  c.emit(out0(c), 'matmul', [a, b]);
}

// A scalar from an optional compile-time input, or undefined.
function optionalScalar(c, i, role) {
  if (!c.input(i)) return undefined;
  const a = c.staticValue(i, role);
  if (a.values.length !== 1) c.invalid(`input '${role}' must be a scalar`);
  return a.values[0];
}

function clip(c) {
  singleOutput(c);
  const attrs = {};
  if (c.opset < 11) {
    expectInputs(c, 1, 1);
    if (c.hasAttr('min')) attrs.min = c.attrFloat('min', 0);
    if (c.hasAttr('max')) attrs.max = c.attrFloat('max', 0);
  } else {
    expectInputs(c, 1, 3);
    let v = optionalScalar(c, 1, 'min');
    if (v !== undefined) attrs.min = v;
    v = optionalScalar(c, 2, 'max');
    if (v !== undefined) attrs.max = v;
  }
  if ('min' in attrs && 'max' in attrs && attrs.min > attrs.max) c.unsupported('min greater than max');
  c.emit(out0(c), 'clip', [c.input(0)], attrs);
}

// Softmax before opset 13 normalizes the flattened axes from `axis` on.
function softmax(c, op) {
  expectInputs(c, 1, 1);
  singleOutput(c);
  const data = c.input(0);
  const shape = c.typeOf(data).shape;
  const rank = shape.length;
  let axis = c.attrInt('axis', c.opset < 13 ? 1 : -1);
  if (axis < -rank || axis >= rank) c.invalid(`attribute 'axis' is out of range for rank ${rank}`);
  if (axis < 0) axis += rank;
  if (c.opset >= 13 || axis === rank - 1) {
    c.emit(out0(c), op, [data], { axis });
    return;
  }
  let outer = 1;
  let inner = 1;
  for (let k = 0; k < rank; ++k) if (k < axis) outer *= shape[k]; else inner *= shape[k];
  const flat = c.emit(c.temp('2d'), 'reshape', [data], { newshape: [outer, inner] });
  const sm = c.emit(c.temp(op), op, [flat], { axis: 1 });
  c.emit(out0(c), 'reshape', [sm], { newshape: shape });
}

// Upsample in mode 'nearest' with whole scales, as core/frontend/onnx_ops.cc maps it:
// reshape to (..., d, 1, ...), multiply by ones of (..., 1, scale, ...), reshape back.
function upsample(c) {
  singleOutput(c);
  const mode = c.attrString('mode', 'nearest');
  if (mode !== 'nearest') c.unsupported(`mode '${mode}' (only 'nearest' is supported)`);
  const shape = c.typeOf(c.input(0)).shape;
  let scales;
  if (c.opset < 7) {
    expectInputs(c, 1, 1);
    if (shape.length !== 4) c.unsupported(`Upsample of opset 1 on data of rank ${shape.length}`);
    if (!c.hasAttr('height_scale') || !c.hasAttr('width_scale')) c.invalid("missing attribute 'height_scale' or 'width_scale'");
    scales = [1, 1, c.attrFloat('height_scale', 1), c.attrFloat('width_scale', 1)];
  } else if (c.opset < 9) {
    expectInputs(c, 1, 1);
    if (!c.hasAttr('scales')) c.invalid("missing attribute 'scales'");
    scales = (c.attr('scales').floats || []).slice();
  } else {
    expectInputs(c, 2, 2);
    const v = c.staticValue(1, 'scales');
    scales = v.values.map((x) => (isFloat(v.dtype) ? x : 0));
  }
  if (scales.length !== shape.length) c.invalid(`'scales' has ${scales.length} values for data of rank ${shape.length}`);
  const split = [];
  const ones = [];
  const out = [];
  scales.forEach((s, k) => {
    if (!(s >= 1) || s !== Math.floor(s) || s > 1024) {
      const shown = Number.isInteger(s) ? s.toFixed(1) : String(s);  // as nlohmann::json prints a double
      c.unsupported(`scale ${shown} on axis ${k} (only whole scales from 1 are supported)`);
    }
    split.push(shape[k], 1);
    ones.push(1, s);
    out.push(shape[k] * s);
  });
  const t = c.typeOf(c.input(0));
  if (!isFloat(t.dtype)) c.unsupported(`data of type ${t.dtype} (float only)`);
  const x = c.emit(c.temp('split'), 'reshape', [c.input(0)], { newshape: split });
  const one = c.emit(c.temp('ones'), 'full', [], { shape: ones, value: 1, dtype: t.dtype });
  const rep = c.emit(c.temp('repeated'), 'mul', [x, one]);
  c.emit(out0(c), 'reshape', [rep], { newshape: out });
}

function reshape(c) {
  singleOutput(c);
  let shape;
  if (c.opset < 5) {
    shape = c.attrInts('shape', []);
  } else {
    expectInputs(c, 2, 2);
    shape = c.staticInts(1, 'shape');
  }
  const allowzero = c.attrInt('allowzero', 0) !== 0;
  if (allowzero && shape.includes(0)) c.unsupported('allowzero = 1 with a 0 in the shape (a zero-sized tensor)');
  if (shape.length === 0) c.unsupported('reshape to a scalar (rank 0)');
  c.emit(out0(c), 'reshape', [c.input(0)], { newshape: shape });
}

function flatten(c) {
  expectInputs(c, 1, 1);
  singleOutput(c);
  c.emit(out0(c), 'flatten', [c.input(0)], { axis: c.attrInt('axis', 1) });
}

// ConvTranspose on 1 to 3 spatial axes is our conv_transpose. `output_shape` (or
// auto_pad SAME_*, whose output is input * stride) sets the padding: the total
// stride * (in - 1) + output_padding + dilated kernel - output, split as ONNX's reference
// does (floor(total / 2) at the end, or at the start with SAME_UPPER).
function convTranspose(c) {
  expectInputs(c, 2, 3);
  singleOutput(c);
  const data = c.input(0);
  const weight = c.input(1);
  const xs = c.typeOf(data).shape;
  const ws = c.typeOf(weight).shape;
  if (xs.length < 3 || xs.length > 5) c.unsupported(`only 1-D, 2-D and 3-D transposed convolutions; the data has rank ${xs.length}`);
  if (ws.length !== xs.length) c.invalid('the data and the weight have different ranks');
  const dims = xs.length - 2;
  const kernel = ws.slice(2);
  if (!eqArrays(c.attrInts('kernel_shape', kernel), kernel)) c.invalid("attribute 'kernel_shape' does not match the weight");
  const strides = c.attrInts('strides', new Array(dims).fill(1));
  const dilations = c.attrInts('dilations', new Array(dims).fill(1));
  const outputPadding = c.attrInts('output_padding', new Array(dims).fill(0)).slice();
  let pads = c.attrInts('pads', new Array(2 * dims).fill(0)).slice();
  let outputShape = c.attrInts('output_shape', []).slice();
  const autoPad = c.attrString('auto_pad', 'NOTSET');
  if (strides.length !== dims || dilations.length !== dims || outputPadding.length !== dims || pads.length !== 2 * dims)
    c.invalid(`attributes 'strides', 'dilations' and 'output_padding' need ${dims} values and 'pads' ${2 * dims}`);
  if (!['NOTSET', 'VALID', 'SAME_UPPER', 'SAME_LOWER'].includes(autoPad)) c.invalid(`attribute 'auto_pad' is '${autoPad}'`);
  if (outputShape.length === dims + 2) outputShape = outputShape.slice(2);
  if (!outputShape.length && (autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER'))
    for (let k = 0; k < dims; ++k) outputShape.push(xs[2 + k] * strides[k]);
  if (outputShape.length) {
    if (outputShape.length !== dims) c.invalid(`attribute 'output_shape' needs ${dims} values`);
    for (let k = 0; k < dims; ++k) {
      const total = strides[k] * (xs[2 + k] - 1) + outputPadding[k] + (kernel[k] - 1) * dilations[k] + 1 - outputShape[k];
      const half = Math.floor(total / 2);
      pads[k] = autoPad === 'SAME_UPPER' ? half : total - half;
      pads[k + dims] = total - pads[k];
      if (pads[k + dims] < 0 && pads[k] >= 0) {
        outputPadding[k] -= pads[k + dims];
        pads[k + dims] = 0;
      }
      if (pads[k] < 0 || pads[k + dims] < 0) c.unsupported("an output_shape that pads the start of the output (negative 'pads')");
    }
  } else if (autoPad === 'VALID') {
    pads = new Array(2 * dims).fill(0);
  }
  const attrs = { strides, padding: pads, dilation: dilations, output_padding: outputPadding, groups: c.attrInt('group', 1) };
  const ins = [data, weight];
  if (c.input(2)) ins.push(c.input(2));
  c.emit(out0(c), 'conv_transpose', ins, attrs);
}

// Max and Min of any number of inputs (numpy broadcasting): a chain of binary maximum
// or minimum nodes; one input is a copy.
function variadic(c, op) {
  singleOutput(c);
  const n = c.numInputs();
  if (n === 0) c.invalid('expected at least 1 input');
  for (let i = 0; i < n; ++i) if (!c.input(i)) c.invalid(`input ${i} is empty`);
  if (n === 1) {
    c.emit(out0(c), 'reshape', [c.input(0)], { newshape: c.typeOf(c.input(0)).shape.slice() });
    return;
  }
  let acc = c.input(0);
  for (let i = 1; i < n; ++i) acc = c.emit(i + 1 === n ? out0(c) : c.temp(op), op, [acc, c.input(i)]);
}

function concat(c) {
  singleOutput(c);
  if (c.opset >= 4 && !c.hasAttr('axis')) c.invalid("missing attribute 'axis'");
  const ins = [];
  for (let i = 0; i < c.numInputs(); ++i) ins.push(c.input(i));
  const axis = c.attrInt('axis', 1);
  if (ins.length === 1) {
    c.emit(out0(c), 'reshape', ins, { newshape: c.typeOf(ins[0]).shape.slice() });
    return;
  }
  c.emit(out0(c), 'concat', ins, { axis });
}

function transpose(c) {
  expectInputs(c, 1, 1);
  singleOutput(c);
  const attrs = {};
  if (c.hasAttr('perm')) attrs.axes = c.attrInts('perm', []);
  c.emit(out0(c), 'transpose', [c.input(0)], attrs);
}

function pad(c) {
  singleOutput(c);
  const mode = c.attrString('mode', 'constant');
  if (mode !== 'constant' && mode !== 'edge' && mode !== 'reflect') c.unsupported(`mode '${mode}'`);
  let pads;
  let value = 0;
  if (c.opset < 11) {
    expectInputs(c, 1, 1);
    pads = c.attrInts('pads', []);
    value = c.attrFloat('value', 0);
  } else {
    expectInputs(c, 2, 3);
    pads = c.staticInts(1, 'pads');
    const v = optionalScalar(c, 2, 'constant_value');
    if (v !== undefined) value = v;
  }
  const rank = rankOf(c, c.input(0));
  if (pads.length !== 2 * rank) c.invalid(`'pads' has ${pads.length} values; the data of rank ${rank} needs ${2 * rank}`);
  const widths = [];
  for (let k = 0; k < rank; ++k) {
    if (pads[k] < 0 || pads[k + rank] < 0) c.unsupported('negative pads (cropping)');
    widths.push([pads[k], pads[k + rank]]);
  }
  c.emit(out0(c), 'pad', [c.input(0)], { pad_width: widths, pad_value: value, mode });
}

// The mean of `x` (N, C, ...) over every axis but 1, as (1, C, 1, 1): a global average
// pool of the data rearranged to (1, C, N, rest).
function channelMean(c, x) {
  const s = c.typeOf(x).shape;
  let rest = 1;
  for (let k = 2; k < s.length; ++k) rest *= s[k];
  const a = c.emit(c.temp('ncs'), 'reshape', [x], { newshape: [s[0], s[1], rest] });
  const t = c.emit(c.temp('cns'), 'transpose', [a], { axes: [1, 0, 2] });
  const b = c.emit(c.temp('1cns'), 'reshape', [t], { newshape: [1, s[1], s[0], rest] });
  return c.emit(c.temp('mean'), 'global_avg_pool2d', [b]);
}

// training_mode = 1 (opset 14+): normalizes with the batch's own statistics (the mean
// and the biased variance over every axis but 1) and outputs the running statistics
// updated as running·momentum + batch·(1 - momentum). Deterministic: plain graph ops.
function batchNormTraining(c, ins, eps, momentum) {
  const s = c.typeOf(ins[0]).shape;
  const ch = s[1];
  const bshape = s.map(() => 1);
  bshape[1] = ch;
  const mean4 = channelMean(c, ins[0]);
  const meanB = c.emit(c.temp('mean_b'), 'reshape', [mean4], { newshape: bshape });
  const diff = c.emit(c.temp('diff'), 'sub', [ins[0], meanB]);
  const sq = c.emit(c.temp('sq'), 'mul', [diff, diff]);
  const var4 = channelMean(c, sq);
  const mean = c.emit(c.temp('batch_mean'), 'reshape', [mean4], { newshape: [ch] });
  const variance = c.emit(c.temp('batch_var'), 'reshape', [var4], { newshape: [ch] });
  c.emit(out0(c), 'batch_norm', [ins[0], ins[1], ins[2], mean, variance], { epsilon: eps, axis: 1 });
  // A float32 NDArray of shape (1) (set_float rounds to float32).
  const scalar = (hint, v) => {
    const name = c.temp(hint);
    c.addConstant(name, { dtype: 'float32', shape: [1], values: [Math.fround(v)] });
    return name;
  };
  const keep = scalar('momentum', momentum);
  const take = scalar('one_minus_momentum', 1.0 - momentum);
  for (let k = 1; k <= 2; ++k) {
    const out = k < c.node.output.length ? c.node.output[k] : '';
    if (!out) continue;
    const running = c.emit(c.temp('running'), 'mul', [ins[2 + k], keep]);
    const batch = c.emit(c.temp('batch'), 'mul', [k === 1 ? mean : variance, take]);
    c.emit(out, 'add', [running, batch]);
  }
}

function batchNorm(c) {
  expectInputs(c, 5, 5);
  const training = c.attrInt('training_mode', 0) !== 0;
  if (training && c.opset < 14) c.invalid("attribute 'training_mode' before opset 14");
  // Training mode has the running mean and variance as outputs 1 and 2.
  const outs = c.node.output;
  for (let k = training ? 3 : 1; k < outs.length; ++k) if (outs[k]) c.unsupported(`output ${k} ('${outs[k]}')`);
  if (c.opset < 7) c.unsupported('BatchNormalization before opset 7 (training by default)');
  if (c.opset < 9 && c.attrInt('spatial', 1) !== 1) c.unsupported('spatial = 0');
  const momentum = c.attrFloat('momentum', 0.9); // only used in training
  const eps = c.attrFloat('epsilon', 1e-5);
  const ins = [0, 1, 2, 3, 4].map((i) => c.input(i));
  if (rankOf(c, ins[0]) < 2) c.unsupported('data of rank below 2');
  if (training) {
    batchNormTraining(c, ins, eps, momentum);
    return;
  }
  c.emit(out0(c), 'batch_norm', ins, { epsilon: eps, axis: 1 });
}

function identity(c) {
  expectInputs(c, 1, 1);
  singleOutput(c);
  c.alias(out0(c), c.input(0));
}

// Dropout at inference (or with ratio 0) is the identity, and its mask (output 1) is
// all true: a `full` node (bool from opset 10, the data's type before). Training with a
// non-zero ratio (random masks) is refused.
function dropout(c) {
  expectInputs(c, 1, 3);
  const outs = c.node.output;
  for (let k = 2; k < outs.length; ++k) if (outs[k]) c.unsupported(`output ${k} ('${outs[k]}')`);
  c.attrFloat('ratio', 0.5);
  c.attrInt('seed', 0);
  if (c.opset < 7 && c.attrInt('is_test', 0) === 0) c.unsupported('is_test = 0 (training)');
  if (c.input(2)) {
    const training = c.staticValue(2, 'training_mode');
    let ratio = 0.5;
    if (c.input(1)) {
      const r = c.staticValue(1, 'ratio');
      ratio = isFloat(r.dtype) ? r.values[0] : 0.5;
    }
    if (training.values.length !== 1) c.invalid("input 'training_mode' must be a scalar");
    if (training.values[0] !== 0 && ratio !== 0) c.unsupported('training_mode = true (random dropout)');
  }
  c.alias(out0(c), c.input(0));
  if (outs.length > 1 && outs[1]) {
    const t = c.typeOf(c.input(0));
    c.emit(outs[1], 'full', [], { shape: t.shape.slice(), value: 1, dtype: c.opset >= 10 ? 'bool' : t.dtype });
  }
}

function globalMaxPool(c) {
  expectInputs(c, 1, 1);
  singleOutput(c);
  const shape = c.typeOf(c.input(0)).shape;
  if (shape.length !== 4) c.unsupported(`only 4-D (NCHW) data is supported; the data has rank ${shape.length}`);
  c.emit(out0(c), 'max_pool2d', [c.input(0)], { pool_size: [shape[2], shape[3]] });
}

// DynamicQuantizeLinear: one dynamic_quantize_linear node per output, as the C++
// converter (core/frontend/onnx_quant_ops.cc) writes it. The other quantized operators
// need compile-time scales, which the node tests give as inputs: refused here and there.
function dynamicQuantizeLinear(c) {
  expectInputs(c, 1, 1);
  const names = ['y', 'scale', 'zero_point'];
  c.node.output.forEach((o, k) => {
    if (o && k < 3) c.emit(o, 'dynamic_quantize_linear', [c.input(0)], { output: names[k] });
  });
}

// The other quantized operators are converted by the C++ frontend only
// (core/frontend/onnx_quant_ops.cc, which replaces this converter). Here each reads the
// compile-time input the C++ mapping reads first, so a model input there is refused with
// the same message (the node tests pass scales and zero points as inputs), and is
// refused otherwise.
function quantizedOp(input, role) {
  return (c) => {
    if (c.input(input) !== '') c.staticValue(input, role);
    c.unsupported(`operator '${c.node.op_type}' (quantized operators are converted by the native frontend; the playground's converter does not have them yet)`);
  };
}

function scalarOrList(dtype, values, scalar) {
  const conv = dtype === 'float32' ? Math.fround : (x) => x;
  return { dtype, shape: scalar ? [] : [values.length], values: values.map(conv) };
}

function constant(c) {
  expectInputs(c, 0, 0);
  singleOutput(c);
  if ((c.node.attribute || []).length !== 1) c.invalid('expected exactly one value attribute');
  const name = c.node.attribute[0].name;
  const a = c.attr(name);
  let v;
  if (name === 'value') v = tensorToArray(a.t || {}, `the value of Constant '${out0(c)}'`);
  else if (name === 'value_float') v = scalarOrList('float32', [a.f || 0], true);
  else if (name === 'value_floats') v = scalarOrList('float32', a.floats || [], false);
  else if (name === 'value_int') v = scalarOrList('int64', [num(a.i)], true);
  else if (name === 'value_ints') v = scalarOrList('int64', (a.ints || []).map(num), false);
  else c.unsupported(`attribute '${name}'`);
  c.addConstant(out0(c), v);
}

// Squeeze/Unsqueeze axes: an attribute before opset 13, a compile-time input after.
function axesOf(c, required) {
  if (c.opset < 13) {
    if (required && !c.hasAttr('axes')) c.invalid("missing attribute 'axes'");
    return c.attrInts('axes', []);
  }
  expectInputs(c, required ? 2 : 1, 2);
  if (!c.input(1)) return [];
  return c.staticInts(1, 'axes');
}

function squeeze(c) {
  singleOutput(c);
  const shape = c.typeOf(c.input(0)).shape;
  const rank = shape.length;
  const axes = axesOf(c, false);
  const drop = shape.map(() => false);
  if (axes.length === 0) shape.forEach((d, k) => { drop[k] = d === 1; });
  for (let a of axes) {
    if (a < -rank || a >= rank) c.invalid(`axis ${a} is out of range`);
    if (a < 0) a += rank;
    if (shape[a] !== 1) c.invalid(`cannot squeeze axis ${a} of size ${shape[a]}`);
    drop[a] = true;
  }
  const out = shape.filter((d, k) => !drop[k]);
  if (out.length === 0) c.unsupported('squeezing to a scalar (rank 0)');
  c.emit(out0(c), 'reshape', [c.input(0)], { newshape: out });
}

function unsqueeze(c) {
  singleOutput(c);
  const shape = c.typeOf(c.input(0)).shape;
  const axes = axesOf(c, true);
  const rank = shape.length + axes.length;
  const inserted = new Array(rank).fill(false);
  for (let a of axes) {
    if (a < -rank || a >= rank) c.invalid(`axis ${a} is out of range`);
    if (a < 0) a += rank;
    if (inserted[a]) c.invalid(`axis ${a} is given twice`);
    inserted[a] = true;
  }
  const out = [];
  let next = 0;
  for (let k = 0; k < rank; ++k) out.push(inserted[k] ? 1 : shape[next++]);
  c.emit(out0(c), 'reshape', [c.input(0)], { newshape: out });
}

const kMappings = {
  Abs: (c) => unary(c, 'abs'),
  Add: (c) => binary(c, 'add'),
  AveragePool: (c) => pool(c, 'avg_pool2d'),
  BatchNormalization: batchNorm,
  Clip: clip,
  Concat: concat,
  Constant: constant,
  Conv: conv,
  ConvInteger: quantizedOp(2, 'x_zero_point'),
  ConvTranspose: convTranspose,
  DequantizeLinear: quantizedOp(1, 'x_scale'),
  Div: (c) => binary(c, 'div'),
  Dropout: dropout,
  DynamicQuantizeLinear: dynamicQuantizeLinear,
  Exp: (c) => unary(c, 'exp'),
  Flatten: flatten,
  Gemm: gemm,
  GlobalAveragePool: globalAvgPool,
  GlobalMaxPool: globalMaxPool,
  Identity: identity,
  LeakyRelu: (c) => unary(c, 'leaky_relu', { alpha: c.attrFloat('alpha', 0.01) }),
  LogSoftmax: (c) => softmax(c, 'log_softmax'),
  MatMul: matmul,
  MatMulInteger: quantizedOp(2, 'a_zero_point'),
  Max: (c) => variadic(c, 'maximum'),
  MaxPool: (c) => pool(c, 'max_pool2d'),
  Min: (c) => variadic(c, 'minimum'),
  Mul: (c) => binary(c, 'mul'),
  Neg: (c) => unary(c, 'neg'),
  Pad: pad,
  QLinearConv: quantizedOp(2, 'x_zero_point'),
  QLinearMatMul: quantizedOp(2, 'a_zero_point'),
  QuantizeLinear: quantizedOp(1, 'y_scale'),
  Relu: (c) => unary(c, 'relu'),
  Reshape: reshape,
  Sigmoid: (c) => unary(c, 'sigmoid'),
  Softmax: (c) => softmax(c, 'softmax'),
  Sqrt: (c) => unary(c, 'sqrt'),
  Squeeze: squeeze,
  Sub: (c) => binary(c, 'sub'),
  Tanh: (c) => unary(c, 'tanh'),
  Transpose: transpose,
  Unsqueeze: unsqueeze,
  Upsample: upsample,
};

// ---------------------------------------------------------------- the JSON graph (graph_writer.cc)

function graphToJson(g) {
  for (const x of g.inputs)
    if (!kGraphDtypes.includes(x.dtype)) fail(`unsupported: input '${x.name}' has dtype ${x.dtype}, which a JSON graph cannot hold`);
  const constants = [...g.constants.keys()].sort(byteOrder).map((name) => {
    const a = g.constants.get(name);
    if (!kGraphDtypes.includes(a.dtype)) fail(`unsupported: constant '${name}' has dtype ${a.dtype}, which a JSON graph cannot hold`);
    if (a.values.some((v) => !Number.isFinite(v))) fail(`unsupported: constant '${name}' holds NaN or infinity, which a JSON graph cannot hold`);
    return { name, shape: a.shape, dtype: a.dtype, values: a.values };
  });
  for (const n of g.nodes)
    if (n.attrs && !allFinite(n.attrs)) fail(`unsupported: an attribute of node '${n.name}' holds NaN or infinity, which a JSON graph cannot hold`);
  return { format: 'microtir-graph', version: 1, name: g.name, inputs: g.inputs, constants, nodes: g.nodes, outputs: g.outputs };
}

const kGraphDtypes = ['float32', 'float16', 'int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64'];
const allFinite = (v) => (typeof v === 'number' ? Number.isFinite(v) : v && typeof v === 'object' ? Object.values(v).every(allFinite) : true);

// The text `microtir import` writes (write_graph_json): one line per field, and per
// input, constant and node of the lists.
function graphText(graph) {
  const fields = Object.entries(graph).map(([k, v]) => {
    const long = Array.isArray(v) && v.length > 0 && k !== 'outputs';
    return `  ${JSON.stringify(k)}: ${long ? `[\n${v.map((x) => `    ${jsonText(x)}`).join(',\n')}\n  ]` : jsonText(v)}`;
  });
  return `{\n${fields.join(',\n')}\n}\n`;
}

// JSON.stringify, but -0 stays -0.0 (as nlohmann writes it), so a constant keeps its bits.
function jsonText(v) {
  if (Object.is(v, -0)) return '-0.0';
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(',')}}`;
  return JSON.stringify(v);
}

// ---------------------------------------------------------------- the API

// The protobuf root of the ONNX schema, from its JSON descriptor (made at build time from
// Debian's onnx.proto: onnx_schema.js).
function onnxRoot(descriptor) {
  return protobuf.Root.fromJSON(descriptor);
}

// `bytes`: the .onnx file (Uint8Array). `infer(op, inputTypes, attrs)` -> {ok, type} or
// {ok: false, message, internal}. Returns the JSON graph as an object; throws
// OnnxImportError with the native frontend's message.
function onnxToGraph(bytes, { root, infer, filename = 'model.onnx' }) {
  const ModelProto = root.lookupType('onnx.ModelProto');
  const model = parseModel(ModelProto, bytes, filename);
  const opset = defaultOpset(model, filename);
  return graphToJson(new Converter(model.graph, opset, infer).run());
}

module.exports = { onnxToGraph, onnxRoot, graphText, OnnxImportError };
