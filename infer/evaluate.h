// Evaluation of a model on a corpus: teacher-forced loss and perplexity,
// decoded corpus BLEU-4 (also by source-length bucket), chrF and exact match, and
// attention diagnostics: AER of the argmax alignment against gold alignments
// (of the search's output, and of the reference force-decoded, per head) and
// of the diagonal baseline, mean row entropy and the weight on padding.
// Used by `tinyseq train` after every epoch and by `tinyseq eval`.
#ifndef TS_EVALUATE_H
#define TS_EVALUATE_H

#include "data/corpus.h"
#include "data/gold.h"
#include "infer/head_table.h"
#include "infer/load.h"

#define TS_EVAL_BUCKETS 4  // source lengths 1-5, 6-10, 11-15, 16+

typedef struct {
    int beam;                  // 1: greedy; K > 1: beam search (either decodes a batch at once,
                               // infer/decode.h); 0: TS_BEAM_DEFAULT (ts_beam_width)
    int batch;                 // sentences per batch for the loss and greedy decoding (default 64)
    int max_len;               // decode at most this many tokens (0: ts_output_limit of the source length)
    const ts_link *const *gold;     // per evaluated row: gold links (NULL: use the corpus's own, if any)
    const int32_t *gold_counts;     //   and their counts
    int skip_decode;           // 1: loss and perplexity only
    // Tables of one figure per head (infer/head_table.h), caller-owned and sized by
    // ts_model_cross_heads; NULL: not wanted.
    ts_head_table *head_aer;   // a model whose every head can be inspected (infer/heads.h), with gold
                               // links: the AER of each head's cross-attention of the search's output
    ts_head_table *head_aer_forced;  // with gold links, any model with attention: the AER of every head
                               // of the reference force-decoded (infer/forced.h)
    int shift_att;             // with gold links: the forced attention also read shifted (Chen et al.
                               // 2020: the row that predicts word t + 1 aligns word t)
    ts_head_table *head_aer_shift;  // shift_att: as head_aer_forced, read shifted
    int explain;               // with gold links: 0, or 1 + an enum ts_explain_method (models/explain.h):
                               // the attributions of the reference scored against the gold links
                               // and beside every forced head
    int ig_steps;              // their integrated-gradient points (0: TS_IG_STEPS_DEFAULT)
    ts_head_table *head_js;    // explain: the mean Jensen-Shannon divergence (nats) of each forced
                               // head's rows (shifted with shift_att) and the attributions'
                               // normalised rows, over the reference words
    ts_head_table *head_same;  // explain: the share of those rows whose argmax is the same source word
} ts_eval_opts;

typedef struct {
    size_t pairs;              // sentence pairs evaluated
    size_t tokens;             // non-pad target tokens (with <eos>)
    double loss;               // mean cross-entropy per target token (teacher forced)
    double perplexity;         // exp(loss)
    double bleu;               // corpus BLEU-4 in [0, 1] (NLTK corpus_bleu, no smoothing) of the words
                               // (nfc-lowercase-punct-split's: a model that writes text as written has
                               // its output and reference normalised so first), comparable across models
    double bleu_detok;         // corpus BLEU-4 in [0, 1] of the text as the model writes it, as sacreBLEU's
                               // defaults score it (13a tokens, exp smoothing: infer/score.h); for a
                               // model of words, its words joined by spaces against the reference's
    int bleu_zero_order;       // 0, or the lowest n-gram order without a match (BLEU is then 0)
    size_t short_refs;         // references with fewer than 4 words (they have no 4-gram)
    double chrf;               // corpus chrF2 in [0, 1] (sacreBLEU's defaults) of the words
                               // against the references as written (unknown words included)
    double exact;              // fraction of outputs whose words equal the reference's
    double bucket_bleu[TS_EVAL_BUCKETS];
    size_t bucket_pairs[TS_EVAL_BUCKETS];
    int has_aer;               // 1 when gold alignments were available
    int has_head_aer;          // 1 when opts.head_aer was filled (a Transformer with gold links)
    double aer;                // AER of the attention's argmax alignment (<eos> excluded)
    double aer_diagonal;       // AER of the diagonal baseline
    int has_aer_forced;        // 1 when gold alignments were available to a model with attention
    double aer_forced;         // AER of the reference force-decoded (teacher forcing on the gold
                               // target, infer/forced.h), read from the last layer's head mean
                               // (the weights aer= reads; the GRU's one head)
    double aer_forced_best;    // the lowest forced AER of a single head
    int has_shift;             // 1 when shift_att was scored
    double aer_shift;          // the forced attention read shifted: the last layer's head mean
    double aer_shift_best;     // and its best single head
    int has_explain;           // 1 when the attributions were scored
    double aer_explain;        // AER of the attributions' argmax (normalised rows) of the reference
    double entropy;            // mean entropy (nats) of the attention rows
    double pad_mass;           // total attention weight on padding positions (must be 0)
    int has_attention;         // 0 for attention "none" (or skip_decode): aer, entropy, pad_mass unset
} ts_eval_result;

// Evaluates rows[0..n_rows) of corpus c (rows NULL: every pair) with model t
// (not owned; a trainer may fill a ts_translator with its own objects).
// If `out_hyps` is not NULL it receives one malloc'd hypothesis per row (free
// each with ts_hypothesis_free, then the array). ctx is reset as needed.
// Errors: TS_ERR_ARG (no rows, bad options), TS_ERR_NOMEM, the model's.
int ts_evaluate(ts_translator *t, ts_ctx *ctx, const ts_corpus *c, const size_t *rows, size_t n_rows,
                const ts_eval_opts *opts, ts_eval_result *out, ts_hypothesis **out_hyps);

#endif
