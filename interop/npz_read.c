// Reading a .npz: takes the whole file into memory and trusts nothing in it:
// the central directory is found from the end, every record is checked to
// lie inside the bytes before it is read, the declared uncompressed sizes are
// summed and capped before anything is inflated, each entry inflates into a
// buffer of exactly its declared size, and the .npy header is parsed as a
// strict subset of Python's literal syntax. Fuzzing builds (TS_NPZ_FUZZING)
// skip the CRC comparison so the fuzzer reaches the .npy parser.
// Layout: docs/interop.md.
#include "interop/npz_internal.h"

#include "tensor/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#ifdef TS_NPZ_FUZZING
#define CRC_CHECKED 0
#else
#define CRC_CHECKED 1
#endif

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
    if (!strcmp(descr, "<f8")) {
        h->dtype = TS_NPZ_F8;
    } else if (!strncmp(descr, "<U", 2) && descr[2] != ' ' && dimension(&digits, TS_NPZ_MAX_WIDTH, &width) &&
               digits.p == digits.end && width >= 1) {
        h->dtype = TS_NPZ_STR;
        h->width = width;
    } else {
        return ts_fail(TS_ERR_FORMAT,
                       "npz %s: entry '%s': dtype '%s' is not supported (only '<f8' float64 and '<U<n>' strings of "
                       "at most %d characters)", what, entry, descr, TS_NPZ_MAX_WIDTH);
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
static int parse_npy(const char *what, struct entry *e, const unsigned char *npy, size_t n) {
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
    size_t item = h.dtype == TS_NPZ_F8 ? 8 : 4 * h.width, size;
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

// ---- reading: the zip structure -------------------------------------------------

// What the central directory says of one entry.
struct record {
    const unsigned char *name; // in the file, not NUL-terminated, with ".npy"
    size_t name_len;
    uint32_t flags, method, crc;
    uint64_t csize, usize, offset;
    uint64_t data, end;        // the data's byte range, from the local header
};

static int by_name(const void *a, const void *b) {
    const struct record *x = *(const struct record *const *)a, *y = *(const struct record *const *)b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static int by_offset(const void *a, const void *b) {
    const struct record *x = *(const struct record *const *)a, *y = *(const struct record *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

// Checks that extra[0..n) is a well-formed list of (id, size, data) fields
// and finds the ZIP64 one (id 1), if any.
static int extra_fields(const unsigned char *extra, size_t n, const unsigned char **zip64, size_t *zip64_len) {
    *zip64 = NULL;
    *zip64_len = 0;
    size_t i = 0;
    while (i < n) {
        if (n - i < 4) return 0;
        size_t len = get16(extra + i + 2);
        if (len > n - i - 4) return 0;
        if (get16(extra + i) == 1) {
            *zip64 = extra + i + 4;
            *zip64_len = len;
        }
        i += 4 + len;
    }
    return 1;
}

// Inflates the raw deflate stream in[0..n) into exactly out[0..want).
static int inflate_entry(const char *what, const char *name, const unsigned char *in, size_t n, unsigned char *out,
                         size_t want) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -15) != Z_OK) return ts_fail(TS_ERR_NOMEM, "npz %s: inflateInit2 failed", what);
    s.next_in = (unsigned char *)in;
    s.avail_in = (uInt)n;  // both below 4 GiB: no ZIP64
    s.next_out = out;
    s.avail_out = (uInt)want;
    int ret = inflate(&s, Z_FINISH);
    int rc = TS_OK;
    if (ret == Z_STREAM_END) {
        if (s.avail_out != 0)
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' inflates to %lu bytes, its header says %zu", what, name,
                         s.total_out, want);
        else if (s.avail_in != 0)
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': %u bytes after the end of its deflate stream", what, name,
                         s.avail_in);
    } else if (ret == Z_DATA_ERROR) {
        rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': corrupt deflate data (%s)", what, name,
                     s.msg ? s.msg : "zlib");
    } else if (ret == Z_MEM_ERROR) {
        rc = ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory in inflate", what, name);
    } else if (s.avail_out == 0) {
        // Output full and the stream goes on: it lies about its size (a bomb?).
        rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' inflates past the %zu bytes its header declares", what, name,
                     want);
    } else {
        rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the deflate stream is truncated", what, name);
    }
    inflateEnd(&s);
    return rc;
}

