// Multi-head attention for one dtype, compiled twice by ops_mha.c
// (tensor/dtype_twice.h). B = batch, T = queries, S = keys, D = model width,
// H = heads, Dh = D / H; head h is the column block [h Dh, (h + 1) Dh) of the
// D columns q, keys and values each start at in their rows, which are ldq,
// ldk, ldv wide (a packed projection's rows: [q | k | v]). Masks and softmax
// sums are double in both dtypes.

// The weights that mix the values: w itself, or w * keep in `mixing` (T, S)
// under attention dropout.
static const REAL *FN(dropped)(REAL *mixing, const REAL *w, const REAL *keep, size_t n) {
    if (!keep) return w;
    for (size_t i = 0; i < n; i++) mixing[i] = w[i] * keep[i];
    return mixing;
}

// One sentence, every head: weights (H, T, S), out (T, D). keep (H, T, S) or
// NULL: the dropout factors (0 or 1 / (1 - p)); mixing (T, S) is scratch.
// q (T, ldq), keys (S, ldk), values (S, ldv) point at their first column.
static int FN(mha_forward_one)(REAL *out, REAL *weights, const REAL *keep, REAL *mixing, const REAL *q, int ldq,
                               const REAL *keys, int ldk, const REAL *values, int ldv, const double *visible, int T,
                               int S, int D, int H) {
    int Dh = D / H;
    double scale = 1.0 / sqrt((double)Dh);
    for (int h = 0; h < H; h++) {
        REAL *w = weights + (size_t)h * T * S;  // (T, S)
        int rc = FN(ts_gemm_ld)(0, 1, T, S, Dh, scale, q + h * Dh, ldq, keys + h * Dh, ldk, 0.0, w, S);
        if (rc) return rc;
        FN(ts_softmax_rows)(w, w, (size_t)T, (size_t)S, visible);
        const REAL *mix = FN(dropped)(mixing, w, keep ? keep + (size_t)h * T * S : NULL, (size_t)T * S);
        rc = FN(ts_gemm_ld)(0, 0, T, Dh, S, 1.0, mix, S, values + h * Dh, ldv, 0.0, out + h * Dh, D);
        if (rc) return rc;
    }
    return TS_OK;
}

// One sentence, every head, given dout (T, D); dweights (T, S) is scratch.
// The gradients have their inputs' layouts (dq: ldq, ...). With dropout,
// M = keep (the factors) mixes the values:
//   dW = (dout_h values_h^T) * M;  dvalues_h += (W * M)^T dout_h
//   dE = W * (dW - rowsum(dW * W)) / sqrt(Dh)  (the softmax's backward, scale folded in)
//   dq_h += dE keys_h;  dkeys_h += dE^T q_h
static int FN(mha_backward_one)(REAL *dq, REAL *dkeys, REAL *dvalues, REAL *dweights, const REAL *dout,
                                const REAL *weights, const REAL *keep, const REAL *q, int ldq, const REAL *keys,
                                int ldk, const REAL *values, int ldv, int T, int S, int D, int H) {
    int Dh = D / H, rc = TS_OK;
    double scale = 1.0 / sqrt((double)Dh);
    for (int h = 0; h < H && !rc; h++) {
        const REAL *w = weights + (size_t)h * T * S, *m = keep ? keep + (size_t)h * T * S : NULL;
        if (dvalues)
            rc = FN(ts_gemm_ld)(1, 0, S, Dh, T, 1.0, FN(dropped)(dweights, w, m, (size_t)T * S), S, dout + h * Dh, D, 1.0,
                                dvalues + h * Dh, ldv);
        if (rc || (!dq && !dkeys)) continue;
        rc = FN(ts_gemm_ld)(0, 1, T, S, Dh, 1.0, dout + h * Dh, D, values + h * Dh, ldv, 0.0, dweights, S);
        if (rc) break;
        if (m)
            for (size_t i = 0; i < (size_t)T * S; i++) dweights[i] *= m[i];
        for (int t = 0; t < T; t++) {
            const REAL *wr = w + (size_t)t * S;
            REAL *gr = dweights + (size_t)t * S;
            double dot = 0.0;
            for (int s = 0; s < S; s++) dot += gr[s] * wr[s];
            for (int s = 0; s < S; s++) gr[s] = scale * wr[s] * (gr[s] - dot);
        }
        if (dq) rc = FN(ts_gemm_ld)(0, 0, T, Dh, S, 1.0, dweights, S, keys + h * Dh, ldk, 1.0, dq + h * Dh, ldq);
        if (!rc && dkeys) rc = FN(ts_gemm_ld)(1, 0, S, Dh, T, 1.0, dweights, S, q + h * Dh, ldq, 1.0, dkeys + h * Dh, ldk);
    }
    return rc;
}

