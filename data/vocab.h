// Word <-> id vocabularies with the four special tokens first.
//
// Ids: <pad>=0 <sos>=1 <eos>=2 <unk>=3, then the words of the training rows
// with count >= min_count by descending count, ties by byte order (strcmp):
// the same ids as bench/torch_ref.py's Vocab. Lookup is an open-addressing
// hash table (FNV-1a), O(1) per token.
#ifndef TS_VOCAB_H
#define TS_VOCAB_H

#include "data/corpus.h"

#include <stddef.h>
#include <stdint.h>

#include "tensor/tokens.h"  // TS_PAD, TS_SOS, TS_EOS, TS_UNK, TS_N_SPECIALS

typedef struct ts_vocab ts_vocab;

// Builds the vocabulary of one side (TS_SRC or TS_TGT) from the corpus rows
// `rows` (n_rows indices; NULL means every pair, e.g. a separate train file).
// Tokens spelled like a special ("<unk>") are not words: they encode as <unk>.
// min_count 0 or 1 keeps every word.
// Returns TS_OK and a new vocabulary in *out (free with ts_vocab_free; it
// copies the words, so it outlives the corpus), or TS_ERR_ARG (row out of
// range) / TS_ERR_NOMEM with *out = NULL.
int ts_vocab_build(const ts_corpus *c, enum ts_side side, const size_t *rows, size_t n_rows,
                   size_t min_count, ts_vocab **out);

// Rebuilds a vocabulary from its words in id order (words[i] has id i), e.g.
// from a checkpoint. words[0..3] must be the specials in order.
// Errors: TS_ERR_FORMAT (missing specials, an empty word, a word with a
// space, a duplicate), TS_ERR_NOMEM; *out = NULL then.
int ts_vocab_from_words(const char *const *words, size_t n, ts_vocab **out);

// Frees the vocabulary; NULL is fine.
void ts_vocab_free(ts_vocab *v);

// Number of ids, specials included.
size_t ts_vocab_size(const ts_vocab *v);

// The id of `word`, or TS_UNK when it is not in the vocabulary.
int32_t ts_vocab_id(const ts_vocab *v, const char *word);

// The word with this id ("<pad>" for 0 ...), or NULL when id is out of range.
// The string is owned by the vocabulary.
const char *ts_vocab_word(const ts_vocab *v, int32_t id);

// The occurrence count of id in the rows it was built from (0 for specials and
// for vocabularies from ts_vocab_from_words).
size_t ts_vocab_count(const ts_vocab *v, int32_t id);

// ids[i] = ts_vocab_id(v, tokens[i]) for i < n.
void ts_vocab_encode(const ts_vocab *v, char *const *tokens, size_t n, int32_t *ids);

// Writes the words of ids[0..n) joined by single spaces into out (capacity
// cap, always NUL-terminated when cap > 0), stopping at the first <eos> and
// skipping <pad> and <sos>; ids out of range are written as "<unk>".
// Returns the length the full text needs (like snprintf), so a return value
// >= cap means it was cut short.
size_t ts_vocab_decode(const ts_vocab *v, const int32_t *ids, size_t n, char *out, size_t cap);

#endif
