// The seq2seq model: parameters, encoder, attention, decoders, loss and
// decoding. The math is docs/models.md; the legend is in seq2seq.h.
#include "models/seq2seq.h"

#include "autograd/ops.h"
#include "tensor/init.h"
#include "tensor/kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const attn_names[TS_ATTN_COUNT] = {
    [TS_ATTN_NONE] = "none",       [TS_ATTN_DOT] = "dot",       [TS_ATTN_SCALED_DOT] = "scaled-dot",
    [TS_ATTN_GENERAL] = "general", [TS_ATTN_CONCAT] = "concat", [TS_ATTN_BAHDANAU] = "bahdanau",
};
static const char *const decoder_names[TS_DECODER_COUNT] = {
    [TS_DECODER_BAHDANAU] = "bahdanau", [TS_DECODER_LUONG] = "luong"};

const char *ts_attn_name(ts_attn_type type) {
    return type >= 0 && type < TS_ATTN_COUNT ? attn_names[type] : "?";
}
const char *ts_decoder_name(ts_decoder_type type) {
    return type >= 0 && type < TS_DECODER_COUNT ? decoder_names[type] : "?";
}

int ts_attn_parse(const char *name, ts_attn_type *type) {
    for (int i = 0; i < TS_ATTN_COUNT; i++)
        if (!strcmp(name, attn_names[i])) {
            *type = (ts_attn_type)i;
            return TS_OK;
        }
    if (!strcmp(name, "additive")) {
        *type = TS_ATTN_BAHDANAU;
        return TS_OK;
    }
    return ts_fail(TS_ERR_ARG, "unknown attention '%s' (none, dot, scaled-dot, general, concat, bahdanau)", name);
}

int ts_decoder_parse(const char *name, ts_decoder_type *type) {
    for (int i = 0; i < TS_DECODER_COUNT; i++)
        if (!strcmp(name, decoder_names[i])) {
            *type = (ts_decoder_type)i;
            return TS_OK;
        }
    return ts_fail(TS_ERR_ARG, "unknown decoder '%s' (bahdanau, luong)", name);
}

int ts_model_config_check(const ts_model_config *c) {
    if (c->src_vocab < 5 || c->src_vocab > 10000000) return ts_fail(TS_ERR_ARG, "source vocabulary of %d words", c->src_vocab);
    if (c->tgt_vocab < 5 || c->tgt_vocab > 10000000) return ts_fail(TS_ERR_ARG, "target vocabulary of %d words", c->tgt_vocab);
    if (c->emb < 1 || c->emb > 65536) return ts_fail(TS_ERR_ARG, "embedding size %d (1 to 65536)", c->emb);
    if (c->hidden < 1 || c->hidden > 65536) return ts_fail(TS_ERR_ARG, "hidden size %d (1 to 65536)", c->hidden);
    if (c->attn < 0 || c->attn >= TS_ATTN_COUNT) return ts_fail(TS_ERR_ARG, "attention type %d", (int)c->attn);
    if (c->decoder < 0 || c->decoder >= TS_DECODER_COUNT) return ts_fail(TS_ERR_ARG, "decoder type %d", (int)c->decoder);
    if (c->bidirectional != 0 && c->bidirectional != 1) return ts_fail(TS_ERR_ARG, "bidirectional = %d", c->bidirectional);
    return TS_OK;
}

// ---- parameters ----------------------------------------------------------

static int memory_width(const ts_model_config *c) { return c->bidirectional ? 2 * c->hidden : c->hidden; }
static int additive(const ts_model_config *c) { return c->attn == TS_ATTN_CONCAT || c->attn == TS_ATTN_BAHDANAU; }
static int dot_like(const ts_model_config *c) { return c->attn == TS_ATTN_DOT || c->attn == TS_ATTN_SCALED_DOT; }

// Registers a parameter initialised U(-bound, bound); N(0, 1) when bound < 0.
static ts_tensor *param(ts_seq2seq *m, gsl_rng *rng, const char *name, int ndim, int d0, int d1, double bound) {
    ts_tensor *t = ts_params_add(&m->params, name, ndim, (int[]){d0, d1});
    if (!t) return NULL;
    if (bound < 0) ts_init_normal(t, rng, 1.0);
    else ts_init_uniform(t, rng, -bound, bound);
    return t;
}

static int gru_params(ts_seq2seq *m, gsl_rng *rng, ts_gru_params *g, const char *prefix, const char *suffix,
                      int in) {
    int H = m->cfg.hidden;
    double bound = 1.0 / sqrt((double)H);
    char name[48];
    snprintf(name, sizeof name, "%s.weight_ih%s", prefix, suffix);
    g->weight_ih = param(m, rng, name, 2, 3 * H, in, bound);
    snprintf(name, sizeof name, "%s.weight_hh%s", prefix, suffix);
    g->weight_hh = param(m, rng, name, 2, 3 * H, H, bound);
    snprintf(name, sizeof name, "%s.bias_ih%s", prefix, suffix);
    g->bias_ih = param(m, rng, name, 1, 3 * H, 0, bound);
    snprintf(name, sizeof name, "%s.bias_hh%s", prefix, suffix);
    g->bias_hh = param(m, rng, name, 1, 3 * H, 0, bound);
    return g->weight_ih && g->weight_hh && g->bias_ih && g->bias_hh ? TS_OK : TS_ERR_NOMEM;
}

