#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_packed_args (seeds/packed_args/): a valid call of
scale_add(A: float32 (4, 3), B: int8 (3,), C: float32 (4, 3), alpha: float32, n: int32)
and calls that break one rule each. The byte layout is described in fuzz_packed_args.cc."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "packed_args")


def tensor(code, bits, shape, strides=None, byte_offset=0, device=1, data=True, lanes=1, ndim=None):
    b = bytes([7, 1]) + struct.pack("<bBBH", len(shape) if ndim is None else ndim, code, bits, lanes)
    b += bytes(shape)
    b += bytes([1]) + bytes(strides) if strides is not None else bytes([0])
    return b + bytes([byte_offset, device, 0, 1 if data else 0])


def floating(x):
    return bytes([2]) + struct.pack("<d", x)


def integer(x, code=0):
    return bytes([code]) + struct.pack("<q", x)


A = tensor(2, 32, [4, 3])
B = tensor(0, 8, [3])
C = tensor(2, 32, [4, 3])
SEEDS = {
    "valid": bytes([5]) + A + B + C + floating(1.5) + integer(7),
    "valid_strides": bytes([5]) + tensor(2, 32, [4, 3], strides=[3, 1]) + B + C + floating(-2.0) + integer(-3),
    "too_few_args": bytes([4]) + A + B + C + floating(1.5),
    "wrong_shape": bytes([5]) + tensor(2, 32, [3, 4]) + B + C + floating(1.5) + integer(7),
    "wrong_dtype": bytes([5]) + A + tensor(1, 8, [3]) + C + floating(1.5) + integer(7),
    "wrong_ndim": bytes([5]) + A + B + tensor(2, 32, [12]) + floating(1.5) + integer(7),
    "non_compact": bytes([5]) + A + B + tensor(2, 32, [4, 3], strides=[1, 4]) + floating(1.5) + integer(7),
    "byte_offset": bytes([5]) + A + tensor(0, 8, [3], byte_offset=4) + C + floating(1.5) + integer(7),
    "wrong_device": bytes([5]) + A + B + tensor(2, 32, [4, 3], device=2) + floating(1.5) + integer(7),
    "null_data": bytes([5]) + A + B + tensor(2, 32, [4, 3], data=False) + floating(1.5) + integer(7),
    "null_handle": bytes([5, 7, 0]) + B + C + floating(1.5) + integer(7),
    "scalar_as_tensor": bytes([5]) + integer(0, code=0) + B + C + floating(1.5) + integer(7),
    "int_too_big": bytes([5]) + A + B + C + floating(1.5) + integer(1 << 40),
    "float_as_int": bytes([5]) + A + B + C + floating(1.5) + floating(7.0),
    "lanes": bytes([5]) + tensor(2, 32, [4, 3], lanes=4) + B + C + floating(1.5) + integer(7),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name + ".bin"), "wb") as f:
        f.write(data)
