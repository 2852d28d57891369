// Reading one .npy file (an entry of a .npz): the header dict is parsed as a
// strict subset of Python's literal syntax (exactly descr, fortran_order and
// shape), and the data is checked to be exactly what the header declares.
// The zip container around it is npz_read.c's. Layout: docs/interop.md.
#include "interop/npz_internal.h"

#include "tensor/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- reading: the .npy format --------------------------------------------------

// A cursor over the header text.
struct lex {
    const char *p, *end;
};

static void skip_space(struct lex *l) {
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t')) l->p++;
}

static int eat(struct lex *l, char c) {
    skip_space(l);
    if (l->p < l->end && *l->p == c) {
        l->p++;
        return 1;
    }
    return 0;
}

// A quoted string ('...' or "...", no escapes) into out[0..cap).
static int quoted(struct lex *l, char *out, size_t cap) {
    skip_space(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"')) return 0;
    char q = *l->p++;
    size_t n = 0;
    while (l->p < l->end && *l->p != q) {
        if (*l->p == '\\' || n + 1 >= cap) return 0;
        out[n++] = *l->p++;
    }
    if (l->p >= l->end) return 0;
    l->p++;
    out[n] = '\0';
    return 1;
}

static int word(struct lex *l, const char *w) {
    skip_space(l);
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) >= n && !memcmp(l->p, w, n)) {
        l->p += n;
        return 1;
    }
    return 0;
}

// A decimal dimension (no sign, no leading zero) at most `limit`.
static int dimension(struct lex *l, size_t limit, size_t *out) {
    skip_space(l);
    if (l->p >= l->end || *l->p < '0' || *l->p > '9' || (*l->p == '0' && l->p + 1 < l->end && l->p[1] >= '0' &&
                                                          l->p[1] <= '9'))
        return 0;
    size_t v = 0;
    while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
        size_t d = (size_t)(*l->p++ - '0');
        if (v > (limit - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

// The shape tuple: "()", "(3,)", "(3, 4)" with an optional trailing comma.
static int shape_tuple(struct lex *l, int *ndim, size_t *shape) {
    if (!eat(l, '(')) return 0;
    *ndim = 0;
    if (eat(l, ')')) return 1;
    for (;;) {
        if (*ndim == TS_NPZ_MAX_NDIM) return 0;
        if (!dimension(l, TS_NPZ_MAX_ENTRY_BYTES, &shape[(*ndim)++])) return 0;
        int comma = eat(l, ',');
        if (eat(l, ')')) return *ndim > 1 || comma; // "(3)" is not a tuple
        if (!comma) return 0;
    }
}

// What a .npy header says.
struct npy_header {
    enum ts_npz_dtype dtype;
    size_t width; // code points per string
    int ndim;
    size_t shape[TS_NPZ_MAX_NDIM];
};

// Parses the header dict text[0..n): exactly the keys descr, fortran_order and
// shape, once each, in any order; then only spaces and a final newline.
static int parse_header(const char *what, const char *entry, const char *text, size_t n, struct npy_header *h) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)text[i] < 0x20 && text[i] != '\n')
            return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': control byte in the .npy header", what, entry);
    if (n == 0 || text[n - 1] != '\n')
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the .npy header does not end with a newline", what,
                       entry);
    struct lex l = {text, text + n - 1};
    int seen_descr = 0, seen_order = 0, seen_shape = 0;
    char key[32], descr[32];
    if (!eat(&l, '{')) goto bad;
    while (!eat(&l, '}')) {
        if (!quoted(&l, key, sizeof key) || !eat(&l, ':')) goto bad;
        if (!strcmp(key, "descr") && !seen_descr++) {
            if (!quoted(&l, descr, sizeof descr)) goto bad;
        } else if (!strcmp(key, "fortran_order") && !seen_order++) {
            if (word(&l, "True"))
                return ts_fail(TS_ERR_FORMAT,
                               "npz %s: entry '%s': fortran_order True is not supported (save a C-ordered array: "
                               "numpy.ascontiguousarray)", what, entry);
            if (!word(&l, "False")) goto bad;
        } else if (!strcmp(key, "shape") && !seen_shape++) {
            if (!shape_tuple(&l, &h->ndim, h->shape)) goto bad;
        } else {
            return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': unexpected or repeated key '%s' in the .npy header",
                           what, entry, key);
        }
        if (!eat(&l, ',')) {
            if (!eat(&l, '}')) goto bad;
            break;
        }
    }
    skip_space(&l);
    if (l.p != l.end) goto bad;
    if (!seen_descr || !seen_order || !seen_shape)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the .npy header lacks '%s'", what, entry,
                       !seen_descr ? "descr" : !seen_order ? "fortran_order" : "shape");
    struct lex digits = {descr + 2, descr + strlen(descr)};
    size_t width = 0;
    int known = 0;
    for (size_t d = 0; !known && d < NPY_DTYPE_COUNT; d++)
        if ((known = d != TS_NPZ_STR && !strcmp(descr, npy_dtypes[d].descr))) h->dtype = (enum ts_npz_dtype)d;
    if (!known && !strncmp(descr, "<U", 2) && descr[2] != ' ' && dimension(&digits, TS_NPZ_MAX_WIDTH, &width) &&
        digits.p == digits.end && width >= 1) {
        h->dtype = TS_NPZ_STR;
        h->width = width;
        known = 1;
    }
    if (!known) {
        return ts_fail(TS_ERR_FORMAT,
                       "npz %s: entry '%s': dtype '%s' is not supported (only '<f8' float64, '<f4' float32, '|u1' bytes and "
                       "'<U<n>' strings of at most %d characters)", what, entry, descr, TS_NPZ_MAX_WIDTH);
    }
    for (int i = 0; i < h->ndim; i++)
        if (h->shape[i] == 0)
            return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': empty arrays (a dimension of 0) are not supported",
                           what, entry);
    return TS_OK;
