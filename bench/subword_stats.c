// Subwords on a real corpus (docs/data.md, "Subwords"): word-level <unk>
// rates on held-out sentences, then joint and per-side SentencePiece models of
// a few sizes learned on the training split only: pieces per sentence, byte
// pieces, <unk> after. The split is the trainer's: --max-len, 500 dev pairs
// (or a tenth), shuffled by --seed.
//
/*
    cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I. bench/subword_stats.c \
       build/libtinyseq_data.a build/libtinyseq_tensor.a -lsentencepiece \
       -lsentencepiece_train -lstdc++ -lgsl -lopenblas -lz -lunistring -lm \
       -o build/subword_stats
    build/subword_stats ../shared/data/tatoeba-eng-fra.tsv 10 1 1000 2000 4000 8000
*/
#include "data/corpus.h"
#include "data/subword.h"
#include "data/vocab.h"
#include "tensor/status.h"

#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *join(char *const *tokens, int32_t n) {
    size_t len = 1;
    for (int32_t i = 0; i < n; i++) len += strlen(tokens[i]) + 1;
    char *s = calloc(len, 1);
    for (int32_t i = 0; i < n; i++) {
        if (i) strcat(s, " ");
        strcat(s, tokens[i]);
    }
    return s;
}

static char *side_text(const ts_corpus *c, size_t row, int side) {
    const ts_pair *p = &c->pairs[row];
    return side == TS_SRC ? join(p->src, p->src_len) : join(p->tgt, p->tgt_len);
}

static void die(int rc) {
    fprintf(stderr, "subword_stats: %s\n", ts_last_error());
    exit(rc ? 1 : 0);
}

// Word level: held-out sentences with an <unk>, and <unk> tokens.
static void word_level(const ts_corpus *c, const ts_split *sp, int side) {
    ts_vocab *v;
    int rc = ts_vocab_build(c, side, sp->train, sp->n_train, 1, &v);
    if (rc) die(rc);
    size_t sent = 0, unk = 0, tokens = 0;
    for (size_t i = 0; i < sp->n_dev; i++) {
        const ts_pair *p = &c->pairs[sp->dev[i]];
        char **t = side == TS_SRC ? p->src : p->tgt;
        int32_t n = side == TS_SRC ? p->src_len : p->tgt_len;
        size_t here = 0;
        for (int32_t k = 0; k < n; k++) here += ts_vocab_id(v, t[k]) == TS_UNK;
        sent += here > 0;
        unk += here;
        tokens += (size_t)n;
    }
    printf("| words | %s | %zu | %.2f | 100%% | - | %zu (%.1f%%) | %zu (%.2f%%) | - |\n",
           side == TS_SRC ? "en" : "fr", ts_vocab_size(v), (double)tokens / (double)sp->n_dev, sent,
           100.0 * (double)sent / (double)sp->n_dev, unk, 100.0 * (double)unk / (double)tokens);
    ts_vocab_free(v);
}