// Reads the central directory into recs[0..count) and checks each local header.
static int read_directory(const char *what, const unsigned char *d, size_t n, uint64_t max_payload,
                          struct record **recs_out, size_t *count_out) {
    *recs_out = NULL;
    *count_out = 0;
    if (n < EOCD_SIZE)
        return ts_fail(TS_ERR_FORMAT, "npz %s: %zu bytes is too short for a zip file", what, n);
    // The end record: the last signature whose comment reaches exactly the end.
    size_t eocd = SIZE_MAX;
    size_t lowest = n - EOCD_SIZE > MAX_COMMENT ? n - EOCD_SIZE - MAX_COMMENT : 0;
    for (size_t i = n - EOCD_SIZE + 1; i-- > lowest;)
        if (get32(d + i) == 0x06054b50 && get16(d + i + 20) == n - i - EOCD_SIZE) {
            eocd = i;
            break;
        }
    if (eocd == SIZE_MAX)
        return ts_fail(TS_ERR_FORMAT, "npz %s: no zip end-of-central-directory record (not a zip file, or truncated)",
                       what);
    const unsigned char *e = d + eocd;
    uint32_t entries = get16(e + 10), cd_size = get32(e + 12), cd_offset = get32(e + 16);
    if (entries == 0xffff || cd_size == 0xffffffffu || cd_offset == 0xffffffffu ||
        (eocd >= 20 && get32(d + eocd - 20) == 0x07064b50))
        return ts_fail(TS_ERR_FORMAT, "npz %s: ZIP64 archives are not supported (files under 4 GiB only)", what);
    if (get16(e + 4) != 0 || get16(e + 6) != 0 || get16(e + 8) != entries)
        return ts_fail(TS_ERR_FORMAT, "npz %s: multi-disk zip archives are not supported", what);
    if (entries > TS_NPZ_MAX_ENTRIES)
        return ts_fail(TS_ERR_FORMAT, "npz %s: %u entries, more than the limit %d", what, entries, TS_NPZ_MAX_ENTRIES);
    if ((uint64_t)cd_offset + cd_size != eocd)
        return ts_fail(TS_ERR_FORMAT, "npz %s: the central directory (offset %u, %u bytes) does not end where the "
                       "end record starts (%zu)", what, cd_offset, cd_size, eocd);
    struct record *recs = calloc(entries ? entries : 1, sizeof *recs);
    struct record **order = calloc(entries ? entries : 1, sizeof *order);
    if (!recs || !order) {
        free(recs);
        free(order);
        return ts_fail(TS_ERR_NOMEM, "npz %s: out of memory", what);
    }
    int rc = TS_OK;
    uint64_t total = 0;
    size_t at = cd_offset;
    for (uint32_t k = 0; k < entries; k++) {
        struct record *r = &recs[k];
        if (eocd - at < CENTRAL_SIZE || get32(d + at) != 0x02014b50) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: central directory record %u is truncated or has a bad signature",
                         what, k);
            goto done;
        }
        const unsigned char *c = d + at;
        size_t name_len = get16(c + 28), extra_len = get16(c + 30), comment_len = get16(c + 32);
        if (eocd - at - CENTRAL_SIZE < name_len + extra_len + comment_len) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: central directory record %u runs past the directory", what, k);
            goto done;
        }
        r->name = c + CENTRAL_SIZE;
        r->name_len = name_len;
        r->flags = get16(c + 8);
        r->method = get16(c + 10);
        r->crc = get32(c + 16);
        r->csize = get32(c + 20);
        r->usize = get32(c + 24);
        r->offset = get32(c + 42);
        at += CENTRAL_SIZE + name_len + extra_len + comment_len;
        const unsigned char *z64;
        size_t z64_len;
        // Names are shown in messages only once they are known to be printable.
        char shown[TS_NPZ_MAX_NAME + 8];
        if (name_len < 5 || name_len > TS_NPZ_MAX_NAME + 4 || memcmp(r->name + name_len - 4, ".npy", 4) != 0 ||
            !ts_npz_name_ok((const char *)r->name, name_len - 4)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry %u has a bad name (expected 1..%d printable ASCII bytes, "
                         "then \".npy\")", what, k, TS_NPZ_MAX_NAME);
            goto done;
        }
        memcpy(shown, r->name, name_len - 4);  // the array's name, as numpy.load shows it
        shown[name_len - 4] = '\0';
        if (!extra_fields(c + CENTRAL_SIZE + name_len, extra_len, &z64, &z64_len)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': malformed extra field", what, shown);
            goto done;
        }
        if (r->flags & 0x0001) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' is encrypted", what, shown);
            goto done;
        }
        if (r->flags & ~(uint32_t)(FLAG_DESCRIPTOR | FLAG_UTF8 | FLAG_DEFLATE_LEVEL)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': unsupported zip flags 0x%04x", what, shown, r->flags);
            goto done;
        }
        if (r->method != ZIP_STORED && r->method != ZIP_DEFLATED) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': compression method %u is not supported (only stored and "
                         "deflated)", what, shown, r->method);
            goto done;
        }
        if (r->csize == 0xffffffffu || r->usize == 0xffffffffu || r->offset == 0xffffffffu) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': ZIP64 sizes are not supported (entries under 4 GiB "
                         "only)", what, shown);
            goto done;
        }
        if (r->method == ZIP_STORED && r->csize != r->usize) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' is stored but its sizes differ (%llu and %llu)", what,
                         shown, (unsigned long long)r->csize, (unsigned long long)r->usize);
            goto done;
        }
        if (r->method == ZIP_DEFLATED && r->usize > r->csize * DEFLATE_MAX_RATIO + 64) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s' declares %llu bytes from %llu compressed: more than "
                         "deflate can expand to", what, shown, (unsigned long long)r->usize,
                         (unsigned long long)r->csize);
            goto done;
        }
        total += r->usize;
        if (total > max_payload) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: the entries declare more than %llu bytes uncompressed (the cap)", what,
                         (unsigned long long)max_payload);
            goto done;
        }
        // The local header must sit before the directory and agree with it.
        if (r->offset > cd_offset || cd_offset - r->offset < LOCAL_SIZE || get32(d + r->offset) != 0x04034b50) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': no local header at offset %llu", what, shown,
                         (unsigned long long)r->offset);
            goto done;
        }
        const unsigned char *h = d + r->offset;
        size_t local_name = get16(h + 26), local_extra = get16(h + 28);
        uint64_t data = r->offset + LOCAL_SIZE + local_name + local_extra;
        if (data > cd_offset || r->csize > cd_offset - data) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': its %llu bytes run past the start of the central "
                         "directory", what, shown, (unsigned long long)r->csize);
            goto done;
        }
        if (local_name != name_len || memcmp(h + LOCAL_SIZE, r->name, name_len) != 0 || get16(h + 8) != r->method ||
            get16(h + 6) != r->flags) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the local header disagrees with the central directory "
                         "(name, flags or method)", what, shown);
            goto done;
        }
        if (!extra_fields(h + LOCAL_SIZE + local_name, local_extra, &z64, &z64_len)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': malformed local extra field", what, shown);
            goto done;
        }
        uint32_t lcrc = get32(h + 14), lcsize = get32(h + 18), lusize = get32(h + 22);
        int sizes_ok;
        if (r->flags & FLAG_DESCRIPTOR) {
            sizes_ok = 1;  // the sizes follow the data; the central copy holds them
        } else if (lcsize == 0xffffffffu && lusize == 0xffffffffu) {
            // numpy.savez writes its local headers with a ZIP64 field (force_zip64).
            sizes_ok = z64 && z64_len >= 16 && get64(z64) == r->usize && get64(z64 + 8) == r->csize;
        } else {
            sizes_ok = lcsize == r->csize && lusize == r->usize;
        }
        if (!sizes_ok || (!(r->flags & FLAG_DESCRIPTOR) && lcrc != r->crc)) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': the local header's sizes or CRC disagree with the central "
                         "directory", what, shown);
            goto done;
        }
        r->data = data;
        r->end = data + r->csize;
        order[k] = r;
    }
    if (at != eocd) {
        rc = ts_fail(TS_ERR_FORMAT, "npz %s: %zu unexplained bytes at the end of the central directory", what,
                     eocd - at);
        goto done;
    }
    // Entries may not share bytes (overlapping entries are how a small zip
    // bombs), nor names (which array would numpy.load give?).
    qsort(order, entries, sizeof *order, by_offset);
    for (uint32_t k = 1; k < entries; k++)
        if (order[k]->offset < order[k - 1]->end) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entries '%.*s' and '%.*s' overlap", what,
                         (int)order[k - 1]->name_len - 4, (const char *)order[k - 1]->name,
                         (int)order[k]->name_len - 4, (const char *)order[k]->name);
            goto done;
        }
    qsort(order, entries, sizeof *order, by_name);
    for (uint32_t k = 1; k < entries; k++)
        if (by_name(&order[k - 1], &order[k]) == 0) {
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%.*s' appears twice", what, (int)order[k]->name_len - 4,
                         (const char *)order[k]->name);
            goto done;
        }
