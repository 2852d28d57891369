// tinyseq_toy_corpus (api/tinyseq.h): the toy corpus and its gold
// alignments written to files, the same bytes as `tinyseq corpus --toy`.
#include "api/tinyseq.h"

#include "data/toy.h"
#include "tensor/atomic_write.h"
#include "tensor/status.h"

#include <gsl/gsl_rng.h>

static int fill_tsv(void *corpus, FILE *out) { return ts_corpus_write_tsv(corpus, out); }
static int fill_align(void *corpus, FILE *out) { return ts_corpus_write_align(corpus, out); }

int tinyseq_toy_corpus(long n, long seed, const char *tsv_path, const char *align_path) {
    if (n < 1 || n > 1000000) return ts_fail(TS_ERR_ARG, "n %ld is outside 1..1000000", n);
    if (seed < 0 || seed > 2147483647L) return ts_fail(TS_ERR_ARG, "seed %ld is outside 0..2147483647", seed);
    if (!tsv_path) return ts_fail(TS_ERR_ARG, "no path for the corpus");
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) return ts_fail(TS_ERR_NOMEM, "out of memory");
    gsl_rng_set(rng, (unsigned long)seed);
    ts_corpus *c = NULL;
    int rc = ts_toy_generate(rng, (size_t)n, &c);
    gsl_rng_free(rng);
    if (!rc) rc = ts_write_atomic(tsv_path, fill_tsv, c, NULL);
    if (!rc && align_path) rc = ts_write_atomic(align_path, fill_align, c, NULL);
    ts_corpus_free(c);
    return rc;
}
