// Subword units through SentencePiece (issue 26): a model learned from
// sentences splits text into pieces, so no word is ever out of vocabulary.
//
// The text given here is already normalised by the model's normalisation
// (data/normalize.h): ts_normalize's words joined by single spaces, or the
// text as written (ts_normalize_nfc). SentencePiece runs with its "identity"
// normalisation, so decoding the pieces gives back exactly that text.
//
//     "i 'm here ."  --encode-->  "▁i ▁' m ▁here ▁."  --decode-->  "i 'm here ."
//     "I'm here."    --encode-->  "▁I ' m ▁here ."    --decode-->  "I'm here."
//
// Piece ids line up with tensor/tokens.h: <pad>=0 <sos>=1 <eos>=2 <unk>=3,
// then the 256 byte pieces <0x00>..<0xFF>, then the learned pieces. Byte
// fallback spells a character the model never saw as the bytes of its UTF-8,
// so encoding never gives <unk>.
//
// SentencePiece is optional at build time (CMake TS_SPM, like MPI): without it
// every function that needs a model fails with TS_ERR_ARG saying so, and
// ts_subword_compiled() is 0. data/subword.cc is the one C++ unit.
#ifndef TS_SUBWORD_H
#define TS_SUBWORD_H

#include <stddef.h>
#include <stdint.h>

#include "data/subword_proto.h"  // TS_SUBWORD_MIN_VOCAB, TS_SUBWORD_MAX_VOCAB
#include "tensor/names.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_subword ts_subword;
typedef struct ts_vocab ts_vocab;  // data/vocab.h
typedef struct ts_corpus ts_corpus;  // data/corpus.h

// How pieces are learned (SentencePiece's model_type): unigram language
// model (SentencePiece's default) or byte-pair encoding merges.
enum ts_subword_kind { TS_SUBWORD_UNIGRAM = 0, TS_SUBWORD_BPE, TS_SUBWORD_KIND_COUNT };

// "unigram", "bpe"; NULL for a value out of range.
const char *ts_subword_kind_name(int kind);
extern const ts_names ts_subword_kind_names;

typedef struct {
    enum ts_subword_kind kind;
    // Most pieces in the model, specials and byte pieces included. Small
    // corpora may give fewer: SentencePiece stops when no piece is left.
    size_t vocab_size;
    // Seed of SentencePiece's random generator (training runs on one thread,
    // so the same sentences and options give the same bytes).
    uint32_t seed;
} ts_subword_opts;

// 1 when this build has SentencePiece (TS_SPM=ON), else 0.
int ts_subword_compiled(void);

// Learns a model from n normalised sentences (valid UTF-8, NUL-
// terminated; empty ones are ignored). Returns TS_OK and a new model in *out
// (free with ts_subword_free), or with *out = NULL: TS_ERR_ARG (vocab_size
// outside TS_SUBWORD_MIN_VOCAB..TS_SUBWORD_MAX_VOCAB, an unknown kind, fewer pieces than
// the characters need, no sentence, or a build without SentencePiece),
// TS_ERR_FORMAT (invalid UTF-8, naming the sentence and byte), TS_ERR_NOMEM.
// Not for two threads at once: SentencePiece's seed and log level are global.
int ts_subword_train(const char *const *sentences, size_t n, const ts_subword_opts *opts,
                     ts_subword **out);

// The model as bytes, for a checkpoint section or a file: a 20-byte header
// ("TSSP", version 1, payload length u64 LE, CRC-32 of the payload u32 LE)
// then the payload, a standard SentencePiece model file (spm_encode reads it
// after `tail -c +21`). Owned by the model; *n gets the length.
const uint8_t *ts_subword_bytes(const ts_subword *sw, size_t *n);

// Loads a model from the bytes of ts_subword_bytes (copied; the caller keeps
// them). Returns TS_OK and *out, or with *out = NULL: TS_ERR_FORMAT for a
// blob that is truncated, corrupt (CRC mismatch), not a tinyseq subword model
// (header, specials) or that SentencePiece refuses; TS_ERR_ARG without
// SentencePiece; TS_ERR_NOMEM.
int ts_subword_load(const void *bytes, size_t n, ts_subword **out);