ts_seq2seq *ts_seq2seq_new(const ts_model_config *cfg, gsl_rng *rng) {
    if (ts_model_config_check(cfg) != TS_OK) return NULL;
    ts_seq2seq *m = calloc(1, sizeof *m);
    if (!m) {
        ts_fail(TS_ERR_NOMEM, "cannot allocate a model");
        return NULL;
    }
    m->cfg = *cfg;
    ts_params_init(&m->params);
    const ts_model_config *c = cfg;
    int E = c->emb, H = c->hidden, M = memory_width(c);
    double inv_h = 1.0 / sqrt((double)H), inv_m = 1.0 / sqrt((double)M);
    int ok = 1;
    ok &= (m->enc_embedding = param(m, rng, "encoder.embedding.weight", 2, c->src_vocab, E, -1)) != NULL;
    ok &= gru_params(m, rng, &m->enc_fwd, "encoder.gru", "_l0", E) == TS_OK;
    if (c->bidirectional) {
        ok &= gru_params(m, rng, &m->enc_bwd, "encoder.gru", "_l0_reverse", E) == TS_OK;
        double inv_2h = 1.0 / sqrt(2.0 * H);
        ok &= (m->bridge_weight = param(m, rng, "encoder.bridge.weight", 2, H, 2 * H, inv_2h)) != NULL;
        ok &= (m->bridge_bias = param(m, rng, "encoder.bridge.bias", 1, H, 0, inv_2h)) != NULL;
    }
    if (c->attn == TS_ATTN_GENERAL)
        ok &= (m->attn_key_weight = param(m, rng, "decoder.attention.W.weight", 2, H, M, inv_m)) != NULL;
    if (dot_like(c) && c->bidirectional)
        ok &= (m->attn_key_weight = param(m, rng, "decoder.attention.key.weight", 2, H, M, inv_m)) != NULL;
    if (additive(c)) {
        ok &= (m->attn_query_weight = param(m, rng, "decoder.attention.query.weight", 2, H, H, inv_h)) != NULL;
        ok &= (m->attn_key_weight = param(m, rng, "decoder.attention.key.weight", 2, H, M, inv_m)) != NULL;
        ok &= (m->attn_key_bias = param(m, rng, "decoder.attention.key.bias", 1, H, 0, inv_m)) != NULL;
        ok &= (m->attn_v = param(m, rng, "decoder.attention.v.weight", 1, H, 0, inv_h)) != NULL;
    }
    ok &= (m->dec_embedding = param(m, rng, "decoder.embedding.weight", 2, c->tgt_vocab, E, -1)) != NULL;
    int dec_in = c->attn == TS_ATTN_NONE ? E : c->decoder == TS_DECODER_BAHDANAU ? E + M : E + H;
    ok &= gru_params(m, rng, &m->dec, "decoder.gru", "", dec_in) == TS_OK;
    if (c->decoder == TS_DECODER_LUONG && c->attn != TS_ATTN_NONE) {
        double inv = 1.0 / sqrt((double)(M + H));
        ok &= (m->combine_weight = param(m, rng, "decoder.combine.weight", 2, H, M + H, inv)) != NULL;
    }
    ok &= (m->out_weight = param(m, rng, "decoder.out.weight", 2, c->tgt_vocab, H, inv_h)) != NULL;
    ok &= (m->out_bias = param(m, rng, "decoder.out.bias", 1, c->tgt_vocab, 0, inv_h)) != NULL;
    if (!ok) {
        ts_seq2seq_free(m);
        return NULL;
    }
    // The <pad> rows start at zero and never learn (as torch's padding_idx).
    memset(m->enc_embedding->data + (size_t)TS_PAD * E, 0, (size_t)E * sizeof(double));
    memset(m->dec_embedding->data + (size_t)TS_PAD * E, 0, (size_t)E * sizeof(double));
    return m;
}

// Mirrors ts_seq2seq_new above, parameter for parameter (test_models checks
// the two agree for every configuration).
int ts_seq2seq_layout(const ts_model_config *c, ts_param_shape *out, int *n) {
    int rc = ts_model_config_check(c);
    if (rc) return rc;
    int E = c->emb, H = c->hidden, M = memory_width(c), k = 0;
#define LAYOUT(nd, d0, d1, ...)                                             \
    do {                                                                    \
        snprintf(out[k].name, sizeof out[k].name, __VA_ARGS__);             \
        out[k].ndim = (nd), out[k].shape[0] = (d0), out[k].shape[1] = (d1); \
        k++;                                                                \
    } while (0)
#define LAYOUT_GRU(prefix, suffix, in)                                \
    do {                                                              \
        LAYOUT(2, 3 * H, in, "%s.weight_ih%s", prefix, suffix);       \
        LAYOUT(2, 3 * H, H, "%s.weight_hh%s", prefix, suffix);        \
        LAYOUT(1, 3 * H, 0, "%s.bias_ih%s", prefix, suffix);          \
        LAYOUT(1, 3 * H, 0, "%s.bias_hh%s", prefix, suffix);          \
    } while (0)
    LAYOUT(2, c->src_vocab, E, "encoder.embedding.weight");
    LAYOUT_GRU("encoder.gru", "_l0", E);
    if (c->bidirectional) {
        LAYOUT_GRU("encoder.gru", "_l0_reverse", E);
        LAYOUT(2, H, 2 * H, "encoder.bridge.weight");
        LAYOUT(1, H, 0, "encoder.bridge.bias");
    }
    if (c->attn == TS_ATTN_GENERAL) LAYOUT(2, H, M, "decoder.attention.W.weight");
    if (dot_like(c) && c->bidirectional) LAYOUT(2, H, M, "decoder.attention.key.weight");
    if (additive(c)) {
        LAYOUT(2, H, H, "decoder.attention.query.weight");
        LAYOUT(2, H, M, "decoder.attention.key.weight");
        LAYOUT(1, H, 0, "decoder.attention.key.bias");
        LAYOUT(1, H, 0, "decoder.attention.v.weight");
    }
    LAYOUT(2, c->tgt_vocab, E, "decoder.embedding.weight");
    int dec_in = c->attn == TS_ATTN_NONE ? E : c->decoder == TS_DECODER_BAHDANAU ? E + M : E + H;
    LAYOUT_GRU("decoder.gru", "", dec_in);
    if (c->decoder == TS_DECODER_LUONG && c->attn != TS_ATTN_NONE) LAYOUT(2, H, M + H, "decoder.combine.weight");
    LAYOUT(2, c->tgt_vocab, H, "decoder.out.weight");
    LAYOUT(1, c->tgt_vocab, 0, "decoder.out.bias");
#undef LAYOUT_GRU
#undef LAYOUT
    *n = k;
    return TS_OK;
}

