// Parsing a checkpoint's payload (ckpt/parse.h): every length, count and
// tensor offset checked against the bytes that remain before anything is
// allocated. CRC-32 (zlib's crc32) guards the prelude, each section and the
// whole payload, every byte of it; fuzzing builds (TS_CKPT_FUZZING) skip the
// comparisons so the fuzzer reaches the parser. Where the bytes come from (a
// mapping, an inflated gzip file): read.c. Byte layout: docs/checkpoint.md.
#include "ckpt/parse.h"

#include "ckpt/container.h"
#include "ckpt/format.h"

#include "tensor/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// A bounded view of the payload; every read checks what remains first.
struct reader {
    const unsigned char *p;
    size_t pos, end;
    const char *what;
    const char *section; // for messages
};

static size_t remaining(const struct reader *r) { return r->end - r->pos; }

static int need(struct reader *r, uint64_t n, const char *field) {
    if (n > remaining(r))
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s: %s needs %llu bytes, only "
                       "%zu remain (offset %zu)", r->what, r->section, field,
                       (unsigned long long)n, remaining(r), r->pos);
    return TS_OK;
}

static int read_u32(struct reader *r, const char *field, uint32_t *v) {
    int rc = need(r, 4, field);
    if (rc != TS_OK) return rc;
    *v = get_u32(r->p + r->pos);
    r->pos += 4;
    return TS_OK;
}

static int read_u64(struct reader *r, const char *field, uint64_t *v) {
    int rc = need(r, 8, field);
    if (rc != TS_OK) return rc;
    *v = get_u64(r->p + r->pos);
    r->pos += 8;
    return TS_OK;
}

// A u32 count checked against `max` and against the bytes left when every
// item takes at least `min_item` bytes, so nothing is allocated for items
// that cannot be there.
static int read_count(struct reader *r, const char *field, uint32_t max, size_t min_item,
                      uint32_t *count) {
    int rc = read_u32(r, field, count);
    if (rc != TS_OK) return rc;
    if (*count > max)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s: %s %u exceeds the limit %u",
                       r->what, r->section, field, *count, max);
    if ((uint64_t)*count * min_item > remaining(r))
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s: %s %u does not fit in the "
                       "%zu bytes left", r->what, r->section, field, *count, remaining(r));
    return TS_OK;
}

// A length-prefixed string (u32 + bytes) checked by `ok`; *s points into the
// payload (not NUL-terminated).
static int read_string(struct reader *r, const char *field, size_t max,
                       int (*ok)(const char *, size_t), const char **s, size_t *n) {
    uint32_t len;
    int rc = read_u32(r, field, &len);
    if (rc != TS_OK) return rc;
    if (len > max)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s: %s length %u exceeds %zu",
                       r->what, r->section, field, len, max);
    if ((rc = need(r, len, field)) != TS_OK) return rc;
    *s = (const char *)r->p + r->pos;
    *n = len;
    if (ok && !ok(*s, len))
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s: %s at offset %zu holds "
                       "bytes that are not allowed", r->what, r->section, field, r->pos);
    r->pos += len;
    return TS_OK;
}

static int parse_head(struct reader *r, ts_ckpt *ck) {
    while (r->pos < r->end) {
        const char *line = (const char *)r->p + r->pos;
        const char *nl = memchr(line, '\n', remaining(r));
        if (!nl)
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: header line at offset %zu does not "
                           "end with a newline", r->what, r->pos);
        size_t n = (size_t)(nl - line);
        const char *eq = memchr(line, '=', n);
        if (!eq)
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: header line at offset %zu has no "
                           "'='", r->what, r->pos);
        size_t klen = (size_t)(eq - line), vlen = n - klen - 1;
        if (!ts_ckpt_key_ok(line, klen))
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: header key at offset %zu is not 1..%d "
                           "bytes of [A-Za-z0-9_.-]", r->what, r->pos, TS_CKPT_MAX_NAME);
        if (!ts_ckpt_value_ok(eq + 1, vlen))
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: header value of '%.*s' is longer "
                           "than %d bytes or holds a NUL", r->what, (int)klen, line,
                           TS_CKPT_MAX_VALUE);
        if (ck->n_entries >= TS_CKPT_MAX_ENTRIES)
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: header has more than %d entries",
                           r->what, TS_CKPT_MAX_ENTRIES);
        // Duplicates are kept: the typed getters report them by key.
        char *key = ts_ckpt_dup(line, klen), *value = ts_ckpt_dup(eq + 1, vlen);
        int rc = key && value ? ts_ckpt_reserve((void **)&ck->entries, &ck->cap_entries, ck->n_entries,
                                                sizeof *ck->entries)
                              : ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
        if (rc != TS_OK) {
            free(key);
            free(value);
            return rc;
        }
        ck->entries[ck->n_entries++] = (struct entry){key, value};
        r->pos += n + 1;
    }
    return TS_OK;
}

