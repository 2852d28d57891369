// Evaluation of a model on corpus rows (infer/evaluate.h).
//
// B = sentences in a batch, S = longest source of the batch, T = decoder steps
// of the batch (longest target + 1), n = one sentence's source length, L = its
// output length in tokens (without <eos>).
//
// Attention rows and gold links. A hypothesis's attention has L + 1 rows, one
// per output step with the <eos> step last, and S columns, of which the first
// n are the sentence's source words (sources carry no <eos>, so there is no
// <eos> column to drop; in a batch the columns n..S-1 are padding). The argmax
// alignment therefore uses the first L rows and first n columns.
// Gold links name gold target positions j, predicted links output positions j;
// AER compares the (i, j) pairs as they are, the usual practice when the
// output is the reference. For outputs equal to their reference this is
// exact; for the others it is an approximation that counts a link as right
// when the j-th output word looks at the source word the j-th reference word
// is aligned to. The diagonal baseline is computed over the same shape
// (L output rows, n source columns), so the two AERs compare like for like.
// The forced reading (aer_forced) has no such approximation: the model reads
// the reference itself in the batch's teacher-forced pass, whose attention
// rows are exactly the reference's words (infer/forced.h).
#include "infer/evaluate.h"

#include "data/batch.h"
#include "data/normalize.h"
#include "models/seq2seq.h"

#include "infer/alignment.h"
#include "infer/decode.h"
#include "infer/explain.h"
#include "infer/forced.h"
#include "infer/heads.h"
#include "infer/score.h"
#include "infer/translate.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { EVAL_DEFAULT_BATCH = 64 };
// A reference id that matches no output: a word outside the vocabulary.
enum { NO_WORD = -1 };

// Bucket of a source length: 1-5, 6-10, 11-15, 16+.
static int bucket_of(int n) {
    int b = (n - 1) / 5;
    return b < TS_EVAL_BUCKETS - 1 ? b : TS_EVAL_BUCKETS - 1;
}

// Running totals over the evaluated rows, and scratch buffers reused by every
// sentence (grown as needed).
typedef struct {
    ts_bleu bleu[TS_EVAL_BUCKETS];
    ts_bleu bleu_detok;   // the text as written, 13a tokens (sacreBLEU)
    ts_chrf chrf;
    size_t short_refs;    // references under TS_BLEU_ORDER words
    ts_exact_match exact;
    ts_aer_acc aer, aer_diagonal;
    // One accumulator per cell of a head table (infer/head_table.h: every head, then the layer's mean).
    ts_aer_acc *head_aer;  // the search's output, head by head; NULL unless asked
    ts_aer_acc *forced;    // the same of the reference force-decoded; NULL without gold
    ts_aer_acc *shift;     // the same read shifted; NULL unless asked
    ts_aer_acc explain;    // the attributions of the reference
    ts_agreement_acc *agree;  // each forced head beside the attributions; NULL unless asked
    double entropy_sum;   // summed row entropies
    size_t entropy_rows;  // rows summed
    double pad_mass;      // summed weight on padded columns
    double *weights;      // (L + 1, n) one sentence's attention without padding
    size_t weights_cap;
    ts_link *links, *gold;  // (L + 1): predicted or diagonal links; (gold links) without unaligned
    size_t links_cap, gold_cap;
    int32_t *src;         // (n) one sentence's source for score_heads
    size_t src_cap;
    const char **words;   // (output + reference words) one sentence's, split in place
    int32_t *ids;         // (output + reference words) their ids within the sentence
    size_t words_cap, ids_cap;
} eval_acc;

static void eval_acc_free(eval_acc *a) {
    free(a->head_aer);
    free(a->forced);
    free(a->shift);
    free(a->agree);
    free(a->weights);
    free(a->links);
    free(a->gold);
    free(a->src);
    free(a->words);
    free(a->ids);
}

