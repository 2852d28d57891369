// A parallel corpus in memory: sentence pairs as token arrays, optionally with
// gold word alignments. The TSV reader and the toy generator (data/toy.h) both
// produce a ts_corpus, so training treats them the same.
//
// TSV format (Tatoeba / manythings.org Anki pairs), one pair per line:
//     source<TAB>target[<TAB>anything ignored]
// A UTF-8 byte order mark on the first line is accepted; lines end with LF,
// CRLF or a lone CR (old Mac files), in any mix;
// blank lines (only spaces, tabs, CR) are skipped. Both sides are normalised
// with ts_normalize (data/normalize.h) into words; a corpus read for a model
// whose normalisation keeps the text (ts_corpus_opts.normalisation) also
// keeps each side's text in it beside the words.
#ifndef TS_CORPUS_H
#define TS_CORPUS_H

#include "data/align.h"  // ts_link, TS_UNALIGNED
#include "data/normalize.h"  // ts_normalisation

#include <gsl/gsl_rng.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Longest line the reader accepts, in bytes, without its "\n" (and "\r").
// Longer lines are a format error: the reader never holds more than one line.
#define TS_LINE_MAX 65536

typedef struct {
    char **src;       // (src_len) NUL-terminated tokens, owned by the corpus
    char **tgt;       // (tgt_len)
    int32_t src_len;  // >= 1
    int32_t tgt_len;  // >= 1
    // Each side as the model reads it when that is not the words above (the
    // text as written, normalisation "nfc"), owned by the corpus; NULL: the
    // words joined by spaces are the text (ts_pair_text).
    const char *src_text, *tgt_text;
    // Gold alignment, or NULL / 0 when the corpus has none. Sorted by
    // (src, tgt); every target index 0..tgt_len-1 occurs in at least one
    // link (as {TS_UNALIGNED, j} when it has no source token).
    ts_link *links;
    int32_t n_links;
} ts_pair;

// How many skipped lines a corpus names (ts_corpus_skipped).
#define TS_CORPUS_BAD_NAMED 5

// Read-only for users; build with ts_corpus_new/ts_corpus_add or get one from
// ts_corpus_read / ts_toy_generate, free with ts_corpus_free. The pairs'
// tokens and links live in one arena (at most TS_ARENA_MAX, 16 GiB).
typedef struct ts_corpus {
    ts_pair *pairs;
    size_t n_pairs;
    int has_align;      // 1 when every pair carries a gold alignment
    size_t n_lines;     // lines read from the file (reader only)
    size_t n_bad;       // malformed lines skipped because of skip_bad
    size_t bad_lines[TS_CORPUS_BAD_NAMED];  // the first of them by number (from 1): min(n_bad, 5)
    char bad_why[160];  // what was wrong with the first ("no tab (expected source<TAB>target)")
    size_t n_filtered;  // well-formed pairs dropped by max_len or prefixes
    // private
    size_t cap;
    struct ts_arena *arena;  // every pair's tokens, token arrays and links (tensor/arena.h), freed at once
} ts_corpus;

enum ts_side { TS_SRC = 0, TS_TGT = 1 };

typedef struct {
    // Keep a pair only when both sides have 1..max_len tokens (0: no limit).
    // The filters read the words (ts_normalize) whatever the normalisation,
    // so every normalisation keeps the same pairs.
    size_t max_len;
    // Keep a pair only when its normalised source starts with the tokens of
    // one of these prefixes (normalised the same way, so "I am" matches
    // "i am ..."; matching is by whole tokens). NULL / 0: no filter.
    const char *const *prefixes;
    size_t n_prefixes;
    // 0: a malformed line is an error naming file:line. 1: it is skipped and
    // counted in ts_corpus.n_bad.
    int skip_bad;
    // The model's normalisation: one that keeps the text (ts_normalisations)
    // also stores each side's text in it (ts_pair.src_text, tgt_text). Zero:
    // the words only.
    ts_normalisation normalisation;
} ts_corpus_opts;

// An empty corpus without alignments. Returns NULL when out of memory
// (message set). Free with ts_corpus_free.
ts_corpus *ts_corpus_new(void);

// Frees the corpus and every token and link it holds. NULL is fine.
void ts_corpus_free(ts_corpus *c);

