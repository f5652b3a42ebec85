#!/usr/bin/env python3
"""same_npy.py GOT.npy WANT.npy [RTOL ATOL]: exit 0 when both .npy files hold the same
dtype, shape and values (int8, uint8, int32, int64, uint64, float32, float64), else a
message naming the first difference. Bit for bit without RTOL and ATOL; with them, floats
may differ by ATOL + RTOL * |want| (infinities and NaNs must match).
Plain Python (no numpy), as the test machines' python3 may lack it."""
import ast
import math
import struct
import sys

FORMATS = {"|i1": "b", "|u1": "B", "<i4": "i", "<f4": "f", "<i8": "q", "<u8": "Q", "<f8": "d"}


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit("%s is not a .npy file" % path)
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if data[6] == 1 else 12) + hlen
    header = ast.literal_eval(data[start - hlen:start].decode())
    fmt = FORMATS.get(header["descr"])
    if fmt is None or header["fortran_order"]:
        sys.exit("%s: unsupported .npy header %r" % (path, header))
    n = (len(data) - start) // struct.calcsize(fmt)
    return header["descr"], tuple(header["shape"]), struct.unpack("<%d%s" % (n, fmt), data[start:])


(gt, gs, got), (wt, ws, want) = load(sys.argv[1]), load(sys.argv[2])
if (gt, gs) != (wt, ws):
    sys.exit("%s %s, expected %s %s" % (gt, gs, wt, ws))
tolerance = (float(sys.argv[3]), float(sys.argv[4])) if len(sys.argv) > 4 else None


def same(g, w):
    if not isinstance(w, float):
        return g == w
    if tolerance is None or math.isinf(w) or math.isnan(w):  # -0.0 is not 0.0; NaN matches NaN
        return (g == w and math.copysign(1, g) == math.copysign(1, w)) or (g != g and w != w)
    return abs(g - w) <= tolerance[1] + tolerance[0] * abs(w)


bad = [i for i, (g, w) in enumerate(zip(got, want)) if not same(g, w)]
if bad:
    sys.exit("%d of %d values differ; [%d] = %r, expected %r" % (len(bad), len(want), bad[0], got[bad[0]], want[bad[0]]))
