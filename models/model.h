// The model interface: what every architecture implements, as one row of
// the table in models/architectures.c (one row per ts_model_arch, like the
// attention table; model.c asks the rows). Training (ts_seq2seq_loss), greedy and beam search of a batch
// (models/search.c) are written once against a row; none of them knows
// which architecture it runs, and the decoding state is opaque to them.
//
// To add an architecture: a ts_model_arch value (models/config.h), its
// folder entry (models/<name>.c with its layers struct and its row), and
// one line in the table in models/architectures.c. docs/design.md, "How to add an
// architecture", has the steps.
//
// Legend: B batch (rows decoding), S source length, T target length (with
// <eos>), V target vocabulary, L the output length limit (max_len).
// Batches are time-major: ids (S, B) and (T, B).
#ifndef TS_MODELS_MODEL_H
#define TS_MODELS_MODEL_H

#include <gsl/gsl_rng.h>

#include "autograd/graph.h"
#include "autograd/params.h"
#include "models/config.h"
#include "models/rows.h"

// One batch, time-major, as a model reads it. Not owned.
typedef struct {
    int B, S, T;
    const int *src;      // (S, B), TS_PAD past each length
    const int *src_len;  // (B), each in 1..S
    const int *tgt_in;   // (T, B): <sos> y_1 .. y_n, then TS_PAD (may be NULL for decoding)
    const int *tgt_out;  // (T, B): y_1 .. y_n <eos>, then TS_PAD
    ts_tensor *src_embedded;  // (S*B, E) time-major, the model's dtype, or NULL: the encoder
                              // reads these rows instead of looking src up in its embedding
                              // table (src still gives the lengths); attributions
                              // (models/explain.c) differentiate through them
} ts_batch_view;

// What training adds to the loss (docs/models.md, "Regularisation"); a NULL
// or zero regularizer is the plain loss that evaluation uses.
typedef struct {
    double dropout;          // p in [0, 1): inverted dropout on the source and target
                             // embeddings, the encoder memory and the decoder's
                             // pre-output layer, masks drawn from the loss's rng
    double label_smoothing;  // e in [0, 1): targets (1 - e) onehot + e / V (PyTorch's)
} ts_regularizer;

// The cross-attention of one teacher-forced pass, as a model's loss hands it
// out (ts_seq2seq_loss_tapped, infer/forced.h): every head's weights to read
// (eval --align's aer_forced=, attributions beside attention), and one head
// as a tensor on the tape for guided alignment. A model has `layers` layers
// of `heads` heads of cross-attention (ts_model_kind.cross_heads): the GRU
// one of one, a Transformer cfg.layers of cfg.heads. Row t of a sentence's
// (T, S) weights is the attention of the step that predicts tgt_out[t]
// (y_{t+1}, then <eos>), over the S source positions (padding weighs 0).
typedef struct {
    int layer, head;  // in: the head `chosen` is (layer -1: none wanted)
    int every;        // in: 1 to fill every_layer
    ts_tensor *chosen;  // out: (B, T, S) head (layer, head)'s weights, each row a softmax,
                        // differentiable (on the tape when gradients are on); NULL if not asked
    ts_tensor *every_layer[TS_MODEL_MAX_LAYERS];  // out: (B * heads, T, S) each layer's heads (sentence
                                                  // b's head k is b heads + k), to read only (no
                                                  // gradient reaches the model through them)
} ts_attention_tap;

typedef struct ts_model_kind ts_model_kind;

// A model of any architecture: what callers hold (models/seq2seq.h makes,
// frees and trains it; models/search.h decodes with it).
typedef struct ts_seq2seq {
    ts_model_config cfg;
    ts_params params;           // every parameter, by its docs/models.md name
    const ts_model_kind *kind;  // the row of cfg.arch
    void *layers;               // the architecture's layers (kind->layers_size bytes, e.g. ts_rnn),
                                // their parameter slots pointing into params
} ts_seq2seq;

