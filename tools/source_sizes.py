#!/usr/bin/env python3
"""Fails when a source file or a command's function outgrows what a reader
takes in at once (issue 45: "no .c file over 550 lines; no function in cli/
over 120 lines").

    python3 tools/source_sizes.py [SOURCE_DIR]   (ctest: source_sizes)
    python3 tools/source_sizes.py --self-test    (plants both in a scratch tree)

Read: every .c/.cc of the project (tools/include_circles.py's list) except
tests/ and python/, whose test files group cases by subject, and each
function of cli/*.c: a definition starts at column 0 with its "{" at the
line's end and ends at the next "}" at column 0.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from include_circles import project_files  # noqa: E402

FILE_LINES = 550
CLI_FUNCTION_LINES = 120
DEFINITION = re.compile(r"^[A-Za-z_][^;=]*\)\s*\{\s*$")
SKIPPED = ("tests/", "python/")


def too_long(root):
    """'path: N lines' and 'path:L: name: N lines' for each file or cli function over its bound."""
    found = []
    for f in project_files(root):
        if not f.endswith((".c", ".cc")) or f.startswith(SKIPPED):
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as text:
            lines = text.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) > FILE_LINES:
            found.append(f"{f}: {len(lines)} lines (at most {FILE_LINES})")
        if not f.startswith("cli/"):
            continue
        start = None
        for number, line in enumerate(lines, 1):
            if start is None and DEFINITION.match(line):
                start = (number, line)
            elif start is not None and line.startswith("}"):
                length = number - start[0] + 1
                if length > CLI_FUNCTION_LINES:
                    name = re.search(r"(\w+)\s*\(", start[1]).group(1)
                    found.append(f"{f}:{start[0]}: {name}: {length} lines (at most {CLI_FUNCTION_LINES})")
                start = None
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "cli"))
        os.makedirs(os.path.join(root, "tests"))
        os.makedirs(os.path.join(root, "data"))
        body = "".join(f"    x += {i};\n" for i in range(CLI_FUNCTION_LINES))
        files = {
            "cli/long.c": "int long_one(int x) {\n" + body + "    return x;\n}\n",
            "cli/short.c": "int short_one(int x) {\n    return x;\n}\n",
            "data/big.c": "int a;\n" * (FILE_LINES + 1),
            "data/fits.c": "int a;\n" * FILE_LINES,
            "tests/test_big.c": "int a;\n" * (FILE_LINES + 1),
        }
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
        found = too_long(root)
        want = [f"cli/long.c:1: long_one: {CLI_FUNCTION_LINES + 3} lines", f"data/big.c: {FILE_LINES + 1} lines"]
        for w in want:
            if not any(line.startswith(w) for line in found):
                print(f"self-test: missed {w!r}; found {found}")
                return 1
        if len(found) != len(want):
            print(f"self-test: found more than planted: {found}")
            return 1
    print("self-test: both planted sizes found, nothing else")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    found = too_long(root)
    for line in found:
        print(line)
    if found:
        print("split by purpose (docs/design.md, \"The house\"): what a reader looks for in one place")
        return 1
    print(f"every source file at most {FILE_LINES} lines, every cli/ function at most {CLI_FUNCTION_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
