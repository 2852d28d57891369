// The Transformer encoder-decoder of docs/models.md ("Transformer"):
// exactly torch.nn.Transformer(d_model D, nhead H, L encoder and L decoder
// layers, dim_feedforward F, relu, layer_norm_eps 1e-5, batch_first,
// norm_first) between embeddings scaled by sqrt(D) plus sinusoidal positions
// and an output Linear(D, V) with bias, as ../shared/bench/torch_ref.py
// --arch transformer builds it. Every parameter is named by that module's
// state_dict key, so an export loads into it with load_state_dict.
//
// Architecture "transformer", the second row of the model table
// (models/model.h): ts_seq2seq_new with cfg.arch TS_ARCH_TRANSFORMER makes
// one, its `layers` a ts_transformer. Each layer is a function of its own
// parameters and sizes (llm.c style); their ops (ts_layer_norm, ts_mha,
// ts_linear, ...) record the backward.
//
// Legend: B batch, S source length, T target length (with <eos>), D model
// width, H heads, Dh = D / H, F feed-forward width, L layers per stack,
// V vocabulary. Batches arrive time-major (ids (S, B), (T, B)); inside, rows
// are batch-major: (B*S, D) is sentence b's positions at rows b*S .. b*S+S-1.
#ifndef TS_MODELS_TRANSFORMER_H
#define TS_MODELS_TRANSFORMER_H

#include "models/seq2seq.h"

enum { TS_TRANSFORMER_MAX_LAYERS = TS_MODEL_MAX_LAYERS };  // parameters: 8 + 30 per layer

// The sizes the layers read (from ts_model_config).
typedef struct {
    int src_vocab, tgt_vocab;  // including the four special tokens
    int d_model, heads, layers, ff;
} ts_transformer_config;

typedef struct {
    ts_tensor *weight, *bias;  // (out, in), (out): torch.nn.Linear
} ts_linear_params;

typedef struct {
    ts_tensor *weight, *bias;  // (D), (D): torch.nn.LayerNorm's gamma and beta
} ts_norm_params;

typedef struct {
    ts_tensor *in_proj_weight, *in_proj_bias;  // (3D, D), (3D): rows [q; k; v], packed as torch's
    ts_linear_params out_proj;                 // (D, D), (D)
} ts_attention_params;

typedef struct {
    ts_attention_params self_attn;
    ts_linear_params linear1, linear2;  // (F, D), (D, F)
    ts_norm_params norm1, norm2;        // before self-attention, before the feed-forward
} ts_encoder_layer;

typedef struct {
    ts_attention_params self_attn, multihead_attn;  // causal self-attention, cross-attention
    ts_linear_params linear1, linear2;
    ts_norm_params norm1, norm2, norm3;  // before each of the three blocks
} ts_decoder_layer;

// The layers of a Transformer (ts_seq2seq.layers); the tensors are the
// model's registered parameters, by their state_dict keys.
typedef struct ts_transformer {
    ts_transformer_config cfg;
    ts_tensor *src_embedding, *tgt_embedding;  // (Vs, D), (Vt, D): encoder.embedding.weight, decoder.embedding.weight
    ts_encoder_layer enc[TS_TRANSFORMER_MAX_LAYERS];
    ts_norm_params enc_norm;  // transformer.encoder.norm
    ts_decoder_layer dec[TS_TRANSFORMER_MAX_LAYERS];
    ts_norm_params dec_norm;  // transformer.decoder.norm
    ts_linear_params out;     // decoder.out: (Vt, D), (Vt)
} ts_transformer;

// The model table's row (models/architectures.c). Its parameters are initialised as
// torch.nn.Transformer initialises itself: Xavier-uniform matrices inside
// the stacks, zero attention biases, U(-1/sqrt(in), 1/sqrt(in)) feed-forward
// biases, LayerNorm gamma 1 and beta 0, torch.nn.Linear's default for
// decoder.out; the embeddings are N(0, 1/sqrt(D)) (the <pad> rows 0), as
// Vaswani et al. and fairseq initialise them, not torch's N(0, 1): see
// TS_INIT_EMBEDDING_SCALED. Its loss trains with
// teacher forcing 1 only (a tf below 1 fails naming --tf).
extern const ts_model_kind ts_transformer_kind;  // models/transformer_row.c

// The row's parameters: `layers` (a ts_transformer) sized from c, its
// parameter specs written to out (ts_model_kind.specs).
int ts_transformer_specs(void *layers, const ts_model_config *c, ts_param_spec *out);

// The attention nodes of one pass, for inspection: each a ts_mha output
// whose ts_mha_weights are (B, H, T_query, T_key). Entries past cfg.layers
// stay NULL; so do the encoder's when only the decoder ran.
typedef struct {
    ts_tensor *enc_self[TS_TRANSFORMER_MAX_LAYERS];  // (B, H, S, S)
    ts_tensor *dec_self[TS_TRANSFORMER_MAX_LAYERS];  // (B, H, T, T), causal
    ts_tensor *cross[TS_TRANSFORMER_MAX_LAYERS];     // (B, H, T, S)
    // What each layer's cross-attention read, so that one head's weights can
    // be recomputed on the tape (guided alignment): the queries (B, T, D)
    // and the source's [keys | values] (B, S, 2D).
    ts_tensor *cross_queries[TS_TRANSFORMER_MAX_LAYERS];
    ts_tensor *cross_kv[TS_TRANSFORMER_MAX_LAYERS];
} ts_transformer_attention;

