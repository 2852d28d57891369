// Greedy and beam-search decoding (models/search.h). No tape: each step
// runs in one of two scratch arenas that alternate.
#include "models/search.h"

#include "autograd/ops.h"
#include "models/seq2seq.h"
#include "tensor/kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ts_hypothesis_free(ts_hypothesis *h) {
    if (!h) return;
    free(h->tokens);
    free(h->attention);
    memset(h, 0, sizeof *h);
}

static int alloc_hypothesis(ts_hypothesis *h, int max_len, int S) {
    memset(h, 0, sizeof *h);
    h->S = S;
    h->tokens = malloc((size_t)(max_len + 1) * sizeof(int));
    h->attention = calloc((size_t)(max_len + 1) * S, sizeof(double));
    if (!h->tokens || !h->attention) {
        ts_hypothesis_free(h);
        return ts_fail(TS_ERR_NOMEM, "cannot allocate a hypothesis of %d tokens", max_len);
    }
    return TS_OK;
}

// log softmax(row)[k], stable.
static double log_prob(const double *row, int n, int k) {
    double max = ts_max_array(row, (size_t)n);
    return (row[k] - max) - log(ts_sum_exp_shift(row, (size_t)n, max));
}

// Decoding step t runs in scratch arena t % 2: what step t makes (state,
// weights, logits) stays readable during step t + 1, and is forgotten by step
// t + 2. Memory is one step's worth, however long the output; the encoder's
// tensors stay in the caller's arena.
typedef struct {
    ts_arena *arena[2];
} step_arenas;

static int step_arenas_new(step_arenas *sa, size_t bytes) {
    sa->arena[0] = ts_arena_new(bytes);
    sa->arena[1] = sa->arena[0] ? ts_arena_new(bytes) : NULL;
    return sa->arena[1] ? TS_OK : TS_ERR_NOMEM;
}

static void step_arenas_free(step_arenas *sa) {
    ts_arena_free(sa->arena[0]);
    ts_arena_free(sa->arena[1]);
}

// A first guess at one step's tensors for B rows (bytes); a step that does
// not fit doubles its arena and runs again.
static size_t step_guess(const ts_seq2seq *m, int B, int S) {
    const ts_model_config *c = &m->cfg;
    size_t per_row = 4 * (size_t)S + 4 * (size_t)c->tgt_vocab + 32 * (size_t)c->hidden + 4 * (size_t)c->emb;
    return (size_t)B * per_row * sizeof(double) + ((size_t)1 << 20);
}

// One decoder step on inputs (B): the logits (B, V), *weights (B, S) or NULL,
// st advanced, all in scratch arena t % 2. When parents is not NULL the state
// is first reordered to rows parents[0..B) (beam search). NULL on failure
// (status returned in *rc); a full scratch arena is grown and the step rerun
// from the same state.
static ts_tensor *reorder_rows(ts_ctx *ctx, ts_tensor *t, const int *parents, int K);

static ts_tensor *decode_step(ts_seq2seq *m, ts_ctx *ctx, step_arenas *sa, int t, const ts_encoded *enc,
                              ts_decoder_state *st, const int *parents, const int *inputs, int B, ts_tensor **weights,
                              int *rc) {
    ts_arena *caller = ctx->arena;
    const ts_decoder_state before = *st;  // lives in the other scratch arena (or the caller's)
    for (;;) {
        ts_arena *a = sa->arena[t % 2];
        ts_arena_reset(a);
        ctx->arena = a;
        if (parents) {
            st->state = reorder_rows(ctx, before.state, parents, B);
            st->feed = before.feed ? reorder_rows(ctx, before.feed, parents, B) : NULL;
        }
        ts_tensor *emb = ts_gather_rows(ctx, m->dec.embedding, inputs, B, -1);
        ts_tensor *logits = ts_decoder_logits(ctx, &m->dec, ts_decoder_step(ctx, &m->dec, &m->attn, enc, st, emb, weights));
        ctx->arena = caller;
        if (logits) return logits;
        *rc = ctx->status ? ctx->status : TS_ERR_ARENA;
        size_t capacity = ts_arena_capacity(a);
        if (*rc != TS_ERR_ARENA || capacity > SIZE_MAX / 4) return NULL;
        ts_arena *bigger = ts_arena_new(2 * capacity);
        if (!bigger) {
            *rc = TS_ERR_NOMEM;
            return NULL;
        }
        ts_arena_free(a);
        sa->arena[t % 2] = bigger;
        *st = before;
        ctx->status = TS_OK;
        *rc = TS_OK;
    }
}