void ts_seq2seq_free(ts_seq2seq *m) {
    if (!m) return;
    ts_params_free(&m->params);
    free(m);
}

size_t ts_seq2seq_param_count(const ts_model_config *c) {
    size_t E = (size_t)c->emb, H = (size_t)c->hidden, M = (size_t)memory_width(c);
    size_t Vs = (size_t)c->src_vocab, Vt = (size_t)c->tgt_vocab;
    size_t dec_in = c->attn == TS_ATTN_NONE ? E : c->decoder == TS_DECODER_BAHDANAU ? E + M : E + H;
#define GRU(in) (3 * H * ((in) + H) + 6 * H)
    size_t n = Vs * E + GRU(E);  // as ts_seq2seq_new registers them
    if (c->bidirectional) n += GRU(E) + H * 2 * H + H;
    if (c->attn == TS_ATTN_GENERAL || (dot_like(c) && c->bidirectional)) n += H * M;
    if (additive(c)) n += H * H + H * M + 2 * H;
    n += Vt * E + GRU(dec_in);
    if (c->decoder == TS_DECODER_LUONG && c->attn != TS_ATTN_NONE) n += H * (M + H);
    n += Vt * H + Vt;
#undef GRU
    return n;
}

// ---- encoder -------------------------------------------------------------

static ts_tensor *zeros(ts_ctx *ctx, int rows, int cols) {
    ts_tensor *t = ts_node(ctx, TS_OP_LEAF, 2, (int[]){rows, cols}, 0, NULL);
    if (t) memset(t->data, 0, t->size * sizeof(double));
    return t;
}

// y = x W^T (+ b): x (N, in), W (out, in)
static ts_tensor *linear(ts_ctx *ctx, ts_tensor *x, ts_tensor *w, ts_tensor *b) {
    return ts_linear(ctx, x, w, 0, b, NULL);
}

// Runs one GRU direction over x (S*B, E), time-major, masked past each
// length; returns the states (S*B, H) in time order and the final state.
static ts_tensor *run_gru(ts_ctx *ctx, const ts_gru_params *g, ts_tensor *x, int S, int B, const double *mask_tb,
                          int reverse, ts_tensor **final) {
    int H = g->weight_hh->shape[1];
    ts_tensor *gates_x = linear(ctx, x, g->weight_ih, g->bias_ih);  // (S*B, 3H): all steps in one product
    ts_tensor **states = ts_arena_alloc(ctx->arena, (size_t)S * sizeof *states);
    if (!states) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    ts_tensor *h = zeros(ctx, B, H);
    for (int i = 0; i < S; i++) {
        int t = reverse ? S - 1 - i : i;
        h = ts_gru_cell(ctx, ts_slice_rows(ctx, gates_x, t * B, B), h, g->weight_hh, g->bias_hh, mask_tb + (size_t)t * B);
        states[t] = h;
    }
    *final = h;
    return h ? ts_stack_rows(ctx, states, S) : NULL;
}

static int check_ids(ts_ctx *ctx, const char *what, const int *ids, size_t n, int vocab) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab) {
            ts_ctx_fail(ctx, TS_ERR_ARG, "%s[%zu] = %d outside the vocabulary of %d", what, i, ids[i], vocab);
            return 0;
        }
    return 1;
}

