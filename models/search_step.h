// The decoding steps of a search (models/search.c): the scratch arenas
// they run in, one step of the model (after a reorder, for beam search),
// and a compaction when sentences leave the batch. Internal to models/'s
// searches.
//
// Legend: B rows decoding, S the longest source, V target vocabulary.
#ifndef TS_MODELS_SEARCH_STEP_H
#define TS_MODELS_SEARCH_STEP_H

#include "models/model.h"

// Greedy's step t runs in scratch arena t % 2: what step t makes (state,
// weights, logits) stays readable during step t + 1, and is forgotten by step
// t + 2, as the state rules of models/model.h allow. Every beam step starts
// with a reorder (or follows a compaction), which copies the hypotheses'
// states out of the last step's arena: the reorder of step t goes to arena
// 1 + t % 2, and the step itself to arena 0, so the (R, V) logits, the
// largest thing a step makes, occupy the same pages at every step instead
// of two arenas' (a page's first touch costs more than reading it:
// docs/performance.md, "Measurements behind the code's constants"). The memory and the first
// state stay in the caller's arena. A state whose batch shrinks (reorder,
// group >= 1: finished sentences leave) is copied with its source rows into
// kept arena c % 2 for compaction c: it outlives the steps, and compaction
// c + 2 may forget it because compaction c + 1 copied what still decodes.
// The arenas come from the caller's ctx->scratch when it kept them from an
// earlier search (graph.h), and go back there when it keeps them.
typedef struct {
    ts_arena *arena[3];  // the steps' and beam's reorders, made at the start
    ts_arena *kept[2];   // the compactions', made at the first one
    size_t bytes;        // the first size of each
    int compactions;
} ts_search_arenas;
_Static_assert(3 + 2 == TS_SCRATCH_ARENAS, "ctx->scratch holds every arena of a search");

// sa's arenas for a search whose steps need about `guess` bytes (the row's
// step_bytes), taken from ctx->scratch when it kept big enough ones. TS_OK
// or TS_ERR_NOMEM (free sa with ts_search_arenas_free either way).
int ts_search_arenas_new(ts_search_arenas *sa, ts_ctx *ctx, size_t guess);
// Gives sa's arenas back to ctx->scratch when it keeps them, else frees them.
void ts_search_arenas_free(ts_search_arenas *sa, ts_ctx *ctx);

// One step of the model on tokens (B) from *state, in *arena: the logits
// (B, V), *weights (B, S) float64 or NULL, *state advanced. When parents is not
// NULL the state's hypotheses are first reordered to rows parents[0..B)
// (reorder, group 0: every row keeps its source) into *moved, which *state
// must not live in; *state must not live in *arena either unless it is
// reordered first. NULL on failure (status returned in *rc); a full arena is
// grown and its part redone from the same state.
ts_tensor *ts_search_step(ts_seq2seq *m, ts_ctx *ctx, ts_arena **arena, ts_arena **moved, void **state,
                          const int *parents, const int *tokens, int B, ts_tensor **weights, int *rc);

// Replaces *state by its rows rows[0..n) with their source rows (reorder,
// group: the rows come in runs of `group` that decode one sentence and share
// its source rows), in sa's next kept arena: rows of sentences that finished
// leave. TS_OK or the failure.
int ts_search_compact(ts_seq2seq *m, ts_ctx *ctx, ts_search_arenas *sa, void **state, const int *rows, int n, int group);

#endif
