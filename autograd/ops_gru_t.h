// The fused GRU cell for one dtype, compiled twice by ops_gru.c
// (tensor/dtype_twice.h). B = batch rows, H = hidden size, G = 3H.

// gh = h W_hh^T + b_hh                     (B, 3H)
// r = sigmoid(gx_r + gh_r), z = sigmoid(gx_z + gh_z), n = tanh(gx_n + r * gh_n)
// h' = (1 - z) * n + z * h;  masked rows (aux, a double (B) copy): h' = h
// saved: [r z n] (B, 3H) then gh (B, 3H)

// The gates of part `part`'s rows, row by row, each stage one vectorised
// pass: [r z] = sigmoid(gx + gh) over 2H values, then n = tanh(gx_n + r gh_n)
// over H.
static void FN(gru_gates_part)(void *arg, int part, int parts) {
    const gru_pass *pass = arg;
    const ts_tensor *y = pass->y, *gates_x = y->src[0], *h = y->src[1];
    int B = y->shape[0], H = y->shape[1];
    size_t G = 3 * (size_t)H, b0, b1;
    const double *mask = y->aux;
    ts_part_range((size_t)B, part, parts, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        const REAL *gx = DATA(gates_x) + b * G, *ghb = (const REAL *)pass->gh + b * G, *hb = DATA(h) + b * H;
        REAL *g = (REAL *)pass->gates + b * G, *out = DATA(y) + b * H;
        if (mask && mask[b] == 0.0) {
            memcpy(out, hb, (size_t)H * sizeof(REAL));
            continue;
        }
        for (int j = 0; j < 2 * H; j++) g[j] = gx[j] + ghb[j];
        FN(ts_sigmoid_array)(g, g, 2 * (size_t)H);
        REAL *r = g, *z = g + H, *n = g + 2 * H;
        for (int j = 0; j < H; j++) n[j] = gx[2 * H + j] + r[j] * ghb[2 * H + j];
        FN(ts_tanh_array)(n, n, (size_t)H);
        for (int j = 0; j < H; j++) out[j] = ((REAL)1 - z[j]) * n[j] + z[j] * hb[j];
    }
}

static int FN(gru_cell_forward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *h = y->src[1], *w_hh = y->src[2], *b_hh = y->src[3];
    int B = y->shape[0], H = y->shape[1];
    size_t G = 3 * (size_t)H;
    REAL *saved = ts_arena_alloc(ctx->arena, 2 * (size_t)B * G * sizeof(REAL));
    if (!saved) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status;
    REAL *gates = saved, *gh = saved + (size_t)B * G;
    for (int b = 0; b < B; b++) memcpy(gh + b * G, DATA(b_hh), G * sizeof(REAL));
    int rc = FN(ts_gemm)(0, 1, B, (int)G, H, 1.0, DATA(h), DATA(w_hh), 1.0, gh);
    if (rc) return ts_ctx_fail(ctx, rc, "gru_cell: %s", ts_last_error()), ctx->status;
    gru_pass pass = {.y = y, .gates = gates, .gh = gh};
    ts_parallel_run(gru_parts(B, H), FN(gru_gates_part), &pass);
    y->saved = saved;
    return ctx->status;
}

// dn = dh' (1 - z)        dz = dh' (h - n)        dh += dh' z
// dn_pre = dn (1 - n^2)   dr = dn_pre gh_n
// dr_pre = dr r (1 - r)   dz_pre = dz z (1 - z)
// dgx = [dr_pre, dz_pre, dn_pre]            dgh = [dr_pre, dz_pre, dn_pre r]
// dW_hh += dgh^T h        db_hh += sum_b dgh  dh += dgh W_hh
// Masked rows: dh += dh', nothing else.