// The encoder; with dropout p > 0 (training) the source embeddings and the
// memory are dropped out with masks drawn from rng.
static int encode(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double p, gsl_rng *rng, ts_encoded *out) {
    const ts_model_config *c = &m->cfg;
    int B = bv->B, S = bv->S, M = memory_width(c);
    if (ctx->status) return ctx->status;
    if (B < 1 || S < 1) return (ts_ctx_fail(ctx, TS_ERR_SHAPE, "encode: batch of %d x %d", S, B), ctx->status);
    if (!check_ids(ctx, "source", bv->src, (size_t)S * B, c->src_vocab)) return ctx->status;
    double *mask_tb = ts_arena_alloc(ctx->arena, (size_t)S * B * sizeof(double));  // (S, B)
    double *mask_bs = ts_arena_alloc(ctx->arena, (size_t)S * B * sizeof(double));  // (B, S)
    if (!mask_tb || !mask_bs) return (ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error()), ctx->status);
    for (int b = 0; b < B; b++) {
        if (bv->src_len[b] < 1 || bv->src_len[b] > S)
            return (ts_ctx_fail(ctx, TS_ERR_ARG, "source length %d of sentence %d outside 1..%d", bv->src_len[b], b, S),
                    ctx->status);
        for (int t = 0; t < S; t++) mask_tb[(size_t)t * B + b] = mask_bs[(size_t)b * S + t] = t < bv->src_len[b];
    }
    ts_tensor *x = ts_dropout(ctx, ts_gather_rows(ctx, m->enc_embedding, bv->src, S * B, TS_PAD), p, rng);  // (S*B, E)
    ts_tensor *final_fwd, *final_bwd;
    ts_tensor *states = run_gru(ctx, &m->enc_fwd, x, S, B, mask_tb, 0, &final_fwd);  // (S*B, H)
    ts_tensor *init = final_fwd;
    if (c->bidirectional) {
        ts_tensor *backward = run_gru(ctx, &m->enc_bwd, x, S, B, mask_tb, 1, &final_bwd);
        states = ts_concat(ctx, (ts_tensor *[]){states, backward}, 2);  // (S*B, 2H)
        ts_tensor *finals = ts_concat(ctx, (ts_tensor *[]){final_fwd, final_bwd}, 2);
        init = ts_tanh(ctx, linear(ctx, finals, m->bridge_weight, m->bridge_bias));
    }
    ts_tensor *memory = ts_dropout(ctx, ts_swap01(ctx, ts_reshape(ctx, states, 3, (int[]){S, B, M})), p, rng);  // (B, S, M)
    ts_tensor *keys = m->cfg.attn == TS_ATTN_NONE ? NULL : ts_attention_keys(m, ctx, memory);
    *out = (ts_encoded){.B = B, .S = S, .memory = memory, .keys = keys, .init = init, .mask = mask_bs};
    return ctx->status;
}

int ts_seq2seq_encode(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, ts_encoded *out) {
    return encode(m, ctx, bv, 0.0, NULL, out);
}

// ---- attention and decoder -------------------------------------------------

ts_tensor *ts_attention_keys(ts_seq2seq *m, ts_ctx *ctx, ts_tensor *memory) {
    if (!memory || !m->attn_key_weight) return memory;  // plain dot scores the memory itself
    int B = memory->shape[0], S = memory->shape[1], M = memory->shape[2], H = m->cfg.hidden;
    // general, additive, bidirectional dot: W m_j for every j in one product
    ts_tensor *flat = ts_reshape(ctx, memory, 2, (int[]){B * S, M});
    return ts_reshape(ctx, linear(ctx, flat, m->attn_key_weight, m->attn_key_bias), 3, (int[]){B, S, H});
}

ts_tensor *ts_attention(ts_seq2seq *m, ts_ctx *ctx, const ts_encoded *enc, ts_tensor *q, ts_tensor **weights) {
    ts_tensor *scores;
    switch (m->cfg.attn) {
    case TS_ATTN_SCALED_DOT:
        scores = ts_scale(ctx, ts_attn_dot(ctx, q, enc->keys), 1.0 / sqrt((double)m->cfg.hidden));
        break;
    case TS_ATTN_CONCAT:
    case TS_ATTN_BAHDANAU:
        scores = ts_attn_additive(ctx, ts_matmul(ctx, q, m->attn_query_weight, 0, 1), enc->keys, m->attn_v);
        break;
    default:  // dot, general: the keys already carry W
        scores = ts_attn_dot(ctx, q, enc->keys);
        break;
    }
    ts_tensor *w = ts_softmax(ctx, scores, enc->mask);
    if (weights) *weights = w;
    return ts_attn_context(ctx, w, enc->memory);
}

void ts_decoder_start(ts_seq2seq *m, ts_ctx *ctx, const ts_encoded *enc, ts_decoder_state *st) {
    st->state = enc->init;
    st->feed = m->cfg.decoder == TS_DECODER_LUONG && m->cfg.attn != TS_ATTN_NONE ? zeros(ctx, enc->B, m->cfg.hidden) : NULL;
}

// The embedding's share of the decoder GRU's input projection,
// W_ih[:, :E] e + b_ih (N, 3H): it does not depend on the recurrence, so
// under teacher forcing it runs once for every step of the batch.
static ts_tensor *embedding_gates(ts_seq2seq *m, ts_ctx *ctx, ts_tensor *emb) {
    return ts_linear(ctx, emb, m->dec.weight_ih, 0, m->dec.bias_ih, NULL);
}

