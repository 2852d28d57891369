// libFuzzer harness for guided alignment's gold links (train
// --guided-alignment GOLD): the corpus and the Pharaoh file read together as
// a run reads them (ts_dataset_load with a gold file: data/gold.c,
// data/align.c's parser, the links attached to their pairs, then the
// --max-len filter), and the gold distributions a batch is trained towards
// (ts_guided_gold, train/guided.c), which index arrays by those links.
//
// An input is: one byte, --max-len (0: none); two bytes (little-endian), the
// corpus file's length (cut to what the input holds); the corpus file; the
// gold file (the rest). Beyond "no crash, no leak, no sanitizer report":
//   - a failure is TS_ERR_ARG, TS_ERR_FORMAT or TS_ERR_NOMEM, with a message;
//   - a load that succeeds had a gold file with one line per pair of the
//     corpus file (every pair, before --max-len), and every pair kept
//     carries links inside it, sorted, each target word linked (explicitly
//     unaligned if need be);
//   - each gold row is a distribution over the source words linked to its
//     target word (sums to 1) or all 0, and the rows with links are counted
//     as the links say.
#include "data/corpus.h"
#include "data/dataset.h"
#include "fuzz_dir.h"
#include "tensor/status.h"
#include "train/guided.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Lines of the file as getline reads them (the last one may lack its '\n').
static size_t count_lines(const uint8_t *bytes, size_t n) {
    size_t lines = 0;
    for (size_t i = 0; i < n; i++) lines += bytes[i] == '\n';
    return lines + (n > 0 && bytes[n - 1] != '\n');
}

// The pair's links are inside it, sorted by (src, tgt), and name every target word.
static void check_links(const ts_pair *p) {
    if (!p->links || p->n_links < p->tgt_len) __builtin_trap();
    char *seen = calloc((size_t)p->tgt_len, 1);
    for (int k = 0; k < p->n_links; k++) {
        ts_link l = p->links[k];
        if (l.tgt < 0 || l.tgt >= p->tgt_len || (l.src != TS_UNALIGNED && (l.src < 0 || l.src >= p->src_len)))
            __builtin_trap();
        if (k > 0) {
            ts_link prev = p->links[k - 1];
            if (prev.src > l.src || (prev.src == l.src && prev.tgt > l.tgt)) __builtin_trap();
        }
        seen[l.tgt] = 1;
    }
    for (int j = 0; j < p->tgt_len; j++)
        if (!seen[j]) __builtin_trap();
    free(seen);
}

// ts_guided_gold over pairs [0, B) of c: each row a distribution or zeros,
// and the rows with a link to a source word counted as the links say.
static void check_gold(const ts_corpus *c, size_t B) {
    int S = 1, T = 2;
    size_t *rows = malloc(B * sizeof *rows);
    long expected = 0;
    for (size_t b = 0; b < B; b++) {
        const ts_pair *p = &c->pairs[b];
        rows[b] = b;
        if (p->src_len > S) S = p->src_len;
        if (p->tgt_len + 1 > T) T = p->tgt_len + 1;
        for (int t = 0; t < p->tgt_len; t++) {
            int linked = 0;
            for (int k = 0; k < p->n_links && !linked; k++) linked = p->links[k].src != TS_UNALIGNED && p->links[k].tgt == t;
            expected += linked;
        }
    }
    double *gold = malloc(B * (size_t)T * (size_t)S * sizeof *gold);  // (B, T, S)
    long linked = -1;
    if (ts_guided_gold(c, c, rows, (int)B, S, T, gold, &linked) != TS_OK || linked != expected) __builtin_trap();
    for (size_t r = 0; r < B * (size_t)T; r++) {
        double sum = 0.0;
        for (int s = 0; s < S; s++) {
            double g = gold[r * (size_t)S + (size_t)s];
            if (!(g >= 0.0 && g <= 1.0)) __builtin_trap();
            sum += g;
        }
        if (sum != 0.0 && fabs(sum - 1.0) > 1e-9) __builtin_trap();
    }
    free(gold);
    free(rows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3 || size > (1u << 16)) return 0;
    long max_len = data[0];
    size_t corpus_len = (size_t)(data[1] | data[2] << 8), rest = size - 3;
    if (corpus_len > rest) corpus_len = rest;
    const char *dir = fuzz_dir();
    char corpus_path[4096], gold_path[4096];
    fuzz_write(dir, "corpus.tsv", data + 3, corpus_len, corpus_path);
    fuzz_write(dir, "gold.txt", data + 3 + corpus_len, rest - corpus_len, gold_path);

    ts_dataset_opts o = {.corpus = corpus_path, .max_len = max_len, .min_count = 1};
    ts_dataset_use use = {.seed = 1, .batch = 4, .gold = gold_path};
    ts_dataset d;
    int rc = ts_dataset_load(&o, &use, &d);
    if (rc != TS_OK) {
        if ((rc != TS_ERR_ARG && rc != TS_ERR_FORMAT && rc != TS_ERR_NOMEM) || ts_last_error()[0] == '\0') __builtin_trap();
    } else {
        ts_corpus *all = NULL;  // the file's pairs before --max-len: one gold line each
        if (ts_corpus_read(corpus_path, NULL, &all) != TS_OK) __builtin_trap();
        if (count_lines(data + 3 + corpus_len, rest - corpus_len) != all->n_pairs) __builtin_trap();
        ts_corpus_free(all);
        const ts_corpus *c = d.corpus;
        if (!c->has_align || c->n_pairs < 2) __builtin_trap();
        for (size_t i = 0; i < c->n_pairs; i++) check_links(&c->pairs[i]);
        // As many pairs as keep the batch's (B, T, S) gold under 4 M values.
        size_t B = 0;
        for (size_t S = 1, T = 2; B < c->n_pairs && B < 64; B++) {
            const ts_pair *p = &c->pairs[B];
            S = (size_t)p->src_len > S ? (size_t)p->src_len : S;
            T = (size_t)p->tgt_len + 1 > T ? (size_t)p->tgt_len + 1 : T;
            if ((B + 1) * T * S > (1u << 22)) break;
        }
        if (B > 0) check_gold(c, B);
    }
    ts_dataset_free(&d);
    return 0;
}
