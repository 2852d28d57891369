// The tiny batch the whole model's gradient check runs on (see gradcheck.h).
#include "models/gradcheck.h"

#include "models/fields.h"

// Three sentences, time-major: source lengths 5, 3, 2; targets of 3, 5 and 1 words.
enum { B = 3, S = 5, T = 6 };
static const int batch_src[S * B] = {4, 5, 6, 5, 4, 5, 6, 6, 0, 4, 0, 0, 5, 0, 0};
static const int batch_src_len[B] = {5, 3, 2};
static const int batch_tgt_in[T * B] = {1, 1, 1, 4, 5, 7, 5, 6, 0, 6, 7, 0, 0, 4, 0, 0, 5, 0};
static const int batch_tgt_out[T * B] = {4, 5, 7, 5, 6, 2, 6, 7, 0, 2, 4, 0, 0, 5, 0, 0, 2, 0};

ts_model_config ts_gradcheck_config(ts_model_arch arch, ts_attn_type attn, ts_decoder_type decoder,
                                    int bidirectional, ts_cell_type cell) {
    // Vocabularies of 7 and 8, embedding 3, hidden 4, the architecture's own
    // sizes its defaults for those (a Transformer: d_model 4, 2 heads, 2
    // layers per stack, feed-forward 16).
    ts_model_config cfg = {.arch = arch, .src_vocab = 7, .tgt_vocab = 8, .emb = 3, .hidden = 4};
    ts_model_config_default_sizes(&cfg);
    // The GRU's choices, where the architecture has them.
    if (ts_model_field_applies(&ts_model_fields[TS_FIELD_ATTN], arch)) cfg.attn = attn;
    if (ts_model_field_applies(&ts_model_fields[TS_FIELD_DECODER], arch)) cfg.decoder = decoder;
    if (ts_model_field_applies(&ts_model_fields[TS_FIELD_BIDIRECTIONAL], arch)) cfg.bidirectional = bidirectional;
    if (ts_model_field_applies(&ts_model_fields[TS_FIELD_CELL], arch)) cfg.cell = cell;
    return cfg;
}

typedef struct {
    ts_seq2seq *model;
    ts_batch_view batch;
    double tf;
    gsl_rng *rng;
} check_case;

static ts_tensor *loss_of(ts_ctx *ctx, void *user) {
    check_case *c = user;
    gsl_rng_set(c->rng, 5);  // the same teacher-forcing draws at every evaluation
    return ts_seq2seq_loss(c->model, ctx, &c->batch, c->tf, c->rng, NULL, NULL);
}

int ts_seq2seq_gradcheck(ts_seq2seq *m, ts_ctx *ctx, double tf, gsl_rng *rng, const ts_gradcheck_opts *opts,
                         ts_gradcheck_result *results) {
    check_case c = {m, {B, S, T, batch_src, batch_src_len, batch_tgt_in, batch_tgt_out, NULL}, tf, rng};
    return ts_gradcheck(ctx, loss_of, &c, m->params.items, m->params.count, opts, results);
}
