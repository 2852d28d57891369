// The data of a training run (data/dataset.h).
#include "data/dataset.h"

#include "data/gold.h"
#include "data/toy.h"
#include "tensor/status.h"

#include <gsl/gsl_rng.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The pairs of c (read from corpus_name) with the gold links of the file
// gold (its lines follow c's pairs, read before any filter) in *out; TS_OK
// or the gold file's error naming its line.
static int with_gold(const char *corpus_name, const char *gold, const ts_corpus *c, ts_corpus **out) {
    ts_gold g;
    int rc = ts_gold_read(gold, corpus_name, c, &g);
    // A gold file that does not fit the corpus is a bad argument, as a bad flag is.
    if (rc) return rc == TS_ERR_NOMEM ? rc : ts_fail(TS_ERR_ARG, "--guided-alignment %s", ts_last_error());
    *out = ts_corpus_new();
    if (!*out) rc = TS_ERR_NOMEM;
    for (size_t i = 0; !rc && i < c->n_pairs; i++) {
        const ts_pair *p = &c->pairs[i];
        char *src = NULL, *tgt = NULL;  // the tokens joined by spaces, as ts_corpus_add reads them
        rc = ts_subword_detokenize(NULL, (const char *const *)p->src, (size_t)p->src_len, &src);
        if (!rc) rc = ts_subword_detokenize(NULL, (const char *const *)p->tgt, (size_t)p->tgt_len, &tgt);
        static const ts_link none[1];  // a blank gold line: an aligned pair without links
        if (!rc) rc = ts_corpus_add(*out, src, tgt, g.links[i] ? g.links[i] : none, (size_t)g.counts[i]);
        if (!rc) rc = ts_corpus_set_text(*out, i, p->src_text, p->tgt_text);
        free(src);
        free(tgt);
    }
    ts_gold_free(&g);
    return rc;
}

// "skipped 3 malformed lines of x.tsv: lines 4, 9 and 12 (line 4: no tab ...)".
static void log_skipped(FILE *log, const ts_corpus *c, const char *path) {
    char lines[512];
    fprintf(log, "skipped %zu malformed line%s of %s: %s\n", c->n_bad, c->n_bad == 1 ? "" : "s", path,
            ts_corpus_skipped(c, lines, sizeof lines));
}

// The corpus: the file, or the toy corpus generated from its seed; both
// filtered alike.
static int read_corpus(const ts_dataset_opts *o, FILE *log, const char *gold, const ts_corpus_opts *co, ts_dataset *d) {
    if (o->corpus && gold) {
        // The gold lines follow the file's pairs: read them all, attach, then filter.
        ts_corpus *all = NULL;
        int rc = ts_corpus_read(o->corpus, &(ts_corpus_opts){.skip_bad = co->skip_bad, .normalisation = co->normalisation}, &all);
        if (!rc) rc = with_gold(o->corpus, gold, all, &d->corpus);
        if (!rc && all->n_bad && log) log_skipped(log, all, o->corpus);
        ts_corpus_free(all);
        return rc ? rc : ts_corpus_filter(d->corpus, co);
    }
    if (o->corpus) {
        int rc = ts_corpus_read(o->corpus, co, &d->corpus);
        if (!rc && d->corpus->n_bad && log) log_skipped(log, d->corpus, o->corpus);
        return rc;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) return ts_fail(TS_ERR_NOMEM, "rng");
    gsl_rng_set(rng, (unsigned long)o->toy_seed);
    int rc = ts_toy_generate(rng, (size_t)o->toy_pairs, &d->corpus);
    gsl_rng_free(rng);
    return rc ? rc : ts_corpus_filter(d->corpus, co);
}

// A held-out file (--dev FILE, --test FILE) with at least one usable pair.
static int read_held_out(const char *flag, const char *path, const ts_corpus_opts *co, ts_corpus **out) {
    int rc = ts_corpus_read(path, co, out);
    if (!rc && (*out)->n_pairs == 0) rc = ts_fail(TS_ERR_FORMAT, "%s %s has no usable pairs", flag, path);
    return rc;
}

