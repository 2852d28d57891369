// Every attention head of a translation, for a model whose row shows them (infer/heads.h).
#include "infer/heads.h"

#include "autograd/ops.h"
#include "infer/alignment.h"
#include "data/subword.h"
#include "tensor/tokens.h"

#include <stdlib.h>
#include <string.h>

const ts_head_view_info ts_head_views[TS_VIEW_COUNT] = {
    [TS_VIEW_CROSS] = {"cross", "cross-attention", 1, 0},
    [TS_VIEW_ENC] = {"enc", "encoder self-attention", 0, 0},
    [TS_VIEW_DEC] = {"dec", "decoder self-attention", 1, 1},
};

int ts_head_view_parse(const char *name) {
    for (int v = 0; v < TS_VIEW_COUNT; v++)
        if (!strcmp(name, ts_head_views[v].name)) return v;
    return -1;
}

int ts_heads_available(const ts_seq2seq *m) { return m->kind->every_head != NULL; }

int ts_heads_rows(const ts_heads *h, enum ts_head_view v) { return ts_head_views[v].rows_target ? h->T : h->S; }
int ts_heads_cols(const ts_heads *h, enum ts_head_view v) { return ts_head_views[v].cols_target ? h->T : h->S; }

const double *ts_heads_matrix(const ts_heads *h, enum ts_head_view v, int l, int k) {
    size_t cells = (size_t)ts_heads_rows(h, v) * (size_t)ts_heads_cols(h, v);
    if (k < 0) return h->mean[v] + (size_t)l * cells;
    return h->weights[v] + ((size_t)l * h->heads + (size_t)k) * cells;
}

void ts_heads_free(ts_heads *h) {
    free(h->weights[0]);  // one allocation holds every view and mean
    memset(h, 0, sizeof *h);
}

// The node's weights (1, H, rows, cols) into layer l of view v, and their head mean.
static void copy_layer(ts_heads *h, enum ts_head_view v, int l, const ts_tensor *node) {
    size_t cells = (size_t)ts_heads_rows(h, v) * (size_t)ts_heads_cols(h, v);
    double *w = h->weights[v] + (size_t)l * h->heads * cells;  // (1, H, rows, cols), float64 for any model
    ts_values_convert(w, TS_F64, ts_mha_weights(node), node->dtype, (size_t)h->heads * cells);
    double *mean = h->mean[v] + (size_t)l * cells;  // (rows, cols)
    for (size_t c = 0; c < cells; c++) {
        double sum = 0.0;
        for (int k = 0; k < h->heads; k++) sum += w[(size_t)k * cells + c];
        mean[c] = sum / h->heads;
    }
}

// *out sized for L layers of H heads over S source and T output positions:
// one allocation holds every view's weights and means. TS_OK or TS_ERR_NOMEM
// (*out zeroed).
static int heads_alloc(ts_heads *out, int L, int H, int S, int T) {
    *out = (ts_heads){.layers = L, .heads = H, .S = S, .T = T};
    size_t total = 0;
    for (int v = 0; v < TS_VIEW_COUNT; v++)
        total += (size_t)L * (H + 1) * ts_heads_rows(out, v) * ts_heads_cols(out, v);
    double *all = malloc(total * sizeof *all);
    if (!all) {
        memset(out, 0, sizeof *out);
        return ts_fail(TS_ERR_NOMEM, "heads: cannot allocate %zu weights", total);
    }
    for (int v = 0; v < TS_VIEW_COUNT; v++) {
        size_t cells = (size_t)L * ts_heads_rows(out, v) * ts_heads_cols(out, v);
        out->weights[v] = all;
        out->mean[v] = all + cells * H;
        all += cells * (H + 1);
    }
    return TS_OK;
}

