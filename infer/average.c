// Checkpoint averaging (see average.h).
#include "infer/average.h"

#include "tensor/status.h"

#include <string.h>

// TS_OK when b's model has a's configuration, else TS_ERR_ARG naming the field.
static int same_config(const ts_translator *a, const ts_translator *b, const char *a_path, const char *b_path) {
    const ts_model_config *x = &a->model->cfg, *y = &b->model->cfg;
    struct { const char *name; long x, y; } fields[] = {
        {"attention", x->attn, y->attn},           {"decoder", x->decoder, y->decoder},
        {"bidirectional", x->bidirectional, y->bidirectional}, {"embedding", x->emb, y->emb},
        {"hidden", x->hidden, y->hidden},          {"source vocabulary", x->src_vocab, y->src_vocab},
        {"target vocabulary", x->tgt_vocab, y->tgt_vocab}, {"max_len", a->max_len, b->max_len},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].x != fields[i].y)
            return ts_fail(TS_ERR_ARG, "%s has %s %ld, %s has %ld: only checkpoints of one model average", b_path,
                           fields[i].name, fields[i].y, a_path, fields[i].x);
    return TS_OK;
}

// TS_OK when the vocabularies agree word for word, else TS_ERR_ARG naming
// the first differing word.
static int same_vocab(const ts_vocab *a, const ts_vocab *b, const char *side, const char *a_path,
                      const char *b_path) {
    for (int32_t id = 0; id < (int32_t)ts_vocab_size(a); id++) {
        const char *x = ts_vocab_word(a, id), *y = ts_vocab_word(b, id);
        if (strcmp(x, y))
            return ts_fail(TS_ERR_ARG, "%s: %s word %d is '%s' where %s has '%s': other vocabularies", b_path, side,
                           (int)id, y, a_path, x);
    }
    return TS_OK;
}

int ts_average_models(const char *const *paths, int n, ts_translator *out) {
    memset(out, 0, sizeof *out);
    if (n < 1) return ts_fail(TS_ERR_ARG, "average: no checkpoints");
    int rc = ts_translator_load(paths[0], out);
    ts_params *sum = rc ? NULL : &out->model->params;
    for (int k = 1; !rc && k < n; k++) {
        ts_translator other;
        if ((rc = ts_translator_load(paths[k], &other))) break;
        rc = same_config(out, &other, paths[0], paths[k]);
        if (!rc) rc = same_vocab(out->src_vocab, other.src_vocab, "source", paths[0], paths[k]);
        if (!rc) rc = same_vocab(out->tgt_vocab, other.tgt_vocab, "target", paths[0], paths[k]);
        for (int i = 0; !rc && i < sum->count; i++) {  // same configuration: same registry order and shapes
            ts_tensor *into = sum->items[i];
            const ts_tensor *from = other.model->params.items[i];
            for (size_t j = 0; j < into->size; j++) into->data[j] += from->data[j];
        }
        ts_translator_free(&other);
    }
    for (int i = 0; !rc && i < sum->count; i++) {
        ts_tensor *p = sum->items[i];
        for (size_t j = 0; j < p->size; j++) p->data[j] /= n;
    }
    if (rc) ts_translator_free(out);
    return rc;
}
