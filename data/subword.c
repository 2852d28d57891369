// The parts of data/subword.h that need no SentencePiece, and, in a build
// without it (TS_SPM=OFF), the model functions that say so. The model itself
// is data/subword.cc.
#include "data/subword.h"

#include <stdlib.h>
#include <string.h>

#include "data/corpus.h"
#include "data/vocab.h"
#include "tensor/status.h"

static const char *const kind_names[] = {[TS_SUBWORD_UNIGRAM] = "unigram", [TS_SUBWORD_BPE] = "bpe"};
_Static_assert(sizeof kind_names / sizeof *kind_names == TS_SUBWORD_KIND_COUNT, "a name per kind");

const char *ts_subword_kind_name(int kind) { return kind >= 0 && kind < TS_SUBWORD_KIND_COUNT ? kind_names[kind] : NULL; }

const ts_names ts_subword_kind_names = {.what = "subword kind", .count = TS_SUBWORD_KIND_COUNT, .name = ts_subword_kind_name};

int ts_subword_vocab(const ts_subword *sw, ts_vocab **out) {
    *out = NULL;
    size_t n = ts_subword_size(sw);
    if (n == 0) return ts_fail(TS_ERR_ARG, "no subword model");  // only without SentencePiece
    const char **pieces = malloc(n * sizeof *pieces);
    if (!pieces) return ts_fail(TS_ERR_NOMEM, "out of memory for %zu subword pieces", n);
    for (size_t i = 0; i < n; i++) pieces[i] = ts_subword_piece(sw, (int32_t)i);
    int rc = ts_vocab_from_words(pieces, n, out);
    free(pieces);
    return rc;
}

int ts_subword_check_vocab(const ts_subword *sw, const ts_vocab *v) {
    size_t size = ts_subword_size(sw);
    for (size_t id = 0; id < size || id < ts_vocab_size(v); id++) {
        const char *piece = id < size ? ts_subword_piece(sw, (int32_t)id) : NULL, *word = ts_vocab_word(v, (int32_t)id);
        if (piece && word && !strcmp(piece, word)) continue;
        return ts_fail(TS_ERR_FORMAT, "piece %zu is '%s' where the vocabulary has '%s'", id, piece ? piece : "(none)",
                       word ? word : "(none)");
    }
    return TS_OK;
}

int ts_subword_detokenize(const ts_subword *sw, const char *const *tokens, size_t n, char **text) {
    if (sw) return ts_subword_decode(sw, tokens, n, text);
    size_t len = 1;
    for (size_t i = 0; i < n; i++) len += strlen(tokens[i]) + 1;
    char *out = *text = malloc(len);
    if (!out) return ts_fail(TS_ERR_NOMEM, "out of memory for %zu bytes of text", len);
    for (size_t i = 0; i < n; i++) {
        if (i) *out++ = ' ';
        size_t w = strlen(tokens[i]);
        memcpy(out, tokens[i], w);
        out += w;
    }
    *out = '\0';
    return TS_OK;
}

// One side of pair p (its text as the model reads it) in the pieces of sw,
// malloc'd into *pieces.
static int encode_side(const ts_subword *sw, const ts_pair *p, enum ts_side side, size_t row, char **pieces) {
    char *text;
    int rc = ts_pair_text(p, side, &text);
    if (!rc && (rc = ts_subword_encode(sw, text, strlen(text), pieces, NULL, NULL)))
        rc = ts_fail(rc, "pair %zu, %s side: %s", row + 1, side == TS_SRC ? "source" : "target", ts_last_error());
    free(text);
    return rc;
}

int ts_subword_corpus(const ts_subword *src, const ts_subword *tgt, const ts_corpus *words, ts_corpus **out) {
    *out = ts_corpus_new();
    if (!*out) return TS_ERR_NOMEM;
    int rc = TS_OK;
    for (size_t i = 0; !rc && i < words->n_pairs; i++) {
        char *s = NULL, *t = NULL;
        rc = encode_side(src, &words->pairs[i], TS_SRC, i, &s);
        if (!rc) rc = encode_side(tgt, &words->pairs[i], TS_TGT, i, &t);
        if (!rc) rc = ts_corpus_add(*out, s, t, NULL, 0);
        free(s);
        free(t);
    }
    if (rc) {
        ts_corpus_free(*out);
        *out = NULL;
    }
    return rc;
}

// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's mark of a word start.
#define TS_WORD_MARK "\xe2\x96\x81"

size_t ts_subword_words(const char *const *pieces, size_t n, int32_t *word_of) {
    int32_t word = -1;
    for (size_t i = 0; i < n; i++) {
        if (word < 0 || strncmp(pieces[i], TS_WORD_MARK, strlen(TS_WORD_MARK)) == 0) word++;
        word_of[i] = word;
    }
    return (size_t)(word + 1);
}

#ifndef TS_HAVE_SPM
// Without SentencePiece no model can exist: the constructors fail and the
// rest is never reached with a model.
#define TS_NO_SPM "this tinyseq was built without SentencePiece (TS_SPM=OFF): " \
                  "scripts/setup.sh installs libsentencepiece-dev"

int ts_subword_compiled(void) { return 0; }

int ts_subword_train(const char *const *sentences, size_t n, const ts_subword_opts *opts,
                     ts_subword **out) {
    *out = NULL;
    return ts_fail(TS_ERR_ARG, TS_NO_SPM);
}

int ts_subword_load(const void *bytes, size_t n, ts_subword **out) {
    *out = NULL;
    return ts_fail(TS_ERR_ARG, TS_NO_SPM);
}

void ts_subword_free(ts_subword *sw) {}
const uint8_t *ts_subword_bytes(const ts_subword *sw, size_t *n) { *n = 0; return NULL; }
size_t ts_subword_size(const ts_subword *sw) { return 0; }
const char *ts_subword_piece(const ts_subword *sw, int32_t id) { return NULL; }

int ts_subword_encode(const ts_subword *sw, const char *text, size_t len, char **pieces,
                      int32_t **ids, size_t *n_pieces) {
    if (pieces) *pieces = NULL;
    if (ids) *ids = NULL;
    if (n_pieces) *n_pieces = 0;
    return ts_fail(TS_ERR_ARG, TS_NO_SPM);
}

int ts_subword_decode(const ts_subword *sw, const char *const *pieces, size_t n, char **text) {
    *text = NULL;
    return ts_fail(TS_ERR_ARG, TS_NO_SPM);
}
#endif
