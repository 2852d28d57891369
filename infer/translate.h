// Translating text: one sentence, or many sentences at once, with beam
// search (beam 1: greedy).
//
// Why batch: a decoder step of one
// sentence reads every weight it uses (18.6 MB at hidden 256 with the
// Tatoeba vocabulary) to do one row of work: memory-bound. Batching B
// sentences makes that one read serve B rows (K B for beam width K: a matrix
// product instead of a matrix-vector product), so a file translates several
// times faster per sentence. Results equal one-at-a-time decoding up to the
// rounding of those products (a different summation order), which can turn
// a near tie between two words the other way.
#ifndef TS_TRANSLATE_H
#define TS_TRANSLATE_H

#include "infer/load.h"

// One source sentence as the model reads it, made once from its text:
// normalised as training did (the model's normalisation: its words, or the
// text as written), then its words' ids (unknown words <unk>) or its subword
// pieces' ids. Owns its buffers (ts_source_free).
typedef struct {
    int32_t *ids;  // (len) the source units' ids
    int len;       // 0: the text is empty after normalisation (nothing to translate)
    char *units;   // the units joined by single spaces: the words, or the pieces
} ts_source;

// text[0..n) into *src (zeroed on failure). TS_OK (src->len 0 for text that
// normalises to nothing); TS_ERR_FORMAT for invalid UTF-8 or more than
// TS_MAX_SENTENCE_TOKENS units (the message says which); TS_ERR_NOMEM.
int ts_source_encode(const ts_translator *t, const char *text, size_t n, ts_source *src);
void ts_source_free(ts_source *src);

// Decodes one encoded sentence (src->len >= 1) with beam search (beam 1:
// greedy), at most ts_output_limit(len) tokens, as ts_translate_text does.
// ctx is reset before and after. Errors: TS_ERR_ARENA (a bigger arena
// helps: the same src can be decoded again), TS_ERR_NOMEM, the model's.
int ts_translate_source(ts_translator *t, ts_ctx *ctx, const ts_source *src, int beam, ts_hypothesis *out);

// Decodes n encoded sentences (each len >= 1) as one batch, as
// ts_translate_batch does (the same outputs); srcs stay the caller's, so a
// batch that needs a bigger arena is decoded again without encoding again.
int ts_translate_sources(ts_translator *t, ts_ctx *ctx, const ts_source *srcs, int n, int beam, ts_hypothesis *out);

// Normalises `text` as training did, maps it to the model's source units
// (its words, unknown words becoming <unk>; or its subword pieces, which
// spell any text) and decodes with beam search (beam 1: greedy). *source
// receives those units joined by spaces (malloc'd; NULL allowed: the words,
// or the pieces attend labels its columns with) and *n_source their count.
// The hypothesis holds the output ids and attention (free with
// ts_hypothesis_free). ctx is reset first. Errors: TS_ERR_FORMAT (invalid
// UTF-8 / empty after normalisation / more than TS_MAX_SENTENCE_TOKENS
// units), TS_ERR_NOMEM, the model's errors.
int ts_translate_text(ts_translator *t, ts_ctx *ctx, const char *text, int beam, ts_hypothesis *out, char **source,
                      int *n_source);

// The words of `source` (tokens joined by single spaces, as
// ts_translate_text gives them) that vocabulary v does not know and so reads
// as <unk>, joined by ", " in order of appearance (malloc'd), or NULL when
// every word is known (or out of memory).
char *ts_unknown_words(const ts_vocab *v, const char *source);

// The words that label the axes of hypothesis h's attention (h->len + 1
// rows, S columns), as attend draws and writes them.
typedef struct {
    const char **source;  // (S) the normalised words, "<unk>:word" where the model reads <unk>
    const char **target;  // (len + 1) the output words, then "<eos>" (or "<cut>" at the length limit)
    char *words;          // the normalised source split in place, then the "<unk>:word" labels
} ts_attention_labels;

// Fills *out from source (the normalised tokens joined by single spaces, as
// ts_translate_text gives them; S of them) and h. Everything is copied:
// free with ts_attention_labels_free. TS_OK or TS_ERR_NOMEM (*out zeroed).
int ts_attention_labels_make(const ts_translator *t, const char *source, int S, const ts_hypothesis *h,
                             ts_attention_labels *out);
void ts_attention_labels_free(ts_attention_labels *l);

// Normalises texts[0..n) as training did, maps them to the model's source
// units as ts_translate_text does and decodes all of them as one batch with
// beam search of
// width beam (1: greedy), each at most ts_output_limit(k) tokens for k source
// words (as ts_translate_text). out[i] receives sentence i's tokens and
// score as ts_translate_text gives them (attention NULL; free with
// ts_hypothesis_free). Every text must normalise to at least one token
// (check with ts_normalize first). ctx is reset before and after. Errors:
// TS_ERR_FORMAT naming the index of a text that does not normalise or is
// empty, TS_ERR_ARENA (a bigger arena helps), TS_ERR_NOMEM, the model's
// errors; out is then all zeroed.
int ts_translate_batch(ts_translator *t, ts_ctx *ctx, const char *const *texts, int n, int beam, ts_hypothesis *out);

// The corpus a model reads, made from one in words (as ts_corpus_read gives
// it): *units is NULL for a word-level model (it reads `words` itself), else
// a new corpus of the same rows in the model's subword pieces (free with
// ts_corpus_free; gold links dropped). Errors: those of ts_subword_corpus,
// naming `name` (the corpus's file).
int ts_translator_units(const ts_translator *t, const ts_corpus *words, const char *name, ts_corpus **units);

// The text of output ids[0..n) (a hypothesis's tokens), malloc'd into
// *text: up to the first <eos>, without <pad> and <sos>; a word-level
// model's words joined by spaces (<unk> as it is, an id out of range too),
// a subword model's pieces detokenised into words (specials dropped, so
// never "<unk>"). Errors: TS_ERR_NOMEM, the subword decoder's.
int ts_translator_text(const ts_translator *t, const int32_t *ids, int n, char **text);

#endif
