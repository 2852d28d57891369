// The checkpoint container in memory: its entries' growth and validation,
// vocabularies, tensors and blobs, with their setters and getters
// (ckpt/ckpt.h). Its header entries: header.c; saving: write.c; loading:
// read.c.
#include "ckpt/container.h"

#include "tensor/status.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

// ---- growth and copies (ckpt/container.h) -------------------------------------------

// Makes room for one more element in a growing array.
int ts_ckpt_reserve(void **items, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return TS_OK;
    size_t new_cap = *cap ? *cap * 2 : 8;
    if (new_cap > SIZE_MAX / elem) return ts_fail(TS_ERR_NOMEM, "checkpoint: array too large");
    void *grown = realloc(*items, new_cap * elem);
    if (!grown) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    *items = grown;
    *cap = new_cap;
    return TS_OK;
}

char *ts_ckpt_dup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

// ---- validation shared by the setters and the loader -----------------------------

// Header keys and vocabulary names: 1..255 bytes of [A-Za-z0-9_.-].
int ts_ckpt_key_ok(const char *s, size_t n) {
    if (n == 0 || n > TS_CKPT_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
        if (!ok) return 0;
    }
    return 1;
}

// Tensor and blob names: 1..255 printable ASCII bytes, no space, no '='.
int ts_ckpt_name_ok(const char *s, size_t n) {
    if (n == 0 || n > TS_CKPT_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e || c == '=') return 0;
    }
    return 1;
}

// Header values: at most TS_CKPT_MAX_VALUE bytes, no NUL (implied for C
// strings), no newline (it ends the line in the file).
int ts_ckpt_value_ok(const char *s, size_t n) {
    return n <= TS_CKPT_MAX_VALUE && !memchr(s, '\n', n) && !memchr(s, '\0', n);
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
static int utf8_ok(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned cp, min;
        if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07, min = 0x10000;
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}

// Tokens: valid UTF-8, at most TS_CKPT_MAX_TOKEN bytes, no NUL, no newline.
int ts_ckpt_token_ok(const char *s, size_t n) {
    return n <= TS_CKPT_MAX_TOKEN && !memchr(s, '\n', n) && !memchr(s, '\0', n) &&
           utf8_ok((const unsigned char *)s, n);
}

// ---- the container ------------------------------------------------------------------

void ts_ckpt_release_bytes(const unsigned char *bytes, size_t len, int mapped) {
    if (mapped) munmap((void *)bytes, len);
    else free((void *)bytes);
}

void ts_ckpt_release_storage(ts_ckpt *ck) {
    if (ck->storage) ts_ckpt_release_bytes(ck->storage, ck->storage_len, ck->storage_mapped);
    ck->storage = NULL;
}

ts_ckpt *ts_ckpt_new(void) {
    ts_ckpt *ck = calloc(1, sizeof *ck);
    if (!ck) ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    return ck;
}

void ts_ckpt_free(ts_ckpt *ck) {
    if (!ck) return;
    free(ck->path);
    for (size_t i = 0; i < ck->n_entries; i++) {
        free(ck->entries[i].key);
        free(ck->entries[i].value);
    }
    free(ck->entries);
    for (size_t i = 0; i < ck->n_vocabs; i++) {
        free(ck->vocabs[i].name);
        free(ck->vocabs[i].tokens);
        free(ck->vocabs[i].text);
    }
    free(ck->vocabs);
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < ck->n_tensors[s]; i++) {
            free(ck->tensors[s][i].name);
            free(ck->tensors[s][i].data);
        }
        free(ck->tensors[s]);
    }
    for (size_t i = 0; i < ck->n_blobs; i++) {
        free(ck->blobs[i].name);
        free(ck->blobs[i].bytes);
    }
    free(ck->blobs);
    ts_ckpt_release_storage(ck);
    free(ck);
}

// ---- vocabularies ------------------------------------------------------------------

const ts_ckpt_vocab *ts_ckpt_find_vocab(const ts_ckpt *ck, const char *name) {
    for (size_t i = 0; i < ck->n_vocabs; i++)
        if (strcmp(ck->vocabs[i].name, name) == 0) return &ck->vocabs[i].pub;
    return NULL;
}

size_t ts_ckpt_vocab_count(const ts_ckpt *ck) { return ck->n_vocabs; }

const ts_ckpt_vocab *ts_ckpt_vocab_at(const ts_ckpt *ck, size_t i) {
    return &ck->vocabs[i].pub;
}

