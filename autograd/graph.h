// The tape: reverse-mode automatic differentiation as a Wengert list.
//
// Every op that runs while grad mode is on and that has an input requiring a
// gradient appends its output to the tape. The tape is therefore already in
// topological order, and ts_backward() is one reverse loop over it.
//
// Errors are sticky per step: an op that fails (bad shape, full arena)
// records the first failure in ctx->status and returns NULL; every op given a
// NULL input returns NULL at once. A whole forward pass can be written
// without checks and the caller checks once:
//     ts_tensor *loss = model_loss(ctx, ...);
//     if (!loss) return ctx->status;
#ifndef TS_GRAPH_H
#define TS_GRAPH_H

#include "tensor/tensor.h"

enum { TS_SCRATCH_ARENAS = 5 };

typedef struct ts_ctx {
    ts_arena *arena;    // where every tensor of the step lives
    ts_tensor *tape;    // the most recently recorded node (NULL: empty tape)
    int grad_enabled;   // 0: no tape, no gradient buffers (inference)
    int status;         // the step's first failure, TS_OK if none
    int dtype;          // the dtype of tensors made from no input (ts_constant); TS_F64 after init
    // Decoding's scratch arenas (models/search.c: three for the steps, two for
    // compactions). A search takes them from here (NULL: it makes its own)
    // and, when keep_scratch is set, leaves them here for the next search,
    // so batch after batch reuses the pages the first one touched instead
    // of faulting in fresh ones (a quarter of the CPU of `translate --beam
    // 5`); the caller then frees them with ts_ctx_free_scratch. Without
    // keep_scratch every search frees its arenas, as before.
    ts_arena *scratch[TS_SCRATCH_ARENAS];
    int keep_scratch;
} ts_ctx;

// The op of every node. Each op's forward and backward sit side by side in
// autograd/ops_<family>.c; the table in graph.c maps an op to its name and backward.
enum ts_op {
    TS_OP_LEAF = 0,      // an input or parameter: no backward
    TS_OP_ADD,           // y = a + b
    TS_OP_SUB,           // y = a - b
    TS_OP_MUL,           // y = a * b (elementwise)
    TS_OP_SCALE,         // y = s * a
    TS_OP_ADD_BIAS,      // y[r, c] = a[r, c] + b[c]
    TS_OP_MATMUL,        // y = op(a) op(b), op = identity or transpose
    TS_OP_LINEAR,        // y = x W[:, c0 : c0 + k]^T + bias + addend
    TS_OP_TANH,          // y = tanh(a)
    TS_OP_SIGMOID,       // y = 1 / (1 + exp(-a))
    TS_OP_RELU,          // y = max(a, 0)
    TS_OP_EXP,           // y = exp(a)
    TS_OP_LOG,           // y = log(a)
    TS_OP_SUM,           // y = sum_i a_i
    TS_OP_MEAN,          // y = sum_i a_i / n
    TS_OP_CONCAT,        // y = [a; b; ...] along the last dimension
    TS_OP_SLICE_COLS,    // y = a[..., start : start + n]
    TS_OP_GATHER_ROWS,   // y[i] = table[ids[i]]
    TS_OP_SLICE_ROWS,    // y = a[start : start + n] along the first dimension (a view)
    TS_OP_RESHAPE,       // y = a with another shape (a view)
    TS_OP_SOFTMAX,       // y = softmax(a) per row, masked entries exactly 0
    TS_OP_LOG_SOFTMAX,   // y = a - logsumexp(a) per row
    TS_OP_CROSS_ENTROPY, // y = -mean_{i: t_i != ignore} log softmax(a_i)[t_i]
    TS_OP_LINEAR_CROSS_ENTROPY, // y = cross_entropy(x W^T + b), fused
    TS_OP_DROPOUT,       // y = a * m / (1 - p), m_i ~ Bernoulli(1 - p)
    TS_OP_SWAP01,        // y[j, i, k] = a[i, j, k]
    TS_OP_STACK_ROWS,    // y = [x_0; x_1; ...] along the first dimension
    TS_OP_GRU_CELL,      // h' = (1 - z) * n + z * h, PyTorch's GRU (fused)
    TS_OP_LSTM_CELL,     // [h'; c'] = [o * tanh(c'); f * c + i * g], PyTorch's LSTM (fused)
    TS_OP_ATTN_DOT,      // e[b, s] = q[b] . k[b, s]
    TS_OP_ATTN_ADDITIVE, // e[b, s] = v . tanh(q[b] + k[b, s])
    TS_OP_ATTN_CONTEXT,  // c[b] = sum_s w[b, s] m[b, s]
    TS_OP_BMM,           // y[g] = op(a[g]) op(b[g])
    TS_OP_SPLIT_HEADS,   // y[b H + h, t, j] = x[b, t, h Dh + j]
    TS_OP_MERGE_HEADS,   // y[b, t, h Dh + j] = x[b H + h, t, j]
    TS_OP_LAYER_NORM,    // y = (x - mean) / sqrt(var + eps) * gamma + beta per row
    TS_OP_MHA,           // y_h = softmax(q_h k_h^T / sqrt(Dh), masked) v_h per head (fused)
    TS_OP_COUNT
};