int ts_heads_compute(const ts_seq2seq *m, ts_ctx *ctx, const int *src, int S, const int *tokens, int len,
                     ts_heads *out) {
    memset(out, 0, sizeof *out);
    if (!ts_heads_available(m))
        return ts_fail(TS_ERR_ARG, "heads: a %s model has no heads to list (its row has no every_head)", m->kind->name);
    if (S < 1 || len < 0) return ts_fail(TS_ERR_ARG, "heads: source length %d, output length %d", S, len);
    int L, H = ts_model_cross_heads(&m->cfg, &L), T = len + 1;  // every_head gives L layers of each view
    if (heads_alloc(out, L, H, S, T)) return TS_ERR_NOMEM;
    out->arch = m->kind->name;

    int grad_before = ts_set_grad_enabled(ctx, 0);
    ts_ctx_reset(ctx);
    ctx->dtype = m->cfg.dtype;  // the positions and masks are made in the model's type (a fresh ctx says float64)
    int *decoder_in = ts_arena_alloc(ctx->arena, (size_t)T * sizeof(int));  // (T): <sos> y_1 .. y_len
    int rc = TS_OK;
    if (!decoder_in) {
        ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
        rc = ctx->status;
    } else {
        decoder_in[0] = TS_SOS;
        memcpy(decoder_in + 1, tokens, (size_t)len * sizeof(int));
    }
    ts_tensor *cross[TS_MODEL_MAX_LAYERS], *enc_self[TS_MODEL_MAX_LAYERS], *dec_self[TS_MODEL_MAX_LAYERS];
    ts_batch_view source = {.B = 1, .S = S, .src = src, .src_len = &S};
    if (!rc) rc = m->kind->every_head(m, ctx, &source, decoder_in, T, cross, enc_self, dec_self);
    for (int l = 0; !rc && l < L; l++) {
        copy_layer(out, TS_VIEW_CROSS, l, cross[l]);
        copy_layer(out, TS_VIEW_ENC, l, enc_self[l]);
        copy_layer(out, TS_VIEW_DEC, l, dec_self[l]);
    }
    ts_ctx_reset(ctx);
    ts_set_grad_enabled(ctx, grad_before);
    if (rc) ts_heads_free(out);
    return rc;
}

int ts_heads_of_translation(const ts_translator *t, ts_ctx *ctx, const char *const *words, int S,
                            const ts_hypothesis *h, ts_heads *out) {
    memset(out, 0, sizeof *out);
    int *src = malloc((size_t)(S > 0 ? S : 1) * sizeof *src);  // (S) as the model read them
    if (!src) return ts_fail(TS_ERR_NOMEM, "cannot allocate the source ids");
    for (int k = 0; k < S; k++) src[k] = ts_vocab_id(t->src_vocab, words[k]);
    int rc = ts_heads_compute(t->model, ctx, src, S, h->tokens, h->len, out);
    free(src);
    return rc;
}

int ts_heads_merge(const ts_heads *h, const int32_t *src_group, int n_src, const int32_t *tgt_group, int n_tgt,
                   ts_heads *out) {
    if (heads_alloc(out, h->layers, h->heads, n_src, n_tgt)) return TS_ERR_NOMEM;
    out->arch = h->arch;
    // The decoder's input k is output k - 1 (input 0, <sos>, is a group of its own).
    int32_t *in_group = malloc((size_t)h->T * sizeof *in_group);  // (T)
    if (!in_group) {
        ts_heads_free(out);
        return ts_fail(TS_ERR_NOMEM, "heads: cannot allocate %d groups", h->T);
    }
    for (int k = 0; k < h->T; k++) in_group[k] = k ? tgt_group[k - 1] + 1 : 0;
    for (int v = 0; v < TS_VIEW_COUNT; v++) {
        const ts_head_view_info *info = &ts_head_views[v];
        const int32_t *rows = info->rows_target ? tgt_group : src_group, *cols = info->cols_target ? in_group : src_group;
        // Every head's matrix, then every layer's mean: (L * (H + 1)) matrices, contiguous.
        for (int l = 0; l < h->layers; l++)
            for (int k = -1; k < h->heads; k++)
                ts_attn_merge(ts_heads_matrix(h, v, l, k), (size_t)ts_heads_rows(h, v), (size_t)ts_heads_cols(h, v), rows,
                              (size_t)ts_heads_rows(out, v), cols, (size_t)ts_heads_cols(out, v),
                              (double *)ts_heads_matrix(out, v, l, k));
    }
    free(in_group);
    return TS_OK;
}

void ts_word_attention_free(ts_word_attention *w) {
    free(w->weights);
    free(w->target);
    free(w->source);
    for (int i = 0; i < w->n_words; i++) free(w->words[i]);
    free(w->words);
    memset(w, 0, sizeof *w);
}