done:
    free(order);
    if (rc) {
        free(recs);
        return rc;
    }
    *recs_out = recs;
    *count_out = entries;
    return TS_OK;
}

int ts_npz_load_mem(const void *data, size_t len, const char *what, const ts_npz_load_opts *opts, ts_npz **out) {
    *out = NULL;
    if (!what) what = "(memory)";
    uint64_t cap = opts && opts->max_payload ? opts->max_payload : TS_NPZ_DEFAULT_MAX_PAYLOAD;
    const unsigned char *d = data;
    struct record *recs;
    size_t count;
    int rc = read_directory(what, d, len, cap, &recs, &count);
    if (rc) return rc;
    ts_npz *z = ts_npz_new();
    if (!z || (count && !(z->items = calloc(count, sizeof *z->items)))) {
        free(recs);
        ts_npz_free(z);
        return ts_fail(TS_ERR_NOMEM, "npz %s: out of memory", what);
    }
    z->cap = count;
    unsigned char *npy = NULL;
    for (size_t k = 0; k < count; k++) {
        const struct record *r = &recs[k];
        struct entry *e = &z->items[k];
        if (!(e->name = strndup((const char *)r->name, r->name_len - 4))) {
            rc = ts_fail(TS_ERR_NOMEM, "npz %s: out of memory", what);
            break;
        }
        e->a.name = e->name;
        z->count++;
        if (r->method == ZIP_STORED) {
            npy = (unsigned char *)d + r->data;
        } else if (!(npy = malloc(r->usize ? r->usize : 1))) {
            rc = ts_fail(TS_ERR_NOMEM, "npz %s: entry '%s': out of memory (%llu bytes)", what, e->name,
                         (unsigned long long)r->usize);
            break;
        } else if ((rc = inflate_entry(what, e->name, d + r->data, r->csize, npy, r->usize))) {
            free(npy);
            break;
        }
        if (CRC_CHECKED && ts_crc32(0, npy, r->usize) != r->crc)
            rc = ts_fail(TS_ERR_FORMAT, "npz %s: entry '%s': CRC-32 mismatch (the file is corrupt)", what, e->name);
        if (!rc) rc = parse_npy(what, e, npy, r->usize);
        if (r->method != ZIP_STORED) free(npy);
        if (rc) break;
    }
    free(recs);
    if (rc) {
        ts_npz_free(z);
        return rc;
    }
    *out = z;
    return TS_OK;
}

