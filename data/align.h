// Word alignment links, shared by data/ (gold alignments of a corpus) and
// infer/ and viz/ (AER, attention argmax alignments), and the one home of
// Pharaoh lines ("0-0 1-2 2-1"), written and read here only. Kept apart from
// corpus.h so that code above data/ can include just this.
#ifndef TS_ALIGN_H
#define TS_ALIGN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Marks a target token that has no source counterpart in a gold alignment.
#define TS_UNALIGNED (-1)

// One alignment link: source token `src` translates (part of) target token
// `tgt`. Indices are 0-based token positions; src == TS_UNALIGNED says
// explicitly that target token `tgt` has no source token.
typedef struct {
    int32_t src;  // i, source position
    int32_t tgt;  // j, target position
} ts_link;

// Writes one Pharaoh line: the links as "i-j" separated by spaces, then '\n'
// (an empty line for none); TS_UNALIGNED links are left out (Pharaoh has no
// way to say "explicitly unaligned"). Returns TS_OK, or TS_ERR_IO when the
// stream has failed.
int ts_pharaoh_write(FILE *out, const ts_link *links, size_t n_links);

// Parses one Pharaoh line, whitespace-separated "i-j" links ("0-0 1-2 2-1"),
// i and j decimal integers in [0, INT32_MAX]. An empty or blank line gives no
// links. On success returns TS_OK, *links is malloc'd (free() it; NULL when
// *n_links is 0). On malformed input returns TS_ERR_FORMAT with a message
// naming the token and its 1-based index, and sets *links = NULL,
// *n_links = 0; TS_ERR_NOMEM when allocation fails.
int ts_pharaoh_parse(const char *line, ts_link **links, size_t *n_links);

#endif
