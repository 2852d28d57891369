// A model loaded for use and the memory its work runs in (infer/session.h).
#include "infer/session.h"

#include "tensor/threads.h"

#include <stdlib.h>
#include <string.h>

int ts_session_open(ts_session *s, const char *path) {
    memset(s, 0, sizeof *s);
    ts_threads_for_decoding();  // first: loading checks the file's CRCs on the threads too
    int rc = ts_translator_map(path, &s->t);
    if (!rc) rc = ts_session_start(s);
    if (rc) ts_session_free(s);
    return rc;
}

int ts_session_start(ts_session *s) {
    ts_threads_for_decoding();
    ts_arena *arena = ts_arena_new(TS_SESSION_ARENA_START);
    if (!arena) return ts_fail(TS_ERR_NOMEM, "cannot allocate the arena");
    ts_ctx_init(&s->ctx, arena);
    return TS_OK;
}

void ts_session_free(ts_session *s) {
    ts_ctx_free_scratch(&s->ctx);
    ts_arena_free(s->ctx.arena);
    ts_translator_free(&s->t);
    memset(s, 0, sizeof *s);
}

int ts_session_search(ts_session *s, int *beam, ts_length_penalty lp) {
    if (*beam < 0 || *beam > TS_BEAM_MAX)
        return ts_fail(TS_ERR_ARG, "beam %d is outside 0..%d (0: the default width %d; 1: greedy)", *beam, TS_BEAM_MAX,
                       TS_BEAM_DEFAULT);
    if (lp.gnmt && !(lp.alpha >= 0 && lp.alpha <= 100))
        return ts_fail(TS_ERR_ARG, "length penalty %g is outside 0..100", lp.alpha);
    s->t.length_penalty = lp;
    *beam = ts_beam_width(*beam);
    return TS_OK;
}

ts_ctx *ts_session_ctx(ts_session *s) {
    // Every decoding call under the same policy, whatever ran in the process
    // since (a training in Python sets its own count): the program's bits.
    ts_threads_for_decoding();
    ts_ctx kept = s->ctx;
    ts_ctx_init(&s->ctx, kept.arena);
    memcpy(s->ctx.scratch, kept.scratch, sizeof s->ctx.scratch);
    s->ctx.keep_scratch = kept.keep_scratch;
    return &s->ctx;
}

int ts_session_attend(ts_session *s, const char *text, int beam, ts_attended *out) {
    memset(out, 0, sizeof *out);
    int rc = ts_translate_text(&s->t, ts_session_ctx(s), text, beam, &out->hyp, &out->source, &out->S);
    if (!rc) rc = ts_attention_labels_make(&s->t, out->source, out->S, &out->hyp, &out->labels);
    if (rc) ts_attended_free(out);
    return rc;
}

void ts_attended_free(ts_attended *a) {
    ts_hypothesis_free(&a->hyp);
    free(a->source);
    ts_attention_labels_free(&a->labels);
    memset(a, 0, sizeof *a);
}