// Makes *buf hold at least n elements of `size` bytes.
static int grow(void **buf, size_t *cap, size_t n, size_t size) {
    if (n <= *cap) return TS_OK;
    size_t want = n > 2 * *cap ? n : 2 * *cap;
    if (want > SIZE_MAX / size) return ts_fail(TS_ERR_NOMEM, "evaluate: %zu elements overflow", n);
    void *p = realloc(*buf, want * size);
    if (!p) return ts_fail(TS_ERR_NOMEM, "evaluate: cannot allocate %zu bytes", want * size);
    *buf = p;
    *cap = want;
    return TS_OK;
}

// The gold links of one sentence: a list of (source, target) positions that
// may contain {TS_UNALIGNED, j} entries (skipped: AER has no such link).
typedef struct {
    const ts_link *links;
    size_t n;
} gold_view;

// The gold links of one sentence without the unaligned marks, in a->gold;
// their count in *n_gold.
static int gold_links(eval_acc *a, const gold_view *gold, size_t *n_gold) {
    int rc = grow((void **)&a->gold, &a->gold_cap, gold->n + 1, sizeof(ts_link));
    if (rc) return rc;
    *n_gold = 0;
    for (size_t k = 0; k < gold->n; k++)
        if (gold->links[k].src != TS_UNALIGNED) a->gold[(*n_gold)++] = gold->links[k];
    return TS_OK;
}

// Adds to acc the argmax alignment of weights (L + 1, n) against a->gold's
// n_gold links. Rows 0..L-1 only: the <eos> step is aligned to nothing in
// gold data. a->links must hold L + 1 links.
static int add_aer(eval_acc *a, ts_aer_acc *acc, const double *weights, size_t L, int n, size_t n_gold) {
    size_t n_pred = 0;
    int rc = L > 0 ? ts_align_argmax(weights, L, (size_t)n, 0, a->links, &n_pred) : TS_OK;
    if (!rc) ts_aer_add(acc, a->links, n_pred, a->gold, n_gold);
    return rc;
}

// Adds the attention diagnostics of hypothesis h over a source of n words.
static int score_attention(eval_acc *a, const ts_hypothesis *h, int n, const gold_view *gold) {
    size_t L = (size_t)h->len, rows = L + 1, S = (size_t)h->S;
    int rc = grow((void **)&a->weights, &a->weights_cap, rows * (size_t)n, sizeof(double));
    if (!rc) rc = grow((void **)&a->links, &a->links_cap, rows, sizeof(ts_link));
    if (rc) return rc;
    for (size_t r = 0; r < rows; r++) {
        const double *row = h->attention + r * S;  // (S)
        memcpy(a->weights + r * (size_t)n, row, (size_t)n * sizeof(double));
        for (size_t i = (size_t)n; i < S; i++) a->pad_mass += row[i];
    }
    a->entropy_sum += ts_attn_entropy(a->weights, rows, (size_t)n) * (double)rows;
    a->entropy_rows += rows;
    if (!gold) return TS_OK;

    size_t n_gold, n_diag = 0;
    rc = gold_links(a, gold, &n_gold);
    if (!rc) rc = add_aer(a, &a->aer, a->weights, L, n, n_gold);
    if (!rc && L > 0) rc = ts_align_diagonal(L, (size_t)n, 0, a->links, &n_diag);
    if (!rc) ts_aer_add(&a->aer_diagonal, a->links, n_diag, a->gold, n_gold);
    return rc;
}

