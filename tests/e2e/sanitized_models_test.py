#!/usr/bin/env python3
"""The ASan stage's sanitized runs of the models it otherwise leaves out: MLPerf Tiny's
VWW and IC (label large elsewhere) and a sample of TFLite Micro's zoo, one model per
operator family (label conformance elsewhere). Each is built ONCE as host C under
-fsanitize=address,undefined with every I/O buffer and workspace block its own heap
allocation (MICROTIR_HOST_SANITIZE, docs/targets.md "Sanitized host runs") and run on its
test input: `run --target host` compares it with the interpreter, and here every output
must also equal TFLM's. The kept program is checked to carry the sanitizers. The other
artifacts (digits, KWS, AD, the ONNX models, the TIR corpus) run sanitized in the tests
that build them already (tests/CMakeLists.txt, "Sanitized artifacts").

usage: sanitized_models_test.py MICROTIR SHARED_TFLITE
Exits 77 (ctest's skip) when SHARED_TFLITE (../shared/tflite) is missing.
"""
import concurrent.futures
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tflite"))
from tflite_model_test import SKIP, compare, skip_without  # noqa: E402
from zoo_test import Model, RunFailed, check_outputs, run  # noqa: E402

SANITIZERS = "address,undefined"
MLPERF = [("vww", "vww_96_int8"), ("ic", "pretrainedResnet_quant")]
# One zoo model per family the MLPerf models do not cover: int8 depthwise + softmax,
# int8 and float LSTM, SVDF with int16 state, float dense, transpose conv, strided slice.
ZOO = ["micro_speech_quantized", "trained_lstm_int8", "micro_speech_lstm", "keyword_scrambled", "hello_world_float",
       "seanet_transpose_conv0", "seanet_strided_slice0"]


def sanitized_build(keep, label):
    """A problem unless the kept host program (sim, the host simulator's) is instrumented by
    both sanitizers and allocates its buffers one by one (TVM_CRT_SEPARATE_ALLOCATIONS)."""
    program = os.path.join(keep, "sim")
    if not os.path.isfile(program):
        return [f"{label}: no host program in {keep}"]
    data = open(program, "rb").read()
    missing = [s for s in ("__asan_report", "__ubsan_handle", "posix_memalign") if s.encode() not in data]
    return [f"{label}: the host program was not built sanitized (no {', '.join(missing)})"] if missing else []


def mlperf_case(cli, shared, work, name, file):
    model = os.path.join(shared, "models", file + ".tflite")
    case = os.path.join(shared, "reference", name, "lcg_00000001")
    quant = json.load(open(os.path.join(case, "quant.json")))
    keep, out = os.path.join(work, name, "build"), os.path.join(work, name, "out")
    x = f"{quant['input']['name']}={os.path.join(case, 'input.npy')}"
    run([cli, "run", model, "--input", x, "--target", "host", "--keep-build", keep, "--output-dir", out],
        f"{name}: sanitized run --target host")
    problem = compare(os.path.join(out, quant["output"]["name"] + ".npy"), os.path.join(case, "output.npy"), name)
    return ([problem] if problem else []) + sanitized_build(keep, name)


def zoo_case(cli, shared, work, name):
    zoo = os.path.join(shared, "zoo")
    case = os.path.join(zoo, "reference", name, "golden" if name.startswith("seanet_") else "seed1")
    meta = json.load(open(os.path.join(case, "meta.json")))
    keep = os.path.join(work, name, "build")
    problems = check_outputs(Model(cli, zoo, name, work), meta, case, "host", name, extra=["--keep-build", keep])
    return problems + sanitized_build(keep, name)


def timed(label, check):
    start = time.monotonic()
    try:
        problems = check()
    except RunFailed as e:
        problems = [str(e)]
    print(f"{'ok' if not problems else 'FAIL'} {label}: sanitized host C, {time.monotonic() - start:.1f} s", flush=True)
    return problems


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    cli, shared = sys.argv[1:]
    if skip_without(os.path.join(shared, "models"), os.path.join(shared, "zoo")):
        return SKIP
    os.environ["MICROTIR_HOST_SANITIZE"] = SANITIZERS
    with tempfile.TemporaryDirectory() as work:
        jobs = [(n, lambda n=n, f=f: mlperf_case(cli, shared, work, n, f)) for n, f in MLPERF]
        jobs += [(n, lambda n=n: zoo_case(cli, shared, work, n)) for n in ZOO]
        # Two at a time (ctest reserves two processors): the largest first.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda job: timed(*job), jobs))
    failures = [p for problems in results for p in problems]
    for f in failures:
        print("FAIL: " + f)
    print(f"{len(jobs) - sum(1 for r in results if r)} of {len(jobs)} models pass sanitized")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
