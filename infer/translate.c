// Translating text (see translate.h). In the batch: B = sentences, S = the
// longest source (tokens).
#include "infer/translate.h"

#include "data/normalize.h"
#include "infer/decode.h"
#include "tensor/tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ts_source_encode(const ts_translator *t, const char *text, size_t text_len, ts_source *src) {
    memset(src, 0, sizeof *src);
    char *tokens;
    size_t n;
    int rc = ts_normalisations[t->normalisation].apply(text, text_len, &tokens, &n);
    if (rc) return rc;
    if (n == 0) {
        free(tokens);
        return TS_OK;
    }
    int32_t *ids = NULL;
    if (t->src_sw) {
        char *pieces;
        rc = ts_subword_encode(t->src_sw, tokens, strlen(tokens), &pieces, &ids, &n);
        free(tokens);
        if (rc) return rc;
        tokens = pieces;
    } else {
        // Split a copy of the space-joined tokens in place and map them to ids.
        char **words = malloc(n * sizeof *words), *copy = strdup(tokens), *save = NULL;
        ids = malloc(n * sizeof *ids);
        size_t k = 0;
        for (char *w = copy ? strtok_r(copy, " ", &save) : NULL; w && k < n; w = strtok_r(NULL, " ", &save)) words[k++] = w;
        if (words && ids && copy) ts_vocab_encode(t->src_vocab, words, k, ids);
        else rc = ts_fail(TS_ERR_NOMEM, "cannot allocate %zu tokens", n);
        free(words);
        free(copy);
    }
    if (!rc && n > TS_MAX_SENTENCE_TOKENS)
        rc = ts_fail(TS_ERR_FORMAT, "the sentence has %zu %s, more than the %d tinyseq translates", n,
                     t->src_sw ? "subword pieces" : "tokens", TS_MAX_SENTENCE_TOKENS);
    if (rc) {
        free(ids);
        free(tokens);
        return rc;
    }
    *src = (ts_source){.ids = ids, .len = (int)n, .units = tokens};
    return TS_OK;
}

void ts_source_free(ts_source *src) {
    free(src->ids);
    free(src->units);
    memset(src, 0, sizeof *src);
}

// The text's source, refusing an empty one (the callers that take text).
static int encode_some(const ts_translator *t, const char *text, ts_source *src) {
    int rc = ts_source_encode(t, text, strlen(text), src);
    if (!rc && src->len == 0) rc = ts_fail(TS_ERR_FORMAT, "nothing to translate: the sentence is empty after normalisation");
    return rc;
}

int ts_translate_source(ts_translator *t, ts_ctx *ctx, const ts_source *src, int beam, ts_hypothesis *out) {
    memset(out, 0, sizeof *out);
    ts_ctx_reset(ctx);
    // Outputs get room to be longer than inputs, as translations often are.
    int rc = ts_seq2seq_beam(t->model, ctx, src->ids, src->len, beam, ts_output_limit(src->len), &t->length_penalty, out);
    ts_ctx_reset(ctx);
    return rc;
}

int ts_translate_text(ts_translator *t, ts_ctx *ctx, const char *text, int beam, ts_hypothesis *out, char **source,
                      int *n_source) {
    memset(out, 0, sizeof *out);
    if (source) *source = NULL;
    ts_source src;
    int rc = encode_some(t, text, &src);
    if (rc) return rc;
    rc = ts_translate_source(t, ctx, &src, beam, out);
    if (n_source) *n_source = src.len;
    if (source && !rc) *source = src.units, src.units = NULL;
    ts_source_free(&src);
    return rc;
}

char *ts_unknown_words(const ts_vocab *v, const char *source) {
    size_t len = strlen(source);
    char *list = malloc(2 * len + 1), *end = list;  // at most every byte, plus a ", " per word
    if (!list) return NULL;
    for (const char *w = source; *w;) {
        size_t n = strcspn(w, " ");
        char word[TS_CKPT_MAX_TOKEN + 1];
        int unknown = n > TS_CKPT_MAX_TOKEN;  // too long to be in any vocabulary
        if (!unknown) {
            memcpy(word, w, n);
            word[n] = '\0';
            unknown = ts_vocab_id(v, word) == TS_UNK && strcmp(word, "<unk>");
        }
        if (unknown) {
            if (end > list) end = (char *)memcpy(end, ", ", 2) + 2;
            end = (char *)memcpy(end, w, n) + n;
        }
        w += n;
        while (*w == ' ') w++;
    }
    *end = '\0';
    if (end == list) {
        free(list);
        return NULL;
    }
    return list;
}