// Adds the AER of every head of a Transformer's hypothesis h of source
// src[0..n) to a->head_aer, and of each layer's head mean, against the
// n_gold links in a->gold (gold_links). a->links must hold h->len + 1 links.
static int score_heads(eval_acc *a, const ts_seq2seq *m, ts_ctx *ctx, const ts_hypothesis *h, const int32_t *src, int n,
                       size_t n_gold) {
    ts_heads heads;
    int rc = ts_heads_compute(m, ctx, src, n, h->tokens, h->len, &heads);
    for (int l = 0; !rc && l < heads.layers; l++)
        for (int k = -1; !rc && k < heads.heads; k++) {  // k -1: the layer's mean
            const double *w = ts_heads_matrix(&heads, TS_VIEW_CROSS, l, k);  // (L + 1, n)
            rc = add_aer(a, &a->head_aer[ts_head_index(heads.heads, l, k)], w, (size_t)h->len, n, n_gold);
        }
    ts_heads_free(&heads);
    return rc;
}

// Adds the AER of every head (and layer mean) of sentence b of a batch's
// teacher-forced pass (tap) to a->forced: its n source columns and the rows
// of its n_ref reference words (the <eos> row aside).
// Copies column b of a time-major (rows, B) id array into out[0..rows).
static void column(const int32_t *ids, int B, int b, int rows, int32_t *out) {
    for (int t = 0; t < rows; t++) out[t] = ids[(size_t)t * B + b];
}

// What eval --explain adds to a sentence's forced reading: its
// attributions (computed in a context of their own, the batch's pass
// still being read), the source and reference ids they read.
typedef struct {
    ts_seq2seq *model;
    ts_ctx *ctx;      // its arena chains blocks as the attributions need them
    int method, steps;
    int shift;        // agreement with the shifted rows
} explain_job;

// The attributions of the reference ref[0..n_ref) of source src[0..n),
// scored against a->gold's n_gold links, and beside every head of f (its
// rows from `first` on: 1 shifted).
static int score_explained(eval_acc *a, const explain_job *job, const ts_forced_attention *f, const int *src, int n,
                           const int *ref, int n_ref, size_t n_gold) {
    ts_attribution attr;
    int rc = ts_attribution_compute(job->model, job->ctx, src, n, ref, n_ref, job->method, job->steps, &attr);
    if (!rc) rc = add_aer(a, &a->explain, attr.weights, (size_t)n_ref, n, n_gold);
    for (int l = 0; !rc && l < f->layers; l++)
        for (int k = -1; k < f->heads; k++)  // k -1: the layer's mean
            ts_agreement_add(&a->agree[ts_head_index(f->heads, l, k)], ts_forced_matrix(f, l, k) + (job->shift ? n : 0),
                             attr.weights, (size_t)n_ref, (size_t)n);
    ts_attribution_free(&attr);
    return rc;
}

static int score_forced(eval_acc *a, const ts_attention_tap *tap, int layers, int heads, const ts_batch *batch, int b,
                        const gold_view *gold, const explain_job *job) {
    int n = batch->src_len[b], n_ref = batch->tgt_len[b] - 1;
    size_t n_gold;
    int rc = gold_links(a, gold, &n_gold);
    if (!rc) rc = grow((void **)&a->links, &a->links_cap, (size_t)n_ref + 1, sizeof(ts_link));
    ts_forced_attention f = {0};
    if (!rc) rc = ts_forced_attention_of_batch(tap, layers, heads, b, n, n_ref + 1, &f);
    for (int l = 0; !rc && l < f.layers; l++)
        for (int k = -1; !rc && k < f.heads; k++) {  // k -1: the layer's mean
            size_t cell = ts_head_index(f.heads, l, k);
            const double *w = ts_forced_matrix(&f, l, k);  // (n_ref + 1, n)
            rc = add_aer(a, &a->forced[cell], w, (size_t)n_ref, n, n_gold);
            // Shifted: row t + 1 (its input is word t) read as word t's; the <eos> row is word n_ref - 1's.
            if (!rc && a->shift) rc = add_aer(a, &a->shift[cell], w + n, (size_t)n_ref, n, n_gold);
        }
    if (!rc && job) rc = grow((void **)&a->src, &a->src_cap, (size_t)n + (size_t)n_ref, sizeof(int32_t));
    if (!rc && job) {
        column(batch->src, batch->B, b, n, a->src);
        column(batch->tgt_out, batch->B, b, n_ref, a->src + n);  // the reference's words after the source
        rc = score_explained(a, job, &f, a->src, n, a->src + n, n_ref, n_gold);
    }
    ts_forced_attention_free(&f);
    return rc;
}

