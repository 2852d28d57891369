// Shards of a batch and the sum over ranks (train/shard.h).
#include "train/shard.h"

#include "tensor/status.h"

#include <stdlib.h>
#include <string.h>

int ts_shards_init(ts_shards *sh, int ranks, long accumulate, size_t n_params, size_t n_sums) {
    memset(sh, 0, sizeof *sh);
    sh->count = ranks * (int)(accumulate > 0 && accumulate <= INT32_MAX / ranks ? accumulate : 1);
    if (sh->count > 1 && !(sh->rng = gsl_rng_alloc(gsl_rng_mt19937))) return ts_fail(TS_ERR_NOMEM, "rng");
    if (ranks > 1 && !(sh->flat = malloc((n_params + n_sums) * sizeof *sh->flat)))
        return ts_fail(TS_ERR_NOMEM, "out of memory: the gradients' buffer for the ranks");
    return TS_OK;
}

void ts_shards_free(ts_shards *sh) {
    free(sh->ids);
    free(sh->flat);
    if (sh->rng) gsl_rng_free(sh->rng);
    memset(sh, 0, sizeof *sh);
}

int ts_shard_first(const ts_shards *sh, int B, int shard) { return (int)((long)shard * B / sh->count); }

int ts_shard_view(ts_shards *sh, const ts_batch *b, int shard, ts_batch_view *view, int *empty) {
    int c0 = ts_shard_first(sh, b->B, shard), c1 = ts_shard_first(sh, b->B, shard + 1);
    *empty = c0 == c1;
    if (*empty) return TS_OK;
    int n = c1 - c0, S = 0, T = 0;
    for (int c = c0; c < c1; c++) {
        if (b->src_len[c] > S) S = b->src_len[c];
        if (b->tgt_len[c] > T) T = b->tgt_len[c];
    }
    size_t need = (size_t)n * ((size_t)S + 1 + 2 * (size_t)T);
    if (need > sh->room) {
        int32_t *bigger = realloc(sh->ids, need * sizeof *bigger);
        if (!bigger) return ts_fail(TS_ERR_NOMEM, "out of memory: a shard of %d sentences", n);
        sh->ids = bigger;
        sh->room = need;
    }
    int32_t *src = sh->ids, *src_len = src + (size_t)S * n;             // (S, n), (n)
    int32_t *tgt_in = src_len + n, *tgt_out = tgt_in + (size_t)T * n;  // (T, n) each
    for (int s = 0; s < S; s++) memcpy(src + (size_t)s * n, b->src + (size_t)s * b->B + c0, (size_t)n * sizeof *src);
    memcpy(src_len, b->src_len + c0, (size_t)n * sizeof *src_len);
    for (int k = 0; k < T; k++) {
        memcpy(tgt_in + (size_t)k * n, b->tgt_in + (size_t)k * b->B + c0, (size_t)n * sizeof *tgt_in);
        memcpy(tgt_out + (size_t)k * n, b->tgt_out + (size_t)k * b->B + c0, (size_t)n * sizeof *tgt_out);
    }
    *view = (ts_batch_view){.B = n, .S = S, .T = T, .src = src, .src_len = src_len, .tgt_in = tgt_in, .tgt_out = tgt_out};
    return TS_OK;
}

// splitmix64's finaliser mixes the three.
gsl_rng *ts_shard_rng(ts_shards *sh, long seed, long step, int shard) {
    uint64_t z = (uint64_t)seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)step * 0xBF58476D1CE4E5B9ull ^ (uint64_t)shard * 0x94D049BB133111EBull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    gsl_rng_set(sh->rng, (unsigned long)(z ^ (z >> 31)));
    return sh->rng;
}

int ts_shards_sum_over_ranks(ts_shards *sh, ts_dist *d, ts_params *p, double *sums, size_t n_sums) {
    size_t at = 0;
    for (int i = 0; i < p->count; i++) {
        const ts_tensor *t = p->items[i];  // float32 gradients are summed as float64 (exact in, rounded out)
        ts_values_convert(sh->flat + at, TS_F64, t->grad_raw, t->dtype, t->size);
        at += t->size;
    }
    memcpy(sh->flat + at, sums, n_sums * sizeof *sums);
    int rc = ts_dist_allreduce_sum(d, sh->flat, at + n_sums);
    if (rc) return rc;
    at = 0;
    for (int i = 0; i < p->count; i++) {
        ts_tensor *t = p->items[i];
        ts_values_convert(t->grad_raw, t->dtype, sh->flat + at, TS_F64, t->size);
        at += t->size;
    }
    memcpy(sums, sh->flat + at, n_sums * sizeof *sums);
    return TS_OK;
}
