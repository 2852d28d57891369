// Greedy and beam-search decoding (models/search.h), through the model's
// row of the model table: encode, start, then step (and reorder) per output
// position. No tape: each step runs in one of two scratch arenas that
// alternate.
#include "models/search.h"

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

// Decoding step t runs in scratch arena t % 2: what step t makes (state,
// weights, logits) stays readable during step t + 1, and is forgotten by step
// t + 2, as the state rules of models/model.h allow. The memory, the first
// state and what a state keeps across steps (a cache) stay in the caller's
// arena.
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

// One step of the model on tokens (B) from *state, in scratch arena t % 2:
// the logits (B, V), *weights (B, S) or NULL, *state advanced. When parents
// is not NULL the state's hypotheses are first reordered to rows parents[0..B)
// (beam search). NULL on failure (status returned in *rc); a full scratch
// arena is grown and the step redone from the same state.
static ts_tensor *decode_step(ts_seq2seq *m, ts_ctx *ctx, step_arenas *sa, int t, void **state, const int *parents,
                              const int *tokens, int B, ts_tensor **weights, int *rc) {
    ts_arena *caller = ctx->arena;
    for (;;) {
        ts_arena *a = sa->arena[t % 2];
        ts_arena_reset(a);
        ctx->arena = a;
        const void *from = parents ? m->kind->reorder(m, ctx, *state, parents, B, 0) : *state;
        void *next = NULL;
        ts_tensor *logits = from ? m->kind->step(m, ctx, from, tokens, B, &next, weights) : NULL;
        ctx->arena = caller;
        if (logits && !ctx->status) {
            *state = next;
            return logits;
        }
        *rc = ctx->status ? ctx->status : TS_ERR_ARENA;
        if (*rc != TS_ERR_ARENA || (*rc = ts_arena_grow(&sa->arena[t % 2], "a decoding step"))) return NULL;
        ctx->status = TS_OK;
    }
}

int ts_seq2seq_greedy(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, int max_len, ts_hypothesis *out) {
    int B = bv->B, S = bv->S, V = m->cfg.tgt_vocab;
    if (max_len < 1) return ts_fail(TS_ERR_ARG, "greedy: max_len %d", max_len);
    int grad_before = ts_set_grad_enabled(ctx, 0);
    int rc = TS_OK;
    memset(out, 0, (size_t)B * sizeof *out);  // a failure frees them all, allocated or not
    for (int b = 0; b < B && !rc; b++) rc = alloc_hypothesis(&out[b], max_len, S);
    void *state = NULL;
    step_arenas sa = {{NULL, NULL}};
    int *inputs = NULL;                            // (R) the next step's tokens, per row
    int *sentence = malloc((size_t)B * sizeof(int));  // (R) the sentence of each row still decoding
    int *keep = malloc((size_t)B * sizeof(int));      // (R) after a step: the rows that decode on
    if (!rc && (!sentence || !keep)) rc = ts_fail(TS_ERR_NOMEM, "greedy: out of memory");
    if (!rc) rc = step_arenas_new(&sa, m->kind->step_bytes(&m->cfg, B, S));
    if (!rc && !(state = m->kind->start(m, ctx, m->kind->encode(m, ctx, bv), B, max_len))) rc = ctx->status;
    if (!rc && !(inputs = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(int)))) rc = TS_ERR_ARENA;
    if (!rc) {
        for (int b = 0; b < B; b++) inputs[b] = TS_SOS, sentence[b] = b;
        int R = B;  // rows decoding
        for (int t = 0; t <= max_len && R > 0; t++) {
            ts_tensor *weights;
            ts_tensor *logits = decode_step(m, ctx, &sa, t, &state, NULL, inputs, R, &weights, &rc);
            if (!logits) break;
            int next = 0;
            for (int r = 0; r < R; r++) {
                ts_hypothesis *h = &out[sentence[r]];
                if (weights) memcpy(h->attention + (size_t)t * S, weights->data + (size_t)r * S, (size_t)S * sizeof(double));
                // The argmax of the logits is the argmax of the log-probabilities;
                // greedy keeps no score (beam width 1 gives the same tokens with theirs).
                int best = ts_seq2seq_argmax_token(logits->data + (size_t)r * V, V);
                if (best == TS_EOS || t == max_len) {  // at the limit the last row is kept, the token is not
                    h->ended = best == TS_EOS;
                    continue;
                }
                h->tokens[h->len++] = best;
                keep[next] = r;  // next <= r: the arrays compact in place
                sentence[next] = sentence[r];
                inputs[next++] = best;
            }
            // Sentences that ended leave the batch: later steps compute rows
            // only for those still decoding. The copy goes to the caller's arena.
            if (next < R && next > 0 && !(state = m->kind->reorder(m, ctx, state, keep, next, 1))) {
                rc = ctx->status;
                break;
            }
            R = next;
        }
    }
    free(sentence);
    free(keep);
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