// One decoder step given emb_gates = W_ih[:, :E] e_t + b_ih (B, 3H). The GRU
// input [e_t; c_t] (or [e_t; h~_{t-1}]) is never concatenated: its second
// part adds W_ih[:, E:] c_t onto emb_gates in one dgemm.
static ts_tensor *decoder_step(ts_seq2seq *m, ts_ctx *ctx, const ts_encoded *enc, ts_decoder_state *st,
                               ts_tensor *emb_gates, ts_tensor **weights) {
    const ts_model_config *c = &m->cfg;
    if (weights) *weights = NULL;
    int E = c->emb, M = memory_width(c);
    int luong = c->decoder == TS_DECODER_LUONG;
    ts_tensor *gates_x = emb_gates;
    if (c->attn != TS_ATTN_NONE && !luong)  // Bahdanau: attend with the previous state
        gates_x = ts_linear(ctx, ts_attention(m, ctx, enc, st->state, weights), m->dec.weight_ih, E, NULL, emb_gates);
    else if (c->attn != TS_ATTN_NONE)       // Luong: input feeding of h~_{t-1}
        gates_x = ts_linear(ctx, st->feed, m->dec.weight_ih, E, NULL, emb_gates);
    ts_tensor *s = ts_gru_cell(ctx, gates_x, st->state, m->dec.weight_hh, m->dec.bias_hh, NULL);
    st->state = s;
    if (c->attn == TS_ATTN_NONE || !luong) return s;
    ts_tensor *context = ts_attention(m, ctx, enc, s, weights);  // Luong: attend with the new state
    // h~ = tanh(W_c [context; s]) = tanh(W_c[:, :M] context + W_c[:, M:] s)
    ts_tensor *combined = ts_linear(ctx, s, m->combine_weight, M, NULL,
                                    ts_linear(ctx, context, m->combine_weight, 0, NULL, NULL));
    ts_tensor *h_tilde = ts_tanh(ctx, combined);
    st->feed = h_tilde;
    return h_tilde;
}

ts_tensor *ts_decoder_step(ts_seq2seq *m, ts_ctx *ctx, const ts_encoded *enc, ts_decoder_state *st, ts_tensor *emb,
                           ts_tensor **weights) {
    if (weights) *weights = NULL;
    return decoder_step(m, ctx, enc, st, embedding_gates(m, ctx, emb), weights);
}

ts_tensor *ts_seq2seq_logits(ts_seq2seq *m, ts_ctx *ctx, ts_tensor *o) {
    return linear(ctx, o, m->out_weight, m->out_bias);
}

