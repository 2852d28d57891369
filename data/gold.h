// Gold word alignments of a corpus read from a Pharaoh file (one line per
// sentence pair, "0-0 1-2", source-target): what eval --align and the
// Python API's eval(align=...) score the attention against (infer/alignment.h).
#ifndef TS_GOLD_H
#define TS_GOLD_H

#include "data/corpus.h"

typedef struct {
    ts_link **links;  // (n) malloc'd each, NULL for a blank line
    int32_t *counts;  // (n)
    size_t n;         // == the corpus's pairs
} ts_gold;

// Reads `path`, checking each link against its pair's lengths in c and the
// line count against c's pairs (corpus_name names c in the message). TS_OK
// and *out (free with ts_gold_free); else *out is zeroed and the error says
// why: TS_ERR_IO "cannot open 'PATH': ...", TS_ERR_FORMAT "PATH:LINE: ..."
// (a malformed link, or one outside its pair) or a line count that differs,
// TS_ERR_NOMEM.
int ts_gold_read(const char *path, const char *corpus_name, const ts_corpus *c, ts_gold *out);
void ts_gold_free(ts_gold *g);

#endif
