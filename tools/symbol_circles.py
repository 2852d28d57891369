#!/usr/bin/env python3
"""Fails when the library's object files use each other's symbols in a circle.

    python3 tools/symbol_circles.py BUILD_DIR [SOURCE_DIR]  (ctest: no_symbol_circles)
    python3 tools/symbol_circles.py --self-test [CC] (compiles circles in a scratch tree)

What it reads: the object files of a build's libraries, the static
libraries tinyseq_<folder> and the shared tinyseq_shared (api/), that is
BUILD_DIR/**/CMakeFiles/tinyseq_*.dir/<source path>.o, whose path names the
source (an object whose source is no longer in SOURCE_DIR, left behind in
a build tree by a file since removed, is not read). `nm` lists what each object defines (text, data, read-only data,
bss, common, weak) and what it leaves undefined; an object that uses a
symbol another defines depends on it: a function call, and a data reference
(a table of rows, a row's address) as much. Includes cannot show the
latter: a file that reads a table declared extern in a header of its own
module depends on the file that defines the table, whatever it includes.

Two graphs, each of which must have no cycle:
  - modules: dir/x -> dir/y when an object of module dir/x uses a symbol an
    object of dir/y defines. A module is what tools/include_circles.py calls
    one: x.h with x.c, or x.cc (C++), in one folder. A header makes no object
    of its own (static inline functions are local symbols), so for all but
    one module a module is one file and its circle a circle of files; the
    exception, data/subword.c with data/subword.cc (the C++ half, which calls
    SentencePiece), is one module with one header, read and tested as one, so
    calls between its two halves are no circle, as includes between them
    would not be.
  - folders (the static libraries): an edge between the folders of two files
    with an edge.
A circle is named with a symbol behind each of its edges. Only the library
objects are read: the program (cli/main.c), the tests, benches and fuzz
targets sit on top of them.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from include_circles import report, self_test_trees, stem  # noqa: E402

LIBRARY_DIR = "tinyseq_"  # CMakeFiles/tinyseq_<name>.dir: the project's libraries
DEFINED = set("TDRBCGSVWui")  # nm's letters for a symbol an object defines globally


def library_objects(build, source=None):
    """{source path: object path} for every object of build's libraries (with
    source, only those whose source file is there)."""
    objects = {}
    for here, dirs, names in os.walk(build):
        dirs.sort()
        parts = os.path.relpath(here, build).split(os.sep)
        at = next((i for i in range(len(parts) - 1) if parts[i] == "CMakeFiles" and
                   parts[i + 1].startswith(LIBRARY_DIR) and parts[i + 1].endswith(".dir")), None)
        if at is None:
            continue
        for n in sorted(names):
            if n.endswith((".c.o", ".cc.o")) and (
                    source is None or os.path.isfile(os.path.join(source, *parts[at + 2:], n[:-2]))):
                objects["/".join(parts[at + 2:] + [n[:-2]])] = os.path.join(here, n)
    return objects


def symbols(obj, nm="nm"):
    """(defined, undefined): the global symbols obj defines and those it uses without defining."""
    out = subprocess.run([nm, "-P", obj], capture_output=True, check=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name, letter = fields[0], fields[1]
        if letter == "U":
            undefined.add(name)
        elif letter in DEFINED:
            defined.add(name)
    return defined, undefined


def symbol_graphs(objects, nm="nm"):
    """(modules, folders): {node: {successor: why}} from each object's symbols."""
    table = {source: symbols(obj, nm) for source, obj in objects.items()}
    where = {}
    for source in sorted(table):
        for name in table[source][0]:
            where.setdefault(name, source)
    modules = {stem(source): {} for source in table}
    folders = {os.path.dirname(source): {} for source in table}
    for source in sorted(table):
        for name in sorted(table[source][1]):
            target = where.get(name)
            if target is None or stem(target) == stem(source):
                continue  # a system library's, or its own module's
            why = f"{source} uses {name}, defined in {target}"
            modules[stem(source)].setdefault(stem(target), why)
            a, b = os.path.dirname(source), os.path.dirname(target)
            if a != b:
                folders[a].setdefault(b, why)
    return modules, folders


def check(build, source=None, out=sys.stdout, err=sys.stderr, nm="nm"):
    """0 when neither graph of build's library objects has a circle, 1 naming the first of each, 2 without objects."""
    objects = library_objects(build, source)
    if not objects:
        print(f"symbol_circles: no object files of the libraries (CMakeFiles/{LIBRARY_DIR}*.dir) under {build}",
              file=err)
        return 2
    modules, folders = symbol_graphs(objects, nm)
    return report("symbol_circles", "symbol", (("modules", modules), ("folders", folders)), out, err)


def self_test(cc):
    """Compiles made-up trees laid out as a build's are and checks each: none
    may fail without a circle and each planted circle must fail."""
    def lib(folder, name, text):
        return {f"CMakeFiles/{LIBRARY_DIR}{folder}.dir/{folder}/{name}.c": text}

    def tree(*parts):
        merged = {}
        for p in parts:
            merged.update(p)
        return merged

    trees = {
        # x calls y, y reads z's table, w (another library) calls x: a line,
        # no circle; v.c and v.cc, one module, call each other.
        "none": tree(lib("a", "x", "int y(void); int x(void) { return y(); }\n"),
                     lib("a", "y", "extern const int z_table[]; int y(void) { return z_table[0]; }\n"),
                     lib("a", "z", "const int z_table[] = {1};\n"),
                     lib("b", "w", "int x(void); int w(void) { return x(); }\n"),
                     lib("a", "v", "int v_half(void); int v(void) { return v_half(); }\n"),
                     {f"CMakeFiles/{LIBRARY_DIR}a.dir/a/v.cc": "int v(void); int v_half(void) { return v(); }\n"}),
        "modules by calls": tree(lib("a", "x", "int y(void); int x(void) { return y(); }\n"),
                               lib("a", "y", "int x(void); int y(void) { return x(); }\n")),
        # The table (x) points at a row (y), whose function walks the table.
        "modules by data": tree(lib("a", "x", "extern const int y_row; const int *const x_table[] = {&y_row};\n"),
                              lib("a", "y", "extern const int *const x_table[]; const int y_row = 1;\n"
                                            "int y(void) { return *x_table[0]; }\n")),
        "modules round three": tree(lib("a", "x", "int y(void); int x(void) { return y(); }\n"),
                                  lib("a", "y", "int z(void); int y(void) { return z(); }\n"),
                                  lib("a", "z", "int x(void); int z(void) { return x(); }\n")),
        "folders": tree(lib("a", "x", "int w(void); int x(void) { return w(); }\n"),
                        lib("a", "y", "int y(void) { return 1; }\n"),
                        lib("b", "w", "int y(void); int w(void) { return y(); }\n")),
    }

    def compiled(scratch):
        for here, _, names in os.walk(scratch):
            for n in names:
                if n.endswith((".c", ".cc")):  # the .cc halves are written in C
                    src = os.path.join(here, n)
                    subprocess.run([cc, "-x", "c", "-c", "-O0", "-o", src + ".o", src], check=True)
                    os.remove(src)
        with open(os.devnull, "w") as quiet:
            return check(scratch, out=quiet, err=quiet)

    return self_test_trees("symbol_circles", trees, compiled)


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test(sys.argv[2] if len(sys.argv) > 2 else os.environ.get("CC", "cc"))
    if len(sys.argv) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return check(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]) if len(sys.argv) == 3 else None)


if __name__ == "__main__":
    sys.exit(main())