bad:;
    // The header is not NUL-terminated: show a copy of its start.
    char shown[61];
    size_t k = n < 60 ? n : 60;
    for (size_t i = 0; i < k; i++) shown[i] = text[i] == '\n' || (unsigned char)text[i] >= 0x7f ? '?' : text[i];
    shown[k] = '\0';
    return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': malformed .npy header near byte %zu: \"%s\"", what, entry,
                   (size_t)(l.p - text), shown);
}

// Appends to buf the UTF-8 of code point cp (validated by the caller).
static size_t utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

// Parses one .npy file npy[0..n) into entry e (name already set).
int ts_npy_parse(const char *what, struct entry *e, const unsigned char *npy, size_t n) {
    const char *name = e->name;
    if (n < NPY_PREFIX || memcmp(npy, npy_magic, 6) != 0)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' is not a .npy file (bad magic)", what, name);
    if ((npy[6] != 1 && npy[6] != 2) || npy[7] != 0)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': .npy version %u.%u is not supported (1.0 or 2.0)", what,
                       name, npy[6], npy[7]);
    size_t prefix = npy[6] == 1 ? NPY_PREFIX : NPY_PREFIX + 2;
    if (n < prefix) return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': truncated .npy prefix", what, name);
    size_t header_len = npy[6] == 1 ? get16(npy + 8) : get32(npy + 8);
    if (header_len > TS_NPZ_MAX_HEADER || header_len > n - prefix)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': .npy header length %zu does not fit (%zu bytes left, at "
                       "most %d)", what, name, header_len, n - prefix, TS_NPZ_MAX_HEADER);
    struct npy_header h;
    memset(&h, 0, sizeof h);
    int rc = parse_header(what, name, (const char *)npy + prefix, header_len, &h);
    if (rc) return rc;
    const unsigned char *data = npy + prefix + header_len;
    size_t data_len = n - prefix - header_len;
    size_t item = npy_dtypes[h.dtype].item * (h.dtype == TS_NPZ_STR ? h.width : 1), size;
    if (!ts_npz_shape_size(h.ndim, h.shape, SIZE_MAX / item, &size) || size * item != data_len)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': %zu data bytes do not hold the shape the header declares",
                       what, name, data_len);
    e->a.dtype = h.dtype;
    e->a.ndim = h.ndim;
    for (int i = 0; i < TS_NPZ_MAX_NDIM; i++) e->a.shape[i] = i < h.ndim ? h.shape[i] : 1;
    e->a.size = size;
    if (h.dtype == TS_NPZ_F8) {
        if (!(e->values = malloc(size * sizeof *e->values)))
            return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
        for (size_t i = 0; i < size; i++) {
            uint64_t bits = get64(data + 8 * i);
            memcpy(&e->values[i], &bits, 8);
        }
        e->a.values = e->values;
        return TS_OK;
    }
    if (h.dtype == TS_NPZ_F4) {  // held as float64: every float converts exactly
        if (!(e->values = malloc(size * sizeof *e->values)))
            return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
        for (size_t i = 0; i < size; i++) {
            uint32_t bits = get32(data + 4 * i);
            float value;
            memcpy(&value, &bits, 4);
            e->values[i] = value;
        }
        e->a.values = e->values;
        return TS_OK;
    }
    if (h.dtype == TS_NPZ_U1) {
        if (!(e->bytes = malloc(size)))
            return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
        memcpy(e->bytes, data, size);
        e->a.bytes = e->bytes;
        return TS_OK;
    }
    if (size > TS_NPZ_MAX_STRINGS)
        return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': more than %u strings", what, name, TS_NPZ_MAX_STRINGS);
    if (!(e->strings = calloc(size, sizeof *e->strings)))
        return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
    e->a.strings = (const char *const *)e->strings;
    char *utf8 = malloc(4 * h.width + 1);
    if (!utf8) return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
    for (size_t i = 0; i < size; i++) {
        const unsigned char *s = data + i * item;
        size_t len = h.width; // numpy drops trailing NULs
        while (len > 0 && get32(s + 4 * (len - 1)) == 0) len--;
        size_t k = 0;
        for (size_t j = 0; j < len; j++) {
            uint32_t cp = get32(s + 4 * j);
            if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
                free(utf8);
                return ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': string %zu holds an invalid character (U+%04X)",
                               what, name, i, (unsigned)cp);
            }
            k += utf8_encode(cp, utf8 + k);
        }
        utf8[k] = '\0';
        if (!(e->strings[i] = strdup(utf8))) {
            free(utf8);
            return ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory", what, name);
        }
    }
    free(utf8);
    return TS_OK;
}

