#!/usr/bin/env python3
"""Prints the slowest tests of a ctest run from its JUnit file (ctest --output-junit),
so a CI log shows where test time goes and a regression in it is seen.

usage: slowest_tests.py JUNIT.xml [N]
"""
import sys
import xml.etree.ElementTree as ET


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 1
    count = int(sys.argv[2]) if len(sys.argv) == 3 else 20
    try:
        cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
    except (OSError, ET.ParseError) as e:
        print(f"slowest_tests: cannot read {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    timed = sorted(((float(c.get("time", "0")), c.get("name", "?"), c.get("status", "")) for c in cases),
                   reverse=True)
    total = sum(t for t, _, _ in timed)
    print(f"slowest {min(count, len(timed))} of {len(timed)} tests (sum of test times {total:.0f} s):")
    for seconds, name, status in timed[:count]:
        flag = "" if status in ("run", "") else f"  [{status}]"
        print(f"  {seconds:8.2f} s  {name}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