static int parse_vocabs(struct reader *r, ts_ckpt *ck) {
    uint32_t n_vocabs;
    int rc = read_count(r, "vocabulary count", TS_CKPT_MAX_VOCABS, 9, &n_vocabs);
    for (uint32_t i = 0; rc == TS_OK && i < n_vocabs; i++) {
        const char *name = NULL;
        size_t nlen = 0;
        uint32_t count;
        if ((rc = read_string(r, "vocabulary name", TS_CKPT_MAX_NAME, ts_ckpt_key_ok, &name, &nlen)))
            return rc;
        if ((rc = read_count(r, "token count", TS_CKPT_MAX_TOKENS, 4, &count))) return rc;
        // First pass: validate every token and size the text; second: copy.
        size_t start = r->pos, text_len = 0;
        for (uint32_t k = 0; k < count; k++) {
            const char *tok;
            size_t tlen = 0;
            if ((rc = read_string(r, "token", TS_CKPT_MAX_TOKEN, ts_ckpt_token_ok, &tok, &tlen)))
                return rc;
            text_len += tlen + 1;
        }
        char *name_copy = ts_ckpt_dup(name, nlen);
        char **tokens = malloc((count ? count : 1) * sizeof *tokens);
        char *text = malloc(text_len ? text_len : 1);
        if (!name_copy || !tokens || !text) {
            free(name_copy);
            free(tokens);
            free(text);
            return ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
        }
        if (ts_ckpt_find_vocab(ck, name_copy)) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: vocabulary '%s' appears twice",
                         r->what, name_copy);
            free(name_copy);
            free(tokens);
            free(text);
            return rc;
        }
        size_t pos = start;
        char *t = text;
        for (uint32_t k = 0; k < count; k++) {
            size_t tlen = get_u32(r->p + pos);
            memcpy(t, r->p + pos + 4, tlen);
            t[tlen] = '\0';
            tokens[k] = t;
            t += tlen + 1;
            pos += 4 + tlen;
        }
        rc = ts_ckpt_push_vocab(ck, name_copy, tokens, text, count);
    }
    return rc;
}

static int compare_names(const void *a, const void *b) {
    const struct tensor *x = *(const struct tensor *const *)a;
    const struct tensor *y = *(const struct tensor *const *)b;
    return strcmp(x->name, y->name);
}

// Names must be unique in a section; sort pointers instead of an n^2 scan.
static int check_unique(const struct reader *r, ts_ckpt *ck, enum ts_ckpt_section section) {
    size_t n = ck->n_tensors[section];
    if (n < 2) return TS_OK;
    struct tensor **sorted = malloc(n * sizeof *sorted);
    if (!sorted) return ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
    for (size_t i = 0; i < n; i++) sorted[i] = &ck->tensors[section][i];
    qsort(sorted, n, sizeof *sorted, compare_names);
    int rc = TS_OK;
    for (size_t i = 1; i < n && rc == TS_OK; i++)
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: %s tensor '%s' appears twice", r->what,
                         ts_ckpt_section_noun(section), sorted[i]->name);
    free(sorted);
    return rc;
}

// n little-endian values of `width` bytes at src into dst.
static void copy_values(void *dst, const unsigned char *src, size_t n, size_t width) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(dst, src, width * n);  // the file's byte order is this host's
#else
    unsigned char *out = dst;
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < width; j++) out[width * k + j] = src[width * k + width - 1 - j];
#endif
}

