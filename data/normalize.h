// Sentence normalisation: UTF-8 text in, whitespace-separated tokens out.
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

#endif
