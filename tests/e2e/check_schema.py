#!/usr/bin/env python3
"""Checks a JSON document against a JSON Schema, for the subset our schemas use
(type, enum, required, properties, additionalProperties, items, minimum). Standard
library only. usage: check_schema.py SCHEMA DOCUMENT; exit 1 with the problems."""
import json
import sys

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "number": (int, float)}


def check(schema, value, where, problems):
    t = schema.get("type")
    if t == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif t is not None:
        ok = isinstance(value, TYPES[t]) and not (t == "number" and isinstance(value, bool))
    else:
        ok = True
    if not ok:
        problems.append(f"{where}: expected {t}, got {type(value).__name__}")
        return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{where}: {value} is below {schema['minimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{where}: missing '{key}'")
        props = schema.get("properties", {})
        for key, sub in value.items():
            if key in props:
                check(props[key], sub, f"{where}.{key}", problems)
            elif schema.get("additionalProperties") is False:
                problems.append(f"{where}: unexpected '{key}'")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            check(schema["items"], item, f"{where}[{i}]", problems)


def main():
    schema = json.load(open(sys.argv[1]))
    document = json.load(open(sys.argv[2]))
    problems = []
    check(schema, document, "$", problems)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
