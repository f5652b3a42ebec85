"""No compile command names the checkout's path, except the few allowed below.

ccache rewrites the paths it sees as file arguments (-I, the source file) relative to
CCACHE_BASEDIR, but not a path inside a -D value: one such define makes every object of
the target miss the cache in a clone at another path, as CI's fresh checkouts are (the
unit tests' MICROTIR_SOURCE_DIR once cost a warm build all 66 test objects). The
checkout's path lives in core/support/source_dir.cc alone (support/source_dir.h).

usage: path_free_flags_test.py BUILD_DIR SOURCE_DIR
"""
import os
import re
import sys

# Objects allowed to carry a path in their flags, and why.
ALLOWED = {
    "core/support/source_dir.cc": "the one place that holds the checkout's path",
    "tests/qemu/": "MICROTIR_CLI, the built CLI's path (three QEMU test objects)",
}


def main():
    build_dir, source_dir = sys.argv[1], os.path.realpath(sys.argv[2])
    text = open(os.path.join(build_dir, "build.ninja")).read()
    offenders = []
    # A compile edge: "build OBJ: CXX_COMPILER__... SOURCE ..." followed by indented variables.
    for m in re.finditer(r"^build ([^:\n]+\.o): C(?:XX)?_COMPILER\S* (\S+)[^\n]*\n((?:  [^\n]*\n)*)", text, re.M):
        obj, src, variables = m.group(1), m.group(2), m.group(3)
        for line in variables.splitlines():
            key, _, value = line.strip().partition(" = ")
            if key in ("DEFINES", "FLAGS") and source_dir in value:
                rel = os.path.relpath(os.path.realpath(src if os.path.isabs(src) else os.path.join(build_dir, src)), source_dir)
                if not any(rel.startswith(a) for a in ALLOWED):
                    offenders.append(f"{rel}: {key} names {source_dir}: {value[:160]}")
    if "source_dir.cc" not in text:
        print("FAIL: core/support/source_dir.cc is not compiled: has the build changed?")
        return 1
    for o in offenders:
        print("FAIL " + o)
    if offenders:
        print(f"{len(offenders)} objects name the checkout in their flags: use mtir::source_dir() (support/source_dir.h)")
        return 1
    print("ok: no compile command names the checkout's path outside " + ", ".join(ALLOWED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