// The words of `text` (split in place at spaces) into a->words from *n on,
// each given an id in a->ids: the id of the first equal word of this
// sentence, so the output's and the reference's ids agree exactly where their
// words do. `unknown`: the reference of a word-level model, whose words the
// model cannot spell get ids no output word has (NLTK's BLEU on strings
// counts them as misses, least of all matched by an output <unk>).
static int split_words(eval_acc *a, char *text, size_t *n, const ts_vocab *unknown) {
    int rc = TS_OK;
    char *save = NULL;
    for (char *w = strtok_r(text, " ", &save); !rc && w; w = strtok_r(NULL, " ", &save)) {
        if ((rc = grow((void **)&a->words, &a->words_cap, *n + 1, sizeof *a->words)) ||
            (rc = grow((void **)&a->ids, &a->ids_cap, *n + 1, sizeof *a->ids)))
            break;
        int32_t id = (int32_t)*n;
        if (unknown && ts_vocab_id(unknown, w) == TS_UNK) id = NO_WORD - (int32_t)*n;
        else
            for (size_t k = 0; k < *n; k++)
                if (a->ids[k] >= 0 && !strcmp(a->words[k], w)) {
                    id = a->ids[k];
                    break;
                }
        a->words[*n] = w;
        a->ids[(*n)++] = id;
    }
    return rc;
}

// text replaced by its words (ts_normalize) when the model reads text
// that is not words (norm keeps the text); else left as it is.
static int to_words(const ts_normalisation_kind *norm, char **text) {
    if (!norm->keeps_text) return TS_OK;
    char *words;
    int rc = ts_normalize(*text, strlen(*text), &words, NULL);
    if (rc) return rc;
    free(*text);
    *text = words;
    return TS_OK;
}

// Scores one decoded sentence against pair p's reference. In words: the
// output detokenised (a subword model's pieces joined into words; text as
// written normalised into words first) against the reference's words as
// written, so BLEU, exact match and chrF (characters, spaces aside) compare
// with a word-level model's. And as text: the output and the reference as
// the model writes them, tokenized by sacreBLEU's 13a (bleu_detok).
static int score_sentence(eval_acc *a, const ts_translator *t, const ts_hypothesis *h, const ts_pair *p, int n,
                          int has_attention, const gold_view *gold) {
    char *hyp = NULL, *ref = NULL, *hyp_13a = NULL, *ref_13a = NULL;
    int rc = ts_translator_text(t, h->tokens, h->len, &hyp);
    if (!rc) rc = ts_subword_detokenize(t->tgt_sw, (const char *const *)p->tgt, (size_t)p->tgt_len, &ref);
    if (!rc) rc = ts_tokenize_13a(hyp, strlen(hyp), &hyp_13a, NULL);
    if (!rc) rc = ts_tokenize_13a(ref, strlen(ref), &ref_13a, NULL);
    if (!rc) rc = ts_bleu_add_words(&a->bleu_detok, hyp_13a, ref_13a);
    free(hyp_13a);
    free(ref_13a);
    const ts_normalisation_kind *norm = &ts_normalisations[t->normalisation];
    if (!rc) rc = to_words(norm, &hyp);
    if (!rc) rc = to_words(norm, &ref);
    if (!rc) rc = ts_chrf_add(&a->chrf, hyp, strlen(hyp), ref, strlen(ref));
    size_t hyp_len = 0, all = 0;
    if (!rc) rc = split_words(a, hyp, &hyp_len, NULL);
    all = hyp_len;
    if (!rc) rc = split_words(a, ref, &all, t->tgt_sw ? NULL : t->tgt_vocab);
    size_t ref_len = all - hyp_len;
    if (!rc) rc = ts_bleu_add(&a->bleu[bucket_of(n)], a->ids, hyp_len, a->ids + hyp_len, ref_len);
    if (!rc) {
        a->short_refs += ref_len < TS_BLEU_ORDER;
        ts_exact_match_add(&a->exact, a->ids, hyp_len, a->ids + hyp_len, ref_len);
    }
    free(hyp);
    free(ref);
    if (rc) return rc;
    return has_attention ? score_attention(a, h, n, gold) : TS_OK;
}

