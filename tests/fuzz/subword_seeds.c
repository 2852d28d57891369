// Writes SentencePiece models tinyseq learns (unigram and bpe, each side of
// the toy corpus) into the directory named by argv[1], without tinyseq's
// 20-byte header: the seed corpus of fuzz_subword (scripts/fuzz.sh).
#include "data/corpus.h"
#include "data/subword.h"
#include "data/toy.h"
#include "tensor/status.h"

#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: subword_seeds DIR\n");
        return 2;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    ts_corpus *c;
    if (ts_toy_generate(rng, 500, &c) != TS_OK) return 1;
    gsl_rng_free(rng);
    char **text = calloc(c->n_pairs, sizeof *text);
    for (int side = 0; side < 2; side++) {
        for (size_t i = 0; i < c->n_pairs; i++) {
            const ts_pair *p = &c->pairs[i];
            char *const *words = side ? p->tgt : p->src;
            int32_t n = side ? p->tgt_len : p->src_len;
            size_t len = 1;
            for (int32_t k = 0; k < n; k++) len += strlen(words[k]) + 1;
            free(text[i]);
            text[i] = calloc(len, 1);
            for (int32_t k = 0; k < n; k++) {
                if (k) strcat(text[i], " ");
                strcat(text[i], words[k]);
            }
        }
        for (int kind = 0; kind < TS_SUBWORD_KIND_COUNT; kind++) {
            ts_subword *sw;
            ts_subword_opts o = {.kind = (enum ts_subword_kind)kind, .vocab_size = 320, .seed = 1};
            if (ts_subword_train((const char *const *)text, c->n_pairs, &o, &sw) != TS_OK) {
                fprintf(stderr, "subword_seeds: %s\n", ts_last_error());
                return 1;
            }
            size_t n;
            const uint8_t *bytes = ts_subword_bytes(sw, &n);
            char path[4096];
            snprintf(path, sizeof path, "%s/%s-%s.model", argv[1], ts_subword_kind_name(o.kind), side ? "target" : "source");
            FILE *f = fopen(path, "wb");
            if (!f || fwrite(bytes + 20, 1, n - 20, f) != n - 20 || fclose(f) != 0) {
                fprintf(stderr, "subword_seeds: cannot write %s\n", path);
                return 1;
            }
            ts_subword_free(sw);
        }
    }
    for (size_t i = 0; i < c->n_pairs; i++) free(text[i]);
    free(text);
    ts_corpus_free(c);
    return 0;
}
