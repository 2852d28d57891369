// The .npz container in memory: named float, byte and string arrays (npz.h).
// Writing: npz_write.c; reading: npz_read.c. Layout: docs/interop.md.
#include "interop/npz_internal.h"

#include "tensor/status.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// ---- the container --------------------------------------------------------------

ts_npz *ts_npz_new(void) {
    ts_npz *z = calloc(1, sizeof *z);
    if (!z) ts_fail(TS_ERR_NOMEM, "npz: out of memory");
    return z;
}

static void entry_free(struct entry *e) {
    for (size_t i = 0; e->strings && i < e->a.size; i++) free(e->strings[i]);
    free(e->strings);
    free(e->values);
    free(e->bytes);
    free(e->name);
}

void ts_npz_free(ts_npz *z) {
    if (!z) return;
    for (size_t i = 0; i < z->count; i++) entry_free(&z->items[i]);
    free(z->items);
    free(z);
}

size_t ts_npz_count(const ts_npz *z) { return z->count; }

const ts_npz_array *ts_npz_at(const ts_npz *z, size_t i) { return i < z->count ? &z->items[i].a : NULL; }

const ts_npz_array *ts_npz_find(const ts_npz *z, const char *name) {
    for (size_t i = 0; i < z->count; i++)
        if (!strcmp(z->items[i].name, name)) return &z->items[i].a;
    return NULL;
}

// 1 when name[0..n) is a valid array name (see ts_npz_add_f8).
int ts_npz_name_ok(const char *name, size_t n) {
    if (n == 0 || n > TS_NPZ_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c <= ' ' || c > '~' || c == '/' || c == '\\') return 0;
    }
    return 1;
}

// Product of shape[0..ndim) in *size; 0 on a zero dimension or overflow of
// `limit` (the caller's bound on the element count).
int ts_npz_shape_size(int ndim, const size_t *shape, size_t limit, size_t *size) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0 || shape[i] > limit || n > limit / shape[i]) return 0;
        n *= shape[i];
    }
    *size = n;
    return 1;
}

// Appends an entry with the name and shape checked; values/strings are the
// caller's to fill. Returns the entry or NULL (message set).
static struct entry *append(ts_npz *z, const char *name, enum ts_npz_dtype dtype, int ndim, const size_t *shape,
                            int *rc) {
    *rc = TS_ERR_ARG;
    size_t n = name ? strlen(name) : 0;
    if (!ts_npz_name_ok(name ? name : "", n)) {
        ts_fail(TS_ERR_ARG, "npz: bad array name '%s' (1..%d printable ASCII bytes, no space, '/' or '\\')",
                name ? name : "(null)", TS_NPZ_MAX_NAME);
        return NULL;
    }
    if (ts_npz_find(z, name)) {
        ts_fail(TS_ERR_ARG, "npz: duplicate array name '%s'", name);
        return NULL;
    }
    size_t size;
    if (ndim < 0 || ndim > TS_NPZ_MAX_NDIM || (ndim > 0 && !shape) ||
        !ts_npz_shape_size(ndim, shape, TS_NPZ_MAX_ENTRY_BYTES / 8, &size)) {
        ts_fail(TS_ERR_ARG, "npz: array '%s': bad shape (0..%d dimensions, each at least 1)", name, TS_NPZ_MAX_NDIM);
        return NULL;
    }
    if (z->count == TS_NPZ_MAX_ENTRIES) {
        ts_fail(TS_ERR_ARG, "npz: more than %d arrays", TS_NPZ_MAX_ENTRIES);
        return NULL;
    }
    *rc = TS_ERR_NOMEM;
    if (z->count == z->cap) {
        size_t cap = z->cap ? 2 * z->cap : 16;
        struct entry *items = realloc(z->items, cap * sizeof *items);
        if (!items) {
            ts_fail(TS_ERR_NOMEM, "npz: out of memory");
            return NULL;
        }
        z->items = items;
        z->cap = cap;
    }
    struct entry *e = &z->items[z->count];
    memset(e, 0, sizeof *e);
    if (!(e->name = strdup(name))) {
        ts_fail(TS_ERR_NOMEM, "npz: out of memory");
        return NULL;
    }
    e->a.name = e->name;
    e->a.dtype = dtype;
    e->a.ndim = ndim;
    for (int i = 0; i < TS_NPZ_MAX_NDIM; i++) e->a.shape[i] = i < ndim ? shape[i] : 1;
    e->a.size = size;
    *rc = TS_OK;
    return e;
}