// The AER of each cell of acc into *table (NULL: a table of its own, for the
// figures alone), sized layers x heads: its last layer's head mean in *mean
// and its best single head's in *best.
static int aer_table(const ts_aer_acc *acc, int layers, int heads, ts_head_table *table, double *mean, double *best) {
    ts_head_table own = {0}, *t = table ? table : &own;
    int rc = table ? TS_OK : ts_head_table_init(&own, layers, heads);
    for (size_t k = 0; !rc && k < ts_head_cells(layers, heads); k++) t->cells[k] = ts_aer_score(&acc[k]);
    if (!rc) {
        int l, k;
        ts_head_table_best(t, &l, &k);
        *mean = ts_head_cell(t, layers - 1, -1);
        *best = ts_head_cell(t, l, k);
    }
    ts_head_table_free(&own);
    return rc;
}

// One evaluation's setting, what each of its batches reads (ts_evaluate).
typedef struct {
    ts_translator *t;
    const ts_corpus *c;
    ts_eval_opts o;         // the caller's, defaults filled in
    int has_attention;      // the model attends: its search's attention is scored
    int has_gold;           // gold links, the options' or the corpus's
    int by_head;            // the search's output scored head by head (o.head_aer)
    int by_forced;          // the reference force-decoded scored head by head
    int layers, heads;      // the cross-attention's (ts_model_cross_heads): the heads' tables
    ts_ctx explain_ctx;     // o.explain: the attributions' context, its arena their own
    explain_job job;
} evaluation;

// Sentence b of a batch whose column 0 is evaluated row `first`: its gold
// links (none without gold).
static gold_view gold_of(const evaluation *e, const ts_batch *batch, size_t first, int b) {
    size_t k = first + (size_t)b;  // evaluated row
    const ts_pair *p = &e->c->pairs[batch->rows[b]];
    if (e->o.gold) return (gold_view){e->o.gold[k], (size_t)e->o.gold_counts[k]};
    if (e->c->has_align) return (gold_view){p->links, (size_t)p->n_links};
    return (gold_view){0};
}

// The accumulators e asks for in *a (head by head, forced, shifted,
// attributions), after checking the caller's tables fit the model. TS_OK,
// TS_ERR_ARG naming what does not fit, or TS_ERR_NOMEM.
static int accumulators_new(eval_acc *a, evaluation *e) {
    const ts_eval_opts *o = &e->o;
    int rc = TS_OK;
    size_t head_cells = e->by_head ? ts_head_cells(e->layers, e->heads) : 0;
    if (e->by_head && !(a->head_aer = calloc(head_cells, sizeof *a->head_aer)))
        rc = ts_fail(TS_ERR_NOMEM, "evaluate: cannot allocate %zu head accumulators", head_cells);
    const ts_head_table *tables[] = {o->head_aer, o->head_aer_forced, o->head_aer_shift, o->head_js, o->head_same};
    for (size_t i = 0; !rc && i < sizeof tables / sizeof tables[0]; i++)
        if (tables[i] && (tables[i]->layers != e->layers || tables[i]->heads != e->heads || !tables[i]->cells))
            rc = ts_fail(TS_ERR_ARG, "evaluate: a table of %d layers of %d heads for a model of %d of %d",
                         tables[i]->layers, tables[i]->heads, e->layers, e->heads);
    size_t forced_cells = e->by_forced ? ts_head_cells(e->layers, e->heads) : 0;
    if (e->by_forced && !(a->forced = calloc(forced_cells, sizeof *a->forced)))
        rc = ts_fail(TS_ERR_NOMEM, "evaluate: cannot allocate %zu head accumulators", forced_cells);
    if (e->by_forced && o->shift_att && !rc && !(a->shift = calloc(forced_cells, sizeof *a->shift)))
        rc = ts_fail(TS_ERR_NOMEM, "evaluate: cannot allocate %zu head accumulators", forced_cells);
    // eval --explain: the attributions run in an arena of their own while the batch's pass is read.
    if (o->explain && (o->explain < 1 || o->explain > TS_EXPLAIN_COUNT))
        rc = ts_fail(TS_ERR_ARG, "evaluate: explain %d", o->explain);
    if (o->explain && !rc && (!(a->agree = calloc(forced_cells, sizeof *a->agree)) ||
                              !(e->explain_ctx.arena = ts_arena_new((size_t)16 << 20))))
        rc = ts_fail(TS_ERR_NOMEM, "evaluate: cannot allocate the attributions' accumulators");
    return rc;
}

