// The layer written against a recurrent cell's row (models/cell.h); the
// rows' table is models/cells.c. Forward only: each step records its cell's
// op on the tape, whose backward is in autograd/.
#include "models/cell.h"

#include "autograd/ops.h"
#include "models/rows.h"

#include <math.h>
#include <string.h>

const char *ts_cell_name(int type) { return type >= 0 && type < TS_CELL_COUNT ? ts_cell_kind_of(type)->name : "?"; }

const ts_names ts_cell_names = {.what = "cell", .count = TS_CELL_COUNT, .name = ts_cell_name};

int ts_cell_specs(ts_cell *c, ts_cell_type type, const char *layer, const char *suffix, int I, int H,
                  ts_param_spec *out) {
    const ts_cell_kind *k = c->kind = ts_cell_kind_of(type);
    int G = k->gates * H, n = 0;
    double bound = 1.0 / sqrt((double)H);  // torch's nn.GRU and nn.LSTM default
    n += ts_param_spec_set(&out[n], &c->weight_ih, bound, 2, G, I, "%s.%s.weight_ih%s", layer, k->name, suffix);
    n += ts_param_spec_set(&out[n], &c->weight_hh, bound, 2, G, H, "%s.%s.weight_hh%s", layer, k->name, suffix);
    n += ts_param_spec_set(&out[n], &c->bias_ih, bound, 1, G, 0, "%s.%s.bias_ih%s", layer, k->name, suffix);
    n += ts_param_spec_set(&out[n], &c->bias_hh, bound, 1, G, 0, "%s.%s.bias_hh%s", layer, k->name, suffix);
    return n;
}

int ts_cell_hidden(const ts_cell *c) { return c->weight_hh->shape[1]; }

ts_tensor *ts_cell_zeros(ts_ctx *ctx, int rows, int H) {
    ts_tensor *t = ts_node(ctx, TS_OP_LEAF, 2, (int[]){rows, H}, 0, NULL);
    if (t) memset(t->raw, 0, ts_tensor_bytes(t));
    return t;
}

ts_tensor *ts_cell_output(ts_ctx *ctx, const ts_cell *c, ts_tensor *state) {
    if (c->kind->parts == 1 || !state) return state;
    return ts_slice_rows(ctx, state, 0, state->shape[0] / c->kind->parts);
}

ts_tensor *ts_cell_state_of(ts_ctx *ctx, const ts_cell *c, ts_tensor *h) {
    int P = c->kind->parts;
    if (P == 1 || !h) return h;
    ts_tensor *parts[TS_CELL_MAX_PARTS];
    parts[0] = h;
    for (int p = 1; p < P; p++) parts[p] = ts_cell_zeros(ctx, h->shape[0], h->shape[1]);
    return ts_stack_rows(ctx, parts, P);
}

ts_tensor *ts_cell_step(ts_ctx *ctx, const ts_cell *c, ts_tensor *gates_x, ts_tensor *state, const double *mask) {
    return c->kind->step(ctx, gates_x, state, c->weight_hh, c->bias_hh, mask);
}

ts_tensor *ts_cell_rows_select(ts_ctx *ctx, const ts_cell *c, const ts_tensor *state, const int *rows, int n) {
    int P = c->kind->parts;
    if (P == 1 || !state) return ts_rows_select(ctx, state, rows, n);
    int B = state->shape[0] / P;
    int *every = ts_arena_alloc(ctx->arena, (size_t)P * n * sizeof(int));  // (P n): each part's rows
    if (!every) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    for (int p = 0; p < P; p++)
        for (int k = 0; k < n; k++) every[p * n + k] = p * B + rows[k];
    return ts_rows_select(ctx, state, every, P * n);
}

ts_tensor *ts_cell_run(ts_ctx *ctx, const ts_cell *c, ts_tensor *x, int S, int B, const double *mask_tb,
                       int reverse, ts_tensor **final) {
    int H = ts_cell_hidden(c);
    *final = NULL;
    ts_tensor *gates_x = ts_linear(ctx, x, c->weight_ih, 0, c->bias_ih, NULL);  // (S*B, G): all steps in one product
    ts_tensor **outputs = ts_arena_alloc(ctx->arena, (size_t)S * sizeof *outputs);
    if (!outputs) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    ts_tensor *state = ts_cell_zeros(ctx, c->kind->parts * B, H);
    for (int i = 0; i < S; i++) {
        int t = reverse ? S - 1 - i : i;
        state = ts_cell_step(ctx, c, ts_slice_rows(ctx, gates_x, t * B, B), state, mask_tb + (size_t)t * B);
        outputs[t] = ts_cell_output(ctx, c, state);
    }
    *final = state;
    return state ? ts_stack_rows(ctx, outputs, S) : NULL;
}
