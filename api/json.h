// The C API's results as JSON text: a memory stream to write them into, and
// numbers printed to read back bit for bit. Strings go through viz/render.h's
// one escaper (ts_render_json_string).
#ifndef TINYSEQ_API_JSON_H
#define TINYSEQ_API_JSON_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;     // write here
    char *text;  // the stream's buffer (open_memstream)
    size_t len;
} api_text;

// Opens a memory stream; TS_OK or TS_ERR_NOMEM.
int api_text_open(api_text *t);

// Closes the stream: TS_OK with *out the text (the caller's, tinyseq_free),
// or TS_ERR_NOMEM (*out NULL). With status != TS_OK only discards it and
// returns status.
int api_text_close(api_text *t, int status, char **out);

// %.17g, or null for NaN and the infinities (JSON has no such numbers).
void api_json_number(FILE *f, double v);

#endif