// A subword model learned from the train split's sentences of `sides`
// (TS_SRC, TS_TGT, or -1: both), each side's text as the model reads it.
static int learn(const ts_dataset_opts *o, long seed, const ts_dataset *d, int sides, ts_subword **out) {
    size_t n = d->split.n_train * (sides < 0 ? 2 : 1), k = 0;
    char **sentences = calloc(n, sizeof *sentences);
    int rc = sentences ? TS_OK : ts_fail(TS_ERR_NOMEM, "out of memory for %zu sentences", n);
    for (size_t i = 0; !rc && i < d->split.n_train; i++) {
        const ts_pair *p = &d->corpus->pairs[d->split.train[i]];
        if (sides != TS_TGT) rc = ts_pair_text(p, TS_SRC, &sentences[k++]);
        if (!rc && sides != TS_SRC) rc = ts_pair_text(p, TS_TGT, &sentences[k++]);
    }
    ts_subword_opts so = {.kind = o->subword_kind, .vocab_size = (size_t)o->subword, .seed = (uint32_t)seed};
    if (!rc) rc = ts_subword_train((const char *const *)sentences, k, &so, out);
    if (rc) rc = ts_fail(rc, "--subword %ld (%s%s): %s", o->subword, o->subword_joint ? "joint" : "the ",
                         o->subword_joint ? "" : sides == TS_SRC ? "source side" : "target side", ts_last_error());
    for (size_t i = 0; sentences && i < n; i++) free(sentences[i]);
    free(sentences);
    return rc;
}

// *c replaced by its pieces (the words kept in *words when not NULL).
static int to_pieces(const ts_dataset *d, ts_corpus **c, ts_corpus **words) {
    ts_corpus *pieces;
    int rc = ts_subword_corpus(d->src_sw, d->tgt_sw, *c, &pieces);
    if (rc) return rc;
    if (words) *words = *c;
    else ts_corpus_free(*c);
    *c = pieces;
    return TS_OK;
}

// A copy of model sw of its own (through its bytes).
static int copy_model(const ts_subword *sw, ts_subword **out) {
    size_t n;
    const uint8_t *bytes = ts_subword_bytes(sw, &n);
    return ts_subword_load(bytes, n, out);
}

// --subword N: the models learned on the train split only (per side, or
// one joint model loaded twice so each side owns its own) or the stored ones
// given, every corpus turned into their pieces, and the vocabularies their
// piece lists.
static int use_subwords(const ts_dataset_opts *o, const ts_dataset_use *use, ts_dataset *d) {
    int rc;
    if (use->stored_src_sw || use->stored_tgt_sw) {
        rc = use->stored_src_sw && use->stored_tgt_sw ? TS_OK : ts_fail(TS_ERR_ARG, "a stored subword model for one side only");
        if (!rc) rc = copy_model(use->stored_src_sw, &d->src_sw);
        if (!rc) rc = copy_model(use->stored_tgt_sw, &d->tgt_sw);
    } else {
        rc = learn(o, use->seed, d, o->subword_joint ? -1 : TS_SRC, &d->src_sw);
        if (!rc) rc = o->subword_joint ? copy_model(d->src_sw, &d->tgt_sw) : learn(o, use->seed, d, TS_TGT, &d->tgt_sw);
    }
    if (!rc) rc = to_pieces(d, &d->corpus, &d->words);
    if (!rc && d->dev_file) rc = to_pieces(d, &d->dev_file, NULL);
    if (!rc && d->test) rc = to_pieces(d, &d->test, NULL);
    if (!rc) rc = ts_subword_vocab(d->src_sw, &d->src_vocab);
    if (!rc) rc = ts_subword_vocab(d->tgt_sw, &d->tgt_vocab);
    return rc;
}

