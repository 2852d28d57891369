// Attention nodes over a batch of memories. B = batch, S = source positions,
// D / A = query/key width, M = memory width. Scores are masked and
// normalised by ts_softmax; these ops score and mix.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"

#include <math.h>
#include <string.h>

static int check_3d(ts_ctx *ctx, const char *op, ts_tensor *q, ts_tensor *keys) {
    if (q->ndim != 2 || keys->ndim != 3 || keys->shape[0] != q->shape[0] || keys->shape[2] != q->shape[1]) {
        char sq[48], sk[48];
        ts_ctx_fail(ctx, TS_ERR_SHAPE, "%s: query %s and keys %s do not fit (B, D) and (B, S, D)", op,
                    SHAPE(q, sq), SHAPE(keys, sk));
        return 0;
    }
    return 1;
}

// e[b, s] = q[b] . keys[b, s]
ts_tensor *ts_attn_dot(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys) {
    if (!q || !keys) return NULL;
    if (!check_3d(ctx, "attn_dot", q, keys)) return NULL;
    int B = keys->shape[0], S = keys->shape[1], D = keys->shape[2];
    ts_tensor *src[2] = {q, keys};
    ts_tensor *e = ts_node(ctx, TS_OP_ATTN_DOT, 2, (int[]){B, S}, 2, src);
    if (!e) return NULL;
    for (int b = 0; b < B; b++) {
        const double *qb = q->data + (size_t)b * D;
        for (int s = 0; s < S; s++) {
            const double *k = keys->data + ((size_t)b * S + s) * D;
            double dot = 0.0;
            for (int d = 0; d < D; d++) dot += qb[d] * k[d];
            e->data[(size_t)b * S + s] = dot;
        }
    }
    return e;
}
// dq[b] += sum_s de[b, s] keys[b, s];  dkeys[b, s] += de[b, s] q[b]
int ts_attn_dot_backward(ts_ctx *ctx, ts_tensor *e) {
    ts_tensor *q = e->src[0], *keys = e->src[1];
    int B = keys->shape[0], S = keys->shape[1], D = keys->shape[2];
    double *dq = input_grad(ctx, e, 0), *dkeys = input_grad(ctx, e, 1);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            double g = e->grad[(size_t)b * S + s];
            if (g == 0.0) continue;  // masked positions
            size_t k = ((size_t)b * S + s) * D;
            for (int d = 0; d < D; d++) {
                if (dq) dq[(size_t)b * D + d] += g * keys->data[k + d];
                if (dkeys) dkeys[k + d] += g * q->data[(size_t)b * D + d];
            }
        }
    return ctx->status;
}

