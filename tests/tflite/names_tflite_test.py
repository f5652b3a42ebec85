#!/usr/bin/env python3
"""TFLite tensor names end to end (docs/tflite.md, "Names").

A .tflite made here (flatc JSON with our schema) whose inputs and outputs are named as
converters name them: Keras's `serving_default_x:0`, paths with '/', ';' and spaces,
non-ASCII, a C keyword, a leading digit, a name with characters a C comment cannot hold
as they are, a very long one, two outputs that sanitize to the same identifier, and a
nameless input and output. It runs through `microtir run` (the interpreter, and the host
C build) with `--input` given the model's own names, against a reference computed here; `microtir compile`
must carry the original names into the header and metadata.json beside identifiers
derived by the documented rule (implemented again below, independently), and the
compiled artifact runs on the host with them.

Plain Python (the test machines' python3 may lack numpy): a float32 ADD, MUL or SUB of
two float32 values computed in double and rounded to float32 is float32's own result.

usage: names_tflite_test.py MICROTIR FLATC SCHEMA
"""
import json
import os
import random
import struct
import subprocess
import sys
import tarfile
import tempfile

KEYWORDS = set("""auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert _Thread_local alignas
alignof and and_eq asm bitand bitor bool catch char16_t char32_t char8_t class compl concept consteval constexpr
constinit const_cast co_await co_return co_yield decltype delete dynamic_cast explicit export false friend mutable
namespace new noexcept not not_eq nullptr operator or or_eq private protected public reinterpret_cast requires
static_assert static_cast template this thread_local throw true try typeid typename using virtual wchar_t xor
xor_eq""".split())
MAX = 64


def reserved(s):
    if s.lower() in ("run", "workspace") or s in ("NULL", "INFINITY", "NAN", "EOF"):
        return True
    if len(s) >= 2 and s[0] == "_" and (s[1] == "_" or s[1].isupper()):
        return True
    return s == s.upper() and any(s.endswith(x) and len(s) > len(x) for x in ("_MIN", "_MAX", "_C"))


def base(name):
    b = "".join(chr(c) if chr(c).isascii() and (chr(c).isalnum() or c == ord("_")) else "_"
                for c in name.encode("utf-8"))
    if not b or b[0].isdigit():
        b = "t_" + b
    if b in KEYWORDS or reserved(b):
        b = "t_" + b
    return b[:MAX]


def identifiers(names):
    """The documented rule: names that are their own base keep it first, the others in
    order take the base or base_2, base_3, ...; taken ignores case."""
    ids, taken = [None] * len(names), set()
    for i, n in enumerate(names):
        if base(n) == n and n.lower() not in taken:
            ids[i] = n
            taken.add(n.lower())
    for i, n in enumerate(names):
        if ids[i] is not None:
            continue
        b, k, c = base(n), 2, base(n)
        while c.lower() in taken:
            c = b[:MAX - len(f"_{k}")] + f"_{k}"
            k += 1
        taken.add(c.lower())
        ids[i] = c
    return ids


def c_escaped(name):
    out, i = "", 0
    while i < len(name):
        ch, nxt = name[i], name[i + 1] if i + 1 < len(name) else ""
        if ch in '\\"':
            out += "\\" + ch
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out += "\\x%02x" % ord(ch)
        elif ch == "*" and nxt == "/":
            out += "*\\"
        elif ch == "?" and nxt == "?":
            out += "?\\"
        else:
            out += ch
        i += 1
    return out


LONG = "model/" + "very_long_layer_name/" * 20 + "BiasAdd;model/other:0"
INPUTS = ["serving_default_x:0", "", "a/b;c d", "\u00e9\u8f93\u5165", "int", "9lives"]
# out0 and out1 sanitize alike (the one already an identifier keeps it); out2 has no name;
# out3 is long and holds "*/", a quote, a backslash and "??/".
OUTPUTS = ["StatefulPartitionedCall:0", "StatefulPartitionedCall_0", "", 'odd */ "q" \\ ??/ ' + LONG]
OPS = [("ADD", 0, 1), ("MUL", 2, 3), ("SUB", 4, 5), ("ADD", 0, 5)]
SHAPE = [2, 3]


def model_json():
    tensors = [{"name": n, "shape": SHAPE, "type": "FLOAT32", "buffer": 0} for n in INPUTS + OUTPUTS]
    codes = sorted({op for op, _, _ in OPS})
    operators = [{"opcode_index": codes.index(op), "inputs": [a, b], "outputs": [len(INPUTS) + k]}
                 for k, (op, a, b) in enumerate(OPS)]
    return {"version": 3,
            "operator_codes": [{"builtin_code": c, "deprecated_builtin_code": 0, "version": 1} for c in codes],
            "subgraphs": [{"tensors": tensors, "inputs": list(range(len(INPUTS))),
                           "outputs": [len(INPUTS) + k for k in range(len(OUTPUTS))], "operators": operators,
                           "name": "main"}],
            "buffers": [{}]}


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def write_npy_f32(path, shape, vals):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{d}, " for d in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(f"<{len(vals)}f", *vals))


def read_npy_f32(path):
    raw = open(path, "rb").read()
    hlen = struct.unpack_from("<H", raw, 8)[0]
    header = raw[10:10 + hlen].decode("latin1")
    check("'<f4'" in header, f"{path} is float32: {header}")
    data = raw[10 + hlen:]
    return list(struct.unpack(f"<{len(data) // 4}f", data))


