// Every attention head of a Transformer's translation, for inspection: the
// cross-attention, the encoder's and the decoder's self-attention of every
// layer and head, and each layer's head mean. `tinyseq attend` draws them,
// `tinyseq eval --align` scores each head's alignment, a run's report shows
// them per epoch.
//
// L = layers per stack, H = heads, S = source tokens, T = output tokens + 1
// (the <eos> step: decoder positions <sos> y_1 .. y_len).
//
// One teacher-forced pass over the decoded output gives every position's
// weights at once; a position's attention depends only on the source and the
// tokens before it, so this equals what the key/value-cache steps of the
// search computed (tests/test_heads.c checks both to 1e-12).
#ifndef TS_INFER_HEADS_H
#define TS_INFER_HEADS_H

#include "infer/load.h"
#include "infer/translate.h"
#include "models/seq2seq.h"
#include "viz/render.h"  // ts_json_heads: the struct only (infer links no viz code)

// The Transformer's three attentions: one row each of ts_head_views.
enum ts_head_view { TS_VIEW_CROSS, TS_VIEW_ENC, TS_VIEW_DEC, TS_VIEW_COUNT };

typedef struct {
    const char *name;   // "cross", "enc", "dec": attend's --self values, the JSON's keys
    const char *title;  // "cross-attention", ... for figures and messages
    int rows_target;    // rows are output positions (1) or source words (0)
    int cols_target;    // columns likewise
} ts_head_view_info;

extern const ts_head_view_info ts_head_views[TS_VIEW_COUNT];

// The view named `name` ("cross", "enc", "dec"), or -1.
int ts_head_view_parse(const char *name);

typedef struct {
    const char *arch;  // the model's architecture, as titles name it ("transformer")
    int layers, heads, S, T;
    double *weights[TS_VIEW_COUNT];  // (L, H, rows, cols): cross (T, S), enc (S, S), dec (T, T, causal)
    double *mean[TS_VIEW_COUNT];     // (L, rows, cols): each layer's mean over its heads
} ts_heads;

// 1 when model m has heads to inspect (its row has every_head: a Transformer), else 0.
int ts_heads_available(const ts_seq2seq *m);

// Every head of model m (one with heads: ts_heads_available) translating
// source ids src[0..S) into tokens[0..len) (without <eos>). Runs in ctx's
// arena (reset before and after; the tape off) and copies the weights out:
// *out owns malloc'd buffers (ts_heads_free). TS_OK; TS_ERR_ARG (no heads,
// S < 1, len < 0), TS_ERR_ARENA (a bigger arena helps), TS_ERR_NOMEM, the
// model's errors (ids outside the vocabulary); *out is then zeroed.
int ts_heads_compute(const ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tokens, int len,
                     ts_heads *out);

void ts_heads_free(ts_heads *h);

// ts_heads_compute for translation h of the source words[0..S) as attend
// labels them (infer/translate.h: a "<unk>:word" label, or any word t's
// source vocabulary lacks, is read as <unk>, as the search read it).
// Errors as ts_heads_compute, and TS_ERR_NOMEM.
int ts_heads_of_translation(const ts_translator *t, ts_ctx *ctx, const char *const *words, int S,
                            const ts_hypothesis *h, ts_heads *out);

// h over pieces merged into *out over words (attend --words), every view of
// every layer and head and the means, by ts_attn_merge's rule: a row group's
// rows averaged (each row stays a distribution), a column group's columns
// summed (the weight on a word is that on its pieces); self-attention groups
// both axes. src_group (h->S) names the word of each source piece, 0..n_src-1;
// tgt_group (h->T) the group of each output step, 0..n_tgt-1, the last (the
// <eos> step) a group of its own; the decoder's inputs (<sos> y_1 ..) group
// as the outputs they feed back, <sos> alone. So out->S = n_src, out->T =
// n_tgt. *out owns its buffers (ts_heads_free). TS_OK or TS_ERR_NOMEM (*out
// zeroed).
int ts_heads_merge(const ts_heads *h, const int32_t *src_group, int n_src, const int32_t *tgt_group, int n_tgt,
                   ts_heads *out);

// A subword translation's attention over words (attend --words,
// tinyseq_attend's words): the pieces of each word merged by ts_attn_merge's
// rule (rows averaged, columns summed) and labelled with the word the
// subword model decodes from them; <eos> stays a row of its own.
typedef struct {
    int T, S;              // the merged rows (output words, then <eos>) and columns (source words)
    double *weights;       // (T, S)
    const char **target;   // (T) row labels: words[..] or the <eos> row's own label
    const char **source;   // (S) column labels: words[..]
    char **words;          // the decoded words the labels point to, n_words of them (owned)
    int n_words;
} ts_word_attention;

// Merges weights (T, S) over t's pieces, labelled by *l (T = the
// hypothesis's length + 1), into *out; heads, when it has layers, is
// replaced by its merge (ts_heads_merge) over the same groups. t must be a
// subword model (t->src_sw and t->tgt_sw). *out owns its buffers
// (ts_word_attention_free; *l's strings are not copied: the <eos> label
// points into it). TS_OK, TS_ERR_NOMEM or the subword decoder's error (*out
// zeroed, heads unchanged).
int ts_attention_words(const ts_translator *t, const double *weights, int T, int S, const ts_attention_labels *l,
                       ts_heads *heads, ts_word_attention *out);
void ts_word_attention_free(ts_word_attention *w);

// Every view of h as attend's JSON writes it (viz/render.h), in
// views[TS_VIEW_COUNT] (which the result points to).
ts_json_heads ts_heads_json(const ts_heads *h, ts_json_head_view *views);

// The rows and columns of view v's matrices.
int ts_heads_rows(const ts_heads *h, enum ts_head_view v);
int ts_heads_cols(const ts_heads *h, enum ts_head_view v);

// View v's matrix (rows, cols) of layer l, head k; k = -1: the layer's head mean.
const double *ts_heads_matrix(const ts_heads *h, enum ts_head_view v, int l, int k);

// Attention rollout (Abnar & Zuidema 2020) of self-attention view v (enc or
// dec, whose rows and columns are the same positions) into out (L, R, R):
// out's layer l is A'_l A'_(l-1) .. A'_0, A'_k = 0.5 (M_k + I) with M_k
// layer k's head mean (heads averaged, as the paper does), the identity
// standing for the residual connection around each attention. Each A'_k's
// rows sum to 1, so each product's do too. TS_OK, TS_ERR_ARG (a cross view).
int ts_heads_rollout(const ts_heads *h, enum ts_head_view v, double *out);

#endif