// The groups of n pieces (ts_subword_words) with each group's word decoded
// by sw into w->words (appended) and labels; the last `keep` pieces (the
// <eos> row) stay groups and labels of their own. Returns the groups'
// count, or -1 on failure (message set).
static int group_pieces(ts_word_attention *w, const ts_subword *sw, const char *const *pieces, int n, int keep,
                        int32_t *group, const char **labels) {
    int words = (int)ts_subword_words(pieces, (size_t)(n - keep), group);
    for (int k = 0, first = 0; k < words; k++) {
        int end = first;
        while (end < n - keep && group[end] == k) end++;
        if (ts_subword_detokenize(sw, pieces + first, (size_t)(end - first), &w->words[w->n_words])) return -1;
        labels[k] = w->words[w->n_words++];
        first = end;
    }
    for (int k = 0; k < keep; k++) {
        group[n - keep + k] = words + k;
        labels[words + k] = pieces[n - keep + k];
    }
    return words + keep;
}

int ts_attention_words(const ts_translator *t, const double *weights, int T, int S, const ts_attention_labels *l,
                       ts_heads *heads, ts_word_attention *out) {
    memset(out, 0, sizeof *out);
    int32_t *rows = malloc((size_t)T * sizeof *rows), *cols = malloc((size_t)S * sizeof *cols);  // (T), (S) groups
    out->target = malloc((size_t)T * sizeof *out->target);
    out->source = malloc((size_t)S * sizeof *out->source);
    out->words = malloc((size_t)(S + T) * sizeof *out->words);
    int rc = rows && cols && out->target && out->source && out->words ? TS_OK : ts_fail(TS_ERR_NOMEM, "out of memory");
    int n_rows = rc ? -1 : group_pieces(out, t->tgt_sw, l->target, T, 1, rows, out->target);
    int n_cols = n_rows < 0 ? -1 : group_pieces(out, t->src_sw, l->source, S, 0, cols, out->source);
    if (!rc && n_cols < 0) rc = TS_ERR_NOMEM;  // the decoder's message is set
    if (!rc && !(out->weights = malloc((size_t)n_rows * (size_t)n_cols * sizeof *out->weights)))
        rc = ts_fail(TS_ERR_NOMEM, "out of memory");
    ts_heads merged = {0};
    if (!rc && heads->layers) rc = ts_heads_merge(heads, cols, n_cols, rows, n_rows, &merged);
    if (!rc) {
        ts_attn_merge(weights, (size_t)T, (size_t)S, rows, (size_t)n_rows, cols, (size_t)n_cols, out->weights);
        if (heads->layers) {
            ts_heads_free(heads);
            *heads = merged;
        }
        out->T = n_rows;
        out->S = n_cols;
    }
    free(rows);
    free(cols);
    if (rc) ts_word_attention_free(out);
    return rc;
}

ts_json_heads ts_heads_json(const ts_heads *h, ts_json_head_view *views) {
    static const char *const side[2] = {"source", "target"};
    for (int view = 0; view < TS_VIEW_COUNT; view++) {
        const ts_head_view_info *info = &ts_head_views[view];
        views[view] = (ts_json_head_view){info->name, side[info->rows_target],
                                          info->cols_target ? "target_in" : "source", (size_t)ts_heads_rows(h, view),
                                          (size_t)ts_heads_cols(h, view), h->weights[view], h->mean[view]};
    }
    return (ts_json_heads){.layers = (size_t)h->layers, .heads = (size_t)h->heads, .views = views, .n_views = TS_VIEW_COUNT};
}

int ts_heads_rollout(const ts_heads *h, enum ts_head_view v, double *out) {
    int R = ts_heads_rows(h, v);
    if (ts_head_views[v].rows_target != ts_head_views[v].cols_target || R != ts_heads_cols(h, v))
        return ts_fail(TS_ERR_ARG, "rollout: the %s has no square matrices", ts_head_views[v].title);
    size_t cells = (size_t)R * R;
    for (int l = 0; l < h->layers; l++) {
        const double *mean = ts_heads_matrix(h, v, l, -1);  // (R, R)
        double *rolled = out + (size_t)l * cells;           // (R, R)
        for (int i = 0; i < R; i++)
            for (int j = 0; j < R; j++) {
                if (l == 0) {
                    rolled[(size_t)i * R + j] = 0.5 * (mean[(size_t)i * R + j] + (i == j));
                    continue;
                }
                // (A'_l out_(l-1))[i, j] = sum_k A'_l[i, k] out_(l-1)[k, j]
                const double *before = rolled - cells;
                double sum = 0.0;
                for (int k = 0; k < R; k++) sum += 0.5 * (mean[(size_t)i * R + k] + (i == k)) * before[(size_t)k * R + j];
                rolled[(size_t)i * R + j] = sum;
            }
    }
    return TS_OK;
}