// One beam search's working state besides the decoder's tensors.
typedef struct {
    int K, S, max_len;
    const ts_length_penalty *lp;
    double *score;           // (K) total log-probability of the live entries
    beam_candidate *cands;   // (2K) this step's best extensions, best first
    int *parents;            // (K) the live entry each of the next step's extends
    int *src_k, *len_k;      // (S, K), (K): the source repeated K times, one batch row per entry
    beam_history hist;
    step_arenas arenas;
    int finished;            // hypotheses finished so far
    double best_final;       // the ts_length_penalized score of *best
    ts_hypothesis *best;     // the best finished hypothesis (the caller's out)
} beam_search;

static int beam_new(beam_search *b, ts_seq2seq *m, const int *src, int n, int K, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out) {
    *b = (beam_search){.K = K, .S = n, .max_len = max_len, .lp = lp, .hist = {.K = K, .S = n},
                       .best_final = -INFINITY, .best = out};
    b->score = calloc((size_t)K, sizeof(double));
    b->cands = malloc((size_t)2 * K * sizeof *b->cands);
    b->parents = malloc((size_t)K * sizeof(int));
    b->src_k = malloc((size_t)n * K * sizeof(int));
    b->len_k = malloc((size_t)K * sizeof(int));
    if (!b->score || !b->cands || !b->parents || !b->src_k || !b->len_k) return ts_fail(TS_ERR_NOMEM, "beam: out of memory");
    for (int t = 0; t < n; t++)
        for (int k = 0; k < K; k++) b->src_k[(size_t)t * K + k] = src[t];
    for (int k = 0; k < K; k++) b->len_k[k] = n;
    return step_arenas_new(&b->arenas, m->kind->step_bytes(&m->cfg, K, n));
}

static void beam_free(beam_search *b) {
    history_free(&b->hist);
    step_arenas_free(&b->arenas);
    free(b->score);
    free(b->cands);
    free(b->parents);
    free(b->src_k);
    free(b->len_k);
}

// Records step t's attention rows (alive of them; zeros for `none`) and
// ranks the extensions of the alive entries by logits (alive, V) into
// b->cands. Returns how many candidates it kept (at most 2K).
static int beam_expand(beam_search *b, int t, ts_tensor *logits, const ts_tensor *weights, int alive) {
    int K = b->K, S = b->S, V = logits->shape[1];
    double *att_t = b->hist.att + (size_t)t * K * S;  // (K, S)
    if (weights) memcpy(att_t, weights->data, (size_t)alive * S * sizeof(double));
    else memset(att_t, 0, (size_t)alive * S * sizeof(double));
    int count = 0;
    for (int k = 0; k < alive; k++) {
        double *row = logits->data + (size_t)k * V;
        ts_log_softmax_rows(row, row, 1, (size_t)V);
        for (int v = TS_EOS; v < V; v++)  // never <pad> or <sos>
            keep_best(b->cands, &count, 2 * K, (beam_candidate){b->score[k] + row[v], k, v});
    }
    return count;
}

// A hypothesis of len tokens ends with candidate c at step t = len (with its
// <eos>, or cut at the length limit without its token): it replaces *b->best
// when it ranks higher. TS_OK or TS_ERR_NOMEM.
static int beam_finish(beam_search *b, beam_candidate c, int len) {
    int ended = c.token == TS_EOS;
    b->finished++;
    double final = ts_length_penalized(ended ? c.score : b->score[c.parent], len, b->lp);
    if (!(final > b->best_final)) return TS_OK;
    b->best_final = final;
    ts_hypothesis_free(b->best);
    int rc = alloc_hypothesis(b->best, b->max_len, b->S);
    if (rc) return rc;
    history_trace(&b->hist, c.parent, len, b->best);
    b->best->len = len;
    b->best->score = final;
    b->best->ended = ended;
    return TS_OK;
}

