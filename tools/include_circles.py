#!/usr/bin/env python3
"""Fails when the project's #include "..." lines make a circle.

    python3 tools/include_circles.py [SOURCE_DIR]   (ctest: no_include_circles)
    python3 tools/include_circles.py --self-test    (plants circles in a scratch tree)

Two graphs, each of which must have no cycle:
  - modules: x.h with x.c (or x.cc, C++) in one folder is one module,
    "dir/x"; an include of dir/y.h from any of its files is an edge
    dir/x -> dir/y. A circle (ckpt/ckpt.c included ckpt/format.h, which
    included ckpt/ckpt.h) means neither module can be read, built or tested
    without the other. A header with no .c of its own (an internal header,
    a kernel template) is no module: an include of it counts as including
    what it includes, so an internal header that builds on its module's
    public header is part of that module. Headers without a .c must not
    include each other in a circle either.
  - folders (the static libraries, docs/design.md "The house"): an include
    across folders is an edge between them.
A circle is named with the include line behind each of its edges. Includes
are the quoted ones only (system headers are <...>), resolved from the
project root as the code writes them, else beside the including file.
Which object file uses which symbol is tools/symbol_circles.py's business.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCES = (".c", ".cc")
SOURCE_SUFFIXES = SOURCES + (".h",)
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def project_files(root):
    """Project-relative paths of every .c/.cc/.h file: git's list (tracked and
    untracked, ignored excluded) in a checkout, else a walk that skips build
    trees (a folder holding CMakeCache.txt) and hidden folders."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                             capture_output=True, check=True).stdout.decode()
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True,
                             check=True).stdout.decode().strip()
        files = [f for f in out.split("\0") if f.endswith(SOURCE_SUFFIXES) and os.path.isfile(os.path.join(root, f))]
        if files and os.path.samefile(top, root):
            return sorted(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for here, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and
                   not os.path.exists(os.path.join(here, d, "CMakeCache.txt"))]
        files += [os.path.relpath(os.path.join(here, n), root) for n in names if n.endswith(SOURCE_SUFFIXES)]
    return sorted(files)


