// The fused LSTM cell for one dtype, compiled twice by ops_lstm.c
// (tensor/dtype_twice.h). B = batch rows, H = hidden size, G = 4H.
// The state is (2B, H): rows 0..B are h, rows B..2B are c.

// gh = h W_hh^T + b_hh                     (B, 4H)
// i = sigmoid(gx_i + gh_i), f = sigmoid(gx_f + gh_f), g = tanh(gx_g + gh_g), o = sigmoid(gx_o + gh_o)
// c' = f * c + i * g,  h' = o * tanh(c');  masked rows (aux, a double (B) copy): h' = h, c' = c
// saved: [i f g o] (B, 4H), then tanh(c') (B, H), then gh (B, 4H)

// The gates of part `part`'s rows, row by row, each stage one vectorised
// pass: [i f] = sigmoid over 2H values, g = tanh over H, o = sigmoid over H,
// then c' and h'.
static void FN(lstm_gates_part)(void *arg, int part, int parts) {
    const lstm_pass *pass = arg;
    const ts_tensor *y = pass->y, *gates_x = y->src[0], *state = y->src[1];
    int B = y->shape[0] / 2, H = y->shape[1];
    size_t G = 4 * (size_t)H, b0, b1;
    const double *mask = y->aux;
    ts_part_range((size_t)B, part, parts, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        const REAL *gx = DATA(gates_x) + b * G, *ghb = (const REAL *)pass->gh + b * G;
        const REAL *hb = DATA(state) + b * H, *cb = DATA(state) + ((size_t)B + b) * H;
        REAL *g = (REAL *)pass->gates + b * G, *tc = (REAL *)pass->tanh_c + b * H;
        REAL *h_out = DATA(y) + b * H, *c_out = DATA(y) + ((size_t)B + b) * H;
        if (mask && mask[b] == 0.0) {
            memcpy(h_out, hb, (size_t)H * sizeof(REAL));
            memcpy(c_out, cb, (size_t)H * sizeof(REAL));
            continue;
        }
        for (size_t j = 0; j < G; j++) g[j] = gx[j] + ghb[j];
        REAL *in = g, *forget = g + H, *cand = g + 2 * H, *out = g + 3 * H;
        FN(ts_sigmoid_array)(in, in, 2 * (size_t)H);  // i and f
        FN(ts_tanh_array)(cand, cand, (size_t)H);
        FN(ts_sigmoid_array)(out, out, (size_t)H);
        for (int j = 0; j < H; j++) c_out[j] = forget[j] * cb[j] + in[j] * cand[j];
        FN(ts_tanh_array)(tc, c_out, (size_t)H);
        for (int j = 0; j < H; j++) h_out[j] = out[j] * tc[j];
    }
}

static int FN(lstm_cell_forward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *state = y->src[1], *w_hh = y->src[2], *b_hh = y->src[3];
    int B = y->shape[0] / 2, H = y->shape[1];
    size_t G = 4 * (size_t)H;
    REAL *saved = ts_arena_alloc(ctx->arena, ((size_t)B * G * 2 + (size_t)B * H) * sizeof(REAL));
    if (!saved) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status;
    REAL *gates = saved, *tanh_c = saved + (size_t)B * G, *gh = tanh_c + (size_t)B * H;
    for (int b = 0; b < B; b++) memcpy(gh + b * G, DATA(b_hh), G * sizeof(REAL));
    int rc = FN(ts_gemm)(0, 1, B, (int)G, H, 1.0, DATA(state), DATA(w_hh), 1.0, gh);  // h: the state's first B rows
    if (rc) return ts_ctx_fail(ctx, rc, "lstm_cell: %s", ts_last_error()), ctx->status;
    lstm_pass pass = {.y = y, .gates = gates, .tanh_c = tanh_c, .gh = gh};
    ts_parallel_run(lstm_parts(B, H), FN(lstm_gates_part), &pass);
    y->saved = saved;
    return ctx->status;
}

// With dh' and dc' the output's gradient (its h and c rows):
// dc~ = dc' + dh' o (1 - tanh(c')^2)        (the whole gradient reaching c')
// do_pre = dh' tanh(c') o (1 - o)           di_pre = dc~ g i (1 - i)
// df_pre = dc~ c f (1 - f)                  dg_pre = dc~ i (1 - g^2)
// dgates = [di_pre, df_pre, dg_pre, do_pre] = dgx (added) = dgh
// dc += dc~ f     dW_hh += dgates^T h     db_hh += sum_b dgates     dh += dgates W_hh
// Masked rows: dh += dh', dc += dc', nothing else.