// Takes ownership of name, tokens and text (freed on failure too).
int ts_ckpt_push_vocab(ts_ckpt *ck, char *name, char **tokens, char *text, size_t count) {
    int rc = ts_ckpt_reserve((void **)&ck->vocabs, &ck->cap_vocabs, ck->n_vocabs, sizeof *ck->vocabs);
    if (rc != TS_OK) {
        free(name);
        free(tokens);
        free(text);
        return rc;
    }
    struct vocab *v = &ck->vocabs[ck->n_vocabs++];
    *v = (struct vocab){.name = name, .tokens = tokens, .text = text};
    v->pub = (ts_ckpt_vocab){name, count, (const char *const *)tokens};
    return TS_OK;
}

int ts_ckpt_add_vocab(ts_ckpt *ck, const char *name, const char *const *tokens, size_t n) {
    if (!ck || !name || (!tokens && n))
        return ts_fail(TS_ERR_ARG, "ts_ckpt_add_vocab: NULL argument");
    if (!ts_ckpt_key_ok(name, strlen(name)))
        return ts_fail(TS_ERR_ARG, "checkpoint vocabulary name '%.64s' is not 1..%d bytes of "
                       "[A-Za-z0-9_.-]", name, TS_CKPT_MAX_NAME);
    if (ts_ckpt_find_vocab(ck, name))
        return ts_fail(TS_ERR_ARG, "checkpoint already has a vocabulary '%s'", name);
    if (ck->n_vocabs >= TS_CKPT_MAX_VOCABS)
        return ts_fail(TS_ERR_ARG, "checkpoint: more than %d vocabularies", TS_CKPT_MAX_VOCABS);
    if (n > TS_CKPT_MAX_TOKENS)
        return ts_fail(TS_ERR_ARG, "checkpoint vocabulary '%s': %zu tokens, at most %u",
                       name, n, TS_CKPT_MAX_TOKENS);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(tokens[i]);
        if (!ts_ckpt_token_ok(tokens[i], len))
            return ts_fail(TS_ERR_ARG, "checkpoint vocabulary '%s': token %zu is not valid "
                           "UTF-8 of at most %d bytes without newline", name, i,
                           TS_CKPT_MAX_TOKEN);
        total += len + 1; // bounded: n <= 2^24 tokens of <= 1025 bytes
    }
    char *name_copy = ts_ckpt_dup(name, strlen(name));
    char **ptrs = malloc((n ? n : 1) * sizeof *ptrs);
    char *text = malloc(total ? total : 1);
    if (!name_copy || !ptrs || !text) {
        free(name_copy);
        free(ptrs);
        free(text);
        return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    }
    char *p = text;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(tokens[i]) + 1;
        memcpy(p, tokens[i], len);
        ptrs[i] = p;
        p += len;
    }
    return ts_ckpt_push_vocab(ck, name_copy, ptrs, text, n);
}

// ---- tensors -----------------------------------------------------------------------

static int section_ok(enum ts_ckpt_section s) { return s == TS_CKPT_PARAMS || s == TS_CKPT_OPTIM; }

const char *ts_ckpt_section_noun(enum ts_ckpt_section s) {
    return s == TS_CKPT_PARAMS ? "parameter" : "optimizer";
}

size_t ts_ckpt_tensor_count(const ts_ckpt *ck, enum ts_ckpt_section section) {
    return section_ok(section) ? ck->n_tensors[section] : 0;
}

const ts_ckpt_tensor *ts_ckpt_tensor_at(const ts_ckpt *ck, enum ts_ckpt_section section,
                                        size_t i) {
    return &ck->tensors[section][i].pub;
}

const ts_ckpt_tensor *ts_ckpt_find_tensor(const ts_ckpt *ck, enum ts_ckpt_section section,
                                          const char *name) {
    if (!section_ok(section)) return NULL;
    for (size_t i = 0; i < ck->n_tensors[section]; i++)
        if (strcmp(ck->tensors[section][i].name, name) == 0) return &ck->tensors[section][i].pub;
    return NULL;
}

// Product of shape[0..ndim) into *size; 0 on overflow past `limit`.
int ts_ckpt_shape_size(int ndim, const size_t *shape, size_t limit, size_t *size) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] != 0 && n > limit / shape[d]) return 0;
        n *= shape[d];
    }
    *size = n;
    return n <= limit;
}

static void shape_text(int ndim, const size_t *shape, char *text, size_t cap) {
    size_t used = (size_t)snprintf(text, cap, "[");
    for (int d = 0; d < ndim && used < cap; d++)
        used += (size_t)snprintf(text + used, cap - used, d ? ",%zu" : "%zu", shape[d]);
    if (used < cap) snprintf(text + used, cap - used, "]");
}

