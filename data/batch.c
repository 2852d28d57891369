#include "data/batch.h"

#include "tensor/status.h"

#include <gsl/gsl_randist.h>
#include <stdlib.h>
#include <string.h>

// Sort keys for bucketing: target length, source length, then the position
// in the shuffled order, so equal lengths keep their random order and the
// result does not depend on qsort's stability.
typedef struct bucket_key {
    int32_t tgt_n, src_n;
    size_t pos, item;
} bucket_key;

// N = rows, Bmax = batch_size, Smax / Tmax = longest source / target + 1
struct ts_batcher {
    size_t n_rows;
    size_t batch_size, bucket_batches;
    size_t *row;        // (N) corpus row of each item
    int32_t *ids;       // all items' source then target ids, back to back
    size_t *src_at;     // (N) offset of item i's source ids in `ids`
    size_t *tgt_at;     // (N) offset of its target ids
    int32_t *src_n;     // (N) source length
    int32_t *tgt_n;     // (N) target length (without <eos>)
    size_t *order;      // (N) item order of this epoch; batch k = order[k*Bmax ...]
    size_t *batch_order;  // (n_batches) the order batches are handed out
    size_t n_batches, cursor;
    ts_batch batch;     // buffers sized (Smax, Bmax) and (Tmax, Bmax)
    size_t *batch_rows; // (Bmax)
    struct bucket_key *keys;  // (min(N, bucket_batches * Bmax)) sort scratch
};

// Items per bucketing chunk: k batches, or all n when that is fewer (and
// without overflowing for a huge k).
static size_t chunk_size(size_t k, size_t batch_size, size_t n) {
    return k <= n / batch_size ? k * batch_size : n;
}

void ts_batcher_free(ts_batcher *b) {
    if (!b) return;
    free(b->row);
    free(b->ids);
    free(b->src_at);
    free(b->tgt_at);
    free(b->src_n);
    free(b->tgt_n);
    free(b->order);
    free(b->batch_order);
    free(b->batch.src);
    free(b->batch.src_len);
    free(b->batch.tgt_in);
    free(b->batch.tgt_out);
    free(b->batch.tgt_len);
    free(b->batch_rows);
    free(b->keys);
    free(b);
}

int ts_batcher_new(const ts_corpus *c, const size_t *rows, size_t n_rows, const ts_vocab *src,
                   const ts_vocab *tgt, const ts_batcher_opts *opts, ts_batcher **out) {
    *out = NULL;
    if (!rows) n_rows = c->n_pairs;
    if (!n_rows) return ts_fail(TS_ERR_ARG, "no sentence pairs to batch");
    if (!opts || !opts->batch_size) return ts_fail(TS_ERR_ARG, "batch size must be at least 1");
    size_t total = 0, s_max = 0, t_max = 0;
    for (size_t i = 0; i < n_rows; i++) {
        size_t r = rows ? rows[i] : i;
        if (r >= c->n_pairs)
            return ts_fail(TS_ERR_ARG, "row %zu out of range (corpus has %zu pairs)", r, c->n_pairs);
        const ts_pair *p = &c->pairs[r];
        total += (size_t)p->src_len + (size_t)p->tgt_len;
        if ((size_t)p->src_len > s_max) s_max = (size_t)p->src_len;
        if ((size_t)p->tgt_len > t_max) t_max = (size_t)p->tgt_len;
    }
    t_max += 1;  // <sos> / <eos>
    size_t bmax = opts->batch_size < n_rows ? opts->batch_size : n_rows;
    size_t n_batches = (n_rows + bmax - 1) / bmax;

    ts_batcher *b = calloc(1, sizeof *b);
    if (!b) return ts_fail(TS_ERR_NOMEM, "out of memory allocating a batcher");
    b->n_rows = n_rows;
    b->batch_size = bmax;
    b->bucket_batches = opts->bucket_batches;
    b->n_batches = n_batches;
    b->row = malloc(n_rows * sizeof *b->row);
    b->ids = malloc(total * sizeof *b->ids);
    b->src_at = malloc(n_rows * sizeof *b->src_at);
    b->tgt_at = malloc(n_rows * sizeof *b->tgt_at);
    b->src_n = malloc(n_rows * sizeof *b->src_n);
    b->tgt_n = malloc(n_rows * sizeof *b->tgt_n);
    b->order = malloc(n_rows * sizeof *b->order);
    b->batch_order = malloc(n_batches * sizeof *b->batch_order);
    b->batch.src = malloc(s_max * bmax * sizeof *b->batch.src);
    b->batch.src_len = malloc(bmax * sizeof *b->batch.src_len);
    b->batch.tgt_in = malloc(t_max * bmax * sizeof *b->batch.tgt_in);
    b->batch.tgt_out = malloc(t_max * bmax * sizeof *b->batch.tgt_out);
    b->batch.tgt_len = malloc(bmax * sizeof *b->batch.tgt_len);
    b->batch_rows = malloc(bmax * sizeof *b->batch_rows);
    if (opts->bucket_batches)
        b->keys = malloc(chunk_size(opts->bucket_batches, bmax, n_rows) * sizeof *b->keys);
    if ((opts->bucket_batches && !b->keys) || !b->row || !b->ids || !b->src_at || !b->tgt_at || !b->src_n || !b->tgt_n || !b->order ||
        !b->batch_order || !b->batch.src || !b->batch.src_len ||
        !b->batch.tgt_in || !b->batch.tgt_out || !b->batch.tgt_len ||
        !b->batch_rows) {
        ts_batcher_free(b);
        return ts_fail(TS_ERR_NOMEM, "out of memory allocating batches for %zu pairs", n_rows);
    }
    b->batch.rows = b->batch_rows;
    // Encode once: batches then only copy ids.
    size_t at = 0;
    for (size_t i = 0; i < n_rows; i++) {
        size_t r = rows ? rows[i] : i;
        const ts_pair *p = &c->pairs[r];
        b->row[i] = r;
        b->src_at[i] = at;
        b->src_n[i] = p->src_len;
        ts_vocab_encode(src, p->src, (size_t)p->src_len, b->ids + at);
        at += (size_t)p->src_len;
        b->tgt_at[i] = at;
        b->tgt_n[i] = p->tgt_len;
        ts_vocab_encode(tgt, p->tgt, (size_t)p->tgt_len, b->ids + at);
        at += (size_t)p->tgt_len;
    }
    ts_batcher_epoch(b, NULL);
    *out = b;
    return TS_OK;
}


