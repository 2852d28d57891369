// Strict JSON read from a file that may be hostile and written back from
// what was read: the report (viz/report.h) embeds attention.jsonl's lines
// in its page's script this way, so no byte of a line reaches the page
// unless the parser understood it (issue 38: a line that merely started
// with '{' and ended with '}' ran its own script).
//
// RFC 8259 and nothing more: no NaN or Infinity, no comments, no trailing
// commas, no single quotes, no bytes after the value; strings valid UTF-8
// with no raw control characters, escapes only the RFC's (a \u surrogate
// must pair), and no \u0000 (tinyseq's text never holds a NUL); numbers in
// the RFC's grammar and finite as doubles. Nesting is bounded by
// TS_JSON_MAX_DEPTH.
//
// Written back: strings through ts_render_json_string (viz/render.h: '<',
// '>', '&' and controls as \u00XX, so the text can sit in a <script>);
// numbers as their token (which the grammar limits to digits, '-', '+',
// '.', 'e', 'E'); no whitespace.
#ifndef TS_VIZ_JSON_H
#define TS_VIZ_JSON_H

#include <stddef.h>
#include <stdio.h>

#define TS_JSON_MAX_DEPTH 64

// Reads text[0..n) (any bytes, NULs included) as exactly one JSON object,
// with optional whitespace around it, and writes it to out (out may be NULL:
// only checked). TS_OK, TS_ERR_FORMAT with a message saying what is wrong
// at which byte (from 1; the caller names the file and line), or
// TS_ERR_NOMEM.
int ts_json_copy_object(FILE *out, const char *text, size_t n);

#endif