typedef int (*ts_backward_fn)(ts_ctx *ctx, ts_tensor *out);

// An op's name (autograd/graph.c, where every op's forward makes its
// nodes) and its backward (autograd/backward.c, where ts_backward walks the
// tape) are two tables indexed by enum ts_op, one below the ops' files and one
// above them: the backward row names the functions the ops' files define, and
// those files make their nodes, so one table holding both would tie every
// op's file and the tape into one circle of symbols.
extern const char *const ts_op_names[TS_OP_COUNT];

typedef struct {
    // Adds out->grad's contribution into each input's grad, one instance per
    // dtype (tensor/dtype_twice.h); NULL for float32: the op takes float64
    // only, and ts_backward fails on a float32 node of it.
    ts_backward_fn of[TS_DTYPE_COUNT];
} ts_op_backward;

extern const ts_op_backward ts_op_backwards[TS_OP_COUNT];

// Sets up a context on an arena (not owned) with grad mode on.
void ts_ctx_init(ts_ctx *ctx, ts_arena *arena);

// Ends a step: empties the tape, clears the status and resets the arena
// (every arena tensor of the step is gone; persistent tensors stay). The
// scratch arenas stay as they are.
void ts_ctx_reset(ts_ctx *ctx);


// Frees the scratch arenas a search left in ctx (keep_scratch) and sets
// them to NULL; keep_scratch is left as it is.
void ts_ctx_free_scratch(ts_ctx *ctx);

// Switches grad mode; returns the previous setting so callers can restore it.
int ts_set_grad_enabled(ts_ctx *ctx, int enabled);

// Seeds d loss / d loss = 1 and walks the tape in reverse, adding each node's
// contribution into its inputs' gradients (+=, so a tensor used twice gets
// both). `loss` must be a single number that depends on something requiring a
// gradient. Returns TS_OK or the failure (also when the forward pass failed).
// Once per tape: a node's input may take the node's gradient buffer as its
// own (share_grad, autograd/ops_internal.h), so a second walk would add a
// gradient to itself; a new forward after ts_ctx_reset starts a new tape.
int ts_backward(ts_ctx *ctx, ts_tensor *loss);

// ts_backward with d total / d loss = weight instead of 1: the gradients of
// weight * loss are added. A batch split into parts (train/trainer.c) weighs
// each part's mean loss by its share of the batch's tokens.
int ts_backward_weighted(ts_ctx *ctx, ts_tensor *loss, double weight);

// The gradient buffer of t (of t's dtype), allocated zeroed in the arena the
// first time. NULL (with ctx->status set) when the arena is full.
void *ts_grad(ts_ctx *ctx, ts_tensor *t);

// Records a failure (first one wins in ctx->status) and returns NULL, so
// ops can `return ts_ctx_fail(ctx, TS_ERR_SHAPE, "...")`.
ts_tensor *ts_ctx_fail(ts_ctx *ctx, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// A new node of `op` with shape (ndim, dims) and inputs src[0..nsrc): its
// data is allocated (uninitialised) in the arena; it requires a gradient and
// is put on the tape when grad mode is on and an input requires one. Its
// dtype is its inputs' (ctx->dtype without inputs); inputs of two dtypes, or
// float32 ones for an op written for float64 only, fail with TS_ERR_ARG.
// nsrc may exceed TS_MAX_SRC: then only the first TS_MAX_SRC are kept in
// src[] and the op keeps the full list itself (ts_stack_rows does).
// For op implementations. NULL on failure (recorded in ctx).
ts_tensor *ts_node(ts_ctx *ctx, int op, int ndim, const int *dims, int nsrc, ts_tensor *const *src);

// As ts_node, but the node's data is `data` (a view into an input); nothing
// is allocated for it.
ts_tensor *ts_node_view(ts_ctx *ctx, int op, int ndim, const int *dims, ts_tensor *src,
                        void *data);

// A tensor in the step arena holding a copy of `values` that needs no
// gradient (a constant input: masks, fixed weights in tests), in ctx->dtype
// (the values converted).
ts_tensor *ts_constant(ts_ctx *ctx, int ndim, const int *dims, const double *values);

// t's values as float64: t itself when it is float64, else a copy converted
// into the step arena (no gradient, not on the tape) for code that reads
// numbers out of a step (argmax, search scores). NULL (ctx->status set) when
// the arena is full or t is NULL.
ts_tensor *ts_to_f64(ts_ctx *ctx, ts_tensor *t);

#endif