static int bucket_cmp(const void *a, const void *b) {
    const bucket_key *x = a, *y = b;
    if (x->tgt_n != y->tgt_n) return x->tgt_n < y->tgt_n ? -1 : 1;
    if (x->src_n != y->src_n) return x->src_n < y->src_n ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

void ts_batcher_epoch(ts_batcher *b, gsl_rng *rng) {
    size_t n = b->n_rows;
    for (size_t i = 0; i < n; i++) b->order[i] = i;
    if (rng) gsl_ran_shuffle(rng, b->order, n, sizeof *b->order);
    if (b->bucket_batches) {
        size_t chunk = chunk_size(b->bucket_batches, b->batch_size, n);
        bucket_key *k = b->keys;
        for (size_t c0 = 0; c0 < n; c0 += chunk) {
            size_t m = n - c0 < chunk ? n - c0 : chunk;
            for (size_t i = 0; i < m; i++) {
                size_t item = b->order[c0 + i];
                k[i] = (bucket_key){b->tgt_n[item], b->src_n[item], i, item};
            }
            qsort(k, m, sizeof *k, bucket_cmp);
            for (size_t i = 0; i < m; i++) b->order[c0 + i] = k[i].item;
        }
    }
    for (size_t i = 0; i < b->n_batches; i++) b->batch_order[i] = i;
    if (rng) gsl_ran_shuffle(rng, b->batch_order, b->n_batches, sizeof *b->batch_order);
    b->cursor = 0;
}

size_t ts_batcher_count(const ts_batcher *b) { return b->n_batches; }

// Fills the batch buffers with batch k of the epoch order.
static const ts_batch *fill(ts_batcher *b, size_t k) {
    size_t first = k * b->batch_size;
    size_t nb = b->n_rows - first < b->batch_size ? b->n_rows - first : b->batch_size;
    const size_t *items = b->order + first;
    ts_batch *x = &b->batch;
    int32_t S = 0, T = 0;
    for (size_t j = 0; j < nb; j++) {
        if (b->src_n[items[j]] > S) S = b->src_n[items[j]];
        if (b->tgt_n[items[j]] > T) T = b->tgt_n[items[j]];
    }
    T += 1;
    size_t B = nb;
    x->B = (int32_t)B;
    x->S = S;
    x->T = T;
    for (size_t j = 0; j < B; j++) {
        size_t it = items[j];
        const int32_t *sid = b->ids + b->src_at[it], *tid = b->ids + b->tgt_at[it];
        int32_t ns = b->src_n[it], nt = b->tgt_n[it];
        b->batch_rows[j] = b->row[it];
        x->src_len[j] = ns;
        x->tgt_len[j] = nt + 1;
        for (int32_t s = 0; s < S; s++) x->src[(size_t)s * B + j] = s < ns ? sid[s] : TS_PAD;
        for (int32_t t = 0; t < T; t++) {
            size_t at = (size_t)t * B + j;
            x->tgt_in[at] = t == 0 ? TS_SOS : t <= nt ? tid[t - 1] : TS_PAD;
            x->tgt_out[at] = t < nt ? tid[t] : t == nt ? TS_EOS : TS_PAD;
        }
    }
    return x;
}

const ts_batch *ts_batcher_next(ts_batcher *b) {
    if (b->cursor >= b->n_batches) return NULL;
    return fill(b, b->batch_order[b->cursor++]);
}

const ts_batch *ts_batcher_get(ts_batcher *b, size_t i) {
    if (i >= b->n_batches) return NULL;
    return fill(b, b->batch_order[i]);
}