int ts_seq2seq_greedy(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, int max_len, ts_hypothesis *out) {
    int B = bv->B, S = bv->S, V = m->cfg.tgt_vocab;
    if (max_len < 1) return ts_fail(TS_ERR_ARG, "greedy: max_len %d", max_len);
    int grad_before = ts_set_grad_enabled(ctx, 0);
    int rc = TS_OK;
    for (int b = 0; b < B && !rc; b++) rc = alloc_hypothesis(&out[b], max_len, S);
    ts_encoded enc;
    step_arenas sa = {{NULL, NULL}};
    int *inputs = NULL, *done = calloc((size_t)B, sizeof(int));
    if (!rc && !done) rc = ts_fail(TS_ERR_NOMEM, "greedy: out of memory");
    if (!rc) rc = step_arenas_new(&sa, step_guess(m, B, S));
    if (!rc) rc = ts_seq2seq_encode(m, ctx, bv, &enc);
    if (!rc && !(inputs = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(int)))) rc = TS_ERR_ARENA;
    if (!rc) {
        ts_decoder_state st;
        ts_decoder_start(ctx, &m->dec, &enc, &st);
        for (int b = 0; b < B; b++) inputs[b] = TS_SOS;
        int remaining = B;
        for (int t = 0; t <= max_len && remaining > 0; t++) {
            ts_tensor *weights;
            ts_tensor *logits = decode_step(m, ctx, &sa, t, &enc, &st, NULL, inputs, B, &weights, &rc);
            if (!logits) break;
            for (int b = 0; b < B; b++) {
                if (done[b]) continue;
                ts_hypothesis *h = &out[b];
                if (weights) memcpy(h->attention + (size_t)t * S, weights->data + (size_t)b * S, (size_t)S * sizeof(double));
                const double *row = logits->data + (size_t)b * V;
                int best = ts_seq2seq_argmax_token(row, V);
                if (best == TS_EOS || t == max_len) {  // at the limit the last row is kept, the token is not
                    h->ended = best == TS_EOS;
                    if (h->ended) h->score += log_prob(row, V, best);
                    done[b] = 1;
                    remaining--;
                    continue;
                }
                h->score += log_prob(row, V, best);
                h->tokens[h->len++] = best;
                inputs[b] = best;
            }
        }
    }
    free(done);
    step_arenas_free(&sa);
    ts_set_grad_enabled(ctx, grad_before);
    if (rc) {
        for (int b = 0; b < B; b++) ts_hypothesis_free(&out[b]);
        return rc == TS_ERR_ARENA && !ctx->status ? TS_ERR_ARENA : (ctx->status ? ctx->status : rc);
    }
    return TS_OK;
}

// A beam candidate: an entry of the previous step extended by one token.
typedef struct {
    double score;  // total log-probability
    int parent;    // the live entry it extends
    int token;
} beam_candidate;

// Keeps the best `cap` candidates in *list (sorted, best first; earlier
// candidates win ties, so beam 1 picks the same token as argmax).
static void keep_best(beam_candidate *list, int *count, int cap, beam_candidate c) {
    int i = *count;
    if (i == cap && !(c.score > list[cap - 1].score)) return;
    if (i < cap) (*count)++;
    else i = cap - 1;
    while (i > 0 && c.score > list[i - 1].score) {
        list[i] = list[i - 1];
        i--;
    }
    list[i] = c;
}

// A copy of rows `parents` of t (K, ...), as a tensor with no gradient.
static ts_tensor *reorder_rows(ts_ctx *ctx, ts_tensor *t, const int *parents, int K) {
    if (!t) return NULL;
    ts_tensor *copy = ts_node(ctx, TS_OP_LEAF, t->ndim, t->shape, 0, NULL);
    if (!copy) return NULL;
    size_t row = t->size / (size_t)t->shape[0];
    for (int k = 0; k < K; k++) memcpy(copy->data + k * row, t->data + (size_t)parents[k] * row, row * sizeof(double));
    return copy;
}

