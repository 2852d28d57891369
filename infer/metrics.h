// Evaluation metrics on plain arrays: corpus BLEU-4, perplexity, exact match,
// alignment error rate (AER), argmax/diagonal alignments and attention
// diagnostics. Nothing here knows about models or tensors.
//
// T = target length (rows of an attention matrix), S = source length (columns)
// weights: (T, S) row-major doubles; row j is the distribution of target
// position j over source positions i. Links are (source i, target j) pairs,
// the order Pharaoh files use ("i-j").
#ifndef TS_METRICS_H
#define TS_METRICS_H

#include <stddef.h>
#include <stdint.h>

// ---- BLEU ------------------------------------------------------------------
// Corpus BLEU-4 as NLTK 3.8's corpus_bleu computes it with one reference per
// sentence and no smoothing: clipped n-gram counts summed over the corpus,
// uniform weights 0.25, geometric mean, brevity penalty exp(1 - r/c) when the
// hypotheses are not longer than the references (0 when c = 0).
// Two NLTK details are kept so scores agree to 1e-9:
// - a sentence with fewer than n tokens still adds 1 to the order-n
//   denominator (NLTK's max(1, count), meant to avoid 0/0);
// - when some order has no match the score is 0. NLTK returns ~1e-78 there
//   (it takes log(DBL_MIN) for log 0); we return an exact 0.

enum { TS_BLEU_ORDER = 4 };

typedef struct {
    int64_t matches[TS_BLEU_ORDER];  // clipped matches of order n+1
    int64_t totals[TS_BLEU_ORDER];   // hypothesis n-grams of order n+1 (>= 1 per sentence)
    int64_t ngrams[TS_BLEU_ORDER];   // hypothesis n-grams of order n+1 as counted (sacreBLEU's totals)
    int64_t hyp_len, ref_len;        // summed token counts
    int64_t sentences;
} ts_bleu;

// Zeroes an accumulator (a zero-initialised ts_bleu is also ready to use).
void ts_bleu_init(ts_bleu *acc);

// Adds one hypothesis/reference pair of token ids. Either may be empty (length
// 0, pointer may then be NULL). Returns TS_OK, or TS_ERR_NOMEM (acc unchanged)
// when the scratch buffer for sorting n-grams cannot be allocated.
int ts_bleu_add(ts_bleu *acc, const int32_t *hyp, size_t hyp_len,
                const int32_t *ref, size_t ref_len);

// Adds the counts of `from` into `into`, e.g. to sum length buckets.
void ts_bleu_merge(ts_bleu *into, const ts_bleu *from);

// The corpus BLEU of everything added so far, a fraction in [0, 1];
// 0 for an empty accumulator.
double ts_bleu_score(const ts_bleu *acc);

// The lowest n-gram order (1..4) with no clipped match in the corpus, 0 when
// every order has one. Any such order makes BLEU exactly 0: on a corpus of
// very short targets (fewer than 4 tokens) that says nothing about quality.
int ts_bleu_zero_order(const ts_bleu *acc);

// The brevity penalty alone (1 when hyp_len > ref_len, 0 when hyp_len == 0).
double ts_bleu_brevity_penalty(int64_t hyp_len, int64_t ref_len);

// ---- chrF ------------------------------------------------------------------
// Corpus chrF2 as sacreBLEU 2.x computes it by default (CHRF(): character
// 6-grams, no word n-grams, beta 2, whitespace removed, no eps smoothing):
// hypothesis, reference and clipped-match counts of character n-grams of
// orders 1..6 are summed over the corpus; precision and recall are averaged
// over the orders where both sides have n-grams; the score is
// (1 + b^2) P R / (b^2 P + R). sacreBLEU prints 100x this fraction.
// Characters are Unicode code points of UTF-8 text; whitespace is what
// Python's str.isspace() calls whitespace.

enum { TS_CHRF_ORDER = 6, TS_CHRF_BETA = 2 };

