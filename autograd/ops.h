// Differentiable ops. Each takes the step context and its inputs, returns a
// new tensor in the step arena (recorded on the tape when a gradient is
// needed), or NULL after a failure (see graph.h: errors are sticky, and a NULL
// input gives a NULL output).
//
// Shapes: "rows" means every dimension but the last, flattened; "cols" the last.
#ifndef TS_OPS_H
#define TS_OPS_H

#include <gsl/gsl_rng.h>

#include "autograd/graph.h"

// ---- elementwise (ops_elementwise.c) ----
ts_tensor *ts_add(ts_ctx *ctx, ts_tensor *a, ts_tensor *b);          // a + b, same shape
ts_tensor *ts_sub(ts_ctx *ctx, ts_tensor *a, ts_tensor *b);          // a - b, same shape
ts_tensor *ts_mul(ts_ctx *ctx, ts_tensor *a, ts_tensor *b);          // a * b, same shape
ts_tensor *ts_scale(ts_ctx *ctx, ts_tensor *a, double s);            // s * a
ts_tensor *ts_add_bias(ts_ctx *ctx, ts_tensor *a, ts_tensor *bias);  // a (rows, n) + bias (n) per row
ts_tensor *ts_tanh(ts_ctx *ctx, ts_tensor *a);
ts_tensor *ts_sigmoid(ts_ctx *ctx, ts_tensor *a);
ts_tensor *ts_relu(ts_ctx *ctx, ts_tensor *a);
ts_tensor *ts_exp(ts_ctx *ctx, ts_tensor *a);
ts_tensor *ts_log(ts_ctx *ctx, ts_tensor *a);  // a must be > 0 (log of <= 0 gives -inf/NaN)

// ---- matrix product (ops_matmul.c) ----
// op(a) (m, k) times op(b) (k, n) -> (m, n); a, b are 2-D, op transposes when
// the flag is set (a is then stored (k, m), b stored (n, k)).
ts_tensor *ts_matmul(ts_ctx *ctx, ts_tensor *a, ts_tensor *b, int trans_a, int trans_b);

// A linear layer on a block of W's columns: x (N, k), W (out, in) with
// col0 + k <= in, bias (out) or NULL, addend (N, out) or NULL:
//   y (N, out) = x W[:, col0 : col0 + k]^T + bias + addend
// One dgemm accumulating onto the bias / addend. With col0 = 0 and k = in it
// is torch.nn.Linear; splitting [a; b] W^T into a W_a^T + b W_b^T lets the
// part of a product that is known early run for many rows at once.
ts_tensor *ts_linear(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, int col0, ts_tensor *bias, ts_tensor *addend);
// relu(x W^T + bias) as one node (bias may be NULL): the ReLU is applied in
// place after the product and its mask to the upstream gradient in place, so
// no (N, out) tensor and gradient of its own (the feed-forward's hidden layer).
ts_tensor *ts_linear_relu(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, ts_tensor *bias);

// Batched product: a (G, m, k) times b (G, k, n) -> (G, m, n), one product per
// leading index g, each operand transposed per matrix when its flag is set
// (a then stored (G, k, m), b (G, n, k)).
ts_tensor *ts_bmm(ts_ctx *ctx, ts_tensor *a, ts_tensor *b, int trans_a, int trans_b);

// ---- reductions (ops_reduce.c) ----
ts_tensor *ts_sum(ts_ctx *ctx, ts_tensor *a);   // (1): sum of every element
ts_tensor *ts_mean(ts_ctx *ctx, ts_tensor *a);  // (1): mean of every element

// ---- shape (ops_shape.c) ----
// [x_0; x_1; ...] along the last dimension; inputs (n <= 4) agree on every other dimension.
ts_tensor *ts_concat(ts_ctx *ctx, ts_tensor *const *xs, int n);
// a[..., start : start + n]: the last dimension cut down (split is several slices).
ts_tensor *ts_slice_cols(ts_ctx *ctx, ts_tensor *a, int start, int n);
// table (V, E) rows ids[0..n) -> (n, E). Rows whose id equals `no_grad_id`
// (the padding id; -1 for none) get no gradient. ids are copied; each must be
// in [0, V) or the op fails naming the index and value.
ts_tensor *ts_gather_rows(ts_ctx *ctx, ts_tensor *table, const int *ids, int n, int no_grad_id);
// a[start : start + n] along the first dimension, as a view (no copy).
ts_tensor *ts_slice_rows(ts_ctx *ctx, ts_tensor *a, int start, int n);
// The same data with another shape of the same size, as a view.
ts_tensor *ts_reshape(ts_ctx *ctx, ts_tensor *a, int ndim, const int *dims);

