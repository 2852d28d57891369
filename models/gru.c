// A GRU layer over a masked sequence (models/gru.h). Forward only: each
// cell records ts_gru_cell on the tape, whose backward is in autograd/ops_gru.c.
#include "models/gru.h"

#include "autograd/ops.h"

#include <math.h>
#include <string.h>

int ts_gru_specs(ts_gru_params *g, const char *prefix, const char *suffix, int I, int H, ts_param_spec *out) {
    double bound = 1.0 / sqrt((double)H);  // PyTorch's GRU default
    int n = 0;
    n += ts_param_spec_set(&out[n], &g->weight_ih, bound, 2, 3 * H, I, "%s.weight_ih%s", prefix, suffix);
    n += ts_param_spec_set(&out[n], &g->weight_hh, bound, 2, 3 * H, H, "%s.weight_hh%s", prefix, suffix);
    n += ts_param_spec_set(&out[n], &g->bias_ih, bound, 1, 3 * H, 0, "%s.bias_ih%s", prefix, suffix);
    n += ts_param_spec_set(&out[n], &g->bias_hh, bound, 1, 3 * H, 0, "%s.bias_hh%s", prefix, suffix);
    return n;
}

ts_tensor *ts_gru_zeros(ts_ctx *ctx, int B, int H) {
    ts_tensor *t = ts_node(ctx, TS_OP_LEAF, 2, (int[]){B, H}, 0, NULL);
    if (t) memset(t->raw, 0, ts_tensor_bytes(t));
    return t;
}

ts_tensor *ts_gru_run(ts_ctx *ctx, const ts_gru_params *g, ts_tensor *x, int S, int B, const double *mask_tb,
                      int reverse, ts_tensor **final) {
    int H = g->weight_hh->shape[1];
    *final = NULL;
    ts_tensor *gates_x = ts_linear(ctx, x, g->weight_ih, 0, g->bias_ih, NULL);  // (S*B, 3H): all steps in one product
    ts_tensor **states = ts_arena_alloc(ctx->arena, (size_t)S * sizeof *states);
    if (!states) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    ts_tensor *h = ts_gru_zeros(ctx, B, H);
    for (int i = 0; i < S; i++) {
        int t = reverse ? S - 1 - i : i;
        h = ts_gru_cell(ctx, ts_slice_rows(ctx, gates_x, t * B, B), h, g->weight_hh, g->bias_hh, mask_tb + (size_t)t * B);
        states[t] = h;
    }
    *final = h;
    return h ? ts_stack_rows(ctx, states, S) : NULL;
}