// Pieces of one side's held-out sentences under model sw.
static void pieces_of(const ts_subword *sw, const char *label, const ts_corpus *c, const ts_split *sp,
                      int side, double seconds) {
    size_t pieces = 0, longest = 0, bytes_sent = 0, unk = 0, unk_sent = 0, over = 0, words = 0, whole = 0;
    for (size_t i = 0; i < sp->n_dev; i++) {
        char *text = side_text(c, sp->dev[i], side);
        int32_t *ids;
        size_t n;
        int rc = ts_subword_encode(sw, text, strlen(text), NULL, &ids, &n);
        if (rc) die(rc);
        const char **piece = malloc((n + 1) * sizeof *piece);
        int32_t *word_of = malloc((n + 1) * sizeof *word_of);
        for (size_t k = 0; k < n; k++) piece[k] = ts_subword_piece(sw, ids[k]);
        size_t n_words = ts_subword_words(piece, n, word_of);
        for (size_t k = 0; k < n; k++)  // a word of one piece: its only piece opens and closes it
            whole += (k == 0 || word_of[k - 1] != word_of[k]) && (k + 1 == n || word_of[k + 1] != word_of[k]);
        words += n_words;
        free(piece);
        free(word_of);
        int has_byte = 0;
        size_t unk_here = 0;
        for (size_t k = 0; k < n; k++) {
            unk_here += ids[k] == TS_UNK;
            has_byte |= ids[k] >= TS_N_SPECIALS && ids[k] < TS_N_SPECIALS + 256;
        }
        bytes_sent += (size_t)has_byte;
        unk += unk_here;
        unk_sent += unk_here > 0;
        pieces += n;
        if (n > longest) longest = n;
        over += n > 20;
        free(ids);
        free(text);
    }
    printf("| %s | %s | %zu | %.2f (max %zu, >20: %zu) | %.1f%% | %zu | %zu | %zu | %.1f |\n", label,
           side == TS_SRC ? "en" : "fr", ts_subword_size(sw), (double)pieces / (double)sp->n_dev, longest,
           over, 100.0 * (double)whole / (double)words, bytes_sent, unk_sent, unk, seconds);
}

static ts_subword *learn(const ts_corpus *c, const ts_split *sp, int sides, enum ts_subword_kind kind, size_t size,
                         double *seconds) {
    size_t n = 0;
    char **s = malloc(2 * sp->n_train * sizeof *s);
    for (size_t i = 0; i < sp->n_train; i++)
        for (int side = 0; side < 2; side++)
            if (sides & (1 << side)) s[n++] = side_text(c, sp->train[i], side);
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    ts_subword *sw;
    int rc = ts_subword_train((const char *const *)s, n, &(ts_subword_opts){.kind = kind, .vocab_size = size, .seed = 1}, &sw);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    *seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (rc) die(rc);
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
    return sw;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: subword_stats CORPUS MAX_LEN SEED SIZE...\n");
        return 2;
    }
    ts_corpus *c;
    int rc = ts_corpus_read(argv[1], &(ts_corpus_opts){.max_len = (size_t)atol(argv[2])}, &c);
    if (rc) die(rc);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)atol(argv[3]));
    size_t n_dev = c->n_pairs / 10 < 500 ? c->n_pairs / 10 : 500;
    ts_split sp;
    if ((rc = ts_corpus_split(c, rng, n_dev, 0, &sp))) die(rc);
    gsl_rng_free(rng);
    printf("%zu pairs: %zu train, %zu held out\n\n", c->n_pairs, sp.n_train, sp.n_dev);
    printf("| units | side | ids | tokens per sentence | words in one piece | sentences with byte pieces "
           "| sentences with <unk> | <unk> tokens | CPU s to learn |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    word_level(c, &sp, TS_SRC);
    word_level(c, &sp, TS_TGT);
    for (int kind = 0; kind < TS_SUBWORD_KIND_COUNT; kind++)
        for (int a = 4; a < argc; a++) {
            size_t size = (size_t)atol(argv[a]);
            const char *name = ts_subword_kind_name(kind);
            char label[64];
            double sec;
            ts_subword *joint = learn(c, &sp, 3, kind, size, &sec);
            snprintf(label, sizeof label, "%s joint %zu", name, size);
            pieces_of(joint, label, c, &sp, TS_SRC, sec);
            pieces_of(joint, label, c, &sp, TS_TGT, sec);
            ts_subword_free(joint);
            for (int side = 0; side < 2; side++) {
                ts_subword *one = learn(c, &sp, 1 << side, kind, size, &sec);
                snprintf(label, sizeof label, "%s per side %zu", name, size);
                pieces_of(one, label, c, &sp, side, sec);
                ts_subword_free(one);
            }
        }
    ts_split_free(&sp);
    ts_corpus_free(c);
    return 0;
}
