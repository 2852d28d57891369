// Translating text (see translate.h). In the batch: B = sentences, S = the
// longest source (tokens).
#include "infer/translate.h"

#include "data/normalize.h"
#include "tensor/tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ts_translate_text(ts_translator *t, ts_ctx *ctx, const char *text, int beam, ts_hypothesis *out, char **source,
                      int *n_source) {
    memset(out, 0, sizeof *out);
    if (source) *source = NULL;
    char *tokens;
    size_t n;
    int rc = ts_normalize(text, strlen(text), &tokens, &n);
    if (rc) return rc;
    if (n == 0) {
        free(tokens);
        return ts_fail(TS_ERR_FORMAT, "nothing to translate: the sentence is empty after normalisation");
    }
    if (n > TS_MAX_SENTENCE_TOKENS) {
        free(tokens);
        return ts_fail(TS_ERR_FORMAT, "the sentence has %zu tokens, more than the %d tinyseq translates", n,
                       TS_MAX_SENTENCE_TOKENS);
    }
    // Split the space-joined tokens in place and map them to ids.
    char **words = malloc(n * sizeof *words);
    int32_t *ids = malloc(n * sizeof *ids);
    if (!words || !ids) {
        free(words);
        free(ids);
        free(tokens);
        return ts_fail(TS_ERR_NOMEM, "cannot allocate %zu tokens", n);
    }
    char *copy = strdup(tokens), *save = NULL;
    size_t k = 0;
    for (char *w = copy ? strtok_r(copy, " ", &save) : NULL; w && k < n; w = strtok_r(NULL, " ", &save)) words[k++] = w;
    ts_vocab_encode(t->src_vocab, words, k, ids);
    ts_ctx_reset(ctx);
    // Outputs get room to be longer than inputs, as translations often are.
    int max_len = ts_output_limit((int)k);
    rc = copy ? ts_seq2seq_beam(t->model, ctx, ids, (int)k, beam, max_len, &t->length_penalty, out) : ts_fail(TS_ERR_NOMEM, "out of memory");
    ts_ctx_reset(ctx);
    free(copy);
    free(words);
    free(ids);
    if (n_source) *n_source = (int)k;
    if (source && !rc) *source = tokens;
    else free(tokens);
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
    int B = n, S = 0, rc = TS_OK;
    int32_t **ids = calloc((size_t)B, sizeof *ids);  // (B) rows of (len[b])
    int *len = calloc((size_t)B, sizeof *len);       // (B)
    int *limit = calloc((size_t)B, sizeof *limit);   // (B) each sentence's output limit
    int *src = NULL;                                 // (S, B) time-major, TS_PAD past len[b]
    if (!ids || !len || !limit) {
        rc = ts_fail(TS_ERR_NOMEM, "cannot allocate a batch of %d sentences", B);
        goto done;
    }
    for (int b = 0; b < B && !rc; b++) {
        char *tokens;
        size_t k;
        if ((rc = ts_normalize(texts[b], strlen(texts[b]), &tokens, &k))) {
            rc = ts_fail(rc, "sentence %d of the batch: %s", b + 1, ts_last_error());
            break;
        }
        char **words = malloc((k ? k : 1) * sizeof *words);
        ids[b] = malloc((k ? k : 1) * sizeof *ids[b]);
        if (!words || !ids[b]) rc = ts_fail(TS_ERR_NOMEM, "cannot allocate %zu tokens", k);
        else if (k == 0) rc = ts_fail(TS_ERR_FORMAT, "sentence %d of the batch is empty after normalisation", b + 1);
        size_t m = 0;
        for (char *w = rc ? NULL : strtok(tokens, " "); w && m < k; w = strtok(NULL, " ")) words[m++] = w;
        if (!rc) ts_vocab_encode(t->src_vocab, words, m, ids[b]);
        len[b] = (int)m;
        limit[b] = ts_output_limit(len[b]);
        if (len[b] > S) S = len[b];
        free(words);
        free(tokens);
    }
    if (!rc && !(src = malloc((size_t)S * (size_t)B * sizeof *src)))
        rc = ts_fail(TS_ERR_NOMEM, "cannot allocate a batch of %d x %d tokens", S, B);
    if (rc) goto done;
    for (int s = 0; s < S; s++)
        for (int b = 0; b < B; b++) src[s * B + b] = s < len[b] ? ids[b][s] : TS_PAD;
    ts_batch_view view = {.B = B, .S = S, .src = src, .src_len = len};
    ts_ctx_reset(ctx);
    // Greedy decodes to the batch's limit and cuts each sentence to its own
    // after; beam search keeps each to its own as it searches.
    rc = beam == 1 ? ts_seq2seq_greedy(t->model, ctx, &view, ts_output_limit(S), out)
                   : ts_seq2seq_beam_batch(t->model, ctx, &view, beam, limit, &t->length_penalty, out);
    ts_ctx_reset(ctx);
    if (rc) {
        memset(out, 0, (size_t)B * sizeof *out);
        goto done;
    }
    // Each sentence's own limit, as one-at-a-time decoding has it; no
    // attention (greedy's rows have the batch's S columns, not the sentence's).
    for (int b = 0; b < B; b++) {
        if (out[b].len > limit[b]) out[b].len = limit[b], out[b].ended = 0;
        free(out[b].attention);
        out[b].attention = NULL;
        out[b].S = len[b];
    }
done:
    for (int b = 0; ids && b < B; b++) free(ids[b]);
    free(ids);
    free(len);
    free(limit);
    free(src);
    return rc;
}
