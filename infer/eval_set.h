// The pairs of a corpus file an evaluation scores (infer/evaluate.h): read
// the same way by tinyseq eval and the C API.
#ifndef TS_INFER_EVAL_SET_H
#define TS_INFER_EVAL_SET_H

#include "data/corpus.h"
#include "data/gold.h"
#include "infer/load.h"

// The pairs of a corpus file that an evaluation of model t scores (tinyseq
// eval and the C API read them the same way): the file read whole (a gold
// file's lines follow the pairs as read), the model's pieces of it, the gold
// links, and the rows within the length limit.
typedef struct {
    ts_corpus *corpus;          // the pairs as read: words, what BLEU compares
    ts_corpus *units;           // the same pairs in a subword model's pieces; NULL for a word model
    ts_gold gold;               // zeroed without an alignment file
    size_t *rows;               // (n_rows) the pairs with both sides within limit tokens
    const ts_link **row_gold;   // (n_rows) their gold links; NULL without an alignment file
    int32_t *row_counts;        // (n_rows) and their counts
    size_t n_rows;
    int limit;                  // the length limit applied
} ts_eval_set;

// Reads corpus_path (skip_bad: malformed lines skipped and counted) and
// align_path (may be NULL) into *out, keeping the pairs within max_len tokens
// (max_len < 0: the model's own limit; 0 or past TS_MAX_SENTENCE_TOKENS: that
// bound). TS_OK, or the error naming the file; *out is then freed.
// Zero rows is not an error: the caller says what it means.
int ts_eval_set_read(const ts_translator *t, const char *corpus_path, const char *align_path, int skip_bad,
                     int max_len, ts_eval_set *out);
void ts_eval_set_free(ts_eval_set *s);

// What the model reads of the set: its pieces, or its words.
static inline const ts_corpus *ts_eval_set_input(const ts_eval_set *s) { return s->units ? s->units : s->corpus; }

#endif
