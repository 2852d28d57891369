// Sentence normalisation: UTF-8 text in, whitespace-separated tokens out
// (ts_normalize), or the text as written (ts_normalize_nfc), one row of
// ts_normalisations each.
//
// The rules follow the translation tutorials (and bench/torch_ref.py), made
// Unicode-correct with libunistring:
//   1. lowercase with full Unicode case mapping (É -> é, Σ -> σ/ς), then NFC,
//      so decomposed input ("E" + U+0301) gives the same bytes as precomposed;
//   2. every Unicode White_Space code point (incl. the no-break spaces U+00A0
//      and U+202F that French puts before "!" "?" ":" ";") separates tokens;
//   3. each of . ! ? , ; : becomes a token of its own;
//   4. everything else stays inside its token: apostrophes (ASCII ' and
//      U+2019) do not split, so "j'ai" and "l'homme" are one token each.
#ifndef TS_NORMALIZE_H
#define TS_NORMALIZE_H

#include <stddef.h>

#include "tensor/names.h"

// The ASCII punctuation marks that always become tokens of their own.
#define TS_PUNCT_TOKENS ".!?,;:"

// Normalises `len` bytes of UTF-8 `text` (need not be NUL-terminated).
// On success returns TS_OK, sets *tokens to a malloc'd NUL-terminated string
// of the tokens joined by single spaces ("" when there are none; the caller
// frees it) and *n_tokens (may be NULL) to their count.
// Errors: TS_ERR_FORMAT for invalid UTF-8 or a NUL byte, with a message
// "invalid UTF-8 at byte N" / "NUL byte at byte N" (1-based within `text`);
// TS_ERR_NOMEM. On error *tokens is NULL.
int ts_normalize(const char *text, size_t len, char **tokens, size_t *n_tokens);

// The text as written, for models that read it whole (subword models):
// NFC, so decomposed and precomposed input give the same bytes; every run of
// Unicode White_Space (no-break spaces, tabs) becomes one ASCII space and the
// ends are trimmed; case and punctuation are kept ("I want to go home." stays
// so). *n_tokens counts the space-separated parts. Contract and errors as
// ts_normalize's.
int ts_normalize_nfc(const char *text, size_t len, char **out, size_t *n_tokens);

// How a model reads text: one row per normalisation, named in checkpoints
// (data.normalisation) and by train --normalisation.
typedef enum {
    TS_NORM_SPLIT = 0,  // "nfc-lowercase-punct-split": ts_normalize, the words a word vocabulary needs
    TS_NORM_NFC,        // "nfc": ts_normalize_nfc, the text as written (subword models)
    TS_NORM_COUNT
} ts_normalisation;

typedef struct {
    const char *name;  // "nfc-lowercase-punct-split", "nfc"
    const char *what;  // what it does, for train's banner
    // Text as the model reads it, with ts_normalize's contract.
    int (*apply)(const char *text, size_t len, char **out, size_t *n_tokens);
    // 0: what apply gives is the words themselves (ts_normalize); 1: it is
    // not, so a corpus keeps each side's text beside its words, and scores in
    // words normalise the model's output first.
    int keeps_text;
} ts_normalisation_kind;

extern const ts_normalisation_kind ts_normalisations[TS_NORM_COUNT];
extern const ts_names ts_normalisation_names;  // "normalisation": the rows' names

#endif