// One row of the table: an architecture.
//
// Every function runs forward on ctx (recording on the tape when gradients
// are enabled) and follows the sticky-error rule: NULL on failure with
// ctx->status saying why, and a NULL input makes a NULL output.
//
// Decoding calls encode once, start once, then step per output position
// with tokens (B): <sos> first, then each row's previous choice. Between
// steps the search may call reorder to change which rows decode on. The
// memory and the states are the architecture's own types, opaque to search.
// The state rules that let the search run each step in a scratch arena
// (models/search.c):
//   - a state lives in ctx->arena of the call that made it, and stays
//     readable until the step after next;
//   - step and reorder never change what the state they are given reads
//     (they make a new one), so a step can run again from the same state;
//   - what must outlive the search's steps (computed once from the source)
//     encode or start allocates in its own ctx->arena, the caller's. A state
//     that grows, like the Transformer's per-layer key/value cache, is
//     copied one position longer by each step into that step's arena
//     (models/transformer.c; docs/design.md says why).
struct ts_model_kind {
    const char *name;       // the user-visible name: flags, checkpoints ("gru")
    size_t layers_size;     // bytes of the layers struct ts_seq2seq.layers points to
    int (*specs)(void *layers, const ts_model_config *cfg, ts_param_spec *out);
                            // declares the parameters for a checked cfg into out (room
                            // for TS_SEQ2SEQ_MAX_PARAMS) in registration order, their
                            // slots in layers; returns how many
    ts_tensor *(*loss)(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, double tf, gsl_rng *rng,
                       const ts_regularizer *reg, ts_attention_tap *tap);
                            // the training loss of a batch whose targets ts_seq2seq_loss
                            // has checked (reg never NULL): see there. tap (may be NULL)
                            // receives the pass's cross-attention as it asks; asking changes
                            // neither the loss nor the random draws
    int (*cross_heads)(const ts_model_config *cfg, int *layers);
                            // the heads per layer of cross-attention a tap can give, and
                            // in *layers how many layers; 0 (and 0 layers) without attention.
                            // What is derived from it: whether step gives attention rows
                            // (ts_model_attends) and the layer guided alignment supervises
                            // by default (ts_model_guided_layer)
    void *(*encode)(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch);
                            // the memory of the batch's sources (tgt fields unused), all
                            // the decoder reads of them, for decoding (no dropout)
    void *(*start)(const ts_seq2seq *m, ts_ctx *ctx, void *memory, int B, int max_len);
                            // the state before the first step, B rows of memory; the
                            // steps will write positions 0..max_len at most
    ts_tensor *(*step)(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *tokens, int B,
                       void **next, ts_tensor **weights);
                            // one output position for tokens (B): the logits (B, V), the
                            // state after it in *next, and in *weights (B, S) the
                            // attention row each hypothesis records (attend, eval
                            // --align), or NULL when the model has none
    void *(*reorder)(const ts_seq2seq *m, ts_ctx *ctx, const void *state, const int *rows, int n, int group);
                            // a state of n rows, row k being row rows[k] of state. group 0
                            // keeps what was computed from the source as it is: the caller
                            // guarantees rows[k] and k decode the same sentence (beam search
                            // moves hypotheses only within a sentence's block of K rows), so
                            // n is the state's row count; group g >= 1 gathers the source's
                            // rows too (sentences leave the batch; a beam widens from one row
                            // per sentence to K), one per run of g rows, which the caller
                            // guarantees decode one sentence and which then share it: what
                            // was computed from the source is kept once per sentence, not per
                            // hypothesis (g = K in beam search, 1 in greedy)
    size_t (*step_bytes)(const ts_model_config *cfg, int B, int S);
                            // a first guess at one step's scratch memory for B rows: the first
                            // size of search's scratch arenas, which chain more blocks as needed
    ts_tensor *(*source_embedding)(const ts_seq2seq *m);
                            // the source embedding table (Vs, E) whose rows the encoder
                            // reads: the "input" attributions (models/explain.c) multiply