// One row's gates backward: dgh (3H) written, dn_pre (H) kept for dgx,
// dgx (3H) and dh (H) added to when not NULL. Loops without branches over
// arrays that do not overlap, built for AVX-512 and AVX2 too.
TS_VECTOR_CLONES
static void FN(gru_row_backward)(REAL *restrict dgh, REAL *restrict dn_pre, REAL *restrict dgx, REAL *restrict dh,
                                 const REAL *g, const REAL *gh, const REAL *h, const REAL *up, int H) {
    const REAL *r = g, *z = g + H, *n = g + 2 * H;
    for (int j = 0; j < H; j++) {
        dn_pre[j] = up[j] * (1 - z[j]) * (1 - n[j] * n[j]);
        dgh[j] = dn_pre[j] * gh[2 * H + j] * r[j] * (1 - r[j]);   // dr_pre
        dgh[H + j] = up[j] * (h[j] - n[j]) * z[j] * (1 - z[j]);  // dz_pre
        dgh[2 * H + j] = dn_pre[j] * r[j];
    }
    if (dgx) {
        for (int j = 0; j < 2 * H; j++) dgx[j] += dgh[j];
        for (int j = 0; j < H; j++) dgx[2 * H + j] += dn_pre[j];
    }
    if (dh)
        for (int j = 0; j < H; j++) dh[j] += up[j] * z[j];
}

// db += the sum of the B rows of d (B, G), row by row.
TS_VECTOR_CLONES
static void FN(add_row_sums)(REAL *restrict db, const REAL *restrict d, int B, size_t G) {
    for (int b = 0; b < B; b++)
        for (size_t k = 0; k < G; k++) db[k] += d[b * G + k];
}

int FN(ts_gru_cell_backward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *h = y->src[1], *w_hh = y->src[2];
    int B = y->shape[0], H = y->shape[1];
    size_t G = 3 * (size_t)H;
    const REAL *gates = y->saved, *gh = gates + (size_t)B * G;
    const double *mask = y->aux;
    REAL *dgx = input_grad(ctx, y, 0), *dh = input_grad(ctx, y, 1);
    REAL *dw_hh = input_grad(ctx, y, 2), *db_hh = input_grad(ctx, y, 3);
    REAL *dgh = ts_arena_alloc(ctx->arena, (size_t)B * G * sizeof(REAL));  // (B, 3H)
    REAL *dn_pre = ts_arena_alloc(ctx->arena, (size_t)H * sizeof(REAL));   // (H), one row's
    if (!dgh || !dn_pre || ctx->status) return ctx->status ? ctx->status : (ctx->status = TS_ERR_ARENA);
    for (int b = 0; b < B; b++) {
        const REAL *up = GRAD(y) + (size_t)b * H;
        REAL *dghb = dgh + b * G, *dhb = dh ? dh + (size_t)b * H : NULL;
        if (mask && mask[b] == 0.0) {
            memset(dghb, 0, G * sizeof(REAL));
            if (dhb)
                for (int j = 0; j < H; j++) dhb[j] += up[j];
            continue;
        }
        FN(gru_row_backward)(dghb, dn_pre, dgx ? dgx + b * G : NULL, dhb, gates + b * G, gh + b * G,
                             DATA(h) + (size_t)b * H, up, H);
    }
    // dW_hh += dgh^T h (3H, H) and dh += dgh W_hh (B, H): side by side on two threads, as a linear layer's
    FN(ts_product) dw_product = {1, 0, (int)G, H, B, 1.0, dgh, (int)G, DATA(h), H, 1.0, dw_hh, H, 0, NULL, NULL, 0};
    FN(ts_product) dh_product = {0, 0, B, H, (int)G, 1.0, dgh, (int)G, DATA(w_hh), H, 1.0, dh, H, 0, NULL, NULL, 0};
    int rc = FN(ts_gemm_two)(dw_hh ? &dw_product : NULL, dh ? &dh_product : NULL);
    if (db_hh) FN(add_row_sums)(db_hh, dgh, B, G);
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}