int ts_npz_load(const char *path, const ts_npz_load_opts *opts, ts_npz **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return ts_fail(TS_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return ts_fail(TS_ERR_IO, "cannot read %s: not a regular file", path);
    }
    // No ZIP64: a valid file is below 4 GiB plus the end record's comment.
    if ((uint64_t)st.st_size > TS_NPZ_MAX_ENTRY_BYTES + EOCD_SIZE + MAX_COMMENT) {
        fclose(f);
        return ts_fail(TS_ERR_FORMAT, "npz %s: %lld bytes is too large (no ZIP64: under 4 GiB)", path,
                       (long long)st.st_size);
    }
    size_t len = (size_t)st.st_size;
    unsigned char *bytes = malloc(len ? len : 1);
    if (!bytes) {
        fclose(f);
        return ts_fail(TS_ERR_NOMEM, "npz %s: out of memory (%zu bytes)", path, len);
    }
    size_t got = fread(bytes, 1, len, f);
    int err = ferror(f), more = fgetc(f) != EOF;
    fclose(f);
    int rc;
    if (err || got != len || more)
        rc = ts_fail(TS_ERR_IO, "cannot read %s: %s", path, err ? strerror(errno) : "the file changed while read");
    else
        rc = ts_npz_load_mem(bytes, len, path, opts, out);
    free(bytes);
    return rc;
}

