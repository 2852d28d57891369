// Attention nodes over a batch of memories. B = batch, S = source positions,
// D / A = query/key width, M = memory width. Scores are masked and
// normalised by ts_softmax; these ops score and mix. The checks and nodes
// here; the arithmetic, forward and backward side by side, in
// ops_attention_t.h, compiled once per dtype.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"
#include "tensor/parallel.h"

#include <math.h>
#include <string.h>

// One pass of an additive or context node, cut into parts over the batch
// rows b (tensor/parallel.h): a row's outputs are its own, so each part
// computes them as one part would. The additive backward's dv, a sum over
// every (b, s), is cut over its columns instead (each still sums in (b, s)
// order). Gradient buffers are fetched before the run: a part touches no ctx.
typedef struct {
    const ts_tensor *node;  // the node run (forward) or differentiated (backward)
    void *act;              // additive: the tanh values (B, S, A)
    void *grad[3];          // backward: the inputs' gradients, NULL where none is needed
} attn_pass;

// The parts of a pass of node over its B rows of (B or fewer, S, width) inputs.
static int attn_parts(const ts_tensor *node, const ts_tensor *inputs) {
    size_t B = (size_t)node->shape[0];
    return ts_parallel_parts(inputs->size / (size_t)inputs->shape[0] * B, (int)B);
}

#define TS_TEMPLATE "autograd/ops_attention_t.h"
#include "tensor/dtype_twice.h"

// q (B, D) against keys (B / g, S, D) (ops.h, "Shared memory").
static int check_3d(ts_ctx *ctx, const char *op, ts_tensor *q, ts_tensor *keys) {
    if (q->ndim != 2 || keys->ndim != 3 || keys->shape[2] != q->shape[1]) {
        char sq[48], sk[48];
        ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s: query %s and keys %s do not fit (B, D) and (B, S, D)", op,
                    SHAPE(q, sq), SHAPE(keys, sk));
        return 0;
    }
    return ts_shared_rows(ctx, op, q->shape[0], keys->shape[0]) > 0;
}

// e[b, s] = q[b] . keys[b, s]
ts_tensor *ts_attn_dot(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys) {
    if (!q || !keys) return NULL;
    if (!check_3d(ctx, "attn_dot", q, keys)) return NULL;
    int B = q->shape[0], S = keys->shape[1];
    ts_tensor *src[2] = {q, keys};
    return TS_FORWARD(ctx, ts_node(ctx, TS_OP_ATTN_DOT, 2, (int[]){B, S}, 2, src), attn_dot_forward);
}

// e[b, s] = sum_a v[a] tanh(q[b, a] + keys[b, s, a]);  saved: the tanh values (B, S, A)
ts_tensor *ts_attn_additive(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *v) {
    if (!q || !keys || !v) return NULL;
    if (!check_3d(ctx, "attn_additive", q, keys)) return NULL;
    int B = q->shape[0], S = keys->shape[1], A = keys->shape[2];
    if ((int)v->size != A) {
        char sv[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "attn_additive: v %s must have %d values", SHAPE(v, sv), A);
    }
    ts_tensor *src[3] = {q, keys, v};
    return TS_FORWARD(ctx, ts_node(ctx, TS_OP_ATTN_ADDITIVE, 2, (int[]){B, S}, 3, src), attn_additive_forward);
}

// c[b] = sum_s w[b, s] memory[b, s]
ts_tensor *ts_attn_context(ts_ctx *ctx, ts_tensor *weights, ts_tensor *memory) {
    if (!weights || !memory) return NULL;
    if (weights->ndim != 2 || memory->ndim != 3 || memory->shape[1] != weights->shape[1]) {
        char sw[48], sm[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "attn_context: weights %s and memory %s do not fit (B, S) and (B, S, M)",
                           SHAPE(weights, sw), SHAPE(memory, sm));
    }
    if (!ts_shared_rows(ctx, "attn_context", weights->shape[0], memory->shape[0])) return NULL;
    int B = weights->shape[0], M = memory->shape[2];
    ts_tensor *src[2] = {weights, memory};
    return TS_FORWARD(ctx, ts_node(ctx, TS_OP_ATTN_CONTEXT, 2, (int[]){B, M}, 2, src), attn_context_forward);
}
