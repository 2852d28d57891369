// Greedy and beam-search decoding of a batch (models/search.h), through the
// model's row of the model table: encode, start, then step (and reorder) per
// output position. No tape: each step runs in scratch arenas of its own, and
// a batch that shrinks is copied into one of two more (models/search_step.h).
//
// Legend: B sentences, S the longest source, K beam width, V target
// vocabulary, R rows decoding (greedy: the sentences still decoding; beam: K
// per sentence still searching, one before the first step).
#include "models/search.h"

#include "models/search_step.h"
#include "models/seq2seq.h"
#include "tensor/kernels.h"
#include "tensor/parallel.h"

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

int ts_seq2seq_greedy(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, int max_len, ts_hypothesis *out) {
    int B = bv->B, S = bv->S;
    if (max_len < 1) return ts_fail(TS_ERR_ARG, "greedy: max_len %d", max_len);
    int grad_before = ts_set_grad_enabled(ctx, 0);
    ctx->dtype = m->cfg.dtype;
    int rc = TS_OK;
    memset(out, 0, (size_t)B * sizeof *out);  // a failure frees them all, allocated or not
    for (int b = 0; b < B && !rc; b++) rc = alloc_hypothesis(&out[b], max_len, S);
    void *state = NULL;
    ts_search_arenas sa = {.bytes = 0};
    int *inputs = NULL;                            // (R) the next step's tokens, per row
    int *sentence = malloc((size_t)B * sizeof(int));  // (R) the sentence of each row still decoding
    int *keep = malloc((size_t)B * sizeof(int));      // (R) after a step: the rows that decode on
    if (!rc && (!sentence || !keep)) rc = ts_fail(TS_ERR_NOMEM, "greedy: out of memory");
    if (!rc) rc = ts_search_arenas_new(&sa, ctx, m->kind->step_bytes(&m->cfg, B, S));
    if (!rc && !(state = m->kind->start(m, ctx, m->kind->encode(m, ctx, bv), B, max_len))) rc = ctx->status;
    if (!rc && !(inputs = ts_arena_alloc(ctx->arena, (size_t)B * sizeof(int)))) rc = TS_ERR_ARENA;
    if (!rc) {
        for (int b = 0; b < B; b++) inputs[b] = TS_SOS, sentence[b] = b;
        int R = B;  // rows decoding
        for (int t = 0; t <= max_len && R > 0; t++) {
            ts_tensor *weights;
            ts_tensor *logits = ts_search_step(m, ctx, &sa.arena[t % 2], NULL, &state, NULL, inputs, R, &weights, &rc);
            if (!logits) break;
            int next = 0;
            for (int r = 0; r < R; r++) {
                ts_hypothesis *h = &out[sentence[r]];
                if (weights) memcpy(h->attention + (size_t)t * S, weights->data + (size_t)r * S, (size_t)S * sizeof(double));
                // The argmax of the logits is the argmax of the log-probabilities;
                // greedy keeps no score (beam width 1 gives the same tokens with theirs).
                int best = ts_argmax_token_row(logits, r);
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
            // only for those still decoding.
            if (next < R && next > 0 && (rc = ts_search_compact(m, ctx, &sa, &state, keep, next, 1))) break;
            R = next;
        }
    }
    free(sentence);
    free(keep);
    ts_search_arenas_free(&sa, ctx);
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
    int K, S, cap;         // room for cap steps
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

// What ts_length_penalized divides the log-probability of `tokens` words by.
static double length_divisor(int tokens, const ts_length_penalty *lp) {
    if (!lp || !lp->gnmt) return tokens + 1;
    return pow((5.0 + tokens + 1) / 6.0, lp->alpha);
}

double ts_length_penalized(double log_prob, int tokens, const ts_length_penalty *lp) {
    return log_prob / length_divisor(tokens, lp);
}

// One sentence of a beam search: what it keeps besides the decoder's
// tensors. While it decodes it owns K consecutive rows of the batch (one
// before the first step, when its only entry is <sos>), however many of its
// entries live: a row without a live entry repeats entry 0, so reordering
// entries never moves a row into another sentence's block (reorder, group 0).
// A finished hypothesis leaves its entry to the next best candidate, as in
// fairseq; the sentence leaves the batch when its search stops.
typedef struct {
    int S, max_len;          // its source length n, its output limit
    int alive;               // live entries (0: it has left the batch)
    int finished;            // hypotheses finished so far
    double *score;           // (K) total log-probability of the live entries
    int *parents;            // (K) the entry each of the next step's extends
    beam_history hist;
    double widest;           // at least the length_divisor of an output of 0..max_len tokens
    double best_final;       // the ts_length_penalized score of *best
    ts_hypothesis *best;     // its best finished hypothesis (the caller's out[b])
} beam_sentence;

// A beam search of a batch of sentences.
typedef struct {
    int K, B;
    const ts_length_penalty *lp;
    beam_sentence *sent;     // (B)
    double *scores;          // (B, K) the sentences' score arrays
    int *parents;            // (B, K) the sentences' parents arrays
    beam_candidate *cands;   // (B, 2K) block i: live sentence i's best extensions this step, best first
    int *n_cands;            // (B) how many of block i it holds
    int *live;               // (B) the sentences decoding, in batch order: live[i] owns block i of the rows
    int *rows;               // (B*K) the next step's rows: row r is row rows[r] of the state
    int *inputs;             // (B*K) the next step's tokens
    ts_search_arenas arenas;
} beam_search;

static int beam_new(beam_search *b, ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, int K, const int *max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out) {
    int B = bv->B;
    *b = (beam_search){.K = K, .B = B, .lp = lp};
    size_t BK = (size_t)B * K;
    b->sent = calloc((size_t)B, sizeof *b->sent);
    b->scores = calloc(BK, sizeof *b->scores);
    b->parents = malloc(BK * sizeof *b->parents);
    b->cands = malloc(2 * BK * sizeof *b->cands);
    b->n_cands = malloc((size_t)B * sizeof *b->n_cands);
    b->live = malloc((size_t)B * sizeof *b->live);
    b->rows = malloc(BK * sizeof *b->rows);
    b->inputs = malloc(BK * sizeof *b->inputs);
    if (!b->sent || !b->scores || !b->parents || !b->cands || !b->n_cands || !b->live || !b->rows || !b->inputs)
        return ts_fail(TS_ERR_NOMEM, "beam: out of memory for %d sentences of width %d", B, K);
    for (int i = 0; i < B; i++) {
        int n = bv->src_len[i];
        b->sent[i] = (beam_sentence){.S = n, .max_len = max_len[i], .alive = 1, .score = b->scores + (size_t)i * K,
                                     .parents = b->parents + (size_t)i * K, .hist = {.K = K, .S = n},
                                     .best_final = -INFINITY, .best = &out[i]};
        // The divisor grows with the length (len + 1, or a power >= 0 of a
        // base >= 1); 1e-12 covers pow's rounding (< 1 ulp) where two
        // lengths' divisors are within an ulp of each other.
        b->sent[i].widest = length_divisor(max_len[i], lp) * (1 + 1e-12);
        b->live[i] = i;
        b->inputs[i] = TS_SOS;
    }
    return ts_search_arenas_new(&b->arenas, ctx, m->kind->step_bytes(&m->cfg, B * K, bv->S));
}

static void beam_free(beam_search *b, ts_ctx *ctx) {
    for (int i = 0; b->sent && i < b->B; i++) history_free(&b->sent[i].hist);
    ts_search_arenas_free(&b->arenas, ctx);
    free(b->sent);
    free(b->scores);
    free(b->parents);
    free(b->cands);
    free(b->n_cands);
    free(b->live);
    free(b->rows);
    free(b->inputs);
}

// Records step t's attention rows of sentence s's live entries (its first S
// columns; zeros for `none`) and ranks their extensions into cands (2K).
// Its entries are rows row .. row + alive - 1 of logits (R, V) and weights
// (R, S of the batch). Returns how many candidates it kept (at most 2K).
// Reads and writes only what is sentence s's: sentences expand on
// several threads at once (expand_part).
static int beam_expand(const beam_search *b, beam_sentence *s, int t, const ts_tensor *logits,
                       const ts_tensor *weights, int row, beam_candidate *cands) {
    int K = b->K, S = s->S, V = logits->shape[1], dtype = logits->dtype, cap = 2 * K;
    double *att_t = s->hist.att + (size_t)t * K * S;  // (K, S)
    int count = 0;
    for (int k = 0; k < s->alive; k++) {
        if (weights) memcpy(att_t + (size_t)k * S, weights->data + (size_t)(row + k) * weights->shape[1], (size_t)S * sizeof(double));
        else memset(att_t + (size_t)k * S, 0, (size_t)S * sizeof(double));
        // Every candidate of entry k totals at most its score (a word adds
        // (z - max) - log_sum <= 0, as out_of_reach says), so once 2K are
        // kept and the worst is not below that score, none of them can
        // enter: the row's maximum, exponentials and scan are skipped (a
        // NaN score enters nowhere either).
        if (count == cap && !(s->score[k] > cands[cap - 1].score)) continue;
        // log p(v) = (z_v - max) - log(sum exp(z - max)), ts_log_softmax_rows's
        // formula, taken per candidate instead of written over the row first.
        size_t at = (size_t)(row + k) * V;
        const void *z = (const char *)logits->raw + at * ts_dtype_size(dtype);  // (V) in the model's dtype
        double max = TS_BY_DTYPE(dtype, ts_max_array, z, (size_t)V);
        double log_sum = log(TS_BY_DTYPE(dtype, ts_sum_exp_shift, z, (size_t)V, max));
        for (size_t v = TS_EOS; v < (size_t)V; v++) {  // never <pad> or <sos>
            // Once 2K are kept, only a candidate above the worst of them
            // enters: a vectorised scan finds the next one.
            if (count == cap &&
                (v = TS_BY_DTYPE(dtype, ts_first_log_prob_above, z, v, (size_t)V, s->score[k], max, log_sum,
                                 cands[cap - 1].score)) == (size_t)V)
                break;
            keep_best(cands, &count, cap, (beam_candidate){s->score[k] + ((ts_value(logits, at + v) - max) - log_sum), k, (int)v});
        }
    }
    return count;
}

// Step t's expansion of the live sentences, cut by sentences into parts.
typedef struct {
    beam_search *b;
    int t, per;  // per: the rows each live sentence owns
    const ts_tensor *logits, *weights;
    int n_live;
} expansion;

static void expand_part(void *arg, int part, int parts) {
    expansion *e = arg;
    beam_search *b = e->b;
    size_t first, end;
    ts_part_range((size_t)e->n_live, part, parts, &first, &end);
    for (size_t i = first; i < end; i++)
        b->n_cands[i] = beam_expand(b, &b->sent[b->live[i]], e->t, e->logits, e->weights, (int)i * e->per,
                                    b->cands + i * 2 * (size_t)b->K);
}

// A hypothesis of len tokens ends with candidate c at step t = len (with its
// <eos>, or cut at the length limit without its token): it replaces *s->best
// when it ranks higher. TS_OK or TS_ERR_NOMEM.
static int beam_finish(const beam_search *b, beam_sentence *s, beam_candidate c, int len) {
    int ended = c.token == TS_EOS;
    s->finished++;
    double final = ts_length_penalized(ended ? c.score : s->score[c.parent], len, b->lp);
    if (!(final > s->best_final)) return TS_OK;
    s->best_final = final;
    ts_hypothesis_free(s->best);
    int rc = alloc_hypothesis(s->best, s->max_len, s->S);
    if (rc) return rc;
    history_trace(&s->hist, c.parent, len, s->best);
    s->best->len = len;
    s->best->score = final;
    s->best->ended = ended;
    return TS_OK;
}

// 1 when no live entry of sentence s can end above its best finished
// hypothesis, so searching on changes nothing: it stops early. An entry of
// total log-probability score ends with a total <= score (every word adds
// (z - max) - log_sum <= 0: the sum of exp(z - max) holds exp(0) = 1), and a
// total <= 0 divided by any length_divisor <= widest ranks at most score /
// widest (division rounds monotonically); beam_finish keeps only a
// strictly greater one. A NaN score never ranks above the best either.
static int out_of_reach(const beam_sentence *s) {
    if (!s->best->tokens) return 0;  // nothing finished yet
    for (int k = 0; k < s->alive; k++)
        if (s->score[k] / s->widest > s->best_final) return 0;
    return 1;
}

// Goes through sentence s's count candidates of step t (cands) best first: finishes
// hypotheses and makes the others the live entries of step t + 1 (their
// scores, parents and back-pointers, the tokens in hist.tok). s->alive
// becomes how many live on, 0 once K hypotheses have finished. TS_OK or the
// failure.
static int beam_select(const beam_search *b, beam_sentence *s, int t, const beam_candidate *cands, int count) {
    int K = b->K, next_alive = 0, rc = TS_OK;
    int *from_next = NULL, *tok_next = NULL;  // step t + 1's back-pointers, once reserved
    if (t == s->max_len) {
        // The limit: the <eos> among the best K finish as at any step; then,
        // unless K have finished, the best live entry by its own score is cut
        // (the word it would add is not counted, so it does not rank it).
        for (int i = 0; i < count && i < K && !rc; i++)
            if (cands[i].token == TS_EOS) rc = beam_finish(b, s, cands[i], t);
        int best = 0;
        for (int k = 1; k < s->alive; k++)
            if (s->score[k] > s->score[best]) best = k;
        if (!rc && s->finished < K) rc = beam_finish(b, s, (beam_candidate){.score = s->score[best], .parent = best, .token = -1}, t);
        s->alive = 0;
        return rc;
    }
    for (int i = 0; i < count && !rc; i++) {
        beam_candidate c = cands[i];
        // As in fairseq: an <eos> finishes a hypothesis only when it ranks
        // among the best K; beam 1 then stops exactly where greedy does.
        if (c.token == TS_EOS && i < K) {
            rc = beam_finish(b, s, c, t);
            continue;
        }
        if (c.token == TS_EOS || next_alive == K) continue;
        if (!from_next) {
            if ((rc = history_reserve(&s->hist, t + 1))) break;
            from_next = s->hist.from + (size_t)(t + 1) * K;
            tok_next = s->hist.tok + (size_t)(t + 1) * K;
        }
        s->parents[next_alive] = c.parent;
        from_next[next_alive] = c.parent;
        tok_next[next_alive] = c.token;
        s->score[next_alive] = c.score;  // safe: parents are read from cands, not score, from here on
        next_alive++;
    }
    // Stop once K hypotheses have finished: width 1 stops at its first
    // <eos>, exactly like greedy.
    s->alive = s->finished >= K ? 0 : next_alive;
    if (s->alive && out_of_reach(s)) s->alive = 0;
    return rc;
}

int ts_seq2seq_beam_batch(ts_seq2seq *m, ts_ctx *ctx, const ts_batch_view *bv, int beam, const int *max_len,
                          const ts_length_penalty *lp, ts_hypothesis *out) {
    int K = beam, B = bv->B, longest = 0;
    if (K < 1 || K > TS_BEAM_MAX || B < 1) return ts_fail(TS_ERR_ARG, "beam: width %d, %d sentences", K, B);
    for (int i = 0; i < B; i++) {
        if (max_len[i] < 1 || bv->src_len[i] < 1 || bv->src_len[i] > bv->S)
            return ts_fail(TS_ERR_ARG, "beam: sentence %d: max_len %d, length %d of %d", i + 1, max_len[i], bv->src_len[i],
                           bv->S);
        if (max_len[i] > longest) longest = max_len[i];
    }
    if (lp && lp->gnmt && !(lp->alpha >= 0 && lp->alpha <= 100))
        return ts_fail(TS_ERR_ARG, "beam: length penalty %g outside [0, 100]", lp->alpha);
    int grad_before = ts_set_grad_enabled(ctx, 0);
    ctx->dtype = m->cfg.dtype;
    memset(out, 0, (size_t)B * sizeof *out);
    beam_search b;
    int rc = beam_new(&b, m, ctx, bv, K, max_len, lp, out);
    void *state = NULL;
    if (!rc && !(state = m->kind->start(m, ctx, m->kind->encode(m, ctx, bv), B, longest))) rc = ctx->status;
    // Each live sentence owns `per` rows of the state: 1 before the first
    // step, K after it. parents (when set) reorders them within their blocks.
    int n_live = B, per = 1;
    const int *parents = NULL;
    for (int t = 0; !rc && n_live > 0; t++) {
        ts_tensor *weights;
        ts_tensor *logits = ts_search_step(m, ctx, &b.arenas.arena[0], &b.arenas.arena[1 + t % 2], &state, parents,
                                           b.inputs, n_live * per, &weights, &rc);
        if (!logits) break;
        for (int i = 0; !rc && i < n_live; i++) rc = history_reserve(&b.sent[b.live[i]].hist, t);
        if (rc) break;
        expansion step = {&b, t, per, logits, weights, n_live};
        // Each sentence is ranked alone: the candidates do not depend on the parts.
        ts_parallel_run(ts_parallel_parts((size_t)n_live * per * logits->shape[1], n_live), expand_part, &step);
        int n_next = 0;
        for (int i = 0; !rc && i < n_live; i++) {
            beam_sentence *s = &b.sent[b.live[i]];
            const beam_candidate *cands = b.cands + (size_t)i * 2 * K;
            if ((rc = beam_select(&b, s, t, cands, b.n_cands[i])) || s->alive == 0) continue;
            const int *tokens = s->hist.tok + (size_t)(t + 1) * K;
            for (int k = 0; k < K; k++) {
                int e = k < s->alive ? k : 0;  // a row without a live entry repeats entry 0
                b.rows[n_next * K + k] = i * per + s->parents[e];
                b.inputs[n_next * K + k] = tokens[e];
            }
            b.live[n_next++] = b.live[i];  // n_next <= i: the arrays compact in place
        }
        if (rc || n_next == 0) break;
        // Entries move within their sentence's block (group 0, done by the
        // next step) unless sentences left or the blocks widen from 1 row to
        // K: then the source's rows follow them, one per block, which its K
        // rows share (group K: no copy per hypothesis).
        parents = NULL;
        if (per < K || n_next < n_live) rc = ts_search_compact(m, ctx, &b.arenas, &state, b.rows, n_next * K, K);
        else parents = b.rows;
        n_live = n_next;
        per = K;
    }
    for (int i = 0; !rc && i < B; i++)
        if (!out[i].tokens) rc = ts_fail(TS_ERR_ARG, "beam: no hypothesis for sentence %d", i + 1);
    beam_free(&b, ctx);
    ts_set_grad_enabled(ctx, grad_before);
    if (rc)
        for (int i = 0; i < B; i++) ts_hypothesis_free(&out[i]);
    return rc;
}

int ts_seq2seq_beam(ts_seq2seq *m, ts_ctx *ctx, const int *src, int n, int beam, int max_len,
                    const ts_length_penalty *lp, ts_hypothesis *out) {
    if (n < 1) return ts_fail(TS_ERR_ARG, "beam: width %d, max_len %d, length %d", beam, max_len, n);
    ts_batch_view bv = {.B = 1, .S = n, .src = src, .src_len = &n};
    return ts_seq2seq_beam_batch(m, ctx, &bv, beam, &max_len, lp, out);
}
