// Guided alignment (train/guided.h).
#include "train/guided.h"

#include "autograd/ops.h"
#include "data/subword.h"
#include "models/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ts_guided_resolve(ts_train_opts *o) {
    if (!ts_guided_on(o)) {
        o->guided_alignment = NULL;  // nothing of it is written: the run is the unguided one, bit for bit
        o->guided_layer = o->guided_head = -1;
        return TS_OK;
    }
    if (!strcmp(o->guided_alignment, TS_GUIDED_TOY) && o->data.corpus)
        return ts_fail(TS_ERR_ARG, "--guided-alignment %s names the toy corpus's own links, and this run reads --corpus %s: "
                       "give a Pharaoh file with one line per pair of it", TS_GUIDED_TOY, o->data.corpus);
    if (strcmp(o->guided_alignment, TS_GUIDED_TOY) && !o->data.corpus)
        return ts_fail(TS_ERR_ARG, "--guided-alignment %s: the toy corpus (no --corpus) has its own gold links: "
                       "give --guided-alignment %s", o->guided_alignment, TS_GUIDED_TOY);
    // The gold links name a file's words; its pieces of the text as written regroup into other words ("home."
    // for "home ."). The toy corpus is written in its words.
    if (o->data.corpus && ts_normalisations[o->data.normalisation].keeps_text)
        return ts_fail(TS_ERR_ARG, "--guided-alignment links the words --normalisation %s reads; this run reads "
                       "--corpus %s as --normalisation %s", ts_normalisations[TS_NORM_SPLIT].name, o->data.corpus,
                       ts_normalisations[o->data.normalisation].name);
    ts_model_config cfg = o->model;
    ts_model_config_default_sizes(&cfg);
    int layers, heads = ts_model_cross_heads(&cfg, &layers);
    if (!heads)
        return ts_fail(TS_ERR_ARG, "--guided-alignment supervises attention, and this model has none (%s)",
                       ts_model_describe(&cfg, (char[160]){0}, 160));
    if (o->guided_layer < 0) o->guided_layer = ts_model_guided_layer(&cfg);  // the penultimate, as Garg et al.
    if (o->guided_head < 0) o->guided_head = 0;
    if (o->guided_layer >= layers)
        return ts_fail(TS_ERR_ARG, "--guided-layer %ld: the model has %d layer%s of cross-attention (0..%d)", o->guided_layer,
                       layers, layers == 1 ? "" : "s", layers - 1);
    if (o->guided_head >= heads)
        return ts_fail(TS_ERR_ARG, "--guided-head %ld: the model's cross-attention has %d head%s per layer (0..%d)",
                       o->guided_head, heads, heads == 1 ? "" : "s", heads - 1);
    return TS_OK;
}

// The word of each of a side's n units: themselves (word_of NULL), or the
// words their pieces decode into. Returns the words' count.
static int words_of(const ts_pair *units, const ts_pair *aligned, int side, int32_t *word_of) {
    char *const *pieces = side == TS_SRC ? units->src : units->tgt;
    int n = side == TS_SRC ? units->src_len : units->tgt_len;
    if (units == aligned) {
        for (int k = 0; k < n; k++) word_of[k] = k;
        return n;
    }
    return (int)ts_subword_words((const char *const *)pieces, (size_t)n, word_of);
}

int ts_guided_gold(const ts_corpus *aligned, const ts_corpus *units, const size_t *rows, int B, int S, int T,
                   double *gold, long *rows_linked) {
    memset(gold, 0, (size_t)B * T * S * sizeof *gold);
    long linked = 0;
    int32_t *src_word = malloc((size_t)(S + T) * sizeof *src_word), *tgt_word = src_word + S;  // (S), (T)
    if (!src_word) return ts_fail(TS_ERR_NOMEM, "guided alignment: out of memory");
    for (int b = 0; b < B; b++) {
        const ts_pair *u = &units->pairs[rows[b]], *a = &aligned->pairs[rows[b]];
        if (u->src_len > S || u->tgt_len >= T) continue;  // not this batch's sentence: cannot happen
        // Pieces that do not regroup into the pair's words cannot be mapped: no supervision.
        if (words_of(u, a, TS_SRC, src_word) != a->src_len || words_of(u, a, TS_TGT, tgt_word) != a->tgt_len) continue;
        double *g = gold + (size_t)b * T * S;  // (T, S)
        for (int t = 0; t < u->tgt_len; t++) {
            double *row = g + (size_t)t * S, sum = 0.0;
            for (int k = 0; k < a->n_links; k++) {
                ts_link l = a->links[k];
                if (l.src == TS_UNALIGNED || l.tgt != tgt_word[t]) continue;
                for (int s = 0; s < u->src_len; s++)
                    if (src_word[s] == l.src && row[s] == 0.0) row[s] = 1.0, sum += 1.0;
            }
            for (int s = 0; sum > 0.0 && s < S; s++) row[s] /= sum;
            linked += sum > 0.0;
        }
    }
    free(src_word);
    if (rows_linked) *rows_linked = linked;
    return TS_OK;
}

ts_tensor *ts_guided_loss(ts_ctx *ctx, ts_tensor *weights, const double *gold, double scale) {
    if (!weights) return NULL;
    double *eps = ts_arena_alloc(ctx->arena, weights->size * sizeof *eps);  // (B, T, S) of TS_GUIDED_EPS
    if (!eps) return ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
    for (size_t i = 0; i < weights->size; i++) eps[i] = TS_GUIDED_EPS;
    ts_tensor *g = ts_constant(ctx, weights->ndim, weights->shape, gold);
    ts_tensor *logs = ts_log(ctx, ts_add(ctx, weights, ts_constant(ctx, weights->ndim, weights->shape, eps)));
    return ts_scale(ctx, ts_sum(ctx, ts_mul(ctx, g, logs)), -scale);
}

void ts_guided_print_measure(FILE *out, const ts_train_opts *o, const ts_model_config *cfg) {
    if (!ts_guided_on(o)) return;
    int layers = 0, heads = ts_model_cross_heads(cfg, &layers);
    char what[160] = "aer_forced= is its attention reading the reference";
    if (heads * layers > 1)
        snprintf(what, sizeof what, "the supervised head's figure is layer %ld head %ld's cell of the force-decoded table",
                 o->guided_layer, o->guided_head);
    if (!strcmp(o->guided_alignment, TS_GUIDED_TOY))
        fprintf(out, "alignment: tinyseq corpus --toy --n 1000 --seed 99 --align test.align > test.tsv && tinyseq eval "
                     "--model %s/best.ckpt --corpus test.tsv --align test.align measures it on held-out pairs: %s "
                     "(docs/attention.md, section 7)\n", o->out_dir, what);
    else
        fprintf(out, "alignment: tinyseq eval --model %s/best.ckpt --corpus HELD_OUT.tsv --align HELD_OUT.align measures "
                     "it on held-out pairs with gold links like %s's: %s (docs/attention.md, section 7)\n",
                o->out_dir, o->guided_alignment, what);
}