// The most likely token the model may emit: never <pad> or <sos>, which no
// target contains (first index wins ties).
static int argmax_token(const double *row, int n) {
    int best = TS_EOS;
    for (int i = TS_EOS + 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

ts_tensor *ts_seq2seq_loss(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, double tf, gsl_rng *rng,
                           const ts_regularizer *reg, int *n_tokens) {
    int B = bv->B, T = bv->T, V = m->cfg.tgt_vocab;
    double p = reg ? reg->dropout : 0.0, smoothing = reg ? reg->label_smoothing : 0.0;
    if (p > 0.0 && !rng) return ts_ctx_fail(ctx, TS_ERR_ARG, "loss: dropout %g needs a random generator", p);
    if (T < 1) return ts_ctx_fail(ctx, TS_ERR_SHAPE, "loss: target length %d", T);
    if (!check_ids(ctx, "target input", bv->tgt_in, (size_t)T * B, V) ||
        !check_ids(ctx, "target output", bv->tgt_out, (size_t)T * B, V))
        return NULL;
    ts_encoded enc;
    if (encode(m, ctx, bv, p, rng, &enc)) return NULL;
    ts_decoder_state st;
    ts_decoder_start(m, ctx, &enc, &st);
    int forced = tf >= 1.0;
    // Teacher forcing: every input is known, so the embeddings and their
    // share of the GRU input projection run for all T steps at once.
    ts_tensor *embedded = forced ? ts_dropout(ctx, ts_gather_rows(ctx, m->dec_embedding, bv->tgt_in, T * B, TS_PAD), p, rng)
                                 : NULL;  // (T*B, E)
    ts_tensor *emb_gates = forced ? embedding_gates(m, ctx, embedded) : NULL;  // (T*B, 3H)
    ts_tensor **steps = ts_arena_alloc(ctx->arena, (size_t)T * sizeof *steps);
    int *inputs = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(int));
    if (!steps || !inputs) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    memcpy(inputs, bv->tgt_in, (size_t)B * sizeof(int));
    for (int t = 0; t < T; t++) {
        ts_tensor *gates = forced ? ts_slice_rows(ctx, emb_gates, t * B, B)
                                  : embedding_gates(m, ctx, ts_dropout(ctx, ts_gather_rows(ctx, m->dec_embedding, inputs, B, TS_PAD),
                                                                       p, rng));
        ts_tensor *o = decoder_step(m, ctx, &enc, &st, gates, NULL);
        if (forced) {
            steps[t] = o;  // projected all at once below
            continue;
        }
        ts_tensor *logits = ts_seq2seq_logits(m, ctx, ts_dropout(ctx, o, p, rng));  // (B, V)
        if (!logits) return NULL;
        steps[t] = logits;
        for (int b = 0; t + 1 < T && b < B; b++) {
            int gold = bv->tgt_in[(size_t)(t + 1) * B + b];
            // Past a sentence's end its input is padding either way.
            inputs[b] = gold == TS_PAD || gsl_rng_uniform(rng) < tf ? gold : argmax_token(logits->data + (size_t)b * V, V);
        }
    }
    ts_tensor *stacked = ts_stack_rows(ctx, steps, T);  // (T*B, H) or (T*B, V)
    if (forced) stacked = ts_dropout(ctx, stacked, p, rng);  // the pre-output layer
    if (n_tokens) {
        *n_tokens = 0;
        for (size_t i = 0; i < (size_t)T * B; i++) *n_tokens += bv->tgt_out[i] != TS_PAD;
    }
    // Forced: the output projection of all steps and the loss in one node.
    return forced ? ts_linear_cross_entropy(ctx, stacked, m->out_weight, m->out_bias, bv->tgt_out, TS_PAD, smoothing)
                  : ts_cross_entropy(ctx, stacked, bv->tgt_out, TS_PAD, smoothing);
}

// ---- decoding --------------------------------------------------------------

void ts_hypothesis_free(ts_hypothesis *h) {
    if (!h) return;
    free(h->tokens);
    free(h->attention);
    memset(h, 0, sizeof *h);
}

static int alloc_hypothesis(ts_hypothesis *h, int max_len, int S) {
    memset(h, 0, sizeof *h);
    h->S = S;
    h->tokens = malloc((size_t)(max_len + 1) * sizeof(int));
    h->attention = calloc((size_t)(max_len + 1) * S, sizeof(double));
    if (!h->tokens || !h->attention) {
        ts_hypothesis_free(h);
        return ts_fail(TS_ERR_NOMEM, "cannot allocate a hypothesis of %d tokens", max_len);
    }
    return TS_OK;
}

// log softmax(row)[k], stable.
static double log_prob(const double *row, int n, int k) {
    double max = ts_max_array(row, (size_t)n);
    return (row[k] - max) - log(ts_sum_exp_shift(row, (size_t)n, max));
}

// Decoding step t runs in scratch arena t % 2: what step t makes (state,
// weights, logits) stays readable during step t + 1, and is forgotten by step
// t + 2. Memory is one step's worth, however long the output; the encoder's
// tensors stay in the caller's arena.
typedef struct {
    ts_arena *arena[2];
} step_arenas;

static int step_arenas_new(step_arenas *sa, size_t bytes) {
    sa->arena[0] = ts_arena_new(bytes);
    sa->arena[1] = sa->arena[0] ? ts_arena_new(bytes) : NULL;
    return sa->arena[1] ? TS_OK : TS_ERR_NOMEM;
}

static void step_arenas_free(step_arenas *sa) {
    ts_arena_free(sa->arena[0]);
    ts_arena_free(sa->arena[1]);
}

// A first guess at one step's tensors for B rows (bytes); a step that does
// not fit doubles its arena and runs again.
static size_t step_guess(const ts_seq2seq *m, int B, int S) {
    const ts_model_config *c = &m->cfg;
    size_t per_row = 4 * (size_t)S + 4 * (size_t)c->tgt_vocab + 32 * (size_t)c->hidden + 4 * (size_t)c->emb;
    return (size_t)B * per_row * sizeof(double) + ((size_t)1 << 20);
}

// One decoder step on inputs (B): the logits (B, V), *weights (B, S) or NULL,
// st advanced, all in scratch arena t % 2. When parents is not NULL the state
// is first reordered to rows parents[0..B) (beam search). NULL on failure
// (status returned in *rc); a full scratch arena is grown and the step rerun
// from the same state.
static ts_tensor *reorder_rows(ts_ctx *ctx, ts_tensor *t, const int *parents, int K);

static ts_tensor *decode_step(ts_seq2seq *m, ts_ctx *ctx, step_arenas *sa, int t, const ts_encoded *enc,
                              ts_decoder_state *st, const int *parents, const int *inputs, int B, ts_tensor **weights,
                              int *rc) {
    ts_arena *caller = ctx->arena;
    const ts_decoder_state before = *st;  // lives in the other scratch arena (or the caller's)
    for (;;) {
        ts_arena *a = sa->arena[t % 2];
        ts_arena_reset(a);
        ctx->arena = a;
        if (parents) {
            st->state = reorder_rows(ctx, before.state, parents, B);
            st->feed = before.feed ? reorder_rows(ctx, before.feed, parents, B) : NULL;
        }
        ts_tensor *emb = ts_gather_rows(ctx, m->dec_embedding, inputs, B, -1);
        ts_tensor *logits = ts_seq2seq_logits(m, ctx, ts_decoder_step(m, ctx, enc, st, emb, weights));
        ctx->arena = caller;
        if (logits) return logits;
        *rc = ctx->status ? ctx->status : TS_ERR_ARENA;
        size_t capacity = ts_arena_capacity(a);
        if (*rc != TS_ERR_ARENA || capacity > SIZE_MAX / 4) return NULL;
        ts_arena *bigger = ts_arena_new(2 * capacity);
        if (!bigger) {
            *rc = TS_ERR_NOMEM;
            return NULL;
        }
        ts_arena_free(a);
        sa->arena[t % 2] = bigger;
        *st = before;
        ctx->status = TS_OK;
        *rc = TS_OK;
    }
}

int ts_seq2seq_greedy(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, int max_len, ts_hypothesis *out) {
    int B = bv->B, S = bv->S, V = m->cfg.tgt_vocab;
    if (max_len < 1) return ts_fail(TS_ERR_ARG, "greedy: max_len %d", max_len);
    int grad_before = ts_set_grad_enabled(ctx, 0);
    int rc = TS_OK;
    for (int b = 0; b < B && !rc; b++) rc = alloc_hypothesis(&out[b], max_len, S);
    ts_encoded enc;
    step_arenas sa = {{NULL, NULL}};
    int *inputs = NULL, *done = calloc((size_t)B, sizeof(int));
    if (!rc && !done) rc = ts_fail(TS_ERR_NOMEM, "greedy: out of memory");
    if (!rc) rc = step_arenas_new(&sa, step_guess(m, B, S));
    if (!rc) rc = ts_seq2seq_encode(m, ctx, bv, &enc);
    if (!rc && !(inputs = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(int)))) rc = TS_ERR_ARENA;
    if (!rc) {
        ts_decoder_state st;
        ts_decoder_start(m, ctx, &enc, &st);
        for (int b = 0; b < B; b++) inputs[b] = TS_SOS;
        int remaining = B;
        for (int t = 0; t <= max_len && remaining > 0; t++) {
            ts_tensor *weights;
            ts_tensor *logits = decode_step(m, ctx, &sa, t, &enc, &st, NULL, inputs, B, &weights, &rc);
            if (!logits) break;
            for (int b = 0; b < B; b++) {
                if (done[b]) continue;
                ts_hypothesis *h = &out[b];
                if (weights) memcpy(h->attention + (size_t)t * S, weights->data + (size_t)b * S, (size_t)S * sizeof(double));
                const double *row = logits->data + (size_t)b * V;
                int best = argmax_token(row, V);
                if (best == TS_EOS || t == max_len) {  // at the limit the last row is kept, the token is not
                    h->ended = best == TS_EOS;
                    if (h->ended) h->score += log_prob(row, V, best);
                    done[b] = 1;
                    remaining--;
                    continue;
                }
                h->score += log_prob(row, V, best);
                h->tokens[h->len++] = best;
                inputs[b] = best;
            }
        }
    }
    free(done);
    step_arenas_free(&sa);
    ts_set_grad_enabled(ctx, grad_before);
    if (rc) {
        for (int b = 0; b < B; b++) ts_hypothesis_free(&out[b]);
        return rc == TS_ERR_ARENA && !ctx->status ? TS_ERR_ARENA : (ctx->status ? ctx->status : rc);
    }
    return TS_OK;
}

