// A GRU layer (PyTorch's nn.GRU, one direction) run over a masked sequence.
// The cell itself, forward and backward, is the fused op ts_gru_cell in
// autograd/ops_gru.c; this file owns the parameters and the loop over time.
//
// Legend: S sequence length, B batch, I input width, H hidden.
#ifndef TS_MODELS_GRU_H
#define TS_MODELS_GRU_H

#include "models/config.h"

typedef struct {
    ts_tensor *weight_ih, *weight_hh, *bias_ih, *bias_hh;  // (3H, I), (3H, H), (3H), (3H)
} ts_gru_params;

// Declares g's four parameters in PyTorch's order and names
// ("<prefix>.weight_ih<suffix>", ...), all U(-1/sqrt(H), 1/sqrt(H)), into
// out[0..4). Returns 4.
int ts_gru_specs(ts_gru_params *g, const char *prefix, const char *suffix, int I, int H, ts_param_spec *out);

// A (B, H) tensor of zeros with no gradient: h_0.
ts_tensor *ts_gru_zeros(ts_ctx *ctx, int B, int H);

// Runs g over x (S*B, I), time-major, from h_0 = 0, back to front when
// reverse; mask_tb (S, B) holds each state where it is 0 (past a sentence's
// end). Returns the states (S*B, H) in time order and *final, the last
// state (B, H); NULL (and *final NULL) on failure, ctx->status says why.
ts_tensor *ts_gru_run(ts_ctx *ctx, const ts_gru_params *g, ts_tensor *x, int S, int B, const double *mask_tb,
                      int reverse, ts_tensor **final);

#endif