// Frees the model; NULL is fine.
void ts_subword_free(ts_subword *sw);

// Number of pieces (ids 0..size-1), specials and byte pieces included.
size_t ts_subword_size(const ts_subword *sw);

// The piece with this id ("<unk>", "<0xE2>", "▁the"), or NULL when out of
// range. Owned by the model.
const char *ts_subword_piece(const ts_subword *sw, int32_t id);

// A vocabulary (data/vocab.h) of the model's pieces whose ids are the model's
// ids, for batches and the output layer. Errors as ts_vocab_from_words.
int ts_subword_vocab(const ts_subword *sw, ts_vocab **out);

// TS_OK when the pieces of sw are the words of v, id for id (a model stored
// with a vocabulary must be the one it was made from); else TS_ERR_FORMAT
// "piece N is 'x' where the vocabulary has 'y'".
int ts_subword_check_vocab(const ts_subword *sw, const ts_vocab *v);

// Encodes `len` bytes of normalised text (valid UTF-8) into pieces. On TS_OK:
// *pieces (may be NULL: not wanted) a malloc'd string of the pieces joined by
// single spaces (pieces never hold an ASCII space), *ids (may be NULL) a
// malloc'd array of their ids, *n_pieces (may be NULL) their count. An empty
// or all-space text gives "" and 0 pieces (*ids is then a valid empty
// allocation or NULL). Decoding gives the text back, except that runs of
// spaces become one, outer spaces go (normalised text has neither), and a
// U+2581 in the text, SentencePiece's own word mark, comes back as a space. Errors: TS_ERR_FORMAT "invalid UTF-8 at byte N",
// TS_ERR_NOMEM; outputs are NULL / 0 then.
int ts_subword_encode(const ts_subword *sw, const char *text, size_t len, char **pieces,
                      int32_t **ids, size_t *n_pieces);

// Detokenises n pieces (as ts_vocab_word or ts_subword_piece give them) into
// *text, malloc'd: "▁" becomes a space between words, byte pieces become their
// character (an invalid byte sequence becomes U+FFFD), specials (<pad>, <sos>,
// <eos>, <unk>) are dropped. n = 0 gives "". Errors: TS_ERR_NOMEM.
int ts_subword_decode(const ts_subword *sw, const char *const *pieces, size_t n, char **text);

// The text of n output tokens (ts_vocab_word's strings): with a model sw,
// ts_subword_decode of the pieces; with sw NULL (a word-level model), the
// words joined by single spaces, specials included as they are. *text is
// malloc'd. Errors: those of ts_subword_decode, TS_ERR_NOMEM.
int ts_subword_detokenize(const ts_subword *sw, const char *const *tokens, size_t n, char **text);

// The pairs of `words` (as ts_corpus_read gives them) in the pieces of src
// (source side) and tgt (target side): each side's text as the model reads
// it (ts_pair_text: the text the pair kept, else its words) encoded, in the
// same order, so row i of *out is row i of words; gold links are dropped
// (they name word positions). Errors: those of ts_subword_encode naming the pair, TS_ERR_ARG
// without SentencePiece, TS_ERR_NOMEM; *out = NULL then.
int ts_subword_corpus(const ts_subword *src, const ts_subword *tgt, const ts_corpus *words, ts_corpus **out);

// Groups pieces into the words decoding makes of them: word_of[i] (n entries)
// gets the 0-based word of pieces[i]. A piece that starts with "▁" begins a
// word; any other piece (a byte piece too) continues the current one, and the
// first piece is in word 0 whatever it starts with. Returns the number of
// words (0 when n is 0). Needs no model, so it works in every build.
size_t ts_subword_words(const char *const *pieces, size_t n, int32_t *word_of);

#ifdef __cplusplus
}
#endif

#endif