def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    cli, flatc, schema = sys.argv[1:4]
    # The names the model's inputs and outputs have in microtir: nameless ones by position.
    in_names = [n or f"input_{k}" for k, n in enumerate(INPUTS)]
    out_names = [n or f"output_{k}" for k, n in enumerate(OUTPUTS)]
    ids = identifiers(in_names + out_names)
    in_ids, out_ids = ids[:len(in_names)], ids[len(in_names):]
    check(out_ids[:2] == ["StatefulPartitionedCall_0_2", "StatefulPartitionedCall_0"], f"the rule: {out_ids}")
    check(len({i.lower() for i in ids}) == len(ids), "identifiers are unique")

    rng = random.Random(35)
    n = SHAPE[0] * SHAPE[1]
    xs = [[f32(rng.uniform(-4, 4)) for _ in range(n)] for _ in INPUTS]
    fn = {"ADD": lambda a, b: a + b, "MUL": lambda a, b: a * b, "SUB": lambda a, b: a - b}
    want = [[f32(fn[op](u, v)) for u, v in zip(xs[a], xs[b])] for op, a, b in OPS]

    with tempfile.TemporaryDirectory() as work:
        jpath = os.path.join(work, "names.json")
        with open(jpath, "w") as f:
            json.dump(model_json(), f)
        subprocess.run([flatc, "-b", "-o", work, schema, jpath], check=True)
        model = os.path.join(work, "names.tflite")
        given = []
        for k, x in enumerate(xs):
            path = os.path.join(work, f"in{k}.npy")
            write_npy_f32(path, SHAPE, x)
            given += ["--input", f"{in_names[k]}={path}"]

        # The interpreter, then also the host C build: --input takes the model's own
        # names, the outputs are reported under them and written as <identifier>.npy.
        for target in ([], ["--target", "host"]):
            out = os.path.join(work, "out" + "".join(target))
            rc, so, se = run([cli, "run", model, *given, *target, "--output-dir", out, "--json"])
            check(rc == 0, f"run {target} exited {rc}: {se}")
            got = json.loads(so)
            check([o["name"] for o in got["outputs"]] == out_names, f"output names: {[o['name'] for o in got['outputs']]}")
            check([o["identifier"] for o in got["outputs"]] == out_ids, "output identifiers")
            check(sorted(os.listdir(out)) == sorted(i + ".npy" for i in out_ids), f"files: {os.listdir(out)}")
            for o, w in zip(got["outputs"], want):
                check(o["file"] == os.path.join(out, o["identifier"] + ".npy"), "the JSON names each output's file")
                check(read_npy_f32(o["file"]) == w, f"output '{o['name']}' differs from the reference")
            if target:
                check(all(c["ok"] for c in got["compare"]), "host C build against the interpreter")
        # The text output names the outputs whole, however long.
        rc, so, se = run([cli, "run", model, *given, "--target", "host"])
        so = "\n" + so
        for n in out_names:
            check(f"\n{n}: float32 (2, 3)\n" in so and f"\n  {n}: max abs diff 0, max rel diff 0  ok\n" in so,
                  f"the text output names {n!r} whole: {so}")
        print(f"ok: interpreter and host C, {len(in_names)} inputs and {len(out_names)} outputs by their own names")

        # The C identifier is accepted too, and an unknown name lists the model's inputs.
        rc, _, se = run([cli, "run", model, "--input", f"{in_ids[0]}={work}/in0.npy"] + given[2:])
        check(rc == 0, f"--input by identifier: {se}")
        rc, _, se = run([cli, "run", model, "--input", f"nope:0={work}/in0.npy"])
        check(rc == 1 and "no input or output 'nope:0'" in se and "'serving_default_x:0'" in se, f"unknown name: {se}")

        # compile: the header and metadata.json carry the names and the identifiers.
        tar = os.path.join(work, "names.tar")
        rc, _, se = run([cli, "compile", model, "-o", tar])
        check(rc == 0, f"compile: {se}")
        with tarfile.open(tar) as t:
            header = t.extractfile("codegen/host/include/tvmgen_model.h").read().decode("utf-8")
            meta = json.loads(t.extractfile("metadata.json").read())
        for role, names, idents in (("input", in_names, in_ids), ("output", out_names, out_ids)):
            check([(e["name"], e["identifier"]) for e in meta[role + "s"]] == list(zip(names, idents)),
                  f"metadata.json {role}s: {meta[role + 's']}")
            for n, i in zip(names, idents):
                said = f"/* {role} '{c_escaped(n)}'" + (f" ({i})" if i != n else "") + ": float32(2, 3)"
                check(said in header, f"the header documents {role} {n!r} as: {said}")
                check(f"  void* {i};\n" in header, f"struct member {i}")
                check(f"#define TVMGEN_MODEL_{i.upper()}_SIZE 24\n" in header, f"size macro of {i}")
        print("ok: compile: the header and metadata.json carry the names and identifiers")

        # The compiled artifact on the host (the generated interface, built with -Werror).
        out = os.path.join(work, "out_artifact")
        rc, so, se = run([cli, "run", tar, "--target", "host", *given, "--output-dir", out, "--json"])
        check(rc == 0, f"run names.tar --target host exited {rc}: {se}")
        got = json.loads(so)
        for o, n, i, w in zip(got["outputs"], out_names, out_ids, want):
            check(o["name"] == n and o["identifier"] == i, f"artifact output {o['name']}")
            check(read_npy_f32(os.path.join(out, i + ".npy")) == w, f"artifact output '{n}' differs from the reference")
        print("ok: the compiled artifact on the host, with the same names")


if __name__ == "__main__":
    main()
