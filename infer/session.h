// A model loaded for use, with the memory its work runs in: tinyseq
// translate, attend and eval, the C API's model and the report's dev
// sentence each hold one, so the checkpoint is loaded, the search's options
// checked and the arena and context made in one place.
#ifndef TS_INFER_SESSION_H
#define TS_INFER_SESSION_H

#include "infer/load.h"
#include "infer/translate.h"

// The arena a session starts with: address space, its pages touched as
// used; it chains more blocks as the work needs them, up to TS_ARENA_MAX
// (tensor/arena.h), which bounds what one input can ask for.
enum { TS_SESSION_ARENA_START = 64 << 20 };

typedef struct {
    ts_translator t;  // owned
    ts_ctx ctx;       // every call's context; owns its arena and the scratch arenas a search keeps
} ts_session;

// Maps checkpoint `path` for inference (ts_translator_map: the weights stay
// in the file's read-only mapping) into s->t, then ts_session_start. TS_OK,
// or the loader's error naming the file (s zeroed).
int ts_session_open(ts_session *s, const char *path);

// The arena and context for s->t, filled by the caller (the C API builds
// its translator from a checkpoint whose header it also reads). TS_OK or
// TS_ERR_NOMEM (s->t kept: the caller frees it, with ts_session_free).
int ts_session_start(ts_session *s);

// Frees the translator, the arena and the kept scratch arenas; s zeroed.
void ts_session_free(ts_session *s);

// Beam search's width and ranking as every front end bounds them: *beam in
// 0..TS_BEAM_MAX, replaced by the width it asks for (ts_beam_width: 0 the
// default, 1 greedy); the GNMT length penalty's alpha in [0, 100]. Sets the
// translator's length penalty. TS_OK or TS_ERR_ARG naming the value.
int ts_session_search(ts_session *s, int *beam, ts_length_penalty lp);

// s's context as ts_ctx_init leaves one (no tape, gradients on, float64
// constants, no failure) over s's arena; the scratch arenas and the
// keep_scratch a command set stay. For a call that must not see what an
// earlier one left in it.
ts_ctx *ts_session_ctx(ts_session *s);

// One sentence translated as attend shows it (tinyseq attend, the C API's
// attend and explain, the report's dev sentence), everything owned
// (ts_attended_free).
typedef struct {
    ts_hypothesis hyp;           // its tokens and attention: hyp.len + 1 rows (<eos> last), S columns
    char *source;                // the source units (words, or a subword model's pieces) joined by spaces
    int S;                       // their count
    ts_attention_labels labels;  // the axes' words: source (S), target (hyp.len + 1)
} ts_attended;

// Translates `text` in s's context (ts_session_ctx; ts_translate_text, beam 1: greedy) and labels the
// result (ts_attention_labels_make). TS_OK, or their errors (*out zeroed).
int ts_session_attend(ts_session *s, const char *text, int beam, ts_attended *out);
void ts_attended_free(ts_attended *a);

#endif
