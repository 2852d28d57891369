// What the rows' decoding steps and reorders share (models/rows.h): below
// every architecture, so that the table of rows (models/architectures.c)
// and what walks it (models/model.c) sit above them all.
#include "models/rows.h"

#include "tensor/kernels.h"
#include "tensor/tokens.h"

#include <string.h>

int *ts_reorder_sources(ts_ctx *ctx, const int *rows, int n, int group, int per_source) {
    if (ctx->status) return NULL;
    if (group < 1 || n < 1 || n % group) {
        ts_ctx_fail(ctx, TS_ERR_ARG, "reorder: %d rows in runs of %d", n, group);
        return NULL;
    }
    int runs = n / group, *sources = ts_arena_alloc(ctx->arena, (size_t)runs * sizeof(int));  // (runs)
    if (!sources) {
        ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        int source = rows[k] / per_source;
        if (k % group == 0) sources[k / group] = source;
        else if (source != sources[k / group]) {
            ts_ctx_fail(ctx, TS_ERR_ARG, "reorder: rows %d and %d of one run read sources %d and %d", k - k % group, k,
                        sources[k / group], source);
            return NULL;
        }
    }
    return sources;
}

ts_tensor *ts_rows_select(ts_ctx *ctx, const ts_tensor *t, const int *rows, int n) {
    if (!t) return NULL;
    int shape[TS_MAX_DIMS];
    memcpy(shape, t->shape, (size_t)t->ndim * sizeof(int));
    shape[0] = n;  // greedy keeps fewer rows than it had
    ts_tensor *copy = ts_node(ctx, TS_OP_LEAF, t->ndim, shape, 0, NULL);
    if (!copy) return NULL;
    if (copy->dtype != t->dtype) return ts_ctx_fail(ctx, TS_ERR_ARG, "rows_select: a %s tensor in a %s step",
                                                    ts_dtype_name(t->dtype), ts_dtype_name(copy->dtype));
    size_t row = t->size / (size_t)t->shape[0] * ts_dtype_size(t->dtype);  // bytes
    for (int k = 0; k < n; k++) memcpy((char *)copy->raw + k * row, (const char *)t->raw + (size_t)rows[k] * row, row);
    return copy;
}

int ts_argmax_token(const double *row, int n) { return TS_EOS + (int)ts_argmax_array(row + TS_EOS, (size_t)(n - TS_EOS)); }

int ts_argmax_token_row(const ts_tensor *logits, int r) {
    size_t V = (size_t)logits->shape[1], at = (size_t)r * V + TS_EOS;
    return TS_EOS + (int)(logits->dtype == TS_F32 ? ts_argmax_array_f32(logits->data_f32 + at, V - TS_EOS)
                                                  : ts_argmax_array(logits->data + at, V - TS_EOS));
}