// What the encoder hands the decoder; lives in the step arena.
typedef struct {
    int B, S;
    ts_tensor *memory;  // (B*S, D): the encoder stack's output after its final norm
    double *mask;       // (B, S): 1 for real source positions, 0 for padding
} ts_transformer_memory;

// Encodes the batch's sources (tgt fields unused). With dropout p > 0
// (training) masks come from rng. attn (may be NULL) receives the encoder's
// self-attention nodes. TS_OK or the failure (also in ctx->status): ids
// outside the vocabulary, a length outside 1..S, a full arena.
int ts_transformer_encode(const ts_transformer *m, ts_ctx *ctx, const ts_batch_view *batch, double p, gsl_rng *rng,
                          ts_transformer_memory *out, ts_transformer_attention *attn);

// The decoder stack over tokens (B, T) batch-major (<sos> first), every
// position at once under the causal mask: returns (B*T, D) after the final
// norm, before decoder.out. NULL on failure.
ts_tensor *ts_transformer_decode(const ts_transformer *m, ts_ctx *ctx, const ts_transformer_memory *mem,
                                 const int *tokens, int T, double p, gsl_rng *rng, ts_transformer_attention *attn);

// The training loss of a batch in one teacher-forced pass: mean
// cross-entropy over non-pad targets of tgt_out, with reg's dropout (on
// the embeddings, every residual branch, the feed-forward's hidden layer and
// the attention weights, where torch.nn.Transformer applies it)
// and label smoothing (reg may be NULL: the plain loss). *n_tokens (may be
// NULL) receives the non-pad target count. NULL on failure.
// tap (may be NULL) receives the pass's cross-attention as it asks
// (models/model.h), without changing the loss or the draws.
ts_tensor *ts_transformer_loss(const ts_transformer *m, ts_ctx *ctx, const ts_batch_view *batch, gsl_rng *rng,
                               const ts_regularizer *reg, ts_attention_tap *tap, int *n_tokens);

// Head k's cross-attention weights of decoder layer l as the pass that
// filled attn computed them, (B, T, S), recomputed from its queries and keys
// by differentiable ops (slice, bmm, scale, masked softmax), so a loss on
// them trains the model; the values equal ts_mha_weights' (before dropout).
// key_mask (B, S). NULL on failure.
ts_tensor *ts_transformer_cross_head(const ts_transformer *m, ts_ctx *ctx, const ts_transformer_attention *attn,
                                     const double *key_mask, int l, int k);

// ---- incremental decoding (a key/value cache per decoder layer) ----

// What decoding reads of a batch's sources: their padding mask and each
// decoder layer's cross-attention keys and values, computed once by one
// product (the k and v blocks of the in-projection), side by side in a row.
// Its B decoding rows read them in runs of per_source rows that share one
// source row (a beam's K hypotheses of a sentence; 1 otherwise): Bs = B /
// per_source source rows.
typedef struct {
    int B, S, per_source;
    double *mask;                                      // (Bs, S)
    ts_tensor *cross_kv[TS_TRANSFORMER_MAX_LAYERS];    // (Bs*S, 2D): [keys | values]
} ts_transformer_source;

// After t decoded positions: each decoder layer's self-attention keys and
// values of positions 0 .. t-1 side by side, (B, t, 2D) (NULL at t = 0).
typedef struct {
    const ts_transformer_source *src;
    int t;
    ts_tensor *kv[TS_TRANSFORMER_MAX_LAYERS];  // (B, t, 2D): [keys | values]
} ts_transformer_state;

// Encodes the batch's sources (no dropout) into *out, in ctx's arena. TS_OK or the failure.
int ts_transformer_prepare(const ts_transformer *m, ts_ctx *ctx, const ts_batch_view *batch,
                           ts_transformer_source *out);

// The state before the first position (in ctx's arena); NULL on failure.
ts_transformer_state *ts_transformer_start(ts_ctx *ctx, const ts_transformer_source *src);

// One output position for tokens (B) (<sos> first): returns the logits
// (B, Vt), equal to the full decoder's at that position; *next gets the
// state after it (a new one in ctx's arena: `state` is only read, so a step
// can be redone from it). *weights (may be NULL) gets the last layer's
// cross-attention, the mean of its heads (B, S); attn (may be NULL) every
// layer's nodes of this position. NULL on failure.
ts_tensor *ts_transformer_step(const ts_transformer *m, ts_ctx *ctx, const ts_transformer_state *state,
                               const int *tokens, ts_transformer_state **next, ts_tensor **weights,
                               ts_transformer_attention *attn);

// A state of n rows, row k being row rows[k] of state (new, in ctx's arena).
// group g >= 1 gathers the source's rows too (a finished sentence leaves the
// batch), one per run of g rows, which share it (reorder of models/model.h);
// group 0 keeps the source (beam search moves rows only within a sentence's
// block, so n must equal its rows). NULL on failure.
ts_transformer_state *ts_transformer_reorder(const ts_transformer *m, ts_ctx *ctx, const ts_transformer_state *state,
                                             const int *rows, int n, int group);

// PE (n, D) for positions first .. first + n - 1: PE[p, 2i] = sin(p / 10000^(2i/D)),
// PE[p, 2i+1] = cos(p / 10000^(2i/D)). Any position: there is no table to run past.
void ts_transformer_positions(double *pe, int first, int n, int D);

#endif
