// Decoding a trained model of any architecture, written once against the
// model interface (models/model.h): hypotheses, greedy and beam search
// (back-pointer history), each a batch of sentences at once. Runs without a
// tape.
//
// Legend: B batch, S source length, K beam width, V target vocabulary.
#ifndef TS_MODELS_SEARCH_H
#define TS_MODELS_SEARCH_H

#include "models/model.h"

// A decoded sentence: tokens (without <eos>) and the attention matrix of
// every output step, <eos> included: (len + 1) rows of S weights (all zero
// for `none`). `ended` is 0 when it stopped at the length limit instead.
typedef struct {
    int len;
    int *tokens;        // (len) malloc'd
    double *attention;  // (len + 1, S) malloc'd, NULL if not requested
    int S;
    double score;       // beam: total log-probability as ts_length_penalized ranks it; greedy: 0
    int ended;
} ts_hypothesis;

// The beam width translate, attend and eval search with unless --beam says
// otherwise (1 is greedy), and the trainer's final dev line: OpenNMT-py's
// and fairseq's default.
#define TS_BEAM_DEFAULT 5
// The widest beam any entry point takes (--beam of translate, attend, eval
// and train; the C API; Python).
#define TS_BEAM_MAX 1000

// The width a beam option of 0..TS_BEAM_MAX asks for, the one meaning every
// entry point gives it: 0 is the default width, TS_BEAM_DEFAULT, as leaving
// the option out is (a zeroed field, Python's None); 1 is greedy; K > 1 beam
// search of width K.
static inline int ts_beam_width(int beam) { return beam == 0 ? TS_BEAM_DEFAULT : beam; }

// The default output length limit for a source of n tokens: 2n + 10 (room
// for a target twice as long, and for short inputs). Every decoder that does
// not get an explicit limit uses this one rule.
static inline int ts_output_limit(int n) { return 2 * n + 10; }

// Frees h's arrays and zeroes it; h NULL is fine.
void ts_hypothesis_free(ts_hypothesis *h);

// Greedy decoding of every sentence of the batch (tgt fields unused), at most
// max_len tokens each. out[B] receives malloc'd results, score 0 (greedy
// takes the argmax of the logits and computes no log-probability;
// ts_seq2seq_beam with width 1 gives the same tokens with their score). A
// sentence that ends leaves the batch: after each step in which some ended,
// the state's remaining rows are copied with their source rows (reorder,
// group 1) into an arena of the search's own. The caller's arena holds the
// encoding; nothing is reset (call ts_ctx_reset after). TS_OK or the failure
// (then out[] holds nothing to free).
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

// Beam search of width beam (1..TS_BEAM_MAX) for every sentence of the batch (tgt
// fields unused) together, sentence b at most max_len[b] tokens (>= 1).
// Finished hypotheses are ranked by ts_length_penalized (lp NULL: length
// normalisation; a GNMT alpha outside [0, 100] is TS_ERR_ARG); beam = 1 is
// greedy. Each sentence gets what searching it alone gives (ts_seq2seq_beam)
// up to the rounding of the batch's matrix products: its tokens, score and
// attention rows of its own src_len[b] columns. The rows decoding are K per
// sentence still searching; a sentence whose search stops leaves the batch
// (its rows and their source rows are dropped, as in greedy). The caller's
// arena holds the encoding; nothing is reset. TS_OK and the best of each in
// out[B] (free each with ts_hypothesis_free), or the failure (then out[]
// holds nothing to free).
int ts_seq2seq_beam_batch(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *batch, int beam, const int *max_len,
                          const ts_length_penalty *lp, ts_hypothesis *out);

// ts_seq2seq_beam_batch of one sentence (src ids, length n), at most max_len
// tokens: TS_OK and the best in *out, or the failure (*out holds nothing).
int ts_seq2seq_beam(ts_seq2seq *m, ts_ctx *ctx, const int *src, int n, int beam, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out);

#endif
