"""Runs a stateful model's artifact from a firmware author's main (tests/codegen/state_main.c:
input 'x', output 'y'): the first input, the second (the state carried over), then
tvmgen_model_reset() and the first input again. Shared by the stateful-model tests."""
import os
import subprocess


def _run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"FAIL: {what}: exit {p.returncode}")
    return p.stdout


def two_runs_and_reset(cli, source, work, name, model, inputs):
    """`inputs`: two raw-byte files of x. Returns (the three outputs' bytes, the reset line)."""
    mlf = os.path.join(work, name + "_mlf")
    _run([cli, "compile", model, "-o", mlf], f"microtir compile {name}")
    gen = os.path.join(mlf, "codegen/host/src")
    rt = os.path.join(mlf, "runtime")
    src = [os.path.join(gen, f) for f in sorted(os.listdir(gen)) if f.endswith(".c")]
    src += [os.path.join(rt, "src", f) for f in sorted(os.listdir(os.path.join(rt, "src"))) if f.endswith(".c")]
    fw = os.path.join(work, name + "_fw")
    _run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I" + os.path.join(rt, "include"),
          "-I" + os.path.join(mlf, "codegen/host/include")] + src +
         [os.path.join(rt, "ports/host/platform.c"), os.path.join(source, "tests/codegen/state_main.c"), "-lm",
          "-o", fw], f"building {name}'s firmware")
    lines = _run([fw] + list(inputs), f"{name}'s firmware").split("\n")
    return [bytes.fromhex(lines[k]) for k in (0, 1, 3)], lines[2]