// The batch's teacher-forced loss (summed into *nll, its tokens counted in
// out) and, with gold links, its forced attention head by head. ctx is
// reset after.
static int score_forced_pass(eval_acc *a, const evaluation *e, ts_ctx *ctx, const ts_batch *batch,
                             const ts_batch_view *view, size_t first, double *nll, ts_eval_result *out) {
    int n_tokens = 0, rc = TS_OK;
    ts_attention_tap tap = {.layer = -1, .every = 1};
    ts_tensor *loss = ts_seq2seq_loss_tapped(e->t->model, ctx, view, 1.0, NULL, NULL, e->by_forced ? &tap : NULL,
                                             &n_tokens);
    if (!loss) return ctx->status ? ctx->status : TS_ERR_ARG;
    *nll += ts_value(loss, 0) * n_tokens;  // mean -> sum, so the corpus mean weighs every token once
    out->tokens += (size_t)n_tokens;
    for (int b = 0; e->by_forced && !rc && b < batch->B; b++) {
        gold_view gold = gold_of(e, batch, first, b);
        rc = score_forced(a, &tap, e->layers, e->heads, batch, b, &gold, e->o.explain ? &e->job : NULL);
    }
    ts_ctx_reset(ctx);
    return rc;
}

// The batch decoded into h[0..B) (infer/decode.h) and each output scored
// against its reference: the words, the attention, head by head.
static int score_decoded(eval_acc *a, const evaluation *e, ts_ctx *ctx, const ts_batch *batch,
                         const ts_batch_view *view, size_t first, ts_hypothesis *h, ts_eval_result *out) {
    ts_seq2seq *m = e->t->model;
    int rc = ts_decode_batch(m, ctx, view, e->o.beam, e->o.max_len, &e->t->length_penalty, h);
    for (int b = 0; !rc && b < batch->B; b++) {
        const ts_pair *p = &e->c->pairs[batch->rows[b]];
        gold_view gold = gold_of(e, batch, first, b);
        rc = score_sentence(a, e->t, &h[b], p, batch->src_len[b], e->has_attention, e->has_gold ? &gold : NULL);
        if (!rc && e->by_head) {
            size_t n_gold;
            rc = gold_links(a, &gold, &n_gold);
            if (!rc) rc = grow((void **)&a->src, &a->src_cap, (size_t)batch->S, sizeof(int32_t));
            if (!rc) {
                column(batch->src, batch->B, b, batch->src_len[b], a->src);
                rc = score_heads(a, m, ctx, &h[b], a->src, batch->src_len[b], n_gold);
            }
        }
        out->bucket_pairs[bucket_of(batch->src_len[b])]++;
    }
    return rc;
}