// A beam candidate: an entry of the previous step extended by one token.
typedef struct {
    double score;  // total log-probability
    int parent;    // the live entry it extends
    int token;
} beam_candidate;

// Keeps the best `cap` candidates in *list (sorted, best first; earlier
// candidates win ties, so beam 1 picks the same token as argmax).
static void keep_best(beam_candidate *list, int *count, int cap, beam_candidate c) {
    int i = *count;
    if (i == cap && !(c.score > list[cap - 1].score)) return;
    if (i < cap) (*count)++;
    else i = cap - 1;
    while (i > 0 && c.score > list[i - 1].score) {
        list[i] = list[i - 1];
        i--;
    }
    list[i] = c;
}

// A copy of rows `parents` of t (K, ...), as a tensor with no gradient.
static ts_tensor *reorder_rows(ts_ctx *ctx, ts_tensor *t, const int *parents, int K) {
    if (!t) return NULL;
    ts_tensor *copy = ts_node(ctx, TS_OP_LEAF, t->ndim, t->shape, 0, NULL);
    if (!copy) return NULL;
    size_t row = t->size / (size_t)t->shape[0];
    for (int k = 0; k < K; k++) memcpy(copy->data + k * row, t->data + (size_t)parents[k] * row, row * sizeof(double));
    return copy;
}

// The history of a beam search as back-pointers: entry k live at step t has
// attention row att[t][k] (S), and (t > 0) came from entry from[t][k] of step
// t - 1 by appending token tok[t][k]. Each step adds K rows; nothing is copied
// until a hypothesis finishes, so the cost grows with the length, not its cube.
typedef struct {
    int K, S, steps, cap;  // steps recorded, room for cap
    int *from, *tok;       // (cap, K)
    double *att;           // (cap, K, S)
} beam_history;

// Room for step t. TS_OK or TS_ERR_NOMEM.
static int history_reserve(beam_history *h, int t) {
    if (t < h->cap) return TS_OK;
    size_t cap = h->cap ? 2 * (size_t)h->cap : 16, K = (size_t)h->K, S = (size_t)h->S;
    if (cap > (size_t)INT32_MAX || cap * K > SIZE_MAX / sizeof(double) / (S ? S : 1))
        return ts_fail(TS_ERR_NOMEM, "beam: a history of %zu steps overflows", cap);
    int *from = realloc(h->from, cap * K * sizeof(int));
    if (from) h->from = from;
    int *tok = from ? realloc(h->tok, cap * K * sizeof(int)) : NULL;
    if (tok) h->tok = tok;
    double *att = tok ? realloc(h->att, cap * K * S * sizeof(double)) : NULL;
    if (!att) return ts_fail(TS_ERR_NOMEM, "beam: cannot keep %zu steps of %zu x %zu attention weights", cap, K, S);
    h->att = att;
    h->cap = (int)cap;
    return TS_OK;
}

static void history_free(beam_history *h) {
    free(h->from);
    free(h->tok);
    free(h->att);
}

// Fills out (allocated for max_len) with the first len tokens and len + 1
// attention rows of entry k live at step t = len, following the back-pointers.
static void history_trace(const beam_history *h, int k, int len, ts_hypothesis *out) {
    size_t K = (size_t)h->K, S = (size_t)h->S;
    for (int t = len; t >= 0; t--) {
        memcpy(out->attention + (size_t)t * S, h->att + ((size_t)t * K + (size_t)k) * S, S * sizeof(double));
        if (t == 0) break;
        out->tokens[t - 1] = h->tok[(size_t)t * K + (size_t)k];
        k = h->from[(size_t)t * K + (size_t)k];
    }
}

double ts_length_penalized(double log_prob, int tokens, const ts_length_penalty *lp) {
    if (!lp || !lp->gnmt) return log_prob / (tokens + 1);
    return log_prob / pow((5.0 + tokens + 1) / 6.0, lp->alpha);
}