// Takes ownership of name and data (freed on failure too).
int ts_ckpt_push_tensor(ts_ckpt *ck, enum ts_ckpt_section section, char *name, int dtype, int ndim,
                        const size_t *shape, size_t size, void *data) {
    int rc = ts_ckpt_reserve((void **)&ck->tensors[section], &ck->cap_tensors[section],
                             ck->n_tensors[section], sizeof *ck->tensors[section]);
    if (rc != TS_OK) {
        free(name);
        free(data);
        return rc;
    }
    struct tensor *t = &ck->tensors[section][ck->n_tensors[section]++];
    *t = (struct tensor){.name = name, .data = data};
    t->pub = (ts_ckpt_tensor){.name = name, .dtype = dtype, .ndim = ndim, .size = size, .raw = data};
    for (int d = 0; d < TS_CKPT_MAX_NDIM; d++) t->pub.shape[d] = d < ndim ? shape[d] : 1;
    return TS_OK;
}

// The four setters: a copy (copy) or a view (!copy) of values of `dtype`.
static int add_tensor(ts_ckpt *ck, enum ts_ckpt_section section, const char *name, int dtype, int ndim,
                      const size_t *shape, const void *data, int copy) {
    if (!ck || !name || (ndim > 0 && !shape))
        return ts_fail(TS_ERR_ARG, "ts_ckpt_add_tensor: NULL argument");
    if (!section_ok(section))
        return ts_fail(TS_ERR_ARG, "ts_ckpt_add_tensor: bad section %d", (int)section);
    if (dtype < 0 || dtype >= TS_DTYPE_COUNT)
        return ts_fail(TS_ERR_ARG, "ts_ckpt_add_tensor: bad dtype %d", dtype);
    if (!ts_ckpt_name_ok(name, strlen(name)))
        return ts_fail(TS_ERR_ARG, "checkpoint tensor name '%.64s' is not 1..%d printable "
                       "bytes without space or '='", name, TS_CKPT_MAX_NAME);
    if (ndim < 0 || ndim > TS_CKPT_MAX_NDIM)
        return ts_fail(TS_ERR_ARG, "checkpoint tensor '%s': ndim %d not in 0..%d", name, ndim,
                       TS_CKPT_MAX_NDIM);
    if (ts_ckpt_find_tensor(ck, section, name))
        return ts_fail(TS_ERR_ARG, "checkpoint already has a %s tensor '%s'",
                       ts_ckpt_section_noun(section), name);
    if (ck->n_tensors[section] >= TS_CKPT_MAX_TENSORS)
        return ts_fail(TS_ERR_ARG, "checkpoint: more than %d %s tensors", TS_CKPT_MAX_TENSORS,
                       ts_ckpt_section_noun(section));
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0)
            return ts_fail(TS_ERR_ARG, "checkpoint tensor '%s': dimension %d is 0", name, d);
    size_t size, width = ts_dtype_size(dtype);
    if (!ts_ckpt_shape_size(ndim, shape, SIZE_MAX / width, &size))
        return ts_fail(TS_ERR_ARG, "checkpoint tensor '%s': shape too large", name);
    if (!data) return ts_fail(TS_ERR_ARG, "checkpoint tensor '%s': NULL data", name);
    char *name_copy = ts_ckpt_dup(name, strlen(name));
    void *values = copy ? malloc(size * width) : NULL;
    if (!name_copy || (copy && !values)) {
        free(name_copy);
        free(values);
        return ts_fail(TS_ERR_NOMEM, "checkpoint tensor '%s': out of memory", name);
    }
    if (!copy) {
        int rc = ts_ckpt_push_tensor(ck, section, name_copy, dtype, ndim, shape, size, NULL);
        if (rc) return rc;
        ck->tensors[section][ck->n_tensors[section] - 1].pub.raw = data;  // read from, never freed
        return TS_OK;
    }
    memcpy(values, data, size * width);
    return ts_ckpt_push_tensor(ck, section, name_copy, dtype, ndim, shape, size, values);
}

int ts_ckpt_add_tensor(ts_ckpt *ck, enum ts_ckpt_section section, const char *name,
                       int ndim, const size_t *shape, const double *data) {
    return add_tensor(ck, section, name, TS_F64, ndim, shape, data, 1);
}

int ts_ckpt_add_tensor_view(ts_ckpt *ck, enum ts_ckpt_section section, const char *name,
                            int ndim, const size_t *shape, const double *data) {
    return add_tensor(ck, section, name, TS_F64, ndim, shape, data, 0);
}

int ts_ckpt_add_tensor_dtype(ts_ckpt *ck, enum ts_ckpt_section section, const char *name, int dtype,
                             int ndim, const size_t *shape, const void *data) {
    return add_tensor(ck, section, name, dtype, ndim, shape, data, 1);
}