// The dtype whose code the file gives (ts_dtypes[d].ckpt_code), or -1.
static int dtype_of_code(uint32_t code) {
    for (int d = 0; d < TS_DTYPE_COUNT; d++)
        if (dtype_code(d) == code) return d;
    return -1;
}

// A tensor's name, ndim and shape (both versions' records start alike, but
// for version 2's dtype between name and ndim): checked, with the size
// bounded by the body's remaining bytes at `width` bytes a value.
static int read_tensor_head(struct reader *r, int version, char **name_out, int *dtype,
                            int *ndim_out, size_t *shape, size_t *size) {
    const char *name = NULL;
    size_t nlen = 0;
    uint32_t ndim, code = dtype_code(TS_F64);
    int rc = read_string(r, "tensor name", TS_CKPT_MAX_NAME, ts_ckpt_name_ok, &name, &nlen);
    if (!rc && version >= 2) rc = read_u32(r, "dtype", &code);
    if (rc) return rc;
    int dtype_read = dtype_of_code(code);
    if (dtype_read < 0)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: tensor '%.*s' has dtype %u, which this build does not "
                       "read (%u float64, %u float32)", r->what, (int)nlen, name, code, dtype_code(TS_F64),
                       dtype_code(TS_F32));
    size_t width = ts_dtype_size(dtype_read);
    if ((rc = read_u32(r, "ndim", &ndim))) return rc;
    if (ndim > TS_CKPT_MAX_NDIM)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: tensor '%.*s' has ndim %u > %d",
                       r->what, (int)nlen, name, ndim, TS_CKPT_MAX_NDIM);
    for (uint32_t d = 0; d < ndim; d++) {
        uint64_t dim;
        if ((rc = read_u64(r, "tensor dimension", &dim))) return rc;
        if (dim == 0 || dim > remaining(r) / width)
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: tensor '%.*s' dimension %u = %llu "
                           "is 0 or does not fit in the %zu bytes left", r->what, (int)nlen,
                           name, d, (unsigned long long)dim, remaining(r));
        shape[d] = (size_t)dim;
    }
    if (!ts_ckpt_shape_size((int)ndim, shape, remaining(r) / width, size))
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: tensor '%.*s' data does not fit in the "
                       "%zu bytes left", r->what, (int)nlen, name, remaining(r));
    if (!(*name_out = ts_ckpt_dup(name, nlen)))
        return ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
    *dtype = dtype_read;
    *ndim_out = (int)ndim;
    return TS_OK;
}

// Version 1: each tensor's record is followed by its values, copied out.
static int parse_tensors_v1(struct reader *r, ts_ckpt *ck, enum ts_ckpt_section section) {
    uint32_t n;
    // Smallest entry: name length (4) + 1 name byte + ndim (4).
    int rc = read_count(r, "tensor count", TS_CKPT_MAX_TENSORS, 9, &n);
    for (uint32_t i = 0; rc == TS_OK && i < n; i++) {
        char *name;
        int dtype, ndim;  // dtype: float64, the only one version 1 has
        size_t shape[TS_CKPT_MAX_NDIM], size;
        if ((rc = read_tensor_head(r, 1, &name, &dtype, &ndim, shape, &size))) return rc;
        double *data = malloc(size * sizeof *data); // size >= 1: every dim is >= 1
        if (!data) {
            free(name);
            return ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
        }
        copy_values(data, r->p + r->pos, size, sizeof *data);
        r->pos += 8 * size;
        rc = ts_ckpt_push_tensor(ck, section, name, dtype, ndim, shape, size, data);
    }
    return rc ? rc : check_unique(r, ck, section);
}