// The history of a beam search as back-pointers: entry k live at step t has
// attention row att[t][k] (S), and (t > 0) came from entry from[t][k] of step
// t - 1 by appending token tok[t][k]. Each step adds K rows; nothing is copied
// until a hypothesis finishes, so the cost grows with the length, not its cube.
typedef struct {
    int K, S, steps, cap;  // steps recorded, room for cap
    int *from, *tok;       // (cap, K)
    double *att;           // (cap, K, S)
} beam_history;

// Room for step t. TS_OK or TS_ERR_NOMEM.
static int history_reserve(beam_history *h, int t) {
    if (t < h->cap) return TS_OK;
    size_t cap = h->cap ? 2 * (size_t)h->cap : 16, K = (size_t)h->K, S = (size_t)h->S;
    if (cap > (size_t)INT32_MAX || cap * K > SIZE_MAX / sizeof(double) / (S ? S : 1))
        return ts_fail(TS_ERR_NOMEM, "beam: a history of %zu steps overflows", cap);
    int *from = realloc(h->from, cap * K * sizeof(int));
    if (from) h->from = from;
    int *tok = from ? realloc(h->tok, cap * K * sizeof(int)) : NULL;
    if (tok) h->tok = tok;
    double *att = tok ? realloc(h->att, cap * K * S * sizeof(double)) : NULL;
    if (!att) return ts_fail(TS_ERR_NOMEM, "beam: cannot keep %zu steps of %zu x %zu attention weights", cap, K, S);
    h->att = att;
    h->cap = (int)cap;
    return TS_OK;
}

static void history_free(beam_history *h) {
    free(h->from);
    free(h->tok);
    free(h->att);
}

// Fills out (allocated for max_len) with the first len tokens and len + 1
// attention rows of entry k live at step t = len, following the back-pointers.
static void history_trace(const beam_history *h, int k, int len, ts_hypothesis *out) {
    size_t K = (size_t)h->K, S = (size_t)h->S;
    for (int t = len; t >= 0; t--) {
        memcpy(out->attention + (size_t)t * S, h->att + ((size_t)t * K + (size_t)k) * S, S * sizeof(double));
        if (t == 0) break;
        out->tokens[t - 1] = h->tok[(size_t)t * K + (size_t)k];
        k = h->from[(size_t)t * K + (size_t)k];
    }
}

double ts_length_penalized(double log_prob, int tokens, const ts_length_penalty *lp) {
    if (!lp || !lp->gnmt) return log_prob / (tokens + 1);
    return log_prob / pow((5.0 + tokens + 1) / 6.0, lp->alpha);
}

