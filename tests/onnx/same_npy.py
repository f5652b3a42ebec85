#!/usr/bin/env python3
"""same_npy.py GOT.npy WANT.npy: exit 0 when both .npy files hold the same shape and the
same integers (int8, uint8, int32; bit for bit), else a message naming the first
difference. Plain Python (no numpy), as the test machines' python3 may lack it."""
import ast
import struct
import sys

FORMATS = {"|i1": "b", "|u1": "B", "<i4": "i", "<f4": "f"}


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
bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
if bad:
    sys.exit("%d of %d values differ; [%d] = %r, expected %r" % (len(bad), len(want), bad[0], got[bad[0]], want[bad[0]]))