// The figures of n_rows evaluated rows from the accumulators into *out (the
// caller's head tables filled too), nll the summed loss.
static int finish_result(const eval_acc *a, const evaluation *e, double nll, size_t n_rows, ts_eval_result *out) {
    const ts_eval_opts *o = &e->o;
    out->pairs = n_rows;
    out->loss = out->tokens ? nll / (double)out->tokens : NAN;
    out->perplexity = ts_perplexity(nll, out->tokens);
    ts_bleu all = {0};
    for (int i = 0; i < TS_EVAL_BUCKETS; i++) {
        out->bucket_bleu[i] = ts_bleu_score(&a->bleu[i]);
        ts_bleu_merge(&all, &a->bleu[i]);
    }
    out->bleu = ts_bleu_score(&all);
    out->bleu_detok = ts_bleu_score_sacrebleu(&a->bleu_detok);
    out->bleu_zero_order = o->skip_decode ? 0 : ts_bleu_zero_order(&all);
    out->short_refs = a->short_refs;
    out->chrf = ts_chrf_score(&a->chrf);
    out->exact = ts_exact_match_score(&a->exact);
    out->has_attention = e->has_attention && !o->skip_decode;
    out->has_aer = out->has_attention && e->has_gold;
    out->aer = out->has_aer ? ts_aer_score(&a->aer) : 0.0;
    out->aer_diagonal = out->has_aer ? ts_aer_score(&a->aer_diagonal) : 0.0;
    out->has_head_aer = e->by_head;
    out->has_aer_forced = e->by_forced;
    out->has_shift = a->shift != NULL;
    out->has_explain = o->explain != 0;
    out->aer_explain = o->explain ? ts_aer_score(&a->explain) : 0.0;
    // The last layer's head mean (the weights aer= reads) and the best single head.
    int rc = TS_OK;
    if (a->shift) rc = aer_table(a->shift, e->layers, e->heads, o->head_aer_shift, &out->aer_shift, &out->aer_shift_best);
    size_t forced_cells = e->by_forced ? ts_head_cells(e->layers, e->heads) : 0;
    for (size_t k = 0; a->agree && k < forced_cells; k++) {
        size_t n_agree = a->agree[k].rows;
        if (o->head_js) o->head_js->cells[k] = n_agree ? a->agree[k].js / (double)n_agree : 0.0;
        if (o->head_same) o->head_same->cells[k] = n_agree ? (double)a->agree[k].same / (double)n_agree : 0.0;
    }
    if (e->by_forced && !rc)
        rc = aer_table(a->forced, e->layers, e->heads, o->head_aer_forced, &out->aer_forced, &out->aer_forced_best);
    for (size_t k = 0; e->by_head && k < ts_head_cells(e->layers, e->heads); k++)
        o->head_aer->cells[k] = ts_aer_score(&a->head_aer[k]);
    out->entropy = a->entropy_rows ? a->entropy_sum / (double)a->entropy_rows : 0.0;
    out->pad_mass = a->pad_mass;
    return rc;
}

