#!/usr/bin/env python3
"""Malformed .tflite files: each is refused by `microtir compile` with a named error, exit
code 1, and nothing written.

usage: malformed_tflite_test.py MICROTIR FLATC SCHEMA [--write-seeds DIR]

The files are made here: byte-level damage to a well-formed model written here (truncation,
a wrong identifier, offsets and lengths pointing outside the file), and small models written as
JSON and turned into flatbuffers by flatc with our schema subset, each with one fault
(indices out of range, wrong buffer sizes, missing quantization, shape mismatches,
zero and huge sizes, unknown and unsupported operators). A well-formed small model is
compiled first, so each fault is the only thing wrong with its file. --write-seeds also
copies the small models into DIR (the fuzz target's seeds, tests/fuzz/seeds/tflite_model).
"""
import copy
import json
import os
import struct
import subprocess
import sys
import tempfile


def small_model():
    """int8 [1, 4] -> FULLY_CONNECTED (2 units, bias) -> int8 [1, 2]."""
    q = lambda s, z: {"scale": [s], "zero_point": [z]}
    return {
        "version": 3,
        "operator_codes": [{"deprecated_builtin_code": 9, "builtin_code": "FULLY_CONNECTED", "version": 1}],
        "subgraphs": [{
            "tensors": [
                {"name": "x", "shape": [1, 4], "type": "INT8", "buffer": 0, "quantization": q(0.5, 1)},
                {"name": "w", "shape": [2, 4], "type": "INT8", "buffer": 1, "quantization": q(0.25, 0)},
                {"name": "b", "shape": [2], "type": "INT32", "buffer": 2, "quantization": q(0.125, 0)},
                {"name": "y", "shape": [1, 2], "type": "INT8", "buffer": 0, "quantization": q(1.0, -3)},
            ],
            "inputs": [0],
            "outputs": [3],
            "operators": [{"opcode_index": 0, "inputs": [0, 1, 2], "outputs": [3],
                           "builtin_options_type": "FullyConnectedOptions", "builtin_options": {}}],
            "name": "main",
        }],
        "buffers": [{}, {"data": [1, 2, 3, 4, 255, 254, 253, 252]}, {"data": [10, 0, 0, 0, 246, 255, 255, 255]}],
    }


def edit(fn):
    m = small_model()
    fn(m)
    return m


def call_once_of_subgraph(k):
    """A CALL_ONCE of subgraph k before the model's operator (a second subgraph is allowed:
    CALL_ONCE, IF and WHILE name others)."""
    def add(m):
        m["operator_codes"].append({"deprecated_builtin_code": 127, "builtin_code": "CALL_ONCE", "version": 1})
        m["subgraphs"][0]["operators"].insert(0, {"opcode_index": 1, "inputs": [], "outputs": [],
                                                  "builtin_options_type": "CallOnceOptions",
                                                  "builtin_options": {"init_subgraph_index": k}})
    return add


def tensor(m, i):
    return m["subgraphs"][0]["tensors"][i]


def op(m):
    return m["subgraphs"][0]["operators"][0]


# (file name, JSON model, the words the error must contain)
JSON_CASES = [
    ("tensor_index_out_of_range", edit(lambda m: op(m).update(inputs=[0, 1, 7])), "tensor index 7 is out of range"),
    ("negative_tensor_index", edit(lambda m: op(m).update(inputs=[-5, 1, 2])), "tensor index -5 is out of range"),
    ("input_index_out_of_range", edit(lambda m: m["subgraphs"][0].update(inputs=[9])), "tensor index 9 is out of range"),
    ("opcode_index_out_of_range", edit(lambda m: op(m).update(opcode_index=5)), "opcode index 5 is out of range"),
    ("buffer_index_out_of_range", edit(lambda m: tensor(m, 1).update(buffer=9)), "names buffer 9, but the model has 3"),
    ("wrong_buffer_size", edit(lambda m: m["buffers"][1].update(data=[1, 2, 3, 4, 5, 6, 7])),
     "has 7 bytes of data, but its shape and type need 8"),
    ("missing_activation_quantization", edit(lambda m: tensor(m, 0).pop("quantization")), "is int8 but has no quantization"),
    ("missing_weight_quantization", edit(lambda m: tensor(m, 1).pop("quantization")), "is int8 but has no quantization"),
    ("scales_without_zero_points", edit(lambda m: tensor(m, 3)["quantization"].pop("zero_point")), "has 1 scales but 0 zero points"),
    ("zero_scale", edit(lambda m: tensor(m, 3)["quantization"].update(scale=[0.0])), "a scale must be a finite number > 0"),
    ("zero_point_out_of_range", edit(lambda m: tensor(m, 0)["quantization"].update(zero_point=[300])), "outside the int8 range"),
    ("int16_zero_point_out_of_range",
     edit(lambda m: (tensor(m, 0).update(type="INT16"), tensor(m, 0)["quantization"].update(zero_point=[40000]))),
     "outside the int16 range"),
    ("missing_int16_quantization", edit(lambda m: (tensor(m, 0).update(type="INT16"), tensor(m, 0).pop("quantization"))),
     "is int16 but has no quantization"),
    ("output_shape_mismatch", edit(lambda m: tensor(m, 3).update(shape=[1, 3])), "but the model says its output tensor 3 'y' is"),
    ("bias_shape_mismatch", edit(lambda m: (tensor(m, 2).update(shape=[3]), m["buffers"][2]["data"].extend([0] * 4))),
     "bias"),
    ("zero_size_dimension", edit(lambda m: tensor(m, 0).update(shape=[1, 0])), "has a dimension of 0"),
    ("negative_dimension", edit(lambda m: tensor(m, 0).update(shape=[1, -4])), "has a dimension of -4"),
    ("huge_claimed_shape", edit(lambda m: tensor(m, 0).update(shape=[65536, 65536, 4])), "claims more than 2^31 elements"),
    ("unknown_operator_code", edit(lambda m: m["operator_codes"][0].update(builtin_code=999, deprecated_builtin_code=127)),
     "unknown TFLite operator code 999 (node 0)"),
    ("unsupported_operator", edit(lambda m: m["operator_codes"][0].update(builtin_code="LSH_PROJECTION",
                                                                         deprecated_builtin_code=15)),
     "unsupported TFLite operator LSH_PROJECTION (node 0)"),
    ("custom_operator", edit(lambda m: m["operator_codes"][0].update(builtin_code="CUSTOM", deprecated_builtin_code=32,
                                                                     custom_code="MyOp")),
     "unsupported TFLite custom operator 'MyOp' (node 0)"),
    ("unsupported_tensor_type", edit(lambda m: tensor(m, 0).update(type="FLOAT16")), "has type FLOAT16"),
    ("missing_options", edit(lambda m: (op(m).pop("builtin_options_type"), op(m).pop("builtin_options"))),
     "the FullyConnectedOptions are missing"),
    ("constant_operator_output", edit(lambda m: tensor(m, 3).update(buffer=1)), "is an operator's output but holds constant data"),
    ("output_never_computed", edit(lambda m: m["subgraphs"][0].update(outputs=[2])), "a model output, is computed by no operator"),
    ("no_subgraph", edit(lambda m: m.update(subgraphs=[])), "the model has no subgraph"),
    ("call_once_missing_subgraph", edit(call_once_of_subgraph(5)),
     "its init subgraph 5 is not one of the model's other subgraphs (it has 1)"),
    ("weights_not_2d", edit(lambda m: tensor(m, 1).update(shape=[8])), "the weights must be 2-D"),
]