typedef struct {
    int64_t hyp[TS_CHRF_ORDER];      // hypothesis character n-grams of order n+1
    int64_t ref[TS_CHRF_ORDER];      // reference character n-grams of order n+1
    int64_t matches[TS_CHRF_ORDER];  // clipped matches of order n+1
    int64_t sentences;
} ts_chrf;

// Adds one hypothesis/reference pair of UTF-8 text (words separated by
// spaces; the spaces do not count). Returns TS_OK, or TS_ERR_NOMEM (acc
// unchanged) when scratch memory cannot be allocated. Bytes that are not
// valid UTF-8 count as one character each.
int ts_chrf_add(ts_chrf *acc, const char *hyp, size_t hyp_len, const char *ref, size_t ref_len);

// The corpus chrF2 of everything added so far, a fraction in [0, 1]; 0 for
// an empty accumulator.
double ts_chrf_score(const ts_chrf *acc);

// ---- BLEU on text as written (sacreBLEU) -------------------------------------
// What sacreBLEU 2.x's BLEU() scores with its defaults, for output that is
// text as people write it (cased, punctuation attached): each segment is
// rstripped and tokenized by '13a' (mteval-v13a's rules, the WMT standard;
// case kept), its tokens are split on whitespace, and the counts go into a
// ts_bleu as above; the score then follows sacreBLEU's compute_bleu with
// smooth_method 'exp', not NLTK's.

// sacreBLEU's '13a' tokenization of the segment text[0..len) (valid UTF-8;
// other bytes pass through as they are): the segment rstripped of
// whitespace, "<skipped>" and "-\n" removed, "\n" read as a space, the
// entities &quot; &amp; &lt; &gt; decoded (in that order), then
//   1. each ASCII symbol of { | } ~ [ \ ] ^ _ ` space ! " # $ % & ( ) * + : ; < = > ? @ /
//      gets spaces around it (not ' - . ,);
//   2. . and , are split from a character before them that is not a digit,
//   3. and from a character after them that is not a digit;
//   4. - is split from a digit before it;
// each rule a left-to-right regular-expression substitution over the
// whole segment, as Python's re.sub makes it (the character a match reads
// after the mark is consumed by it); finally runs of whitespace (Python's
// str.isspace) become one space and the ends are trimmed.
// On TS_OK *tokens is a malloc'd string of the tokens joined by single
// spaces ("" for none) and *n_tokens (may be NULL) their count; TS_ERR_NOMEM
// otherwise (*tokens NULL).
int ts_tokenize_13a(const char *text, size_t len, char **tokens, size_t *n_tokens);

// Adds one hypothesis/reference pair of token strings, each split on
// whitespace (Python's str.split()), to acc: the same counts as ts_bleu_add
// of their tokens. TS_OK or TS_ERR_NOMEM (acc unchanged).
int ts_bleu_add_words(ts_bleu *acc, const char *hyp, const char *ref);

// The corpus BLEU of acc as sacreBLEU's default BLEU() computes it, a
// fraction in [0, 1] (sacreBLEU prints 100 times it): 0 when no n-gram of
// any order matches; else the brevity penalty above times the geometric
// mean of the four precisions over the n-grams really counted (ngrams, not
// NLTK's one per short sentence), where an order with no match counts
// 1 / (2^k ngrams) for the k-th such order ('exp' smoothing) and an order
// with no n-gram at all makes the score 0.
double ts_bleu_score_sacrebleu(const ts_bleu *acc);

// ---- perplexity and exact match --------------------------------------------

// exp(nll_sum / tokens): nll_sum is the summed per-token cross-entropy in nats.
// NaN when tokens == 0; +Inf when the mean overflows exp().
double ts_perplexity(double nll_sum, size_t tokens);

typedef struct {
    int64_t matched, total;  // sentences identical to their reference / all
} ts_exact_match;

// Counts one sentence; it matches when lengths and every id agree.
void ts_exact_match_add(ts_exact_match *acc, const int32_t *hyp, size_t hyp_len,
                        const int32_t *ref, size_t ref_len);

// matched / total; 0 for an empty accumulator.
double ts_exact_match_score(const ts_exact_match *acc);

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