def include_lines(root, files):
    """{file: [(line_number, included_file)]} for the quoted includes that name a project file."""
    known = set(files)
    includes = {}
    for f in files:
        found = includes.setdefault(f, [])
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as text:
            for number, line in enumerate(text, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = m.group(1)
                beside = os.path.normpath(os.path.join(os.path.dirname(f), name))
                target = name if name in known else beside if beside in known else None
                if target:
                    found.append((number, target))
    return includes


def stem(path):
    return os.path.splitext(path)[0]


def module_graph(files, includes):
    """{module: {module: why}}: the modules' edges, through headers that are no module."""
    modules = {stem(f) for f in files if f.endswith(SOURCES)}
    graph = {m: {} for m in modules}

    def reach(start_module, f, why, seen):
        # Every module f's includes lead to, looking through headers that are none.
        for number, target in includes[f]:
            step = why + [f"{f}:{number} includes {target}"]
            t = stem(target)
            if t in modules:
                if t != start_module and t not in graph[start_module]:
                    graph[start_module][t] = ", ".join(step)
            elif target not in seen:
                seen.add(target)
                reach(start_module, target, step, seen)

    for f in files:
        if stem(f) in modules:
            reach(stem(f), f, [], {f})
    return graph


def header_graph(files, includes):
    """{header: {header: why}} between the headers that are no module."""
    modules = {stem(f) for f in files if f.endswith(SOURCES)}
    loose = [f for f in files if stem(f) not in modules]
    graph = {h: {} for h in loose}
    for h in loose:
        for number, target in includes[h]:
            if target in graph and target != h:
                graph[h].setdefault(target, f"{h}:{number} includes {target}")
    return graph


def folder_graph(files, includes):
    graph = {}
    for f in files:
        a = os.path.dirname(f) or "."
        graph.setdefault(a, {})
        for number, target in includes[f]:
            b = os.path.dirname(target) or "."
            graph.setdefault(b, {})
            if a != b:
                graph[a].setdefault(b, f"{f}:{number} includes {target}")
    return graph


def find_cycle(graph):
    """A cycle [a, b, ..., a] of graph {node: {successor: why}}, or None (iterative DFS)."""
    state = {}  # absent: unseen, 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            successor = next(stack[-1], None)
            if successor is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(successor) == 1:
                return path[path.index(successor):] + [successor]
            elif successor not in state:
                state[successor] = 1
                path.append(successor)
                stack.append(iter(sorted(graph.get(successor, {}))))
    return None


def report(tool, what, graphs, out=sys.stdout, err=sys.stderr):
    """0 when none of graphs [(kind, {node: {successor: why}})] has a cycle, else 1,
    naming the first cycle of each with the why behind each of its edges
    (shared with tools/symbol_circles.py)."""
    failed = 0
    for kind, graph in graphs:
        cycle = find_cycle(graph)
        if cycle:
            print(f"{what} circle between {kind}: " + " -> ".join(cycle), file=err, flush=True)
            for a, b in zip(cycle, cycle[1:]):
                print(f"  {a} -> {b}: {graph[a][b]}", file=err)
            failed = 1
        else:
            edges = sum(len(s) for s in graph.values())
            print(f"{tool}: {len(graph)} {kind}, {edges} edges, no circle", file=out, flush=True)
    return failed


def check(root, out=sys.stdout, err=sys.stderr):
    """0 when no graph of root's files has a circle, 1 naming the first of each, 2 without files."""
    files = project_files(root)
    if not files:
        print(f"include_circles: no .c or .h files under {root}", file=err)
        return 2
    includes = include_lines(root, files)
    return report("include_circles", "include",
                  (("modules", module_graph(files, includes)), ("headers without a .c", header_graph(files, includes)),
                   ("folders", folder_graph(files, includes))), out, err)


def plant(tree):
    """A scratch folder holding tree {path: text}; the caller removes it."""
    scratch = tempfile.mkdtemp(prefix="circles-")
    for path, text in tree.items():
        os.makedirs(os.path.join(scratch, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(scratch, path), "w") as f:
            f.write(text)
    return scratch


def self_test_trees(tool, trees, check_tree):
    """0 when check_tree(folder) gives 0 for the tree named "none" and 1 for
    each other tree of trees {name: {path: text}}, each planted in a scratch
    folder; else 1, naming each tree that gave another answer."""
    failures = 0
    for name, tree in trees.items():
        scratch = plant(tree)
        try:
            rc = check_tree(scratch)
        finally:
            shutil.rmtree(scratch)
        want = 0 if name == "none" else 1
        if rc != want:
            print(f"{tool} --self-test: a tree with {'no circle' if want == 0 else 'a circle of ' + name} "
                  f"gave {rc}, not {want}", file=sys.stderr)
            failures += 1
    print(f"{tool} --self-test: {len(trees) - failures} of {len(trees)} trees as expected")
    return 1 if failures else 0


def self_test():
    """The check passes a tree without circles and fails each circle planted in it."""
    trees = {
        "none": {"a/x.h": "", "a/x.c": '#include "a/x.h"\n#include "a/y_internal.h"\n',
                 "a/y_internal.h": '#include "a/x.h"\n', "b/z.c": '#include "a/x.h"\n'},
        "modules": {"a/x.h": "", "a/x.c": '#include "a/y.h"\n', "a/y.h": '#include "a/x.h"\n', "a/y.c": ""},
        "modules through a header": {"a/x.h": "", "a/x.c": '#include "a/t.h"\n', "a/t.h": '#include "a/y.h"\n',
                                     "a/y.h": "", "a/y.c": '#include "a/x.h"\n'},
        "a C++ half": {"a/x.h": "", "a/x.cc": '#include "a/y.h"\n', "a/y.h": "", "a/y.c": '#include "a/x.h"\n'},
        "headers": {"a/p.h": '#include "a/q.h"\n', "a/q.h": '#include "p.h"\n'},
        "folders": {"a/x.h": "", "a/x.c": '#include "b/y.h"\n', "b/y.h": "", "b/z.h": "", "b/z.c": '#include "a/x.h"\n'},
    }

    def quietly(scratch):
        with open(os.devnull, "w") as quiet:
            return check(scratch, out=quiet, err=quiet)

    return self_test_trees("include_circles", trees, quietly)


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    return check(root)


if __name__ == "__main__":
    sys.exit(main())
