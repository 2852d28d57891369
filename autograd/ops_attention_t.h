// Attention nodes for one dtype, compiled twice by ops_attention.c
// (tensor/dtype_twice.h). B = batch, S = source positions, D / A =
// query/key width, M = memory width. Dot products are summed in double.

// Forwards read a query row b's keys and memory at row b / g: g rows share
// each (ops.h, "Shared memory"; 1 in training, where backwards run).

// e[b, s] = q[b] . keys[b, s]
static int FN(attn_dot_forward)(ts_ctx *ctx, ts_tensor *e) {
    const ts_tensor *q = e->src[0], *keys = e->src[1];
    int B = q->shape[0], S = keys->shape[1], D = keys->shape[2], g = B / keys->shape[0];
    for (int b = 0; b < B; b++) {
        const REAL *qb = DATA(q) + (size_t)b * D;
        for (int s = 0; s < S; s++) {
            const REAL *k = DATA(keys) + ((size_t)(b / g) * S + s) * D;
            double dot = 0.0;
            for (int d = 0; d < D; d++) dot += qb[d] * k[d];
            DATA(e)[(size_t)b * S + s] = dot;
        }
    }
    return ctx->status;
}
// dq[b] += sum_s de[b, s] keys[b, s];  dkeys[b, s] += de[b, s] q[b]
int FN(ts_attn_dot_backward)(ts_ctx *ctx, ts_tensor *e) {
    ts_tensor *q = e->src[0], *keys = e->src[1];
    int B = keys->shape[0], S = keys->shape[1], D = keys->shape[2];
    REAL *dq = input_grad(ctx, e, 0), *dkeys = input_grad(ctx, e, 1);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            REAL g = GRAD(e)[(size_t)b * S + s];
            if (g == 0.0) continue;  // masked positions
            size_t k = ((size_t)b * S + s) * D;
            for (int d = 0; d < D; d++) {
                if (dq) dq[(size_t)b * D + d] += g * DATA(keys)[k + d];
                if (dkeys) dkeys[k + d] += g * DATA(q)[(size_t)b * D + d];
            }
        }
    return ctx->status;
}

// e[b, s] = sum_a v[a] tanh(q[b, a] + keys[b, s, a]);  saved: the tanh values (B, S, A)
static void FN(additive_forward_part)(void *arg, int part, int parts) {
    const attn_pass *pass = arg;
    const ts_tensor *q = pass->node->src[0], *keys = pass->node->src[1];
    int B = q->shape[0], S = keys->shape[1], A = keys->shape[2];
    size_t b0, b1, g = (size_t)(B / keys->shape[0]);
    ts_part_range((size_t)B, part, parts, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        const REAL *qb = DATA(q) + b * A, *kb = DATA(keys) + b / g * S * A;
        REAL *actb = (REAL *)pass->act + b * S * A;  // (S, A)
        for (int s = 0; s < S; s++)
            for (int a = 0; a < A; a++) actb[(size_t)s * A + a] = qb[a] + kb[(size_t)s * A + a];
        FN(ts_tanh_array)(actb, actb, (size_t)S * A);
    }
}
static int FN(attn_additive_forward)(ts_ctx *ctx, ts_tensor *e) {
    const ts_tensor *keys = e->src[1], *v = e->src[2];
    int B = e->shape[0], S = keys->shape[1], A = keys->shape[2];
    REAL *act = ts_arena_alloc(ctx->arena, (size_t)B * S * A * sizeof(REAL));  // (B, S, A)
    if (!act) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status;
    attn_pass pass = {.node = e, .act = act};
    ts_parallel_run(attn_parts(e, keys), FN(additive_forward_part), &pass);
    // e = act v: one matrix-vector product over all (b, s) rows
    int rc = FN(ts_gemm)(0, 0, B * S, 1, A, 1.0, act, DATA(v), 0.0, DATA(e));
    if (rc) return ts_ctx_fail(ctx, rc, "attn_additive: %s", ts_last_error()), ctx->status;
    e->saved = act;
    return ctx->status;
}
// u = de[b, s] v[a] (1 - t^2):  dq[b, a] += sum_s u;  dkeys[b, s, a] += u;
// dv[a] += sum_{b, s} de[b, s] t[b, s, a]

// One (b, s) row of it: t (A) the saved tanh values, g = de[b, s]; each
// output that is not NULL gets its own loop without branches (built for
// AVX-512 and AVX2 too), u computed alike in both.
TS_VECTOR_CLONES
static void FN(additive_row_backward)(REAL *restrict dq, REAL *restrict dkeys, REAL *restrict dv, const REAL *t,
                                      const REAL *v, REAL g, int A) {
    if (dq)
        for (int a = 0; a < A; a++) dq[a] += g * v[a] * (1 - t[a] * t[a]);
    if (dkeys)
        for (int a = 0; a < A; a++) dkeys[a] += g * v[a] * (1 - t[a] * t[a]);
    if (dv)
        for (int a = 0; a < A; a++) dv[a] += g * t[a];
}