def byte_cases(model_bytes):
    """(file name, bytes, the words the error must contain): damage to a well-formed model."""
    n = len(model_bytes)
    root = struct.unpack_from("<I", model_bytes, 0)[0]
    cases = [
        ("empty_file", b"", "the file is 0 bytes long"),
        ("four_bytes", model_bytes[:4], "the file is 4 bytes long"),
        ("truncated_header", model_bytes[:64], "the flatbuffer verifier rejects it"),
        ("truncated_half", model_bytes[: n // 2], "the flatbuffer verifier rejects it"),
        ("truncated_last_byte", model_bytes[: n - 1], "the flatbuffer verifier rejects it"),
        ("wrong_identifier", model_bytes[:4] + b"XXXX" + model_bytes[8:], "lacks the flatbuffer identifier 'TFL3'"),
        ("root_offset_past_end", struct.pack("<I", n + 1000) + model_bytes[4:], "the flatbuffer verifier rejects it"),
        ("root_offset_huge", struct.pack("<I", 0xFFFFFFF0) + model_bytes[4:], "the flatbuffer verifier rejects it"),
    ]
    # The root table's vtable offset (a signed int32 at the table) pointing far away.
    damaged = bytearray(model_bytes)
    struct.pack_into("<i", damaged, root, -0x7FFFFFF0)
    cases.append(("vtable_offset_outside", bytes(damaged), "the flatbuffer verifier rejects it"))
    return cases


def main():
    args = sys.argv[1:]
    seeds = None
    if len(args) == 5 and args[3] == "--write-seeds":
        seeds = args.pop()
        args.pop()
    if len(args) != 3:
        raise SystemExit(__doc__)
    cli, flatc, schema = args
    failures, count = [], 0
    with tempfile.TemporaryDirectory() as work:
        def build(name, m):
            path = os.path.join(work, name + ".json")
            with open(path, "w") as f:
                json.dump(m, f)
            p = subprocess.run([flatc, "-b", "-o", work, schema, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            if p.returncode != 0:
                raise SystemExit(f"FAIL: flatc could not write {name}: {p.stderr}")
            # The schema's file_extension names flatc's output.
            return os.path.join(work, name + ".tflite")

        def compile_(path, out):
            return subprocess.run([cli, "compile", path, "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)

        # The well-formed small model compiles: each case below has exactly its one fault.
        good = build("good", small_model())
        p = compile_(good, os.path.join(work, "good.tar"))
        if p.returncode != 0 or not os.path.exists(os.path.join(work, "good.tar")):
            raise SystemExit(f"FAIL: the well-formed small model does not compile: {p.stderr}")

        files = [(name, build(name, m), words) for name, m, words in JSON_CASES]
        if seeds:
            os.makedirs(seeds, exist_ok=True)
            for name, path in [("good", good)] + [(f[0], f[1]) for f in files]:
                with open(path, "rb") as src, open(os.path.join(seeds, name + ".tflite"), "wb") as dst:
                    dst.write(src.read())
        with open(good, "rb") as f:
            for name, data, words in byte_cases(f.read()):
                path = os.path.join(work, name + ".tflite")
                with open(path, "wb") as out:
                    out.write(data)
                files.append((name, path, words))
        for name, path, words in files:
            count += 1
            out = os.path.join(work, name + ".tar")
            p = compile_(path, out)
            problems = []
            if p.returncode != 1:
                problems.append(f"exit code {p.returncode} (expected 1)")
            if words not in p.stderr:
                problems.append(f"the error does not say '{words}'")
            if os.path.exists(out):
                problems.append("an output was written")
            if problems:
                failures.append(f"{name}: {'; '.join(problems)}\n    stderr: {p.stderr.strip()}")
            else:
                print(f"ok {name}: {p.stderr.strip().splitlines()[0]}")
    for f in failures:
        print("FAIL: " + f)
    print(f"{count - len(failures)} of {count} malformed files refused as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