// Version 2: an index of records (name, dtype, ndim, shape, offset), then
// the data, each tensor at the next multiple of TENSOR_ALIGN after the one
// before (zeros between). The tensors are views into the payload, which the
// caller keeps alive as the container's storage. Every offset must be the
// one that layout implies: a misaligned, overlapping or gapped one is refused.
static int parse_tensors_v2(struct reader *r, ts_ckpt *ck, enum ts_ckpt_section section) {
    uint32_t n;
    // Smallest entry: name length (4) + 1 name byte + dtype (4) + ndim (4) +
    // offset (8) + one value (4).
    int rc = read_count(r, "tensor count", TS_CKPT_MAX_TENSORS, 25, &n);
    uint64_t *offsets = rc ? NULL : malloc((n ? n : 1) * sizeof *offsets);
    if (!rc && !offsets) rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
    size_t first = ck->n_tensors[section];
    for (uint32_t i = 0; rc == TS_OK && i < n; i++) {
        char *name;
        int dtype, ndim;
        size_t shape[TS_CKPT_MAX_NDIM], size;
        if ((rc = read_tensor_head(r, 2, &name, &dtype, &ndim, shape, &size))) break;
        if ((rc = read_u64(r, "tensor offset", &offsets[i]))) {
            free(name);
            break;
        }
        rc = ts_ckpt_push_tensor(ck, section, name, dtype, ndim, shape, size, NULL);
    }
    for (uint32_t i = 0; rc == TS_OK && i < n; i++) {
        struct tensor *t = &ck->tensors[section][first + i];
        const char *before = i ? ck->tensors[section][first + i - 1].name : NULL;
        uint64_t expected = align_tensor(r->pos), offset = offsets[i];
        size_t width = ts_dtype_size(t->pub.dtype);
        uint64_t bytes = (uint64_t)width * t->pub.size;
        if (offset % TENSOR_ALIGN != 0)
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: %s tensor '%s' data offset %llu is not a "
                         "multiple of %d", r->what, ts_ckpt_section_noun(section), t->name,
                         (unsigned long long)offset, TENSOR_ALIGN);
        else if (offset < expected)
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: %s tensor '%s' data at offset %llu overlaps "
                         "%s%s%s, which ends at %zu", r->what, ts_ckpt_section_noun(section), t->name,
                         (unsigned long long)offset, before ? "tensor '" : "the index",
                         before ? before : "", before ? "'" : "", r->pos);
        else if (offset > expected)
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: %s tensor '%s' data at offset %llu leaves a "
                         "gap: it belongs at %llu", r->what, ts_ckpt_section_noun(section), t->name,
                         (unsigned long long)offset, (unsigned long long)expected);
        else if (offset > r->end || bytes > r->end - offset)
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: %s tensor '%s' data (%llu bytes at offset "
                         "%llu) runs past its section, which ends at %zu", r->what,
                         ts_ckpt_section_noun(section), t->name, (unsigned long long)bytes,
                         (unsigned long long)offset, r->end);
        for (; rc == TS_OK && r->pos < offset; r->pos++)
            if (r->p[r->pos] != 0)
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: padding byte at offset %zu before %s "
                             "tensor '%s' is not 0", r->what, r->pos, ts_ckpt_section_noun(section),
                             t->name);
        if (rc) break;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        t->pub.raw = r->p + offset;  // aligned: storage is, offset too
#else
        if (!(t->data = malloc(t->pub.size * width))) {
            rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
            break;
        }
        copy_values(t->data, r->p + offset, t->pub.size, width);
        t->pub.raw = t->data;
#endif
        r->pos = (size_t)(offset + bytes);
    }
    free(offsets);
    return rc ? rc : check_unique(r, ck, section);
}

static int parse_blobs(struct reader *r, ts_ckpt *ck) {
    uint32_t n;
    int rc = read_count(r, "blob count", TS_CKPT_MAX_BLOBS, 13, &n);
    for (uint32_t i = 0; rc == TS_OK && i < n; i++) {
        const char *name = NULL;
        size_t nlen = 0;
        uint64_t len;
        if ((rc = read_string(r, "blob name", TS_CKPT_MAX_NAME, ts_ckpt_name_ok, &name, &nlen))) return rc;
        if ((rc = read_u64(r, "blob length", &len))) return rc;
        if ((rc = need(r, len, "blob bytes"))) return rc;
        char *name_copy = ts_ckpt_dup(name, nlen);
        if (!name_copy) return ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
        if (ts_ckpt_blob_lookup(ck, name_copy)) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: blob '%s' appears twice", r->what,
                         name_copy);
            free(name_copy);
            return rc;
        }
        free(name_copy);
        char nul_name[TS_CKPT_MAX_NAME + 1];
        memcpy(nul_name, name, nlen);
        nul_name[nlen] = '\0';
        rc = ts_ckpt_set_blob(ck, nul_name, r->p + r->pos, (size_t)len);
        r->pos += (size_t)len;
    }
    return rc;
}