// Part `part`: dq and dkeys of its rows b, dv of its columns a.
static void FN(additive_backward_part)(void *arg, int part, int parts) {
    const attn_pass *pass = arg;
    const ts_tensor *e = pass->node, *keys = e->src[1], *v = e->src[2];
    int B = keys->shape[0], S = keys->shape[1], A = keys->shape[2];
    const REAL *act = e->saved;
    REAL *dq = pass->grad[0], *dkeys = pass->grad[1], *dv = pass->grad[2];
    size_t b0, b1, a0, a1;
    ts_part_range((size_t)B, part, parts, &b0, &b1);
    ts_part_range((size_t)A, part, parts, &a0, &a1);
    for (size_t b = 0; b < (size_t)B; b++) {
        int mine = b >= b0 && b < b1 && (dq || dkeys);
        if (!mine && !dv) continue;
        for (int s = 0; s < S; s++) {
            REAL g = GRAD(e)[b * S + s];
            if (g == 0.0) continue;
            size_t k = (b * S + s) * A;
            if (mine)
                FN(additive_row_backward)(dq ? dq + b * A : NULL, dkeys ? dkeys + k : NULL, NULL, act + k, DATA(v), g, A);
            if (dv)
                FN(additive_row_backward)(NULL, NULL, dv + a0, act + k + a0, DATA(v) + a0, g, (int)(a1 - a0));
        }
    }
}
int FN(ts_attn_additive_backward)(ts_ctx *ctx, ts_tensor *e) {
    attn_pass pass = {.node = e};
    for (int i = 0; i < 3; i++) pass.grad[i] = input_grad(ctx, e, i);
    if (ctx->status) return ctx->status;
    ts_parallel_run(attn_parts(e, e->src[1]), FN(additive_backward_part), &pass);
    return ctx->status;
}

// c[b] = sum_s w[b, s] memory[b, s]
static void FN(context_forward_part)(void *arg, int part, int parts) {
    const ts_tensor *c = ((const attn_pass *)arg)->node, *weights = c->src[0], *memory = c->src[1];
    int B = c->shape[0], S = memory->shape[1], M = memory->shape[2];
    size_t b0, b1, g = (size_t)(B / memory->shape[0]);
    ts_part_range((size_t)B, part, parts, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        REAL *cb = DATA(c) + b * M;
        memset(cb, 0, (size_t)M * sizeof(REAL));
        for (int s = 0; s < S; s++) {
            REAL w = DATA(weights)[b * S + s];
            if (w == 0.0) continue;  // masked positions add nothing
            const REAL *m = DATA(memory) + (b / g * S + s) * M;
            for (int d = 0; d < M; d++) cb[d] += w * m[d];
        }
    }
}
static int FN(attn_context_forward)(ts_ctx *ctx, ts_tensor *c) {
    attn_pass pass = {.node = c};
    ts_parallel_run(attn_parts(c, c->src[1]), FN(context_forward_part), &pass);
    return ctx->status;
}
// dw[b, s] += dc[b] . memory[b, s];  dmemory[b, s] += w[b, s] dc[b]
static void FN(context_backward_part)(void *arg, int part, int parts) {
    const attn_pass *pass = arg;
    const ts_tensor *c = pass->node, *weights = c->src[0], *memory = c->src[1];
    int B = memory->shape[0], S = memory->shape[1], M = memory->shape[2];
    REAL *dw = pass->grad[0], *dmem = pass->grad[1];
    size_t b0, b1;
    ts_part_range((size_t)B, part, parts, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        const REAL *g = GRAD(c) + b * M;
        for (int s = 0; s < S; s++) {
            size_t k = (b * S + s) * M;
            REAL w = DATA(weights)[b * S + s];
            if (dw) {
                double dot = 0.0;
                for (int d = 0; d < M; d++) dot += g[d] * DATA(memory)[k + d];
                dw[b * S + s] += dot;
            }
            if (dmem && w != 0.0)
                for (int d = 0; d < M; d++) dmem[k + d] += w * g[d];
        }
    }
}
int FN(ts_attn_context_backward)(ts_ctx *ctx, ts_tensor *c) {
    attn_pass pass = {.node = c};
    for (int i = 0; i < 2; i++) pass.grad[i] = input_grad(ctx, c, i);
    if (ctx->status) return ctx->status;
    ts_parallel_run(attn_parts(c, c->src[1]), FN(context_backward_part), &pass);
    return ctx->status;
}
