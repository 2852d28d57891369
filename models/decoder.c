// The decoder (models/decoder.h). Forward only: the cell's step, linear,
// attention and tanh ops record their backward on the tape (autograd/).
#include "models/decoder.h"

#include "autograd/ops.h"

#include <math.h>

int ts_decoder_specs(ts_decoder *d, const ts_model_config *c, ts_param_spec *out) {
    int E = c->emb, H = c->hidden, M = ts_model_memory_width(c), n = 0;
    *d = (ts_decoder){.type = c->decoder, .attends = c->attn != TS_ATTN_NONE, .E = E, .M = M};
    int luong = d->attends && c->decoder == TS_DECODER_LUONG;
    int cell_in = !d->attends ? E : luong ? E + H : E + M;  // [e; h~_{t-1}] or [e; c_t]
    n += ts_param_spec_set(&out[n], &d->embedding, TS_INIT_EMBEDDING, 2, c->tgt_vocab, E, "decoder.embedding.weight");
    n += ts_cell_specs(&d->cell, c->cell, "decoder", "", cell_in, H, &out[n]);
    if (luong)
        n += ts_param_spec_set(&out[n], &d->combine_weight, 1.0 / sqrt((double)(M + H)), 2, H, M + H,
                               "decoder.combine.weight");
    double inv_h = 1.0 / sqrt((double)H);
    n += ts_param_spec_set(&out[n], &d->out_weight, inv_h, 2, c->tgt_vocab, H, "decoder.out.weight");
    n += ts_param_spec_set(&out[n], &d->out_bias, inv_h, 1, c->tgt_vocab, 0, "decoder.out.bias");
    return n;
}

static int luong(const ts_decoder *d) { return d->attends && d->type == TS_DECODER_LUONG; }

void ts_decoder_start(ts_ctx *ctx, const ts_decoder *d, const ts_encoded *enc, ts_decoder_state *st) {
    st->state = enc->init;
    st->feed = luong(d) ? ts_cell_zeros(ctx, enc->B, ts_cell_hidden(&d->cell)) : NULL;
}

ts_tensor *ts_decoder_input_gates(ts_ctx *ctx, const ts_decoder *d, ts_tensor *emb) {
    return ts_linear(ctx, emb, d->cell.weight_ih, 0, d->cell.bias_ih, NULL);
}

// The cell's next state from gates_x and the last; returns its s_t.
static ts_tensor *recur(ts_ctx *ctx, const ts_decoder *d, ts_decoder_state *st, ts_tensor *gates_x) {
    st->state = ts_cell_step(ctx, &d->cell, gates_x, st->state, NULL);
    return ts_cell_output(ctx, &d->cell, st->state);
}

// Bahdanau's step: c_t = attend(s_{t-1}), s_t = cell([e_t; c_t], s_{t-1}),
// o_t = s_t. The input [e_t; c_t] is never concatenated: W_ih[:, E:] c_t
// adds onto the embedding's gates in one dgemm.
static ts_tensor *bahdanau_step(ts_ctx *ctx, const ts_decoder *d, const ts_attention *attn, const ts_encoded *enc,
                                ts_decoder_state *st, ts_tensor *input_gates, ts_tensor **weights) {
    ts_tensor *context = ts_attend(ctx, attn, enc, ts_cell_output(ctx, &d->cell, st->state), weights);
    return recur(ctx, d, st, ts_linear(ctx, context, d->cell.weight_ih, d->E, NULL, input_gates));
}

// Luong's step with input feeding: s_t = cell([e_t; h~_{t-1}], s_{t-1}),
// c_t = attend(s_t), o_t = h~_t = tanh(W_c [c_t; s_t]).
static ts_tensor *luong_step(ts_ctx *ctx, const ts_decoder *d, const ts_attention *attn, const ts_encoded *enc,
                             ts_decoder_state *st, ts_tensor *input_gates, ts_tensor **weights) {
    ts_tensor *s = recur(ctx, d, st, ts_linear(ctx, st->feed, d->cell.weight_ih, d->E, NULL, input_gates));
    ts_tensor *context = ts_attend(ctx, attn, enc, s, weights);
    // h~ = tanh(W_c [context; s]) = tanh(W_c[:, :M] context + W_c[:, M:] s)
    ts_tensor *combined = ts_linear(ctx, s, d->combine_weight, d->M, NULL,
                                    ts_linear(ctx, context, d->combine_weight, 0, NULL, NULL));
    st->feed = ts_tanh(ctx, combined);
    return st->feed;
}

ts_tensor *ts_decoder_step_gates(ts_ctx *ctx, const ts_decoder *d, const ts_attention *attn, const ts_encoded *enc,
                                 ts_decoder_state *st, ts_tensor *input_gates, ts_tensor **weights) {
    if (weights) *weights = NULL;
    if (!d->attends) return recur(ctx, d, st, input_gates);  // the plain encoder-decoder
    return luong(d) ? luong_step(ctx, d, attn, enc, st, input_gates, weights)
                    : bahdanau_step(ctx, d, attn, enc, st, input_gates, weights);
}

ts_tensor *ts_decoder_step(ts_ctx *ctx, const ts_decoder *d, const ts_attention *attn, const ts_encoded *enc,
                           ts_decoder_state *st, ts_tensor *emb, ts_tensor **weights) {
    if (weights) *weights = NULL;
    return ts_decoder_step_gates(ctx, d, attn, enc, st, ts_decoder_input_gates(ctx, d, emb), weights);
}

ts_tensor *ts_decoder_logits(ts_ctx *ctx, const ts_decoder *d, ts_tensor *o) {
    return ts_linear(ctx, o, d->out_weight, 0, d->out_bias, NULL);
}