// Appends a float array of `dtype` (TS_NPZ_F8: values are double, TS_NPZ_F4:
// float), held as float64 either way.
static int add_floats(ts_npz *z, const char *name, enum ts_npz_dtype dtype, int ndim, const size_t *shape,
                      const void *values) {
    int rc;
    struct entry *e = append(z, name, dtype, ndim, shape, &rc);
    if (!e) return rc;
    if (!(e->values = malloc(e->a.size * sizeof *e->values))) {
        entry_free(e);
        return ts_fail(TS_ERR_NOMEM, "npz: array '%s': out of memory", name);
    }
    for (size_t i = 0; i < e->a.size; i++)
        e->values[i] = dtype == TS_NPZ_F4 ? ((const float *)values)[i] : ((const double *)values)[i];
    e->a.values = e->values;
    z->count++;
    return TS_OK;
}

int ts_npz_add_f8(ts_npz *z, const char *name, int ndim, const size_t *shape, const double *values) {
    return add_floats(z, name, TS_NPZ_F8, ndim, shape, values);
}

int ts_npz_add_f4(ts_npz *z, const char *name, int ndim, const size_t *shape, const float *values) {
    return add_floats(z, name, TS_NPZ_F4, ndim, shape, values);
}

int ts_npz_add_u1(ts_npz *z, const char *name, int ndim, const size_t *shape, const uint8_t *bytes) {
    int rc;
    struct entry *e = append(z, name, TS_NPZ_U1, ndim, shape, &rc);
    if (!e) return rc;
    if (!(e->bytes = malloc(e->a.size))) {
        entry_free(e);
        return ts_fail(TS_ERR_NOMEM, "npz: array '%s': out of memory", name);
    }
    memcpy(e->bytes, bytes, e->a.size);
    e->a.bytes = e->bytes;
    z->count++;
    return TS_OK;
}

// Decodes one UTF-8 code point at s[0..n); returns its length, 0 if invalid
// (overlong, surrogate, above U+10FFFF, truncated).
size_t ts_npz_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (len == 0 || len > n || s[0] > 0xf4) return 0;
    uint32_t c = s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return len;
}

// Code points in the NUL-terminated UTF-8 string s, or -1 if invalid.
long ts_npz_utf8_count(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    long count = 0;
    for (size_t i = 0; i < n; count++) {
        uint32_t cp;
        size_t k = ts_npz_utf8_decode(p + i, n - i, &cp);
        if (k == 0) return -1;
        i += k;
    }
    return count;
}

int ts_npz_add_strings(ts_npz *z, const char *name, int ndim, const size_t *shape, const char *const *strings) {
    int rc;
    struct entry *e = append(z, name, TS_NPZ_STR, ndim, shape, &rc);
    if (!e) return rc;
    if (e->a.size > TS_NPZ_MAX_STRINGS) {
        entry_free(e);
        return ts_fail(TS_ERR_ARG, "npz: array '%s': more than %u strings", name, TS_NPZ_MAX_STRINGS);
    }
    for (size_t i = 0; i < e->a.size; i++) {
        long n = ts_npz_utf8_count(strings[i]);
        if (n < 0 || n > TS_NPZ_MAX_WIDTH) {
            entry_free(e);
            return ts_fail(TS_ERR_ARG, "npz: array '%s': string %zu is %s", name, i,
                           n < 0 ? "not valid UTF-8" : "longer than the limit");
        }
    }
    if (!(e->strings = calloc(e->a.size, sizeof *e->strings))) {
        entry_free(e);
        return ts_fail(TS_ERR_NOMEM, "npz: array '%s': out of memory", name);
    }
    for (size_t i = 0; i < e->a.size; i++)
        if (!(e->strings[i] = strdup(strings[i]))) {
            entry_free(e);
            return ts_fail(TS_ERR_NOMEM, "npz: array '%s': out of memory", name);
        }
    e->a.strings = (const char *const *)e->strings;
    z->count++;
    return TS_OK;
}

