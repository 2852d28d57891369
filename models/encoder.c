// The encoder (models/encoder.h). Forward only: its ops (gather, the cell's
// steps, concat, linear, dropout) record their backward on the tape (autograd/).
#include "models/encoder.h"

#include "autograd/ops.h"
#include "tensor/tokens.h"

#include <math.h>

int ts_encoder_specs(ts_encoder *enc, const ts_model_config *c, ts_param_spec *out) {
    int E = c->emb, H = c->hidden, n = 0;
    enc->vocab = c->src_vocab;
    enc->bidirectional = c->bidirectional;
    n += ts_param_spec_set(&out[n], &enc->embedding, TS_INIT_EMBEDDING, 2, c->src_vocab, E, "encoder.embedding.weight");
    n += ts_cell_specs(&enc->fwd, c->cell, "encoder", "_l0", E, H, &out[n]);
    if (c->bidirectional) {
        double inv_2h = 1.0 / sqrt(2.0 * H);
        n += ts_cell_specs(&enc->bwd, c->cell, "encoder", "_l0_reverse", E, H, &out[n]);
        n += ts_param_spec_set(&out[n], &enc->bridge_weight, inv_2h, 2, H, 2 * H, "encoder.bridge.weight");
        n += ts_param_spec_set(&out[n], &enc->bridge_bias, inv_2h, 1, H, 0, "encoder.bridge.bias");
    }
    return n;
}

int ts_encoder_run(ts_ctx *ctx, const ts_encoder *enc, const ts_batch_view *bv, double p, gsl_rng *rng,
                   ts_encoded *out) {
    int B = bv->B, S = bv->S, H = ts_cell_hidden(&enc->fwd), M = enc->bidirectional ? 2 * H : H;
    if (ctx->status) return ctx->status;
    if (B < 1 || S < 1) return (ts_ctx_fail(ctx, TS_ERR_SHAPE, "encode: batch of %d x %d", S, B), ctx->status);
    if (!ts_model_check_ids(ctx, "source", bv->src, (size_t)S * B, enc->vocab)) return ctx->status;
    double *mask_tb = ts_arena_alloc(ctx->arena, (size_t)S * B * sizeof(double));  // (S, B)
    double *mask_bs = ts_arena_alloc(ctx->arena, (size_t)S * B * sizeof(double));  // (B, S)
    if (!mask_tb || !mask_bs) return (ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status);
    for (int b = 0; b < B; b++) {
        if (bv->src_len[b] < 1 || bv->src_len[b] > S)
            return (ts_ctx_fail(ctx, TS_ERR_ARG, "source length %d of sentence %d outside 1..%d", bv->src_len[b], b, S),
                    ctx->status);
        for (int t = 0; t < S; t++) mask_tb[(size_t)t * B + b] = mask_bs[(size_t)b * S + t] = t < bv->src_len[b];
    }
    ts_tensor *looked_up = bv->src_embedded ? bv->src_embedded : ts_gather_rows(ctx, enc->embedding, bv->src, S * B, TS_PAD);
    ts_tensor *x = ts_dropout(ctx, looked_up, p, rng);  // (S*B, E)
    ts_tensor *final_fwd, *final_bwd;
    ts_tensor *states = ts_cell_run(ctx, &enc->fwd, x, S, B, mask_tb, 0, &final_fwd);  // (S*B, H)
    ts_tensor *init = final_fwd;  // (P B, H): the decoder starts from the forward layer's last state, every part
    if (enc->bidirectional) {
        ts_tensor *backward = ts_cell_run(ctx, &enc->bwd, x, S, B, mask_tb, 1, &final_bwd);
        states = ts_concat(ctx, (ts_tensor *[]){states, backward}, 2);  // (S*B, 2H)
        ts_tensor *finals = ts_concat(ctx, (ts_tensor *[]){ts_cell_output(ctx, &enc->fwd, final_fwd),
                                                           ts_cell_output(ctx, &enc->bwd, final_bwd)}, 2);  // (B, 2H)
        // s_0 through the bridge; any other part of the state (an LSTM's c_0) starts at 0
        init = ts_cell_state_of(ctx, &enc->fwd, ts_tanh(ctx, ts_linear(ctx, finals, enc->bridge_weight, 0, enc->bridge_bias, NULL)));
    }
    ts_tensor *memory = ts_dropout(ctx, ts_swap01(ctx, ts_reshape(ctx, states, 3, (int[]){S, B, M})), p, rng);  // (B, S, M)
    *out = (ts_encoded){.B = B, .S = S, .per_source = 1, .memory = memory, .keys = NULL, .init = init, .mask = mask_bs};
    return ctx->status;
}