int ts_seq2seq_beam(ts_seq2seq *m, ts_ctx *ctx, const int *src, int n, int beam, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out) {
    int V = m->cfg.tgt_vocab, S = n, K = beam;
    if (K < 1 || K > 1000 || max_len < 1 || n < 1) return ts_fail(TS_ERR_ARG, "beam: width %d, max_len %d, length %d", K, max_len, n);
    if (lp && lp->gnmt && !(lp->alpha >= 0 && lp->alpha <= 100))
        return ts_fail(TS_ERR_ARG, "beam: length penalty %g outside [0, 100]", lp->alpha);
    int grad_before = ts_set_grad_enabled(ctx, 0);
    memset(out, 0, sizeof *out);
    beam_history hist = {.K = K, .S = S};
    step_arenas sa = {{NULL, NULL}};
    double *score = calloc((size_t)K, sizeof(double));  // (K) of the live entries
    beam_candidate *cands = malloc((size_t)2 * K * sizeof *cands);
    int *parents = malloc((size_t)K * sizeof(int));
    int *src_k = malloc((size_t)n * K * sizeof(int)), *len_k = malloc((size_t)K * sizeof(int));
    int rc = score && cands && parents && src_k && len_k ? TS_OK : ts_fail(TS_ERR_NOMEM, "beam: out of memory");
    if (!rc) rc = step_arenas_new(&sa, step_guess(m, K, S));
    double best_final = -INFINITY;
    int finished = 0;
    // The source repeated K times: one batch row per live hypothesis.
    for (int t = 0; !rc && t < n; t++)
        for (int k = 0; k < K; k++) src_k[(size_t)t * K + k] = src[t];
    for (int k = 0; !rc && k < K; k++) len_k[k] = n;
    ts_encoded enc;
    ts_batch_view bv = {.B = K, .S = n, .T = 0, .src = src_k, .src_len = len_k};
    if (!rc) rc = ts_seq2seq_encode(m, ctx, &bv, &enc);
    int *inputs = rc ? NULL : ts_arena_alloc(ctx->arena, (size_t)K * sizeof(int));
    if (!rc && !inputs) rc = TS_ERR_ARENA;
    ts_decoder_state st;
    if (!rc) ts_decoder_start(m, ctx, &enc, &st);
    int alive = 1;
    for (int k = 0; k < K && inputs; k++) inputs[k] = TS_SOS;
    for (int t = 0; !rc && t <= max_len && alive > 0; t++) {
        ts_tensor *weights;
        ts_tensor *logits = decode_step(m, ctx, &sa, t, &enc, &st, t > 0 ? parents : NULL, inputs, K, &weights, &rc);
        if (!logits || (rc = history_reserve(&hist, t))) break;
        hist.steps = t + 1;
        double *att_t = hist.att + (size_t)t * K * S;  // (K, S)
        if (weights) memcpy(att_t, weights->data, (size_t)alive * S * sizeof(double));
        else memset(att_t, 0, (size_t)alive * S * sizeof(double));
        int count = 0;
        for (int k = 0; k < alive; k++) {
            double *row = logits->data + (size_t)k * V;
            ts_log_softmax_rows(row, row, 1, (size_t)V);
            for (int v = TS_EOS; v < V; v++)  // never <pad> or <sos>
                keep_best(cands, &count, 2 * K, (beam_candidate){score[k] + row[v], k, v});
        }
        int next_alive = 0;
        int *from_next = NULL, *tok_next = NULL;  // step t + 1's back-pointers, once reserved
        for (int i = 0; i < count; i++) {
            beam_candidate c = cands[i];
            // As in fairseq: an <eos> finishes a hypothesis only when it ranks
            // among the best K; beam 1 then stops exactly where greedy does.
            if ((c.token == TS_EOS && i < K) || t == max_len) {
                // Finished (or cut at the limit, then without its token).
                int len = t, ended = c.token == TS_EOS;
                finished++;
                double final = ts_length_penalized(ended ? c.score : score[c.parent], len, lp);
                if (final > best_final) {
                    best_final = final;
                    ts_hypothesis_free(out);
                    if ((rc = alloc_hypothesis(out, max_len, S))) break;
                    history_trace(&hist, c.parent, len, out);
                    out->len = len;
                    out->score = final;
                    out->ended = ended;
                }
                if (t == max_len) break;
                continue;
            }
            if (c.token == TS_EOS || next_alive == K) continue;
            if (!from_next) {
                if ((rc = history_reserve(&hist, t + 1))) break;
                from_next = hist.from + (size_t)(t + 1) * K;
                tok_next = hist.tok + (size_t)(t + 1) * K;
            }
            parents[next_alive] = c.parent;
            from_next[next_alive] = c.parent;
            tok_next[next_alive] = c.token;
            score[next_alive] = c.score;  // safe: parents are read from cands, not score, from here on
            inputs[next_alive] = c.token;
            next_alive++;
        }
        if (rc) break;
        // Stop once K hypotheses have finished: width 1 stops at its first
        // <eos>, exactly like greedy.
        alive = finished >= K ? 0 : next_alive;
        if (alive == 0) break;
        for (int k = alive; k < K; k++) parents[k] = parents[0];  // the next step reorders the state by these
    }
    if (!rc && !out->tokens) rc = ts_fail(TS_ERR_ARG, "beam: no hypothesis");
    history_free(&hist);
    step_arenas_free(&sa);
    free(score);
    free(cands);
    free(parents);
    free(src_k);
    free(len_k);
    ts_set_grad_enabled(ctx, grad_before);
    if (rc) ts_hypothesis_free(out);
    return rc;
}