int ts_attention_labels_make(const ts_translator *t, const char *source, int S, const ts_hypothesis *h,
                             ts_attention_labels *out) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(source);
    int T = h->len + 1;
    out->source = malloc((size_t)(S > 0 ? S : 1) * sizeof *out->source);
    out->target = malloc((size_t)T * sizeof *out->target);
    out->words = malloc(2 * len + 7 * (size_t)S + 2);  // the words, and each could take "<unk>:" and a NUL again
    if (!out->source || !out->target || !out->words) {
        ts_attention_labels_free(out);
        return ts_fail(TS_ERR_NOMEM, "cannot allocate labels");
    }
    char *words = memcpy(out->words, source, len + 1), *mark = out->words + len + 1, *save = NULL;
    int k = 0;
    for (char *w = strtok_r(words, " ", &save); w && k < S; w = strtok_r(NULL, " ", &save)) {
        out->source[k++] = w;
        if (ts_vocab_id(t->src_vocab, w) != TS_UNK || !strcmp(w, "<unk>")) continue;
        out->source[k - 1] = mark;  // the model reads <unk> here: the figure says so
        mark += sprintf(mark, "<unk>:%s", w) + 1;
    }
    for (; k < S; k++) out->source[k] = "";
    for (int i = 0; i < h->len; i++) {
        const char *w = ts_vocab_word(t->tgt_vocab, h->tokens[i]);
        out->target[i] = w ? w : "<unk>";
    }
    // The last row is the step that emitted <eos>, or the step cut off at the limit.
    out->target[h->len] = h->ended ? "<eos>" : "<cut>";
    return TS_OK;
}

void ts_attention_labels_free(ts_attention_labels *l) {
    free(l->source);
    free(l->target);
    free(l->words);
    memset(l, 0, sizeof *l);
}

int ts_translate_batch(ts_translator *t, ts_ctx *ctx, const char *const *texts, int n, int beam, ts_hypothesis *out) {
    memset(out, 0, (size_t)(n > 0 ? n : 0) * sizeof *out);
    if (n <= 0) return TS_OK;
    ts_source *srcs = calloc((size_t)n, sizeof *srcs);
    int rc = srcs ? TS_OK : ts_fail(TS_ERR_NOMEM, "cannot allocate a batch of %d sentences", n);
    for (int b = 0; b < n && !rc; b++)
        if ((rc = encode_some(t, texts[b], &srcs[b]))) rc = ts_fail(rc, "sentence %d of the batch: %s", b + 1, ts_last_error());
    if (!rc) rc = ts_translate_sources(t, ctx, srcs, n, beam, out);
    for (int b = 0; srcs && b < n; b++) ts_source_free(&srcs[b]);
    free(srcs);
    return rc;
}

int ts_translate_sources(ts_translator *t, ts_ctx *ctx, const ts_source *srcs, int n, int beam, ts_hypothesis *out) {
    memset(out, 0, (size_t)(n > 0 ? n : 0) * sizeof *out);
    if (n <= 0) return TS_OK;
    int B = n, S = 0, rc = TS_OK;
    int *len = calloc((size_t)B, sizeof *len);  // (B)
    int *src = NULL;                            // (S, B) time-major, TS_PAD past len[b]
    if (!len) {
        rc = ts_fail(TS_ERR_NOMEM, "cannot allocate a batch of %d sentences", B);
        goto done;
    }
    for (int b = 0; b < B; b++) {
        len[b] = srcs[b].len;
        if (len[b] > S) S = len[b];
    }
    if (!(src = malloc((size_t)S * (size_t)B * sizeof *src))) {
        rc = ts_fail(TS_ERR_NOMEM, "cannot allocate a batch of %d x %d tokens", S, B);
        goto done;
    }
    for (int s = 0; s < S; s++)
        for (int b = 0; b < B; b++) src[s * B + b] = s < len[b] ? srcs[b].ids[s] : TS_PAD;
    ts_batch_view view = {.B = B, .S = S, .src = src, .src_len = len};
    ts_ctx_reset(ctx);
    rc = ts_decode_batch(t->model, ctx, &view, beam, 0, &t->length_penalty, out);
    if (rc) {
        memset(out, 0, (size_t)B * sizeof *out);
        goto done;
    }
    // No attention: greedy's rows have the batch's S columns, not the sentence's.
    for (int b = 0; b < B; b++) {
        free(out[b].attention);
        out[b].attention = NULL;
        out[b].S = len[b];
    }
done:
    free(len);
    free(src);
    return rc;
}

int ts_translator_units(const ts_translator *t, const ts_corpus *words, const char *name, ts_corpus **units) {
    *units = NULL;
    if (!t->src_sw) return TS_OK;
    int rc = ts_subword_corpus(t->src_sw, t->tgt_sw, words, units);
    return rc ? ts_fail(rc, "%s in subword pieces: %s", name, ts_last_error()) : TS_OK;
}

int ts_translator_text(const ts_translator *t, const int32_t *ids, int n, char **text) {
    const char **tokens = malloc((size_t)(n > 0 ? n : 1) * sizeof *tokens);
    if (!tokens) return ts_fail(TS_ERR_NOMEM, "cannot allocate %d tokens", n);
    size_t k = 0;
    for (int i = 0; i < n && ids[i] != TS_EOS; i++) {
        if (ids[i] == TS_PAD || ids[i] == TS_SOS) continue;
        const char *word = ts_vocab_word(t->tgt_vocab, ids[i]);
        tokens[k++] = word ? word : "<unk>";
    }
    int rc = ts_subword_detokenize(t->tgt_sw, tokens, k, text);
    free(tokens);
    return rc;
}