// Appends one pair. `src` and `tgt` are already-normalised token strings
// separated by ASCII spaces (extra spaces are ignored); they are copied.
// `links` (n_links of them, copied and sorted) may be NULL only while the
// corpus has no pair with links: a corpus is aligned throughout or not at
// all. Target tokens without a link get an explicit {TS_UNALIGNED, j}.
// Errors: TS_ERR_ARG for an empty side, a link index out of range, or mixing
// aligned and unaligned pairs; TS_ERR_NOMEM. The corpus is unchanged on error.
int ts_corpus_add(ts_corpus *c, const char *src, const char *tgt,
                  const ts_link *links, size_t n_links);

// Gives pair i (< c->n_pairs) its texts as the model reads them (copied;
// NULL leaves a side's words as its text). TS_OK or TS_ERR_NOMEM.
int ts_corpus_set_text(ts_corpus *c, size_t i, const char *src_text, const char *tgt_text);

// Side `side` of pair p as the model reads it, malloc'd into *text: its
// text when the corpus kept one, else its words joined by single spaces.
// TS_OK or TS_ERR_NOMEM.
int ts_pair_text(const ts_pair *p, enum ts_side side, char **text);

// Reads a TSV file. opts may be NULL (no filter, bad lines are errors).
// On success returns TS_OK and sets *out to a new corpus (the caller frees
// it); it may hold 0 pairs when the filters dropped everything.
// Errors (nothing allocated, *out = NULL, message set):
//   TS_ERR_IO      the file cannot be opened or read ("cannot open 'x': ...",
//                  "cannot read 'x': Is a directory");
//   TS_ERR_FORMAT  the file is empty (or only blank lines), or without
//                  skip_bad a malformed line: "x.tsv:12: no tab ...", "empty
//                  source side", "target side: invalid UTF-8 at byte 7",
//                  "NUL byte at byte 3", "line longer than 65536 bytes";
//                  with skip_bad, every line was malformed;
//   TS_ERR_ARG     a prefix that normalises to nothing;
//   TS_ERR_NOMEM.
int ts_corpus_read(const char *path, const ts_corpus_opts *opts, ts_corpus **out);

// The lines ts_corpus_read skipped, for messages: "line 4 (no tab
// (expected source<TAB>target))", "lines 4, 9 and 12 (line 4: ...)", "lines
// 1, 2, 3, 4, 5 and 7 more (line 1: ...)"; "" when none was. Writes at most
// n bytes to buf; returns buf.
char *ts_corpus_skipped(const ts_corpus *c, char *buf, size_t n);

// Drops, in place, the pairs that fail opts->max_len or opts->prefixes and
// adds their number to c->n_filtered (skip_bad is ignored). Used on corpora
// that did not come from ts_corpus_read, such as the toy corpus.
// Errors: TS_ERR_ARG (a prefix normalising to nothing), TS_ERR_NOMEM.
int ts_corpus_filter(ts_corpus *c, const ts_corpus_opts *opts);

// Writes pair i as "src tokens<TAB>tgt tokens\n" for every pair (a side
// whose text the pair kept as that text: reading it back with the same
// normalisation gives the same pair).
// Returns TS_OK or TS_ERR_IO when writing fails.
int ts_corpus_write_tsv(const ts_corpus *c, FILE *f);

// The same for the pairs rows[0..n) only, in that order.
int ts_corpus_write_rows(const ts_corpus *c, const size_t *rows, size_t n, FILE *f);

// Writes the gold alignments, one line per pair in Pharaoh format
// ("0-0 1-2 2-1", source-target, sorted by source then target). Explicitly
// unaligned target tokens are simply absent, as Pharaoh has no mark for them.
// Errors: TS_ERR_ARG when the corpus has no alignments, TS_ERR_IO.
int ts_corpus_write_align(const ts_corpus *c, FILE *f);

// Row indices of a train/dev/test split. Each array is sorted ascending and
// owned by the split (free with ts_split_free); n_* may be 0.
typedef struct {
    size_t *train, *dev, *test;
    size_t n_train, n_dev, n_test;
} ts_split;

// Shuffles the row indices 0..n_pairs-1 with gsl_ran_shuffle on `rng`, and
// takes the first n_dev as dev, the next n_test as test, the rest as train:
// the same rng state gives the same split. Pass separate files instead by
// reading three corpora and using all rows of each.
// Errors: TS_ERR_ARG when fewer than one pair would be left for training,
// TS_ERR_NOMEM. On error *split is zeroed.
int ts_corpus_split(const ts_corpus *c, gsl_rng *rng, size_t n_dev, size_t n_test,
                    ts_split *split);

// Frees the index arrays and zeroes the split.
void ts_split_free(ts_split *split);

#endif
