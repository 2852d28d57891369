// The fused GRU cell: PyTorch's formulation (docs/models.md), gates r, z, n.
// B = batch rows, H = hidden size. One node instead of ~15 primitive ones:
// the gates are computed in one pass and the backward is written by hand.
#include "autograd/ops.h"
#include "autograd/ops_internal.h"

#include "tensor/kernels.h"

#include <math.h>
#include <string.h>

// gh = h W_hh^T + b_hh                     (B, 3H)
// r = sigmoid(gx_r + gh_r), z = sigmoid(gx_z + gh_z), n = tanh(gx_n + r * gh_n)
// h' = (1 - z) * n + z * h;  masked rows: h' = h
// saved: [r z n] (B, 3H) then gh (B, 3H)
ts_tensor *ts_gru_cell(ts_ctx *ctx, ts_tensor *gates_x, ts_tensor *h, ts_tensor *w_hh,
                       ts_tensor *b_hh, const double *mask) {
    if (!gates_x || !h || !w_hh || !b_hh) return NULL;
    int B = h->shape[0], H = ts_cols(h);
    char s1[48], s2[48], s3[48], s4[48];
    if (h->ndim != 2 || gates_x->ndim != 2 || gates_x->shape[0] != B || gates_x->shape[1] != 3 * H ||
        w_hh->ndim != 2 || w_hh->shape[0] != 3 * H || w_hh->shape[1] != H || (int)b_hh->size != 3 * H)
        return ts_ctx_fail(ctx, TS_ERR_SHAPE,
                           "gru_cell: gates_x %s, h %s, w_hh %s, b_hh %s do not fit (B, 3H), (B, H), (3H, H), (3H)",
                           SHAPE(gates_x, s1), SHAPE(h, s2), SHAPE(w_hh, s3), SHAPE(b_hh, s4));
    ts_tensor *src[4] = {gates_x, h, w_hh, b_hh};
    ts_tensor *y = ts_node(ctx, TS_OP_GRU_CELL, 2, (int[]){B, H}, 4, src);
    if (!y) return NULL;
    size_t G = 3 * (size_t)H;
    double *saved = ts_arena_alloc(ctx->arena, 2 * (size_t)B * G * sizeof(double));
    double *mask_copy = mask ? ts_arena_alloc(ctx->arena, (size_t)B * sizeof(double)) : NULL;
    if (!saved || (mask && !mask_copy)) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    if (mask) memcpy(mask_copy, mask, (size_t)B * sizeof(double));
    double *gates = saved, *gh = saved + (size_t)B * G;
    for (int b = 0; b < B; b++) memcpy(gh + b * G, b_hh->data, G * sizeof(double));
    int rc = ts_gemm(0, 1, B, (int)G, H, 1.0, h->data, w_hh->data, 1.0, gh);
    if (rc) return ts_ctx_fail(ctx, rc, "gru_cell: %s", ts_last_error());
    // Row by row, each stage one vectorised pass: [r z] = sigmoid(gx + gh)
    // over 2H values, then n = tanh(gx_n + r gh_n) over H.
    for (int b = 0; b < B; b++) {
        const double *gx = gates_x->data + b * G, *ghb = gh + b * G, *hb = h->data + (size_t)b * H;
        double *g = gates + b * G, *out = y->data + (size_t)b * H;
        if (mask && mask[b] == 0.0) {
            memcpy(out, hb, (size_t)H * sizeof(double));
            continue;
        }
        for (int j = 0; j < 2 * H; j++) g[j] = gx[j] + ghb[j];
        ts_sigmoid_array(g, g, 2 * (size_t)H);
        double *r = g, *z = g + H, *n = g + 2 * H;
        for (int j = 0; j < H; j++) n[j] = gx[2 * H + j] + r[j] * ghb[2 * H + j];
        ts_tanh_array(n, n, (size_t)H);
        for (int j = 0; j < H; j++) out[j] = (1.0 - z[j]) * n[j] + z[j] * hb[j];
    }
    y->saved = saved;
    y->aux = mask_copy;
    return y;
}

// dn = dh' (1 - z)        dz = dh' (h - n)        dh += dh' z
// dn_pre = dn (1 - n^2)   dr = dn_pre gh_n
// dr_pre = dr r (1 - r)   dz_pre = dz z (1 - z)
// dgx = [dr_pre, dz_pre, dn_pre]            dgh = [dr_pre, dz_pre, dn_pre r]
// dW_hh += dgh^T h        db_hh += sum_b dgh  dh += dgh W_hh
// Masked rows: dh += dh', nothing else.
int ts_gru_cell_backward(ts_ctx *ctx, ts_tensor *y) {
    ts_tensor *h = y->src[1], *w_hh = y->src[2];
    int B = y->shape[0], H = y->shape[1];
    size_t G = 3 * (size_t)H;
    const double *gates = y->saved, *gh = gates + (size_t)B * G, *mask = y->aux;
    double *dgx = input_grad(ctx, y, 0), *dh = input_grad(ctx, y, 1);
    double *dw_hh = input_grad(ctx, y, 2), *db_hh = input_grad(ctx, y, 3);
    double *dgh = ts_arena_alloc(ctx->arena, (size_t)B * G * sizeof(double));
    if (!dgh || ctx->status) return ctx->status ? ctx->status : (ctx->status = TS_ERR_ARENA);
    for (int b = 0; b < B; b++) {
        const double *g = gates + b * G, *ghb = gh + b * G, *hb = h->data + (size_t)b * H;
        const double *up = y->grad + (size_t)b * H;
        double *dghb = dgh + b * G;
        if (mask && mask[b] == 0.0) {
            memset(dghb, 0, G * sizeof(double));
            if (dh)
                for (int j = 0; j < H; j++) dh[(size_t)b * H + j] += up[j];
            continue;
        }
        for (int j = 0; j < H; j++) {
            double r = g[j], z = g[H + j], n = g[2 * H + j];
            double dn_pre = up[j] * (1.0 - z) * (1.0 - n * n);
            double dr_pre = dn_pre * ghb[2 * H + j] * r * (1.0 - r);
            double dz_pre = up[j] * (hb[j] - n) * z * (1.0 - z);
            dghb[j] = dr_pre;
            dghb[H + j] = dz_pre;
            dghb[2 * H + j] = dn_pre * r;
            if (dgx) {
                double *dgxb = dgx + b * G;
                dgxb[j] += dr_pre;
                dgxb[H + j] += dz_pre;
                dgxb[2 * H + j] += dn_pre;
            }
            if (dh) dh[(size_t)b * H + j] += up[j] * z;
        }
    }
    int rc = TS_OK;
    if (dw_hh) rc = ts_gemm(1, 0, (int)G, H, B, 1.0, dgh, h->data, 1.0, dw_hh);
    if (!rc && dh) rc = ts_gemm(0, 0, B, H, (int)G, 1.0, dgh, w_hh->data, 1.0, dh);
    if (db_hh)
        for (int b = 0; b < B; b++)
            for (size_t k = 0; k < G; k++) db_hh[k] += dgh[b * G + k];
    if (rc && !ctx->status) ctx->status = rc;
    return ctx->status;
}