int ts_ckpt_add_tensor_view_dtype(ts_ckpt *ck, enum ts_ckpt_section section, const char *name, int dtype,
                                  int ndim, const size_t *shape, const void *data) {
    return add_tensor(ck, section, name, dtype, ndim, shape, data, 0);
}

void *ts_ckpt_take_tensor_data(ts_ckpt *ck, enum ts_ckpt_section section, const char *name) {
    if (!section_ok(section) || !name) return NULL;
    for (size_t i = 0; i < ck->n_tensors[section]; i++) {
        struct tensor *t = &ck->tensors[section][i];
        if (strcmp(t->name, name)) continue;
        if (!t->data) return NULL;  // a view, or taken already
        void *data = t->data;
        t->data = NULL;
        t->pub.raw = NULL;
        return data;
    }
    return NULL;
}

int ts_ckpt_expect_tensor(const ts_ckpt *ck, enum ts_ckpt_section section, const char *name,
                          int ndim, const size_t *shape, const ts_ckpt_tensor **out) {
    const ts_ckpt_tensor *t = ts_ckpt_find_tensor(ck, section, name);
    if (!t)
        return ts_fail(TS_ERR_FORMAT, FROM_FMT "has no %s tensor '%.64s'", FROM(ck),
                       section_ok(section) ? ts_ckpt_section_noun(section) : "such", name);
    int same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char got[96], want[96];
        shape_text(t->ndim, t->shape, got, sizeof got);
        shape_text(ndim, shape, want, sizeof want);
        return ts_fail(TS_ERR_SHAPE, FROM_FMT "%s tensor '%.64s' has shape %s, expected %s",
                       FROM(ck), ts_ckpt_section_noun(section), name, got, want);
    }
    if (out) *out = t;
    return TS_OK;
}

// ---- blobs ---------------------------------------------------------------------------

size_t ts_ckpt_blob_count(const ts_ckpt *ck) { return ck->n_blobs; }

void ts_ckpt_blob_at(const ts_ckpt *ck, size_t i, const char **name, const void **bytes,
                     size_t *n) {
    if (name) *name = ck->blobs[i].name;
    if (bytes) *bytes = ck->blobs[i].bytes;
    if (n) *n = ck->blobs[i].n;
}

struct blob *ts_ckpt_blob_lookup(const ts_ckpt *ck, const char *name) {
    for (size_t i = 0; i < ck->n_blobs; i++)
        if (strcmp(ck->blobs[i].name, name) == 0) return &ck->blobs[i];
    return NULL;
}

int ts_ckpt_get_blob(const ts_ckpt *ck, const char *name, const void **bytes, size_t *n) {
    const struct blob *b = ts_ckpt_blob_lookup(ck, name);
    if (!b) return ts_fail(TS_ERR_FORMAT, FROM_FMT "has no blob '%.64s'", FROM(ck), name);
    *bytes = b->bytes;
    *n = b->n;
    return TS_OK;
}

int ts_ckpt_set_blob(ts_ckpt *ck, const char *name, const void *bytes, size_t n) {
    if (!ck || !name || (!bytes && n))
        return ts_fail(TS_ERR_ARG, "ts_ckpt_set_blob: NULL argument");
    if (!ts_ckpt_name_ok(name, strlen(name)))
        return ts_fail(TS_ERR_ARG, "checkpoint blob name '%.64s' is not 1..%d printable "
                       "bytes without space or '='", name, TS_CKPT_MAX_NAME);
    unsigned char *copy = malloc(n ? n : 1);
    if (!copy) return ts_fail(TS_ERR_NOMEM, "checkpoint blob '%s': out of memory", name);
    if (n) memcpy(copy, bytes, n);
    struct blob *b = ts_ckpt_blob_lookup(ck, name);
    if (b) {
        free(b->bytes);
        b->bytes = copy;
        b->n = n;
        return TS_OK;
    }
    if (ck->n_blobs >= TS_CKPT_MAX_BLOBS) {
        free(copy);
        return ts_fail(TS_ERR_ARG, "checkpoint: more than %d blobs", TS_CKPT_MAX_BLOBS);
    }
    char *name_copy = ts_ckpt_dup(name, strlen(name));
    int rc = name_copy ? ts_ckpt_reserve((void **)&ck->blobs, &ck->cap_blobs, ck->n_blobs,
                                         sizeof *ck->blobs)
                       : ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    if (rc != TS_OK) {
        free(name_copy);
        free(copy);
        return rc;
    }
    ck->blobs[ck->n_blobs++] = (struct blob){name_copy, copy, n};
    return TS_OK;
}