int ts_dataset_load(const ts_dataset_opts *o, const ts_dataset_use *use, ts_dataset *d) {
    memset(d, 0, sizeof *d);
    if (o->normalisation < 0 || o->normalisation >= TS_NORM_COUNT)
        return ts_fail(TS_ERR_ARG, "normalisation %d does not exist", (int)o->normalisation);
    // A word vocabulary needs the words: "home." and "home" would be two.
    if (ts_normalisations[o->normalisation].keeps_text && !o->subword)
        return ts_fail(TS_ERR_ARG, "--normalisation %s keeps punctuation on the words, which a word vocabulary "
                       "cannot use: give --subword N too, or --normalisation %s",
                       ts_normalisations[o->normalisation].name, ts_normalisations[TS_NORM_SPLIT].name);
    ts_corpus_opts co = {.max_len = (size_t)o->max_len, .skip_bad = o->skip_bad, .normalisation = o->normalisation};
    int rc = read_corpus(o, use->log, use->gold, &co, d);
    if (rc) return rc;
    const char *name = o->corpus ? o->corpus : "the toy corpus";
    size_t n_pairs = d->corpus->n_pairs;
    if (n_pairs < 2)
        return ts_fail(TS_ERR_FORMAT, "%s has %zu usable pairs%s; training needs at least 2", name, n_pairs,
                       o->max_len ? " within --max-len" : "");
    if (o->dev_file && (rc = read_held_out("--dev", o->dev_file, &co, &d->dev_file))) return rc;
    if (o->test_file && (rc = read_held_out("--test", o->test_file, &co, &d->test))) return rc;
    // --dev N is held out as asked; --dev FILE holds nothing out; without
    // either, 500 or a tenth of the corpus.
    size_t n_dev = (size_t)o->dev_pairs;
    if (n_dev >= n_pairs)
        return ts_fail(TS_ERR_ARG, "--dev %zu: %s has %zu usable pairs, so at most %zu can be held out", n_dev, name, n_pairs,
                       n_pairs - 1);
    if (n_dev == 0 && !o->dev_file) n_dev = n_pairs / 10 < TS_DEFAULT_DEV_PAIRS ? n_pairs / 10 : TS_DEFAULT_DEV_PAIRS;
    if (n_dev == 0 && !o->dev_file) n_dev = 1;
    gsl_rng *split_rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!split_rng) return ts_fail(TS_ERR_NOMEM, "rng");
    gsl_rng_set(split_rng, (unsigned long)use->seed);
    rc = ts_corpus_split(d->corpus, split_rng, n_dev, 0, &d->split);
    gsl_rng_free(split_rng);
    const size_t *train = d->split.train, n_train = d->split.n_train;
    if (!rc && o->subword > 0) rc = use_subwords(o, use, d);
    else if (!rc) rc = ts_vocab_build(d->corpus, TS_SRC, train, n_train, (size_t)o->min_count, &d->src_vocab);
    if (!rc && !o->subword) rc = ts_vocab_build(d->corpus, TS_TGT, train, n_train, (size_t)o->min_count, &d->tgt_vocab);
    ts_batcher_opts bo = {.batch_size = (size_t)use->batch, .bucket_batches = 50};
    if (!rc) rc = ts_batcher_new(d->corpus, train, n_train, d->src_vocab, d->tgt_vocab, &bo, &d->batcher);
    if (rc) return rc;
    if (!d->dev_file) {
        d->dev = d->corpus;
        d->dev_rows = d->split.dev;
        d->n_dev = d->split.n_dev;
        return TS_OK;
    }
    size_t *rows = malloc(d->dev_file->n_pairs * sizeof *rows);  // every pair, in file order
    if (!rows) return ts_fail(TS_ERR_NOMEM, "no memory for the dev rows");
    for (size_t i = 0; i < d->dev_file->n_pairs; i++) rows[i] = i;
    d->dev = d->dev_file;
    d->dev_rows = rows;
    d->n_dev = d->dev_file->n_pairs;
    return TS_OK;
}

void ts_dataset_free(ts_dataset *d) {
    if (d->dev_file) free((size_t *)d->dev_rows);
    ts_corpus_free(d->dev_file);
    ts_corpus_free(d->test);
    ts_corpus_free(d->corpus);
    ts_corpus_free(d->words);
    ts_subword_free(d->src_sw);
    ts_subword_free(d->tgt_sw);
    ts_split_free(&d->split);
    ts_vocab_free(d->src_vocab);
    ts_vocab_free(d->tgt_vocab);
    ts_batcher_free(d->batcher);
    memset(d, 0, sizeof *d);
}