// Goes through step t's count candidates best first: finishes hypotheses and
// makes the others the live entries of step t + 1 (their scores, parents,
// back-pointers and next inputs). *alive receives how many live on. TS_OK or
// the failure.
static int beam_select(beam_search *b, int t, int count, int *inputs, int *alive) {
    int K = b->K, next_alive = 0, rc = TS_OK;
    int *from_next = NULL, *tok_next = NULL;  // step t + 1's back-pointers, once reserved
    for (int i = 0; i < count && !rc; i++) {
        beam_candidate c = b->cands[i];
        // As in fairseq: an <eos> finishes a hypothesis only when it ranks
        // among the best K; beam 1 then stops exactly where greedy does.
        if ((c.token == TS_EOS && i < K) || t == b->max_len) {
            rc = beam_finish(b, c, t);
            if (t == b->max_len) break;
            continue;
        }
        if (c.token == TS_EOS || next_alive == K) continue;
        if (!from_next) {
            if ((rc = history_reserve(&b->hist, t + 1))) break;
            from_next = b->hist.from + (size_t)(t + 1) * K;
            tok_next = b->hist.tok + (size_t)(t + 1) * K;
        }
        b->parents[next_alive] = c.parent;
        from_next[next_alive] = c.parent;
        tok_next[next_alive] = c.token;
        b->score[next_alive] = c.score;  // safe: parents are read from cands, not score, from here on
        inputs[next_alive] = c.token;
        next_alive++;
    }
    *alive = next_alive;
    return rc;
}

int ts_seq2seq_beam(ts_seq2seq *m, ts_ctx *ctx, const int *src, int n, int beam, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out) {
    int K = beam;
    if (K < 1 || K > 1000 || max_len < 1 || n < 1) return ts_fail(TS_ERR_ARG, "beam: width %d, max_len %d, length %d", K, max_len, n);
    if (lp && lp->gnmt && !(lp->alpha >= 0 && lp->alpha <= 100))
        return ts_fail(TS_ERR_ARG, "beam: length penalty %g outside [0, 100]", lp->alpha);
    int grad_before = ts_set_grad_enabled(ctx, 0);
    memset(out, 0, sizeof *out);
    beam_search b;
    int rc = beam_new(&b, m, src, n, K, max_len, lp, out);
    ts_batch_view bv = {.B = K, .S = n, .T = 0, .src = b.src_k, .src_len = b.len_k};
    void *state = NULL;
    if (!rc && !(state = m->kind->start(m, ctx, m->kind->encode(m, ctx, &bv), K, max_len))) rc = ctx->status;
    int *inputs = rc ? NULL : ts_arena_alloc(ctx->arena, (size_t)K * sizeof(int));  // (K) the next step's tokens
    if (!rc && !inputs) rc = TS_ERR_ARENA;
    int alive = 1;
    for (int k = 0; k < K && inputs; k++) inputs[k] = TS_SOS;
    for (int t = 0; !rc && t <= max_len && alive > 0; t++) {
        ts_tensor *weights;
        ts_tensor *logits = decode_step(m, ctx, &b.arenas, t, &state, t > 0 ? b.parents : NULL, inputs, K, &weights, &rc);
        if (!logits || (rc = history_reserve(&b.hist, t))) break;
        b.hist.steps = t + 1;
        int count = beam_expand(&b, t, logits, weights, alive);
        if ((rc = beam_select(&b, t, count, inputs, &alive))) break;
        // Stop once K hypotheses have finished: width 1 stops at its first
        // <eos>, exactly like greedy.
        if (b.finished >= K) alive = 0;
        if (alive == 0) break;
        for (int k = alive; k < K; k++) b.parents[k] = b.parents[0];  // the next step reorders the state by these
    }
    if (!rc && !out->tokens) rc = ts_fail(TS_ERR_ARG, "beam: no hypothesis");
    beam_free(&b);
    ts_set_grad_enabled(ctx, grad_before);
    if (rc) ts_hypothesis_free(out);
    return rc;
}
