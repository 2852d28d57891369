// The attention seq2seq model of docs/models.md: embedding, GRU encoder
// (optionally bidirectional), one of six attention functions, a Bahdanau- or
// Luong-style GRU decoder, the output projection and the masked loss; greedy
// and beam-search decoding.
//
// Legend: B batch, S source length, T target length (with <eos>), E embedding,
// H hidden, M memory width (H, or 2H when bidirectional), V vocabulary.
// Batches are time-major: ids (S, B) and (T, B).
#ifndef TS_SEQ2SEQ_H
#define TS_SEQ2SEQ_H

#include <gsl/gsl_rng.h>

#include "autograd/graph.h"
#include "autograd/params.h"
#include "tensor/tokens.h"


typedef enum {
    TS_ATTN_NONE,        // the plain encoder-decoder baseline
    TS_ATTN_DOT,         // q . k
    TS_ATTN_SCALED_DOT,  // q . k / sqrt(H)
    TS_ATTN_GENERAL,     // q . W m
    TS_ATTN_CONCAT,      // v . tanh(W [q; m] + b)
    TS_ATTN_BAHDANAU,    // v . tanh(W_q q + W_k m + b), additive
    TS_ATTN_COUNT
} ts_attn_type;

typedef enum { TS_DECODER_BAHDANAU, TS_DECODER_LUONG, TS_DECODER_COUNT } ts_decoder_type;

// "none", "dot", "scaled-dot", "general", "concat", "bahdanau".
const char *ts_attn_name(ts_attn_type type);
// TS_OK and *type, or TS_ERR_ARG naming the accepted names.
int ts_attn_parse(const char *name, ts_attn_type *type);
const char *ts_decoder_name(ts_decoder_type type);  // "bahdanau", "luong"
int ts_decoder_parse(const char *name, ts_decoder_type *type);

typedef struct {
    int src_vocab, tgt_vocab;  // including the four special tokens
    int emb, hidden;
    ts_attn_type attn;
    ts_decoder_type decoder;
    int bidirectional;
} ts_model_config;

// TS_OK, or TS_ERR_ARG naming the field that is out of range.
int ts_model_config_check(const ts_model_config *cfg);

typedef struct {
    ts_tensor *weight_ih, *weight_hh, *bias_ih, *bias_hh;  // (3H, in), (3H, H), (3H), (3H)
} ts_gru_params;

typedef struct {
    ts_model_config cfg;
    ts_params params;  // every tensor below, by its docs/models.md name
    ts_tensor *enc_embedding;            // (Vs, E)
    ts_gru_params enc_fwd, enc_bwd;      // enc_bwd only when bidirectional
    ts_tensor *bridge_weight, *bridge_bias;  // (H, 2H), (H): bidirectional only
    ts_tensor *attn_key_weight;          // (H, M): general's W, additive W_k, bi dot's K
    ts_tensor *attn_key_bias;            // (H): additive only
    ts_tensor *attn_query_weight;        // (H, H): additive only
    ts_tensor *attn_v;                   // (H): additive only
    ts_tensor *dec_embedding;            // (Vt, E)
    ts_gru_params dec;                   // weight_ih (3H, E + M | E + H | E)
    ts_tensor *combine_weight;           // (H, M + H): Luong with attention
    ts_tensor *out_weight, *out_bias;    // (Vt, H), (Vt)
} ts_seq2seq;

// The name and shape of one parameter, as ts_seq2seq_new registers it.
typedef struct {
    char name[48];
    int ndim;      // 1 or 2
    int shape[2];  // shape[1] is 0 when ndim is 1
} ts_param_shape;

enum { TS_SEQ2SEQ_MAX_PARAMS = 32 };

// What ts_seq2seq_new(cfg) would allocate, without allocating it: fills
// out[0..*n) (room for TS_SEQ2SEQ_MAX_PARAMS) with every parameter's name and
// shape in registration order, so that a loader can check a file against the
// configuration before trusting its sizes. TS_OK, or TS_ERR_ARG for a bad cfg.
int ts_seq2seq_layout(const ts_model_config *cfg, ts_param_shape *out, int *n);

