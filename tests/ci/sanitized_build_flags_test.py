"""The sanitized build instruments the code under test and shares the test drivers.

In the ASan stage the compiler's own code (core/, sim/, crt/) must be compiled with
-fsanitize=address,undefined, and the test drivers (tests/) must be compiled exactly as
the normal build compiles them, so ccache serves their objects from the normal stage
(they were three quarters of the stage's cold build; tests/CMakeLists.txt says why).
This reads both builds' build.ninja and fails on an uninstrumented product object, an
instrumented test driver, or a test object whose command differs from the normal
build's. Without a normal build beside it, only the first two are checked.

usage: sanitized_build_flags_test.py SANITIZED_BUILD_DIR SOURCE_DIR [NORMAL_BUILD_DIR]
"""
import os
import re
import sys

INSTRUMENTED = ("core/", "sim/", "crt/")
SANITIZER_FLAG = "-fsanitize=address,undefined"
# Test objects allowed to differ from the normal build's, and why.
DIFFERENT = {
    "tests/unit/replay_mode.cc": "the replays' generate-only switch, defined in the sanitized build only",
}


def compile_edges(build_dir, source_dir):
    """{source path relative to SOURCE_DIR: (rule command, {variable: value})}."""
    build_dir = os.path.realpath(build_dir)
    text = open(os.path.join(build_dir, "build.ninja")).read()
    rules = dict(re.findall(r"^rule (\S+)\n(?:  [^\n]*\n)*?  command = ([^\n]*)\n",
                            open(os.path.join(build_dir, "CMakeFiles", "rules.ninja")).read(), re.M))
    edges = {}
    for m in re.finditer(r"^build [^:\n]+\.o: (C(?:XX)?_COMPILER\S*) (\S+)[^\n]*\n((?:  [^\n]*\n)*)", text, re.M):
        rule, src, variables = m.group(1), m.group(2), m.group(3)
        src = os.path.realpath(src if os.path.isabs(src) else os.path.join(build_dir, src))
        if not src.startswith(source_dir + os.sep) or src.startswith(build_dir + os.sep):
            continue  # generated sources live in the build folder
        values = {}
        for line in variables.splitlines():
            key, _, value = line.strip().partition(" = ")
            if key in ("DEFINES", "FLAGS", "INCLUDES"):
                values[key] = value.replace(build_dir, "<build>")
        edges[os.path.relpath(src, source_dir)] = (rules.get(rule, "?"), values)
    return edges


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    source_dir = os.path.realpath(sys.argv[2])
    sanitized = compile_edges(sys.argv[1], source_dir)
    failures = []
    for src, (_, values) in sorted(sanitized.items()):
        instrumented = SANITIZER_FLAG in values.get("FLAGS", "")
        if src.startswith(INSTRUMENTED) and not instrumented:
            failures.append(f"{src}: code under test compiled without {SANITIZER_FLAG}")
        if src.startswith("tests/") and instrumented:
            failures.append(f"{src}: a test driver compiled with the sanitizers (ccache cannot share it)")
    if not any(s.startswith("core/") for s in sanitized):
        failures.append("no object of core/ found in build.ninja: has the build changed?")
    compared = 0
    if len(sys.argv) > 3 and os.path.isfile(os.path.join(sys.argv[3], "build.ninja")):
        normal = compile_edges(sys.argv[3], source_dir)
        for src, edge in sorted(sanitized.items()):
            if not src.startswith("tests/") or src in DIFFERENT or src not in normal:
                continue
            compared += 1
            if edge != normal[src]:
                failures.append(f"{src}: compiled differently from the normal build:\n"
                                f"  sanitized: {edge}\n  normal:    {normal[src]}")
        if compared == 0:
            failures.append("no test object in common with the normal build")
    for f in failures:
        print("FAIL " + f)
    if failures:
        return 1
    checked = sum(s.startswith(INSTRUMENTED) for s in sanitized)
    print(f"ok: {checked} objects of core/, sim/ and crt/ instrumented; "
          + (f"{compared} test objects compiled as in the normal build" if compared
             else "no normal build to compare the test objects with"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