int ts_seq2seq_beam(ts_seq2seq *m, ts_ctx *ctx, const int *src, int n, int beam, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out) {
    int V = m->cfg.tgt_vocab, S = n, K = beam;
    if (K < 1 || K > 1000 || max_len < 1 || n < 1) return ts_fail(TS_ERR_ARG, "beam: width %d, max_len %d, length %d", K, max_len, n);
    if (lp && lp->gnmt && !(lp->alpha >= 0 && lp->alpha <= 100))
        return ts_fail(TS_ERR_ARG, "beam: length penalty %g outside [0, 100]", lp->alpha);
    int grad_before = ts_set_grad_enabled(ctx, 0);
    memset(out, 0, sizeof *out);
    beam_history hist = {.K = K, .S = S};
    step_arenas sa = {{NULL, NULL}};
    double *score = calloc((size_t)K, sizeof(double));  // (K) of the live entries
    beam_candidate *cands = malloc((size_t)2 * K * sizeof *cands);
    int *parents = malloc((size_t)K * sizeof(int));
    int *src_k = malloc((size_t)n * K * sizeof(int)), *len_k = malloc((size_t)K * sizeof(int));
    int rc = score && cands && parents && src_k && len_k ? TS_OK : ts_fail(TS_ERR_NOMEM, "beam: out of memory");
    if (!rc) rc = step_arenas_new(&sa, step_guess(m, K, S));
    double best_final = -INFINITY;
    int finished = 0;
    // The source repeated K times: one batch row per live hypothesis.
    for (int t = 0; !rc && t < n; t++)
        for (int k = 0; k < K; k++) src_k[(size_t)t * K + k] = src[t];
    for (int k = 0; !rc && k < K; k++) len_k[k] = n;
    ts_encoded enc;
    ts_batch_view bv = {.B = K, .S = n, .T = 0, .src = src_k, .src_len = len_k};
    if (!rc) rc = ts_seq2seq_encode(m, ctx, &bv, &enc);
    int *inputs = rc ? NULL : ts_arena_alloc(ctx->arena, (size_t)K * sizeof(int));
    if (!rc && !inputs) rc = TS_ERR_ARENA;
    ts_decoder_state st;
    if (!rc) ts_decoder_start(ctx, &m->dec, &enc, &st);
    int alive = 1;
    for (int k = 0; k < K && inputs; k++) inputs[k] = TS_SOS;
    for (int t = 0; !rc && t <= max_len && alive > 0; t++) {
        ts_tensor *weights;
        ts_tensor *logits = decode_step(m, ctx, &sa, t, &enc, &st, t > 0 ? parents : NULL, inputs, K, &weights, &rc);
        if (!logits || (rc = history_reserve(&hist, t))) break;
        hist.steps = t + 1;
        double *att_t = hist.att + (size_t)t * K * S;  // (K, S)
        if (weights) memcpy(att_t, weights->data, (size_t)alive * S * sizeof(double));
        else memset(att_t, 0, (size_t)alive * S * sizeof(double));
        int count = 0;
        for (int k = 0; k < alive; k++) {
            double *row = logits->data + (size_t)k * V;
            ts_log_softmax_rows(row, row, 1, (size_t)V);
            for (int v = TS_EOS; v < V; v++)  // never <pad> or <sos>
                keep_best(cands, &count, 2 * K, (beam_candidate){score[k] + row[v], k, v});
        }
        int next_alive = 0;
        int *from_next = NULL, *tok_next = NULL;  // step t + 1's back-pointers, once reserved
        for (int i = 0; i < count; i++) {
            beam_candidate c = cands[i];
            // As in fairseq: an <eos> finishes a hypothesis only when it ranks
            // among the best K; beam 1 then stops exactly where greedy does.
            if ((c.token == TS_EOS && i < K) || t == max_len) {
                // Finished (or cut at the limit, then without its token).
                int len = t, ended = c.token == TS_EOS;
                finished++;
                double final = ts_length_penalized(ended ? c.score : score[c.parent], len, lp);
                if (final > best_final) {
                    best_final = final;
                    ts_hypothesis_free(out);
                    if ((rc = alloc_hypothesis(out, max_len, S))) break;
                    history_trace(&hist, c.parent, len, out);
                    out->len = len;
                    out->score = final;
                    out->ended = ended;
                }
                if (t == max_len) break;
                continue;
            }
            if (c.token == TS_EOS || next_alive == K) continue;
            if (!from_next) {
                if ((rc = history_reserve(&hist, t + 1))) break;
                from_next = hist.from + (size_t)(t + 1) * K;
                tok_next = hist.tok + (size_t)(t + 1) * K;
            }
            parents[next_alive] = c.parent;
            from_next[next_alive] = c.parent;
            tok_next[next_alive] = c.token;
            score[next_alive] = c.score;  // safe: parents are read from cands, not score, from here on
            inputs[next_alive] = c.token;
            next_alive++;
        }
        if (rc) break;
        // Stop once K hypotheses have finished: width 1 stops at its first
        // <eos>, exactly like greedy.
        alive = finished >= K ? 0 : next_alive;
        if (alive == 0) break;
        for (int k = alive; k < K; k++) parents[k] = parents[0];  // the next step reorders the state by these
    }
    if (!rc && !out->tokens) rc = ts_fail(TS_ERR_ARG, "beam: no hypothesis");
    history_free(&hist);
    step_arenas_free(&sa);
    free(score);
    free(cands);
    free(parents);
    free(src_k);
    free(len_k);
    ts_set_grad_enabled(ctx, grad_before);
    if (rc) ts_hypothesis_free(out);
    return rc;
}