// y_h = softmax(q_h k_h^T / sqrt(Dh), masked) (* keep) v_h per head, for
// the sentences of one part (ops_mha.c's mha_job). iarg[0] = H, iarg[1] =
// causal, iarg[2] = 1 with dropout; aux = the mha_args (key mask copy or
// NULL, each input's first column); saved = the weights (B, H, T, S), then
// with dropout the factors keep (B, H, T, S), drawn by ts_mha_dropout. An
// input's rows are its last dimension wide.
static void FN(mha_forward_part)(void *arg, int part, int parts) {
    mha_job *job = arg;
    ts_tensor *out = job->out;
    const ts_tensor *q = out->src[0], *keys = out->src[1], *values = out->src[2];
    int B = q->shape[0], T = q->shape[1], S = keys->shape[1], D = out->shape[2], heads = out->iarg[0];
    int ldq = q->shape[2], ldk = keys->shape[2], ldv = values->shape[2];
    const mha_args *args = out->aux;
    REAL *weights = out->saved, *keep = out->iarg[2] ? weights + (size_t)B * heads * T * S : NULL;
    double *visible = (double *)(job->scratch + (size_t)part * job->scratch_bytes);  // (T, S)
    REAL *mixing = keep ? (REAL *)(visible + (size_t)T * S) : NULL;                    // (T, S)
    size_t first, end, g = (size_t)(B / keys->shape[0]);  // queries' rows per key row (ops.h, "Shared memory")
    ts_part_range((size_t)B, part, parts, &first, &end);
    for (size_t b = first; b < end && !job->rc[part]; b++) {
        size_t wo = b * heads * T * S, kb = b / g;
        visible_keys(visible, args->mask ? args->mask + kb * S : NULL, T, S, out->iarg[1]);
        job->rc[part] = FN(mha_forward_one)(DATA(out) + b * T * D, weights + wo, keep ? keep + wo : NULL, mixing,
                                            DATA(q) + b * T * ldq + args->col[0], ldq,
                                            DATA(keys) + kb * S * ldk + args->col[1], ldk,
                                            DATA(values) + kb * S * ldv + args->col[2], ldv, visible, T, S, D, heads);
    }
}

static int FN(mha_forward)(ts_ctx *ctx, ts_tensor *out) {
    int T = out->shape[1], S = out->src[1]->shape[1];
    mha_job job = {.out = out};
    // visible (T, S) double, then with dropout mixing (T, S)
    size_t bytes = (size_t)T * S * (sizeof(double) + (out->iarg[2] ? sizeof(REAL) : 0));
    if (mha_run(ctx, &job, FN(mha_forward_part), bytes)) return ts_ctx_fail(ctx, job.status, "mha: %s", job.what), ctx->status;
    return ctx->status;
}

// The backward of the sentences of one part; q, keys and values may be one
// tensor (a packed projection): one gradient, disjoint columns.
static void FN(mha_backward_part)(void *arg, int part, int parts) {
    mha_job *job = arg;
    ts_tensor *out = job->out, *q = out->src[0], *keys = out->src[1], *values = out->src[2];
    int B = q->shape[0], T = q->shape[1], S = keys->shape[1], D = out->shape[2], H = out->iarg[0];
    int ldq = q->shape[2], ldk = keys->shape[2], ldv = values->shape[2];
    const mha_args *args = out->aux;
    REAL *dq = job->dq, *dkeys = job->dkeys, *dvalues = job->dvalues;
    REAL *dweights = (REAL *)(job->scratch + (size_t)part * job->scratch_bytes);  // (T, S)
    const REAL *weights = out->saved, *keep = out->iarg[2] ? weights + (size_t)B * H * T * S : NULL;
    size_t first, end;
    ts_part_range((size_t)B, part, parts, &first, &end);
    for (size_t b = first; b < end && !job->rc[part]; b++) {
        size_t qo = b * T * ldq + args->col[0], ko = b * S * ldk + args->col[1];
        size_t vo = b * S * ldv + args->col[2], wo = b * H * T * S;
        job->rc[part] = FN(mha_backward_one)(dq ? dq + qo : NULL, dkeys ? dkeys + ko : NULL,
                                             dvalues ? dvalues + vo : NULL, dweights, GRAD(out) + b * T * D,
                                             weights + wo, keep ? keep + wo : NULL, DATA(q) + qo, ldq,
                                             DATA(keys) + ko, ldk, DATA(values) + vo, ldv, T, S, D, H);
    }
}

int FN(ts_mha_backward)(ts_ctx *ctx, ts_tensor *out) {
    mha_job job = {.out = out, .dq = input_grad(ctx, out, 0), .dkeys = input_grad(ctx, out, 1),
                   .dvalues = input_grad(ctx, out, 2)};
    if (ctx->status) return ctx->status;
    if (mha_run(ctx, &job, FN(mha_backward_part), (size_t)out->shape[1] * out->src[1]->shape[1] * sizeof(REAL)))
        return ts_ctx_fail(ctx, job.status, "mha: %s", job.what), ctx->status;
    return ctx->status;
}