// A model with every parameter registered and initialised from rng:
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases (PyTorch's GRU
// and Linear default), N(0, 1) for embeddings; rng NULL: zeros, for a model
// whose values are loaded next. NULL on a bad config or no
// memory (message in ts_last_error()). Free with ts_seq2seq_free.
ts_seq2seq *ts_seq2seq_new(const ts_model_config *cfg, gsl_rng *rng);
void ts_seq2seq_free(ts_seq2seq *model);

// The number of parameter values ts_seq2seq_new would allocate for cfg
// (ts_params_size of the model), without allocating them.
size_t ts_seq2seq_param_count(const ts_model_config *cfg);

// One batch, time-major, as the model reads it. Not owned.
typedef struct {
    int B, S, T;
    const int *src;      // (S, B), TS_PAD past each length
    const int *src_len;  // (B), each in 1..S
    const int *tgt_in;   // (T, B): <sos> y_1 .. y_n, then TS_PAD (may be NULL for decoding)
    const int *tgt_out;  // (T, B): y_1 .. y_n <eos>, then TS_PAD
} ts_batch_view;

// What the encoder hands the decoder; lives in the step arena.
typedef struct {
    int B, S;
    ts_tensor *memory;   // (B, S, M)
    ts_tensor *keys;     // (B, S, H) or (B, S, M) for plain dot: what queries are scored against
    ts_tensor *init;     // (B, H): the decoder's initial state
    double *mask;        // (B, S): 1 for real source positions, 0 for padding
} ts_encoded;

// Runs the encoder and precomputes the attention keys. NULL on failure (ctx->status).
int ts_seq2seq_encode(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, ts_encoded *out);

// The attention keys of a memory (B, S, M): W m_j (general, additive,
// bidirectional dot) computed for every j at once, or the memory itself.
ts_tensor *ts_attention_keys(ts_seq2seq *m, ts_ctx *ctx, ts_tensor *memory);

// The context (B, M) for queries q (B, H) over enc->keys / enc->memory with
// enc->mask; *weights (may be NULL) receives the weights (B, S).
ts_tensor *ts_attention(ts_seq2seq *m, ts_ctx *ctx, const ts_encoded *enc, ts_tensor *q, ts_tensor **weights);

// The decoder's recurrent state between steps.
typedef struct {
    ts_tensor *state;  // s (B, H)
    ts_tensor *feed;   // h~ (B, H), Luong input feeding; NULL otherwise
} ts_decoder_state;

// s_0 (and h~_0 = 0) for an encoded batch.
void ts_decoder_start(ts_seq2seq *m, ts_ctx *ctx, const ts_encoded *enc, ts_decoder_state *st);

// One decoder step on input embeddings emb (B, E): updates st and returns the
// output o_t (B, H) that the output projection reads. When weights is not
// NULL it receives the attention weights (B, S) (NULL for `none`).
ts_tensor *ts_decoder_step(ts_seq2seq *m, ts_ctx *ctx, const ts_encoded *enc, ts_decoder_state *st,
                           ts_tensor *emb, ts_tensor **weights);

// logits (N, Vt) = o (N, H) W_out^T + b_out
ts_tensor *ts_seq2seq_logits(ts_seq2seq *m, ts_ctx *ctx, ts_tensor *o);

// What training adds to the loss (docs/models.md, "Regularisation"); a NULL
// or zero regularizer is the plain loss that evaluation uses.
typedef struct {
    double dropout;          // p in [0, 1): inverted dropout on the source and target
                             // embeddings, the encoder memory and the decoder's
                             // pre-output layer, masks drawn from the loss's rng
    double label_smoothing;  // e in [0, 1): targets (1 - e) onehot + e / V (PyTorch's)
} ts_regularizer;

// The training loss of a batch: mean cross-entropy over non-pad targets.
// tf is the teacher-forcing ratio in [0, 1]; below 1, each sentence's next
// input is its gold token with probability tf (drawn from rng), else its own
// argmax. reg (may be NULL) adds dropout and label smoothing; dropout masks
// are drawn from rng too, so a run stays reproducible from its seed.
// *n_tokens (may be NULL) receives the number of non-pad targets.
// ts_cross_entropy_nll(loss) is the plain cross-entropy when smoothing.
// NULL on failure (ctx->status says why).
ts_tensor *ts_seq2seq_loss(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, double tf,
                           gsl_rng *rng, const ts_regularizer *reg, int *n_tokens);

// A decoded sentence: tokens (without <eos>) and the attention matrix of
// every output step, <eos> included: (len + 1) rows of S weights (all zero
// for `none`). `ended` is 0 when it stopped at the length limit instead.
typedef struct {
    int len;
    int *tokens;        // (len) malloc'd
    double *attention;  // (len + 1, S) malloc'd, NULL if not requested
    int S;
    double score;       // total log-probability (beam: as ts_length_penalized ranks it)
    int ended;
} ts_hypothesis;

void ts_hypothesis_free(ts_hypothesis *h);

// Greedy decoding of every sentence of the batch (tgt fields unused), at most
// max_len tokens each. out[B] receives malloc'd results. Runs without a
// tape; resets nothing (call ts_ctx_reset after). TS_OK or the failure.
int ts_seq2seq_greedy(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, int max_len,
                      ts_hypothesis *out);

// How beam search ranks finished hypotheses of different lengths. The zero
// value (or NULL) is length normalisation: log-probability / (tokens + 1),
// tokens + 1 counting <eos>. With gnmt set, GNMT's length penalty (Wu et al.
// 2016): log-probability / ((5 + tokens + 1) / 6)^alpha; alpha 0 ranks by the
// raw log-probability (short outputs win), larger alpha favours longer ones.
typedef struct {
    int gnmt;
    double alpha;  // >= 0
} ts_length_penalty;

// The score a finished hypothesis of `tokens` words (without <eos>) and total
// log-probability log_prob is ranked by.
double ts_length_penalized(double log_prob, int tokens, const ts_length_penalty *lp);

// Beam search of width beam for one sentence (src ids, length n). Finished
// hypotheses are ranked by ts_length_penalized (lp NULL: length
// normalisation); beam = 1 is greedy.
int ts_seq2seq_beam(ts_seq2seq *m, ts_ctx *ctx, const int *src, int n, int beam, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out);

#endif
