// The decoding steps of a search (see search_step.h).
//
// Legend: B rows decoding, S the longest source, V target vocabulary.
#include "models/search_step.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ctx's scratch arena i when it holds at least `bytes` (arena_bytes), else
// a new one (NULL for a kept arena, made at the first compaction): a kept
// arena never starts below the first guess, as a fresh one would not.
static ts_arena *take_scratch(ts_ctx *ctx, int i, size_t bytes, int make) {
    ts_arena *a = ctx->scratch[i];
    ctx->scratch[i] = NULL;
    if (a && ts_arena_capacity(a) >= bytes) return a;
    ts_arena_free(a);
    return make ? ts_arena_new(bytes) : NULL;
}

// The first guess rounded up to a power of two: batches whose guesses
// differ by a few source columns then reuse the arenas the first one made
// (only touched pages are resident), where each slightly bigger guess made
// new ones and faulted their pages in again.
static size_t arena_bytes(size_t guess) {
    size_t bytes = (size_t)1 << 20;
    while (bytes < guess && bytes <= SIZE_MAX / 2) bytes *= 2;
    return bytes;
}

int ts_search_arenas_new(ts_search_arenas *sa, ts_ctx *ctx, size_t guess) {
    size_t bytes = arena_bytes(guess);
    *sa = (ts_search_arenas){.bytes = bytes};
    int rc = TS_OK;
    for (int i = 0; i < 3; i++)
        if (!(sa->arena[i] = take_scratch(ctx, i, bytes, 1))) rc = TS_ERR_NOMEM;
    for (int i = 0; i < 2; i++) sa->kept[i] = take_scratch(ctx, 3 + i, bytes, 0);
    return rc;
}

void ts_search_arenas_free(ts_search_arenas *sa, ts_ctx *ctx) {
    ts_arena *all[TS_SCRATCH_ARENAS] = {sa->arena[0], sa->arena[1], sa->arena[2], sa->kept[0], sa->kept[1]};
    for (int i = 0; i < TS_SCRATCH_ARENAS; i++) {
        if (ctx->keep_scratch && !ctx->scratch[i]) ctx->scratch[i] = all[i];
        else ts_arena_free(all[i]);
    }
    memset(sa, 0, sizeof *sa);
}

// Runs fn(m, ctx, arg) in *arena, reset first, as ctx->arena: its result,
// or NULL with the status in *rc. The arena chains blocks as fn needs them
// (tensor/arena.h): fn runs once.
typedef void *(*in_arena_fn)(ts_seq2seq *m, ts_ctx *ctx, void *arg);

static void *run_in(ts_arena **arena, in_arena_fn fn, ts_seq2seq *m, ts_ctx *ctx, void *arg,
                    int *rc) {
    ts_arena *caller = ctx->arena;
    ts_arena_reset(*arena);
    ctx->arena = *arena;
    void *made = fn(m, ctx, arg);
    ctx->arena = caller;
    if (made && !ctx->status) return made;
    *rc = ctx->status ? ctx->status : TS_ERR_ARENA;
    return NULL;
}

// A step's inputs and outputs (ts_search_step).
typedef struct {
    const void *state;
    const int *rows;     // reorder's
    const int *tokens;
    int B, group;        // rows; reorder's group (model.h)
    void *next;
    ts_tensor **weights;
} step_call;

static void *reorder_in(ts_seq2seq *m, ts_ctx *ctx, void *arg) {
    step_call *c = arg;
    return m->kind->reorder(m, ctx, c->state, c->rows, c->B, c->group);
}

static void *step_in(ts_seq2seq *m, ts_ctx *ctx, void *arg) {
    step_call *c = arg;
    ts_tensor *logits = m->kind->step(m, ctx, c->state, c->tokens, c->B, &c->next, c->weights);
    // The logits are read in the model's dtype; the attention rows the
    // hypotheses keep are float64 in either.
    if (logits && *c->weights) *c->weights = ts_to_f64(ctx, *c->weights);
    return logits;
}

// (search_step.h)
ts_tensor *ts_search_step(ts_seq2seq *m, ts_ctx *ctx, ts_arena **arena, ts_arena **moved, void **state,
                          const int *parents, const int *tokens, int B, ts_tensor **weights, int *rc) {
    step_call call = {.state = *state, .rows = parents, .tokens = tokens, .B = B, .group = 0, .weights = weights};
    if (parents && !(call.state = run_in(moved, reorder_in, m, ctx, &call, rc))) return NULL;
    ts_tensor *logits = run_in(arena, step_in, m, ctx, &call, rc);
    if (logits) *state = call.next;
    return logits;
}

// (search_step.h)
int ts_search_compact(ts_seq2seq *m, ts_ctx *ctx, ts_search_arenas *sa, void **state, const int *rows, int n, int group) {
    ts_arena **kept = &sa->kept[sa->compactions % 2];
    if (!*kept && !(*kept = ts_arena_new(sa->bytes))) return TS_ERR_NOMEM;
    step_call call = {.state = *state, .rows = rows, .B = n, .group = group};
    int rc = TS_OK;
    void *next = run_in(kept, reorder_in, m, ctx, &call, &rc);
    if (!next) return rc;
    *state = next;
    sa->compactions++;
    return TS_OK;
}

