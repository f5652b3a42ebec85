#!/usr/bin/env python3
"""TFLite's data-movement and shape operators on paths the shared TFLM cases
(tflm_ops/) do not take, against references written here in numpy from TFLite's rules:
GATHER_ND and FILL (absent there), GATHER with batch_dims and with indices computed at
run time (and one outside its axis, which must stop the run), SHAPE feeding FILL's
dimensions, int32 and int64 data (PACK, UNPACK, GATHER, ZEROS_LIKE, SPLIT_V with a -1
size, SLICE with int64 begin and size -1), MIRROR_PAD SYMMETRIC, REVERSE_V2 over two
axes, SPACE_TO_BATCH_ND with paddings (int8 padded with raw 0, as TFLM) and rank-3 data,
BATCH_TO_SPACE_ND with crops, RESIZE_BILINEAR int8 with half-pixel centers (TFLM's
fixed-point kernel), RESIZE_NEAREST_NEIGHBOR with align_corners. And refusals: a shape,
size or axis only a run would know is named (exit 1), as is an UNPACK into scalars.

One `microtir run` per model (the reference interpreter; a few with `--target host`,
which also builds the C and checks it against the interpreter). With `--target T --only
A,B` the named cases run on target T (a sample on cortex-m4 under QEMU, or wasm32).

usage: shape_ops_tflite_test.py MICROTIR FLATC SCHEMA [--target T --only CASE,...]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

rng = np.random.default_rng(37)
TYPES = {np.float32: "FLOAT32", np.int8: "INT8", np.int16: "INT16", np.int32: "INT32", np.int64: "INT64"}
QUANT = {np.int8: (0.05, 3), np.int16: (0.001, 0)}


class Model:
    """A one-subgraph model built as flatbuffer JSON; tensors are numpy arrays (constants)
    or shapes and dtypes (run-time tensors)."""

    def __init__(self):
        self.tensors, self.buffers, self.ops, self.codes, self.inputs = [], [{}], [], [], []

    def tensor(self, name, dtype, shape=None, data=None):
        t = {"name": name, "shape": list(shape if data is None else data.shape), "type": TYPES[dtype], "buffer": 0}
        if dtype in QUANT:
            t["quantization"] = {"scale": [QUANT[dtype][0]], "zero_point": [QUANT[dtype][1]]}
        if data is not None:
            t["buffer"] = len(self.buffers)
            self.buffers.append({"data": list(np.ascontiguousarray(data, dtype=dtype).tobytes())})
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, name, data, dtype=np.int32):
        return self.tensor(name, dtype, data=np.asarray(data, dtype=dtype))

    def input(self, name, array):
        t = self.tensor(name, array.dtype.type, array.shape)
        self.inputs.append((t, name, array))
        return t

    def op(self, code, inputs, outputs, options_type=None, **options):
        if code not in self.codes:
            self.codes.append(code)
        o = {"opcode_index": self.codes.index(code), "inputs": inputs, "outputs": outputs}
        if options_type:
            o["builtin_options_type"], o["builtin_options"] = options_type, options
        self.ops.append(o)

    def json(self, outputs):
        return {"version": 3,
                "operator_codes": [{"builtin_code": c, "deprecated_builtin_code": min(c_id(c), 127), "version": 1}
                                   for c in self.codes],
                "subgraphs": [{"tensors": self.tensors, "inputs": [t for t, _, _ in self.inputs], "outputs": outputs,
                               "operators": self.ops, "name": "main"}],
                "buffers": self.buffers}


def c_id(code):
    """The builtin code number (the deprecated byte field must agree with it below 127)."""
    return {"GATHER": 36, "GATHER_ND": 107, "FILL": 94, "SHAPE": 77, "PACK": 83, "UNPACK": 88, "ZEROS_LIKE": 93,
            "SPLIT_V": 102, "SLICE": 65, "MIRROR_PAD": 100, "REVERSE_V2": 105, "SPACE_TO_BATCH_ND": 38,
            "BATCH_TO_SPACE_ND": 37, "RESIZE_BILINEAR": 23, "RESIZE_NEAREST_NEIGHBOR": 97, "BROADCAST_TO": 130,
            "EXPAND_DIMS": 70, "SQUEEZE": 43}[code]


def data(dtype, shape):
    if dtype == np.float32:
        return rng.uniform(-10, 10, shape).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


# ---- the cases: each builds its model and returns (output tensors, expected arrays),
# or (output tensors, words of the expected error) ----------------------------------

def gather_nd_f32(m):
    params = data(np.float32, (3, 4, 2))
    idx = np.array([[0, 1], [2, 3], [1, 0], [2, 2]], dtype=np.int32)
    out = m.tensor("y", np.float32, (4, 2))
    m.op("GATHER_ND", [m.input("x", params), m.const("indices", idx)], [out], "GatherNdOptions")
    return [out], [params[idx[:, 0], idx[:, 1]]]


def gather_nd_i8_runtime(m):
    params = data(np.int8, (2, 3, 4))
    idx = np.array([[[1, 2], [0, 0]], [[1, 0], [0, 2]], [[0, 1], [1, 1]]], dtype=np.int32)
    out = m.tensor("y", np.int8, (3, 2, 4))
    m.op("GATHER_ND", [m.input("x", params), m.input("indices", idx)], [out], "GatherNdOptions")
    return [out], [params[idx[..., 0], idx[..., 1]]]


def gather_i32_runtime(m):
    params = data(np.int32, (3, 5, 2))
    idx = np.array([4, 0, 4, 2, 1, 3], dtype=np.int32)
    out = m.tensor("y", np.int32, (3, 6, 2))
    m.op("GATHER", [m.input("x", params), m.input("indices", idx)], [out], "GatherOptions", axis=1)
    return [out], [np.take(params, idx, axis=1)]


def gather_batch_dims_f32(m):
    # batch_dims 1, axis 1: out[b, j] = params[b, idx[b, j]]
    params = data(np.float32, (2, 5, 3))
    idx = np.array([[4, 0, 1], [2, 2, 3]], dtype=np.int64)
    out = m.tensor("y", np.float32, (2, 3, 3))
    m.op("GATHER", [m.input("x", params), m.const("indices", idx, np.int64)], [out], "GatherOptions", axis=1,
         batch_dims=1)
    return [out], [np.stack([params[b][idx[b]] for b in range(2)])]


def gather_out_of_range(m):
    params = data(np.float32, (4, 2))
    idx = np.array([1, 4], dtype=np.int32)  # 4 is outside [0, 4): TFLM's Eval fails
    out = m.tensor("y", np.float32, (2, 2))
    m.op("GATHER", [m.input("x", params), m.input("indices", idx)], [out], "GatherOptions")
    return [out], "gather: an index is outside [0, 4)"


def shape_fill(m):
    # SHAPE's value is known to the compiler: FILL takes it as its dimensions.
    x = data(np.float32, (2, 3, 4))
    s = m.tensor("s", np.int32, (3,))
    m.op("SHAPE", [m.input("x", x)], [s], "ShapeOptions")
    out = m.tensor("y", np.int16, (2, 3, 4))
    m.op("FILL", [s, m.const("v", np.array(-1234, dtype=np.int16), np.int16)], [out], "FillOptions")
    return [out], [np.full((2, 3, 4), -1234, dtype=np.int16)]


def shape_output(m):
    # SHAPE's constant as a model output (int64): a node copies it out.
    x = data(np.int8, (4, 1, 3))
    tx = m.input("x", x)
    s = m.tensor("s", np.int64, (3,))
    m.op("SHAPE", [tx], [s], "ShapeOptions", out_type="INT64")
    return [s], [np.array([4, 1, 3], np.int64)]


def fill_i8(m):
    x = data(np.int8, (2, 2))
    out0 = m.tensor("y0", np.int8, (3, 1, 2))
    m.op("FILL", [m.const("dims", [3, 1, 2], np.int64), m.const("v", np.array([7], dtype=np.int8), np.int8)], [out0],
         "FillOptions")
    out1 = m.tensor("y1", np.int8, (2, 2))
    m.op("ZEROS_LIKE", [m.input("x", x)], [out1], "ZerosLikeOptions")  # int8: 0, not the zero point
    return [out0, out1], [np.full((3, 1, 2), 7, np.int8), np.zeros((2, 2), np.int8)]


def pack_unpack_int(m):
    a, b, c = (data(np.int64, (2, 3)) for _ in range(3))
    packed = m.tensor("p", np.int64, (2, 3, 3))
    ta = m.input("a", a)
    m.op("PACK", [ta, m.input("b", b), m.input("c", c)], [packed], "PackOptions", values_count=3, axis=-1)
    x = data(np.int32, (3, 2, 4))
    outs = [m.tensor(f"u{k}", np.int32, (3, 4)) for k in range(2)]
    m.op("UNPACK", [m.input("x", x)], outs, "UnpackOptions", num=2, axis=-2)
    zeros = m.tensor("z", np.int64, (2, 3))
    m.op("ZEROS_LIKE", [ta], [zeros], "ZerosLikeOptions")
    return [packed] + outs + [zeros], [np.stack([a, b, c], axis=-1), x[:, 0], x[:, 1], np.zeros((2, 3), np.int64)]


def split_v_slice_int(m):
    x = data(np.int32, (2, 7))
    outs = [m.tensor(f"s{k}", np.int32, (2, n)) for k, n in enumerate([2, 4, 1])]
    m.op("SPLIT_V", [m.input("x", x), m.const("sizes", [2, -1, 1]), m.const("axis", np.array(-1, np.int32))], outs,
         "SplitVOptions", num_splits=3)
    y = data(np.int16, (3, 4, 5))
    sl = m.tensor("sl", np.int16, (2, 4, 3))
    m.op("SLICE", [m.input("y", y), m.const("begin", [1, 0, 2], np.int64), m.const("size", [-1, 4, 3], np.int64)],
         [sl], "SliceOptions")
    return outs + [sl], [x[:, :2], x[:, 2:6], x[:, 6:], y[1:, :, 2:5]]


def mirror_reverse(m):
    x = data(np.int8, (3, 4))
    sym = m.tensor("sym", np.int8, (6, 5))
    m.op("MIRROR_PAD", [m.input("x", x), m.const("pads", [[1, 2], [0, 1]])], [sym], "MirrorPadOptions", mode="SYMMETRIC")
    y = data(np.float32, (2, 3, 4))
    rev = m.tensor("rev", np.float32, (2, 3, 4))
    m.op("REVERSE_V2", [m.input("y", y), m.const("axes", [0, -1])], [rev], "ReverseV2Options")
    return [sym, rev], [np.pad(x, [(1, 2), (0, 1)], mode="symmetric"), y[::-1, :, ::-1]]


def space_batch(m):
    x = data(np.int8, (1, 3, 2, 2))
    s2b = m.tensor("s2b", np.int8, (4, 2, 2, 2))
    m.op("SPACE_TO_BATCH_ND", [m.input("x", x), m.const("block", [2, 2]), m.const("pads", [[1, 0], [1, 1]])], [s2b],
         "SpaceToBatchNDOptions")
    # Raw 0, not the zero point: TFLM memsets the padding with an output_offset it never sets.
    padded = np.pad(x, [(0, 0), (1, 0), (1, 1), (0, 0)], constant_values=0)
    want_s2b = np.concatenate([padded[:, sh::2, sw::2, :] for sh in range(2) for sw in range(2)], axis=0)
    y = data(np.float32, (6, 2, 3))  # rank 3: [batch, height, channels]
    b2s = m.tensor("b2s", np.float32, (2, 5, 3))
    m.op("BATCH_TO_SPACE_ND", [m.input("y", y), m.const("block", [3]), m.const("crops", [[0, 1]])], [b2s],
         "BatchToSpaceNDOptions")
    # Rows interleave: output row h*3 + k of batch b is input batch k*2 + b, row h; crop the last.
    full = np.stack([np.stack([y[k * 2 + b, h] for h in range(2) for k in range(3)]) for b in range(2)])
    return [s2b, b2s], [want_s2b, full[:, :5]]


def resize_bilinear_i8_half_pixel(m):
    x = data(np.int8, (1, 3, 4, 2))
    out = m.tensor("y", np.int8, (1, 5, 7, 2))
    m.op("RESIZE_BILINEAR", [m.input("x", x), m.const("size", [5, 7])], [out], "ResizeBilinearOptions",
         half_pixel_centers=True)
    return [out], [bilinear_int_ref(x, 5, 7, align=False, half=True)]


def bilinear_int_ref(x, oh, ow, align, half):
    """TFLM's ResizeBilinearInteger: 10 fractional bits, rounded half away from zero."""
    def axis(n_in, n_out):
        scale = ((1 << 10) * n_in + n_out // 2) // n_out
        if align and n_out > 1:
            scale = ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
        taps = []
        for o in range(n_out):
            pos = o * scale + (scale // 2 - (1 << 9) if half else 0)
            lo = max(int(pos / 1024), 0)  # C division truncates
            hi = min(int((pos + 1023) / 1024), n_in - 1)
            taps.append((pos, lo, hi))
        return taps
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    for y, (py, y0, y1) in enumerate(axis(x.shape[1], oh)):
        for xx, (px, x0, x1) in enumerate(axis(x.shape[2], ow)):
            wy, wx = py - 1024 * y0, px - 1024 * x0
            v = x.astype(np.int64)
            acc = (v[:, y0, x0] * (1024 - wy) * (1024 - wx) + v[:, y1, x0] * wy * (1024 - wx) +
                   v[:, y0, x1] * (1024 - wy) * wx + v[:, y1, x1] * wy * wx)
            r = np.where(acc > 0, acc + (1 << 19), acc - (1 << 19))
            out[:, y, xx] = np.trunc(r / (1 << 20)).astype(x.dtype)
    return out


def resize_nearest_align_f32(m):
    x = data(np.float32, (2, 3, 5, 1))
    out = m.tensor("y", np.float32, (2, 7, 4, 1))
    m.op("RESIZE_NEAREST_NEIGHBOR", [m.input("x", x), m.const("size", [7, 4])], [out],
         "ResizeNearestNeighborOptions", align_corners=True)

    def src(n_in, n_out):  # round half away from zero of o * (in-1)/(out-1), the product in float32
        scale = np.float32(n_in - 1) / np.float32(n_out - 1)
        rounded = [int(np.floor(float(np.float32(o) * scale) + 0.5)) for o in range(n_out)]
        return [min(r, n_in - 1) for r in rounded]
    return [out], [x[:, src(3, 7)][:, :, src(5, 4)]]


def squeeze_expand(m):
    x = data(np.int16, (1, 3, 1, 2))
    sq = m.tensor("sq", np.int16, (1, 3, 2))
    m.op("SQUEEZE", [m.input("x", x)], [sq], "SqueezeOptions", squeeze_dims=[-2])
    ex = m.tensor("ex", np.int16, (1, 3, 2, 1))
    m.op("EXPAND_DIMS", [sq, m.const("axis", [-1])], [ex], "ExpandDimsOptions")
    return [ex], [x.reshape(1, 3, 2, 1)]


def refuse_broadcast_shape(m):
    shape = m.input("shape", np.array([2, 3], np.int32))
    out = m.tensor("y", np.float32, (2, 3))
    m.op("BROADCAST_TO", [m.input("x", data(np.float32, (1, 3))), shape], [out], "BroadcastToOptions")
    return [out], "operator 0 (BROADCAST_TO): the target shape computed at run time (tensor 0 'shape' must be a constant"


def refuse_resize_size(m):
    x = m.input("x", data(np.int8, (1, 2, 2, 1)))
    out = m.tensor("y", np.int8, (1, 4, 4, 1))
    m.op("RESIZE_NEAREST_NEIGHBOR", [x, m.input("size", np.array([4, 4], np.int32))], [out],
         "ResizeNearestNeighborOptions")
    return [out], "operator 0 (RESIZE_NEAREST_NEIGHBOR): the output size computed at run time"


def refuse_unpack_scalars(m):
    outs = [m.tensor(f"y{k}", np.float32, ()) for k in range(3)]
    m.op("UNPACK", [m.input("x", data(np.float32, (3,)))], outs, "UnpackOptions", num=3)
    return outs, "operator 0 (UNPACK): UNPACK of a rank-1 tensor (its outputs would be scalars)"


CASES = [gather_nd_f32, gather_nd_i8_runtime, gather_i32_runtime, gather_batch_dims_f32, gather_out_of_range,
         shape_fill, shape_output, fill_i8, pack_unpack_int, split_v_slice_int, mirror_reverse, space_batch,
         resize_bilinear_i8_half_pixel, resize_nearest_align_f32, squeeze_expand, refuse_broadcast_shape,
         refuse_resize_size, refuse_unpack_scalars]
HOST = {"gather_nd_i8_runtime", "gather_out_of_range", "space_batch", "resize_bilinear_i8_half_pixel"}


def run(cli, flatc, schema, work, case, target):
    m = Model()
    outputs, expected = case(m)
    name = case.__name__
    jpath = os.path.join(work, name + ".json")
    with open(jpath, "w") as f:
        json.dump(m.json(outputs), f)
    subprocess.run([flatc, "-b", "-o", work, schema, jpath], check=True)
    out_dir = os.path.join(work, name + "_out")
    args = [cli, "run", os.path.join(work, name + ".tflite"), "--output-dir", out_dir, "--print-limit", "0"]
    if target or name in HOST:
        args += ["--target", target or "host"]
    for _, n, array in m.inputs:
        np.save(os.path.join(work, f"{name}_{n}.npy"), array)
        args += ["--input", f"{n}={os.path.join(work, f'{name}_{n}.npy')}"]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if isinstance(expected, str):
        ok = p.returncode == 1 and expected in p.stderr
        return ok, "refused as expected" if ok else f"exit {p.returncode}, wanted '{expected}' in: {p.stderr.strip()}"
    if p.returncode != 0:
        return False, f"exit {p.returncode}: {p.stderr.strip()}"
    for t, want in zip(outputs, expected):
        got = np.load(os.path.join(out_dir, m.tensors[t]["name"] + ".npy"))
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            return False, f"{m.tensors[t]['name']}: got {got.dtype}{got.shape} {got.ravel()[:8]}, want {want.dtype}" \
                          f"{want.shape} {want.ravel()[:8]}"
    return True, f"{len(outputs)} output(s) exact"


def main():
    cli, flatc, schema = sys.argv[1:4]
    opts = dict(zip(sys.argv[4::2], sys.argv[5::2]))
    target = opts.get("--target")
    cases = [c for c in CASES if "--only" not in opts or c.__name__ in opts["--only"].split(",")]
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            ok, how = run(cli, flatc, schema, work, case, target)
            print(f"{'ok' if ok else 'FAIL'} {case.__name__}: {how}")
            failed += not ok
    print(f"{len(cases) - failed} of {len(cases)} cases as expected" + (f" on {target}" if target else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