// Parses a complete payload (prelude already checked) into a new container.
// Each section's CRC is checked before its body is parsed, so damage is
// reported by section; the payload CRC comes last, then gzip's (gzip_trailer:
// NULL for an uncompressed file).
int ts_ckpt_parse_payload(const unsigned char *p, size_t total, const char *what, int skip_training,
                          const unsigned char gzip_trailer[8], ts_ckpt **out) {
    ts_ckpt *ck = ts_ckpt_new();
    if (!ck) return TS_ERR_NOMEM;
    struct reader r = {p, PRELUDE_SIZE, total - TRAILER_SIZE, what, "?"};
    int (*parse_tensors)(struct reader *, ts_ckpt *, enum ts_ckpt_section) =
        get_u32(p + 8) == 1 ? parse_tensors_v1 : parse_tensors_v2;
    int rc = TS_OK;
    // The payload CRC is built from the prelude's and each section's CRC
    // (crc32_combine): the same value as a second pass over every byte.
    uLong payload_crc = ts_crc32(0, p, PRELUDE_SIZE);
    for (int sec = 0; sec < SECTION_COUNT && rc == TS_OK; sec++) {
        char tag[5] = {0};
        memcpy(tag, SECTION_TAGS[sec], 4);
        r.section = tag;
        uint64_t body_len;
        size_t start = r.pos;
        if ((rc = need(&r, 12, "section header"))) break;
        if (memcmp(p + r.pos, SECTION_TAGS[sec], 4) != 0) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: expected section %s at offset %zu",
                         what, tag, r.pos);
            break;
        }
        r.pos += 4;
        if ((rc = read_u64(&r, "section length", &body_len))) break;
        if (body_len > remaining(&r) || remaining(&r) - body_len < 4) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s length %llu does not fit in "
                         "the %zu bytes left", what, tag, (unsigned long long)body_len,
                         remaining(&r));
            break;
        }
        size_t body_end = r.pos + (size_t)body_len;
        uint32_t section_crc = CRC_CHECKED ? ts_crc32(0, p + start, body_end - start) : 0;
        if (CRC_CHECKED && get_u32(p + body_end) != section_crc) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s CRC mismatch", what, tag);
            break;
        }
        payload_crc = crc32_combine(payload_crc, section_crc, (z_off_t)(body_end - start));
        payload_crc = ts_crc32((uint32_t)payload_crc, p + body_end, 4);
        struct reader body = {p, r.pos, body_end, what, tag};
        if (skip_training && sec == SEC_OPTM) body.pos = body_end;  // checked, not parsed
        else switch (sec) {
        case SEC_HEAD: rc = parse_head(&body, ck); break;
        case SEC_VOCB: rc = parse_vocabs(&body, ck); break;
        case SEC_PARM: rc = parse_tensors(&body, ck, TS_CKPT_PARAMS); break;
        case SEC_OPTM: rc = parse_tensors(&body, ck, TS_CKPT_OPTIM); break;
        default: rc = parse_blobs(&body, ck); break;
        }
        if (rc == TS_OK && body.pos != body_end)
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s has %zu unused bytes at its "
                         "end", what, tag, body_end - body.pos);
        r.pos = body_end + 4;
    }
    if (rc == TS_OK && r.pos != r.end)
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: %zu unexpected bytes after the last "
                     "section", what, r.end - r.pos);
    if (rc == TS_OK && CRC_CHECKED && get_u32(p + total - TRAILER_SIZE) != payload_crc)
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: payload CRC mismatch", what);
    // gzip's CRC covers the whole payload, trailer included; its size field is
    // the payload's length mod 2^32.
    if (rc == TS_OK && CRC_CHECKED && gzip_trailer &&
        (get_u32(gzip_trailer) != ts_crc32((uint32_t)payload_crc, p + total - TRAILER_SIZE, TRAILER_SIZE) ||
         get_u32(gzip_trailer + 4) != (uint32_t)total))
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: corrupt gzip data: its CRC or size does not match", what);
    if (rc != TS_OK) {
        ts_ckpt_free(ck);
        return rc;
    }
    *out = ck;
    return TS_OK;
}
