"""PyTorch's bfloat16 matmul against its float32 matmul, at the shapes of
bench/bf16_products.c: the ceiling a tuned library (oneDNN's brgemm under
torch 1.13) reaches with AVX-512 BF16 on this CPU (issue 25 item 6;
docs/performance.md, "bfloat16 products").

The shapes come from the probe itself, one table:

    bf16_products --list shapes --rows 360 > shapes.tsv
    /usr/bin/python3 bench/bf16_torch.py --shapes shapes.tsv --threads 1 [--clock cpu]

Per shape, alternated repeat by repeat, medians of --repeats:
  f32     torch.mm in float32 (transposes as views, as a BLAS takes them)
  bf16    torch.mm of bf16 tensors into a bf16 result: the product alone
  bf16+cv the same from the float32 tensors: both inputs converted to bf16
          and the result back to float32 (float32 master weights and
          gradients), what a training step would pay
"""
import argparse
import statistics
import sys
import time


def timed(fn, min_seconds, clock):
    """Seconds per call of fn, over enough calls to take >= min_seconds."""
    reps = 1
    while True:
        t0 = clock()
        for _ in range(reps):
            fn()
        dt = clock() - t0
        if dt >= min_seconds:
            return dt / reps
        reps *= 2


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", required=True, help="bf16_products --list shapes output (group, name, ta, tb, m, n, k)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--min-seconds", type=float, default=0.02)
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="cpu: the process's CPU time (one thread on a busy machine; with more it sums the threads)")
    args = p.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("bf16_torch: torch is not importable by %s (Debian's is /usr/bin/python3)" % sys.executable)
    try:
        with open(args.shapes) as f:
            shapes = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    except OSError as e:
        sys.exit("bf16_torch: %s: %s" % (args.shapes, e.strerror))
    if not shapes or any(len(s) != 7 for s in shapes):
        sys.exit("bf16_torch: %s: not bf16_products --list shapes output" % args.shapes)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print("# bf16_torch: torch %s, %d thread%s, medians of %d repeats (each >= %.0f ms), alternated; %s time"
          % (torch.__version__, args.threads, "s" if args.threads > 1 else "", args.repeats, 1e3 * args.min_seconds,
             "CPU" if args.clock == "cpu" else "wall"))
    print("%-18s %-20s %5s %5s %5s | %8s %8s %8s | %6s %6s" % ("group", "product", "m", "n", "k", "f32", "bf16",
                                                                "bf16+cv", "ratio", "ratio0"))
    print("%-18s %-20s %5s %5s %5s | %8s %8s %8s | %6s %6s" % ("", "", "", "", "", "ms", "ms", "ms", "f32/all",
                                                                "f32/bf16"))
    group_t = [0.0, 0.0, 0.0]
    for i, (group, name, ta, tb, m, n, k) in enumerate(shapes):
        ta, tb, m, n, k = int(ta), int(tb), int(m), int(n), int(k)
        # Stored as the probe stores them: A (k, m) when transposed, else (m, k); B likewise.
        a = (torch.rand(k, m) - 0.5).t() if ta else torch.rand(m, k) - 0.5
        b = (torch.rand(n, k) - 0.5).t() if tb else torch.rand(k, n) - 0.5
        a16, b16 = a.bfloat16(), b.bfloat16()
        c = torch.empty(m, n)
        c16 = torch.empty(m, n, dtype=torch.bfloat16)

        def f32():
            torch.mm(a, b, out=c)

        def bf16():
            torch.mm(a16, b16, out=c16)

        def bf16_cv():
            torch.mm(a.bfloat16(), b.bfloat16(), out=c16)
            c.copy_(c16)

        for fn in (f32, bf16, bf16_cv):  # warm up (oneDNN builds its kernels on first use)
            fn()
        ts = {f32: [], bf16: [], bf16_cv: []}
        for _ in range(args.repeats):
            for fn in ts:
                ts[fn].append(timed(fn, args.min_seconds, clock))
        t32, t16, tcv = (statistics.median(ts[fn]) for fn in (f32, bf16, bf16_cv))
        print("%-18s %-20s %5d %5d %5d | %8.3f %8.3f %8.3f | %6.2f %6.2f"
              % (group, name, m, n, k, 1e3 * t32, 1e3 * t16, 1e3 * tcv, t32 / tcv, t32 / t16))
        group_t = [g + t for g, t in zip(group_t, (t32, t16, tcv))]
        if i + 1 == len(shapes) or shapes[i + 1][0] != group:
            print("%-18s %-20s %5s %5s %5s | %8.3f %8.3f %8.3f | %6.2f %6.2f"
                  % (group, "(the three)", "", "", "", 1e3 * group_t[0], 1e3 * group_t[1], 1e3 * group_t[2],
                     group_t[0] / group_t[2], group_t[0] / group_t[1]))
            group_t = [0.0, 0.0, 0.0]


if __name__ == "__main__":
    main()