int ts_evaluate(ts_translator *t, ts_ctx *ctx, const ts_corpus *c, const size_t *rows, size_t n_rows,
                const ts_eval_opts *opts, ts_eval_result *out, ts_hypothesis **out_hyps) {
    memset(out, 0, sizeof *out);
    if (out_hyps) *out_hyps = NULL;
    evaluation e = {.t = t, .c = c, .o = opts ? *opts : (ts_eval_opts){0}};
    ts_eval_opts *o = &e.o;
    o->beam = ts_beam_width(o->beam);
    if (o->batch == 0) o->batch = EVAL_DEFAULT_BATCH;
    if (!rows) n_rows = c->n_pairs;
    if (n_rows == 0) return ts_fail(TS_ERR_ARG, "evaluate: no sentence pairs");
    if (o->beam < 1 || o->beam > TS_BEAM_MAX || o->batch < 1 || o->max_len < 0)
        return ts_fail(TS_ERR_ARG, "evaluate: beam %d, batch %d, max_len %d", o->beam, o->batch, o->max_len);
    if (o->gold && !o->gold_counts) return ts_fail(TS_ERR_ARG, "evaluate: gold links without their counts");
    if (o->gold && t->src_sw)
        return ts_fail(TS_ERR_ARG, "evaluate: gold alignments link words, and a subword model attends over pieces");

    ts_seq2seq *m = t->model;
    e.has_attention = ts_model_attends(&m->cfg);
    e.has_gold = o->gold || c->has_align;
    e.by_head = e.has_gold && e.has_attention && !o->skip_decode && o->head_aer && ts_heads_available(m);
    // The search's heads (infer/heads.h) and the forced pass's are the cross-attention's.
    e.heads = ts_model_cross_heads(&m->cfg, &e.layers);
    e.by_forced = e.has_gold && e.heads > 0;
    if (!e.by_forced) o->explain = 0;
    ts_ctx_init(&e.explain_ctx, NULL);
    e.job = (explain_job){m, &e.explain_ctx, o->explain - 1, o->ig_steps ? o->ig_steps : TS_IG_STEPS_DEFAULT,
                          o->shift_att};
    ts_batcher *batcher = NULL;
    ts_batcher_opts bopts = {.batch_size = (size_t)o->batch, .bucket_batches = 0};
    int rc = ts_batcher_new(c, rows, n_rows, t->src_vocab, t->tgt_vocab, &bopts, &batcher);
    if (rc) return rc;
    ts_batcher_epoch(batcher, NULL);  // no rng: batches keep the rows' order
    eval_acc acc = {0};
    rc = accumulators_new(&acc, &e);
    ts_hypothesis *hyps = calloc(out_hyps ? n_rows : (size_t)o->batch, sizeof *hyps);
    if (!hyps) rc = ts_fail(TS_ERR_NOMEM, "evaluate: cannot allocate %zu hypotheses", n_rows);
    int grad_before = ts_set_grad_enabled(ctx, 0);  // no tape: evaluation only reads
    int keep_before = ctx->keep_scratch;            // every batch decodes in the first one's pages
    ctx->keep_scratch = 1;
    ts_ctx_reset(ctx);
    double nll = 0.0;
    size_t first = 0;  // evaluated row index of the batch's column 0
    const ts_batch *batch;
    while (!rc && (batch = ts_batcher_next(batcher))) {
        ts_batch_view view = {batch->B, batch->S, batch->T, batch->src, batch->src_len, batch->tgt_in, batch->tgt_out, NULL};
        ts_hypothesis *h = out_hyps ? hyps + first : hyps;
        rc = score_forced_pass(&acc, &e, ctx, batch, &view, first, &nll, out);
        if (!rc && !o->skip_decode) {
            rc = score_decoded(&acc, &e, ctx, batch, &view, first, h, out);
            if (!out_hyps)
                for (int b = 0; b < batch->B; b++) ts_hypothesis_free(&h[b]);
        }
        first += (size_t)batch->B;
    }
    ts_set_grad_enabled(ctx, grad_before);
    ctx->keep_scratch = keep_before;
    if (!keep_before) ts_ctx_free_scratch(ctx);  // a trainer's evaluation gives them back before training on
    ts_batcher_free(batcher);
    if (!rc) rc = finish_result(&acc, &e, nll, n_rows, out);
    eval_acc_free(&acc);
    ts_arena_free(e.explain_ctx.arena);
    if (rc || !out_hyps) {
        if (out_hyps)
            for (size_t k = 0; k < n_rows; k++) ts_hypothesis_free(&hyps[k]);
        free(hyps);
        if (rc) memset(out, 0, sizeof *out);
        return rc;
    }
    *out_hyps = hyps;  // with skip_decode: zeroed hypotheses (len 0, no tokens)
    return TS_OK;
}