// (A, B, C) -> (B, A, C): time-major to batch-major and back.
ts_tensor *ts_swap01(ts_ctx *ctx, ts_tensor *a);
// [x_0; x_1; ...; x_{n-1}] along the first dimension (any n >= 1); the
// inputs agree on every other dimension. The list is copied.
ts_tensor *ts_stack_rows(ts_ctx *ctx, ts_tensor *const *xs, int n);

// Heads apart and together: x (B, T, H * Dh) -> (B * H, T, Dh) and back
// (y[b H + h, t, j] = x[b, t, h Dh + j]). `heads` must divide the last dimension.
ts_tensor *ts_split_heads(ts_ctx *ctx, ts_tensor *x, int heads);
ts_tensor *ts_merge_heads(ts_ctx *ctx, ts_tensor *x, int heads);

// ---- softmax and loss (ops_softmax.c) ----
// Per row of a (rows, cols). With a mask (rows * cols doubles, 0 = masked,
// read only during the call) masked entries get exactly 0 weight; mask NULL
// means none.
ts_tensor *ts_softmax(ts_ctx *ctx, ts_tensor *a, const double *mask);
ts_tensor *ts_log_softmax(ts_ctx *ctx, ts_tensor *a);
// Fused log-softmax + negative log-likelihood: logits (N, V), targets (N)
// (copied). Returns (1): the mean over rows whose target is not
// `ignore_index`; 0 when every row is ignored. Targets must be in [0, V).
// smoothing e in [0, 1) is PyTorch's label_smoothing: each kept row's target
// distribution is (1 - e) onehot + e / V (e = 0: plain cross-entropy).
ts_tensor *ts_cross_entropy(ts_ctx *ctx, ts_tensor *logits, const int *targets, int ignore_index,
                            double smoothing);
// The plain cross-entropy (no smoothing) of the rows a cross_entropy or
// linear_cross_entropy node averaged: what perplexity is computed from.
double ts_cross_entropy_nll(const ts_tensor *loss);
// ts_cross_entropy(x W^T + bias) as one node: x (N, H), W (V, H), bias (V)
// or NULL, targets (N) (copied). The logits are never a tensor: one (N, V)
// buffer holds the softmax and, in the backward, the logits' gradient.
// The backward may run once per tape (as ts_backward does).
ts_tensor *ts_linear_cross_entropy(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, ts_tensor *bias, const int *targets,
                                   int ignore_index, double smoothing);

// ---- normalisation (ops_norm.c) ----
// torch.nn.LayerNorm(D, eps) over the last dimension: x (rows, D),
// gamma (D), beta (D) -> y = (x - mean) / sqrt(var + eps) gamma + beta, with
// the biased variance of each row.
ts_tensor *ts_layer_norm(ts_ctx *ctx, ts_tensor *x, ts_tensor *gamma, ts_tensor *beta, double eps);

// ---- regularisation (ops_dropout.c) ----
// Zeroes each element with probability p (drawn from rng) and scales the rest
// by 1 / (1 - p). p = 0 returns a unchanged; p must be in [0, 1).
ts_tensor *ts_dropout(ts_ctx *ctx, ts_tensor *a, double p, gsl_rng *rng);

// ---- fused recurrent and attention nodes (ops_gru.c, ops_lstm.c, ops_attention.c) ----
// One GRU step in PyTorch's formulation (docs/models.md), B rows at once:
//   gates_x (B, 3H) = x W_ih^T + b_ih, already computed (for the encoder, for
//   every time step in one product); h (B, H); w_hh (3H, H); b_hh (3H).
// Returns h' (B, H). mask (B, 1 = real step, 0 = padding; copied; NULL = all
// real): a masked row's h' is its h, and no gradient flows through the gates.
ts_tensor *ts_gru_cell(ts_ctx *ctx, ts_tensor *gates_x, ts_tensor *h, ts_tensor *w_hh,
                       ts_tensor *b_hh, const double *mask);