// One row's gates backward: dgates (4H) written, dgx (4H) and dc (H) added
// to when not NULL. Loops without branches over arrays that do not overlap,
// built for AVX-512 and AVX2 too.
TS_VECTOR_CLONES
static void FN(lstm_row_backward)(REAL *restrict dgates, REAL *restrict dgx, REAL *restrict dc, const REAL *g,
                                  const REAL *tc, const REAL *c, const REAL *up_h, const REAL *up_c, int H) {
    const REAL *in = g, *forget = g + H, *cand = g + 2 * H, *out = g + 3 * H;
    for (int j = 0; j < H; j++) {
        REAL dc_total = up_c[j] + up_h[j] * out[j] * (1 - tc[j] * tc[j]);
        dgates[j] = dc_total * cand[j] * in[j] * (1 - in[j]);
        dgates[H + j] = dc_total * c[j] * forget[j] * (1 - forget[j]);
        dgates[2 * H + j] = dc_total * in[j] * (1 - cand[j] * cand[j]);
        dgates[3 * H + j] = up_h[j] * tc[j] * out[j] * (1 - out[j]);
        if (dc) dc[j] += dc_total * forget[j];
    }
    if (dgx)
        for (int j = 0; j < 4 * H; j++) dgx[j] += dgates[j];
}

// db += the sum of the B rows of d (B, G), row by row.
TS_VECTOR_CLONES
static void FN(lstm_add_row_sums)(REAL *restrict db, const REAL *restrict d, int B, size_t G) {
    for (int b = 0; b < B; b++)
        for (size_t k = 0; k < G; k++) db[k] += d[b * G + k];
}

int FN(ts_lstm_cell_backward)(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *state = y->src[1], *w_hh = y->src[2];
    int B = y->shape[0] / 2, H = y->shape[1];
    size_t G = 4 * (size_t)H;
    const REAL *gates = y->saved, *tanh_c = gates + (size_t)B * G;
    const double *mask = y->aux;
    REAL *dgx = input_grad(ctx, y, 0), *dstate = input_grad(ctx, y, 1);
    REAL *dw_hh = input_grad(ctx, y, 2), *db_hh = input_grad(ctx, y, 3);
    REAL *dh = dstate, *dc = dstate ? dstate + (size_t)B * H : NULL;  // the state's h rows, then its c rows
    REAL *dgates = ts_arena_alloc(ctx->arena, (size_t)B * G * sizeof(REAL));  // (B, 4H)
    if (!dgates || ctx->status) return ctx->status ? ctx->status : (ctx->status = TS_ERR_ARENA);
    for (int b = 0; b < B; b++) {
        const REAL *up_h = GRAD(y) + (size_t)b * H, *up_c = GRAD(y) + ((size_t)B + b) * H;
        REAL *dgb = dgates + b * G;
        if (mask && mask[b] == 0.0) {
            memset(dgb, 0, G * sizeof(REAL));
            for (int j = 0; dstate && j < H; j++) {
                dh[(size_t)b * H + j] += up_h[j];
                dc[(size_t)b * H + j] += up_c[j];
            }
            continue;
        }
        FN(lstm_row_backward)(dgb, dgx ? dgx + b * G : NULL, dc ? dc + (size_t)b * H : NULL, gates + b * G,
                              tanh_c + (size_t)b * H, DATA(state) + ((size_t)B + b) * H, up_h, up_c, H);
    }
    // dW_hh += dgates^T h (4H, H) and dh += dgates W_hh (B, H): side by side on two threads, as a linear layer's
    FN(ts_product) dw_product = {1, 0, (int)G, H, B, 1.0, dgates, (int)G, DATA(state), H, 1.0, dw_hh, H, 0, NULL, NULL, 0};
    FN(ts_product) dh_product = {0, 0, B, H, (int)G, 1.0, dgates, (int)G, DATA(w_hh), H, 1.0, dh, H, 0, NULL, NULL, 0};
    int rc = FN(ts_gemm_two)(dw_hh ? &dw_product : NULL, dh ? &dh_product : NULL);
    if (db_hh) FN(lstm_add_row_sums)(db_hh, dgates, B, G);
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}
