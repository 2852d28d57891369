// Scoring translations on plain arrays: corpus BLEU-4 (NLTK's, and
// sacreBLEU's on text as written), chrF, perplexity and exact match. Nothing
// here knows about models or tensors; alignments and attention analysis are
// infer/alignment.h.
#ifndef TS_SCORE_H
#define TS_SCORE_H

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

#endif