// One LSTM step in PyTorch's formulation (docs/models.md, gates i, f, g, o),
// B rows at once, its state (h, c) one tensor of two parts (models/cell.h):
//   gates_x (B, 4H) = x W_ih^T + b_ih, already computed; state (2B, H) = [h; c];
//   w_hh (4H, H); b_hh (4H).
// Returns [h'; c'] (2B, H). mask (B, as ts_gru_cell's): a masked row keeps
// its h and c, and no gradient flows through its gates.
ts_tensor *ts_lstm_cell(ts_ctx *ctx, ts_tensor *gates_x, ts_tensor *state, ts_tensor *w_hh, ts_tensor *b_hh,
                        const double *mask);

// Dot scores: q (B, D), keys (B, S, D) -> e (B, S), e[b, s] = q[b] . keys[b, s].
// Shared memory (these three ops and ts_mha_blocks): with gradients off, the
// keys (and memory, values) may hold Bs rows for queries of B = g Bs rows,
// query row b reading row b / g (a beam's g hypotheses of one sentence); the
// same arithmetic as g copies of each row, so the same bits.
ts_tensor *ts_attn_dot(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys);

// Additive scores: q (B, A), keys (B, S, A), v (A) -> e (B, S),
// e[b, s] = v . tanh(q[b] + keys[b, s]). Projections happen outside.
ts_tensor *ts_attn_additive(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *v);

// Context: weights (B, S), memory (B, S, M) -> (B, M), c[b] = sum_s w[b, s] memory[b, s].
ts_tensor *ts_attn_context(ts_ctx *ctx, ts_tensor *weights, ts_tensor *memory);

// Multi-head scaled dot-product attention (ops_mha.c), one fused node:
// q (B, T, D), keys and values (B, S, D), already projected; head h is the
// column block h Dh .. (h + 1) Dh - 1, Dh = D / heads. For each b and h:
//   weights (T, S) = softmax(q_h keys_h^T / sqrt(Dh)), masked;  out_h = weights values_h
// Returns out (B, T, D), heads side by side as PyTorch concatenates them.
// key_mask (B, S; 1 = real key, 0 = padding; copied) or NULL; causal: query t
// sees keys s <= t only. A query with no visible key gets zero weights.
ts_tensor *ts_mha(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                  const double *key_mask, int causal);
// ts_mha with dropout p in [0, 1) on the attention weights, as
// torch.nn.MultiheadAttention applies it: the weights of each (b, h, t) row
// times factors 0 or 1 / (1 - p) drawn from rng (in (B, H, T, S) order)
// before they mix the values. p 0 is ts_mha (rng may then be NULL).
ts_tensor *ts_mha_dropout(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                          const double *key_mask, int causal, double p, gsl_rng *rng);
// ts_mha_dropout on column blocks: q, keys and values are (B, T, Cq),
// (B, S, Ck), (B, S, Cv), and the attention reads the width columns from
// cols[0], cols[1], cols[2] of each row (heads within them), so the packed
// projection [q | k | v] of x (one product) is attended in place; q, keys and
// values may be the same tensor. Out (B, T, width). Keys, values and
// key_mask may hold B / g rows, shared by g queries' rows each (ts_attn_dot).
ts_tensor *ts_mha_blocks(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, const int cols[3], int width,
                         int heads, const double *key_mask, int causal, double p, gsl_rng *rng);
// The attention weights of a ts_mha output, (B, heads, T, S) row-major, of
// the output's dtype, kept for inspection in the step arena (they live as
// long as the output); under dropout, before it.
const void *ts_mha_weights(const ts_tensor *out);
// ts_mha composed from split_heads, bmm, scale, softmax and merge_heads: the
// same values and gradients, more nodes and memory (tests, measurements).
ts_tensor *ts_mha_composed(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *values, int heads,
                           const double *key_mask, int causal);

#endif
