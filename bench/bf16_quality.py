"""Does training keep its quality with bfloat16 products? (issue 25 item 6;
docs/performance.md, "bfloat16 products").

Runs the PyTorch reference trainer ../shared/bench/torch_ref.py (float32)
with every nn.Linear's three products emulating what bench/bf16_products.c
computes: both inputs of each product rounded to bf16 (round to nearest
even), the product of the rounded values accumulated in float32 and kept in
float32; weights, gradients, the bias and Adam stay float32 (the master
copy). A product of two bf16 values is exact in float32, so this is the
bf16 product up to the order of the sums. nn.Linear holds the output
projection (the products bf16 would speed most) and the attention's
projections; the GRU's own products stay float32.

    /usr/bin/python3 bench/bf16_quality.py --products bf16 -- --data ../shared/data/tatoeba-eng-fra.tsv \\
        --max-len 10 --emb 256 --hidden 256 --batch 64 --attn bahdanau --bucket --epochs 3 --threads 1 \\
        --greedy-eval 500 --seed 1
    /usr/bin/python3 bench/bf16_quality.py --products float32 -- ...the same...   # the reference

Everything after "--" goes to torch_ref.py unchanged.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def bf16(t):
    """t rounded to the nearest bf16 (ties to even), as float32."""
    return t.bfloat16().float()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--products", choices=["bf16", "float32"], required=True)
    p.add_argument("--torch-ref", default=os.path.join(HERE, "..", "..", "shared", "bench", "torch_ref.py"))
    p.add_argument("rest", nargs=argparse.REMAINDER, help="-- then torch_ref.py's own flags")
    args = p.parse_args()
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if not os.path.exists(args.torch_ref):
        sys.exit("bf16_quality: %s is missing (the shared PyTorch reference trainer)" % args.torch_ref)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        sys.exit("bf16_quality: torch is not importable by %s (Debian's is /usr/bin/python3)" % sys.executable)
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.torch_ref)))
    import torch_ref

    class Bf16Linear(torch.autograd.Function):
        """y = bf16(x) bf16(W)^T + b; dx = bf16(dy) bf16(W), dW = bf16(dy)^T bf16(x), db = sum dy."""

        @staticmethod
        def forward(ctx, x, w, b):
            xr, wr = bf16(x), bf16(w)
            ctx.save_for_backward(xr, wr)
            ctx.has_bias = b is not None
            return F.linear(xr, wr, b)

        @staticmethod
        def backward(ctx, dy):
            xr, wr = ctx.saved_tensors
            dyr = bf16(dy)
            dx = dyr @ wr
            dw = dyr.reshape(-1, dyr.shape[-1]).t() @ xr.reshape(-1, xr.shape[-1])
            db = dy.reshape(-1, dy.shape[-1]).sum(0) if ctx.has_bias else None
            return dx, dw, db

    if args.products == "bf16":
        # The layers, not F.linear: nn.Transformer's attention calls F.linear
        # itself and is left as it is (the GRU model has none).
        torch.nn.Linear.forward = lambda self, x: Bf16Linear.apply(x, self.weight, self.bias)
    a = torch_ref.parse_args(rest)
    if a.dtype != "float32":
        sys.exit("bf16_quality: bf16 products with float32 master weights: run torch_ref in --dtype float32")
    print("# bf16_quality: nn.Linear products in %s" % args.products)
    torch_ref.main(a)


if __name__ == "__main__":
    main()
