#!/usr/bin/python3
"""What each attention head of a Transformer does, measured over sentences.

    /usr/bin/python3 tools/head_roles.py build/tinyseq run/best.ckpt dev.tsv [N]

runs `tinyseq attend --beam 1 --json -` on the first N (default 100) source
sentences of the TSV file and prints, for every view (cross, enc, dec),
layer and head, the mean over all rows of all sentences of:

    self   weight on the row's own position (self-attention: the diagonal;
           cross: the source word at the same index, the monotone guess)
    prev   weight on the position before it (dec: the input token just read
           is "self", as row t's input t is y_t, the word written last)
    next   weight on the position after it
    first  weight on position 0 (dec: <sos>)
    last   weight on the last source word (the final "." on the toy corpus)
    max    the row's largest weight (1: one position only)
    H      the row's entropy over log(number of positions it may see)

The numbers docs/attention.md quotes come from this script. It reads the
program's JSON only (docs/attention.md, section 5), so it needs no build of
the Python package.
"""
import json
import math
import subprocess
import sys


def rows_of(view, matrix):
    """(row, allowed columns, weights) of one (R, C) matrix of a view."""
    for i, row in enumerate(matrix):
        # The decoder's row i sees inputs 0..i only (causal mask).
        yield i, (i + 1 if view == "dec" else len(row)), row


def main():
    program, model, corpus = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    sentences = []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                sentences.append(line.split("\t")[0])
            if len(sentences) == n:
                break
    stats = {}  # (view, layer, head) -> [sums...], rows
    keys = ("self", "prev", "next", "first", "last", "max", "H")
    for s in sentences:
        out = subprocess.run([program, "attend", "--model", model, "--beam", "1", "--json", "-", s],
                             capture_output=True, text=True, check=True).stdout
        d = json.loads(out)
        S = len(d["source"])
        for view in ("cross", "enc", "dec"):
            v = d[view]
            for l, layer in enumerate(v["heads"]):
                for h, matrix in enumerate(layer + [v["mean"][l]]):
                    acc = stats.setdefault((view, l, h), [0.0] * (len(keys) + 1))
                    for i, width, row in rows_of(view, matrix):
                        seen = row[:width]
                        values = {
                            "self": row[i] if i < width else 0.0,
                            "prev": row[i - 1] if 0 < i <= width else 0.0,
                            "next": row[i + 1] if i + 1 < width else 0.0,
                            "first": row[0],
                            "last": row[S - 1] if view != "dec" else 0.0,
                            "max": max(seen),
                            "H": (-sum(w * math.log(w) for w in seen if w > 0) / math.log(width)) if width > 1 else 0.0,
                        }
                        for k, key in enumerate(keys):
                            acc[k] += values[key]
                        acc[-1] += 1
    heads = max(h for (_, _, h) in stats)  # the mean's index
    print(f"{len(sentences)} sentences, greedy; head {heads} below is the layer's head mean")
    for view in ("cross", "enc", "dec"):
        print(f"\n{view}\n| layer | head | " + " | ".join(keys) + " |")
        print("|---|---|" + "---|" * len(keys))
        for (v, l, h), acc in sorted(stats.items()):
            if v != view:
                continue
            name = "mean" if h == heads else str(h)
            print(f"| {l} | {name} | " + " | ".join(f"{acc[k] / acc[-1]:.2f}" for k in range(len(keys))) + " |")


if __name__ == "__main__":
    main()