    // What else users and the tools around the model need to know of the
    // architecture, so that nothing outside its file asks which one it is
    // (its training recipe, the flags --arch NAME changes, is train's:
    // train/options.c, ts_train_arch_recipes):
    void (*describe)(const ts_model_config *cfg, char *buf, size_t n);
                            // the configuration in words, how info, eval, train and gradcheck
                            // name the model ("bahdanau attention, luong decoder, ...")
    const char *(*attention_name)(const ts_model_config *cfg);
                            // what attends, as attend's JSON names it ("bahdanau" for a GRU
                            // model's additive attention); NULL: the architecture's name
    void (*attention_title)(const ts_model_config *cfg, char *buf, size_t n);
                            // what its search's attention rows (ts_hypothesis.attention) are,
                            // for figures' titles: "bahdanau (bahdanau decoder)"
    void (*default_sizes)(ts_model_config *cfg);
                            // its own sizes left at 0 (not given) set to their defaults;
                            // NULL: it has none
    int (*check)(const ts_model_config *cfg, int flags);
                            // what its fields' bounds (ts_model_fields) cannot say, e.g. heads
                            // dividing d_model: TS_OK or TS_ERR_ARG, the message naming train's
                            // flags when `flags` is 1, the fields otherwise; NULL: nothing
    int teacher_forced;     // 1: it trains in one teacher-forced pass (--tf must be 1)
    int (*every_head)(const ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *source, const int *decoder_in, int T,
                      ts_tensor **cross, ts_tensor **enc_self, ts_tensor **dec_self);
                            // one sentence (source->B 1) read teacher-forced on decoder_in (T:
                            // <sos> then the output), without dropout: each layer's attention
                            // nodes, whose ts_mha_weights are (1, H, rows, cols), in cross[l],
                            // enc_self[l] and dec_self[l] (l < cfg.layers), for infer/heads.c
                            // to show every head; TS_OK or ctx's error. NULL: it has no heads
    const char *(*guided_caveat)(const ts_model_config *cfg);
                            // what guided alignment is known to cost this configuration, a
                            // warning train prints; NULL (or a NULL result): nothing known
};

// The row of arch (which must be in range: below ts_arch_names.count).
const ts_model_kind *ts_model_kind_of(ts_model_arch arch);

// Adds kind as a row after the table's, the architecture *arch: flags,
// checkpoints and every tool then find it by its name as they find the
// table's (tests/test_architecture_row.c registers one). Not thread-safe:
// call it before any model is made. kind must outlive its use. TS_OK, or
// TS_ERR_ARG when the name is taken or TS_ARCH_MAX rows exist.
int ts_model_register(const ts_model_kind *kind, ts_model_arch *arch);

// 1 when a model of cfg (checked) records attention rows as it decodes (its
// row's cross_heads are not 0): what attend, eval --align and the run's
// figures ask before they draw.
int ts_model_attends(const ts_model_config *cfg);

// The cross-attention layer guided alignment supervises by default: the
// penultimate of the row's cross_heads layers (Garg et al.; docs/attention.md:
// a Transformer's last layer mostly looks at what the next word needs), or
// the only one.
int ts_model_guided_layer(const ts_model_config *cfg);

// ts_model_kind.cross_heads of cfg's row: heads per layer, *layers layers.
int ts_model_cross_heads(const ts_model_config *cfg, int *layers);

// "gru"; "?" out of range.
const char *ts_arch_name(int arch);

// 1 when --flag sets a field of models of arch (or no model field): --attn,
// --decoder, --bidirectional and --emb are the GRU's, --heads the
// Transformer's (ts_model_fields' archs, or flag_archs where they differ).
int ts_model_flag_applies(ts_model_arch arch, const char *flag);

// TS_OK when each of the flags given[0..n) (names without "--"; NULL entries
// skipped) applies to arch and teacher forcing tf suits it (a row marked
// teacher_forced needs 1), else TS_ERR_ARG naming the flag.
int ts_model_check_flags(ts_model_arch arch, const char *const *given, int n, double tf);

// What a search's attention rows (ts_hypothesis.attention) are, for titles:
// "bahdanau (bahdanau decoder)", or "transformer cross-attention, layer 1
// (the last of 2), mean of 4 heads" (the row's attention_title). Writes at
// most n bytes to buf; returns buf.
char *ts_model_attention_title(const ts_model_config *cfg, char *buf, size_t n);

// What attends in a model of cfg, as attend's JSON names it: its row's
// attention_name, else the architecture's name ("transformer").
const char *ts_model_attention_name(const ts_model_config *cfg);

// The row's description of cfg (checked) into buf (n bytes); returns buf.
char *ts_model_describe(const ts_model_config *cfg, char *buf, size_t n);
// TS_OK and *arch, or TS_ERR_ARG naming the accepted names.
int ts_arch_parse(const char *name, ts_model_arch *arch);

#endif