// e[b, s] = sum_a v[a] tanh(q[b, a] + keys[b, s, a]);  saved: the tanh values (B, S, A)
ts_tensor *ts_attn_additive(ts_ctx *ctx, ts_tensor *q, ts_tensor *keys, ts_tensor *v) {
    if (!q || !keys || !v) return NULL;
    if (!check_3d(ctx, "attn_additive", q, keys)) return NULL;
    int B = keys->shape[0], S = keys->shape[1], A = keys->shape[2];
    if ((int)v->size != A) {
        char sv[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "attn_additive: v %s must have %d values", SHAPE(v, sv), A);
    }
    ts_tensor *src[3] = {q, keys, v};
    ts_tensor *e = ts_node(ctx, TS_OP_ATTN_ADDITIVE, 2, (int[]){B, S}, 3, src);
    if (!e) return NULL;
    double *act = ts_arena_alloc(ctx->arena, keys->size * sizeof(double));
    if (!act) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    for (int b = 0; b < B; b++) {
        const double *qb = q->data + (size_t)b * A;
        double *actb = act + (size_t)b * S * A;  // (S, A)
        for (int s = 0; s < S; s++)
            for (int a = 0; a < A; a++) actb[(size_t)s * A + a] = qb[a] + keys->data[((size_t)b * S + s) * A + a];
        ts_tanh_array(actb, actb, (size_t)S * A);
    }
    // e = act v: one matrix-vector product over all (b, s) rows
    int rc = ts_gemm(0, 0, B * S, 1, A, 1.0, act, v->data, 0.0, e->data);
    if (rc) return ts_ctx_fail(ctx, rc, "attn_additive: %s", ts_last_error());
    e->saved = act;
    return e;
}
// u = de[b, s] v[a] (1 - t^2):  dq[b, a] += sum_s u;  dkeys[b, s, a] += u;
// dv[a] += sum_{b, s} de[b, s] t[b, s, a]
int ts_attn_additive_backward(ts_ctx *ctx, ts_tensor *e) {
    ts_tensor *keys = e->src[1], *v = e->src[2];
    int B = keys->shape[0], S = keys->shape[1], A = keys->shape[2];
    const double *act = e->saved;
    double *dq = input_grad(ctx, e, 0), *dkeys = input_grad(ctx, e, 1), *dv = input_grad(ctx, e, 2);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            double g = e->grad[(size_t)b * S + s];
            if (g == 0.0) continue;
            size_t k = ((size_t)b * S + s) * A;
            for (int a = 0; a < A; a++) {
                double t = act[k + a];
                double u = g * v->data[a] * (1.0 - t * t);
                if (dq) dq[(size_t)b * A + a] += u;
                if (dkeys) dkeys[k + a] += u;
                if (dv) dv[a] += g * t;
            }
        }
    return ctx->status;
}

// c[b] = sum_s w[b, s] memory[b, s]
ts_tensor *ts_attn_context(ts_ctx *ctx, ts_tensor *weights, ts_tensor *memory) {
    if (!weights || !memory) return NULL;
    if (weights->ndim != 2 || memory->ndim != 3 || memory->shape[0] != weights->shape[0] ||
        memory->shape[1] != weights->shape[1]) {
        char sw[48], sm[48];
        return ts_ctx_fail(ctx, TS_ERR_SHAPE, "attn_context: weights %s and memory %s do not fit (B, S) and (B, S, M)",
                           SHAPE(weights, sw), SHAPE(memory, sm));
    }
    int B = memory->shape[0], S = memory->shape[1], M = memory->shape[2];
    ts_tensor *src[2] = {weights, memory};
    ts_tensor *c = ts_node(ctx, TS_OP_ATTN_CONTEXT, 2, (int[]){B, M}, 2, src);
    if (!c) return NULL;
    memset(c->data, 0, c->size * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            double w = weights->data[(size_t)b * S + s];
            if (w == 0.0) continue;  // masked positions add nothing
            const double *m = memory->data + ((size_t)b * S + s) * M;
            double *cb = c->data + (size_t)b * M;
            for (int d = 0; d < M; d++) cb[d] += w * m[d];
        }
    return c;
}
// dw[b, s] += dc[b] . memory[b, s];  dmemory[b, s] += w[b, s] dc[b]
int ts_attn_context_backward(ts_ctx *ctx, ts_tensor *c) {
    ts_tensor *weights = c->src[0], *memory = c->src[1];
    int B = memory->shape[0], S = memory->shape[1], M = memory->shape[2];
    double *dw = input_grad(ctx, c, 0), *dmem = input_grad(ctx, c, 1);
    for (int b = 0; b < B; b++) {
        const double *g = c->grad + (size_t)b * M;
        for (int s = 0; s < S; s++) {
            size_t k = ((size_t)b * S + s) * M;
            double w = weights->data[(size_t)b * S + s];
            if (dw) {
                double dot = 0.0;
                for (int d = 0; d < M; d++) dot += g[d] * memory->data[k + d];
                dw[(size_t)b * S + s] += dot;
            }
            if (dmem && w != 0.0)
                for (int d = 0; d < M; d++) dmem[k + d] += w * g[d];
        }
    }
    return ctx->status;
}
