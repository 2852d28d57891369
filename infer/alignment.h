// Alignments and attention analysis on plain arrays: alignment error rate
// (AER), argmax/diagonal alignments and attention diagnostics (entropy,
// padding mass, pieces merged into words, agreement with attributions).
// Nothing here knows about models or tensors; scoring translations (BLEU,
// chrF) is infer/score.h.
//
// T = target length (rows of an attention matrix), S = source length (columns)
// weights: (T, S) row-major doubles; row j is the distribution of target
// position j over source positions i. Links are (source i, target j) pairs,
// the order Pharaoh files use ("i-j").
#ifndef TS_ALIGNMENT_H
#define TS_ALIGNMENT_H

#include <stddef.h>
#include <stdint.h>


// ---- alignments ------------------------------------------------------------

// An alignment link (source position i, target position j) and Pharaoh
// lines: data/align.h, shared with the corpus reader.
#include "data/align.h"

// Alignment error rate of one sentence with sure = possible = gold G:
//   AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|) = 1 - 2|A∩G| / (|A| + |G|).
// Links are sets: duplicates count once. 0 when both are empty (nothing to
// align, nothing predicted); 1 when exactly one is empty.
double ts_aer(const ts_link *pred, size_t n_pred, const ts_link *gold, size_t n_gold);

// Corpus AER sums |A∩G|, |A| and |G| over sentences before dividing, so long
// sentences weigh more (the usual convention, e.g. Och & Ney 2003).
typedef struct {
    int64_t both, pred, gold;  // |A∩G|, |A|, |G| summed
} ts_aer_acc;

void ts_aer_add(ts_aer_acc *acc, const ts_link *pred, size_t n_pred,
                const ts_link *gold, size_t n_gold);

// The corpus AER; 0 for an empty accumulator.
double ts_aer_score(const ts_aer_acc *acc);

// Option for the alignment helpers: drop the last row (the target <eos>) and
// the last column (the source <eos>), where both sequences end with <eos>.
// <eos> attends wherever it likes and is aligned to nothing in gold data.
enum { TS_ALIGN_SKIP_EOS = 1 };

// One link per target row j: (argmax_i weights[j*S + i], j); ties go to the
// lowest i. links needs room for T entries; *n_links gets T (T - 1 with
// TS_ALIGN_SKIP_EOS, and 0 when S or T leave nothing). Returns TS_OK, or
// TS_ERR_NUMERIC naming the first non-finite weight in the rows and columns
// considered (links then holds no result), TS_ERR_ARG for bad flags or for
// sizes above INT32_MAX.
int ts_align_argmax(const double *weights, size_t T, size_t S, int flags,
                    ts_link *links, size_t *n_links);

// The diagonal baseline: target j aligned to source round(j * S / T) (halves
// round up), clamped to S - 1. With TS_ALIGN_SKIP_EOS, T and S are first
// reduced by one. Same output contract as ts_align_argmax.
int ts_align_diagonal(size_t T, size_t S, int flags, ts_link *links, size_t *n_links);

// ---- attention diagnostics -------------------------------------------------

// Mean over the T rows of the row entropy -sum_i w log w, in nats (0 log 0 = 0).
// A uniform row over S positions has entropy log(S). NaN when T == 0.
double ts_attn_entropy(const double *weights, size_t T, size_t S);

// Mean over the T rows of the weight on padding columns, those i with
// src_mask[i] == 0 (the mask convention of data/: 1 real token, 0 padding).
// Attention that ignores its mask shows up here. NaN when T == 0.
double ts_attn_pad_mass(const double *weights, size_t T, size_t S, const double *src_mask);

// Attention over pieces merged into attention over words (attend --words):
// row_group[j] (j < T) and col_group[i] (i < S) name the word of target piece
// j and source piece i, 0..n_rows-1 and 0..n_cols-1, each word's pieces
// consecutive. out (n_rows, n_cols) gets, for target word r and source word
// c, the mean over r's pieces of the summed weight on c's pieces: a word's
// columns add up (the weight on a word is the weight on its pieces) and a
// word's rows average (each stays a distribution), so rows of out sum to 1
// when the rows of weights do.
void ts_attn_merge(const double *weights, size_t T, size_t S, const int32_t *row_group, size_t n_rows,
                   const int32_t *col_group, size_t n_cols, double *out);

// The Jensen-Shannon divergence (nats) between distributions p and q (n):
// 0.5 KL(p || m) + 0.5 KL(q || m) with m = (p + q) / 2, a term with a zero
// probability counting 0. Symmetric, in [0, ln 2], 0 exactly when p = q.
double ts_js_divergence(const double *p, const double *q, size_t n);

// Attention rows beside attribution rows (eval --explain): summed
// Jensen-Shannon divergence, rows whose argmax is the same source word
// (first index wins ties), and rows.
typedef struct {
    double js;
    size_t same, rows;
} ts_agreement_acc;

// Adds rows 0..R-1 of attention a and attribution b, both (R, S) rows of
// distributions.
void ts_agreement_add(ts_agreement_acc *acc, const double *a, const double *b, size_t R, size_t S);

#endif
