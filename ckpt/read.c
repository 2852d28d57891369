// Checkpoint container, writer and loader. Byte layout: docs/checkpoint.md.
//
// Writing streams the payload through deflate (no second copy of the
// parameters); a sizing pass first computes every length so the prelude can
// declare the payload size up front. Loading inflates into one buffer bounded
// by that declared size (itself bounded by a cap), then parses it with every
// length and count checked against the bytes that remain before anything is
// allocated. CRC-32 (zlib's crc32) guards the prelude, each section and the
// whole payload; fuzzing builds (TS_CKPT_FUZZING) skip the comparisons so the
// fuzzer reaches the parser.
#include "ckpt/ckpt.h"

#include "tensor/status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#ifdef TS_CKPT_FUZZING
#define CRC_CHECKED 0
#else
#define CRC_CHECKED 1
#endif

enum {
    PRELUDE_SIZE = 32,
    SECTION_OVERHEAD = 16, // tag (4) + body length (8) + CRC (4)
    SECTION_COUNT = 5,
    TRAILER_SIZE = 4,
    ZLEVEL = 0,        // fixed (byte-identical promise); stored: float64 weights barely compress (~5%),
                       // and level 6 costs 0.19 s to inflate, 1.3 s to deflate for 5.3M parameters
    GZIP_WINDOW = 31,  // 15-bit window + 16 = gzip framing
    GZIP_OS_UNKNOWN = 255,
    CHUNK = 1 << 16,
};

static const char MAGIC[8] = {'T', 'S', 'E', 'Q', 'C', 'K', 'P', 'T'};
// Sections in their fixed order; every file has all five.
static const char SECTION_TAGS[SECTION_COUNT][4] = {
    {'H', 'E', 'A', 'D'}, {'V', 'O', 'C', 'B'}, {'P', 'A', 'R', 'M'},
    {'O', 'P', 'T', 'M'}, {'B', 'L', 'O', 'B'},
};
enum { SEC_HEAD, SEC_VOCB, SEC_PARM, SEC_OPTM, SEC_BLOB };

// ---- the container ------------------------------------------------------------

struct entry {
    char *key;
    char *value;
};

struct vocab {
    ts_ckpt_vocab pub;   // pub.name and pub.tokens point into the fields below
    char *name;
    char **tokens;       // count pointers into `text`
    char *text;          // every token, NUL-terminated, back to back
};

struct tensor {
    ts_ckpt_tensor pub;  // pub.name / pub.data alias name / data
    char *name;
    double *data;
};

struct blob {
    char *name;
    unsigned char *bytes;
    size_t n;
};

struct ts_ckpt {
    struct entry *entries;
    size_t n_entries, cap_entries;
    struct vocab *vocabs;
    size_t n_vocabs, cap_vocabs;
    struct tensor *tensors[2];
    size_t n_tensors[2], cap_tensors[2];
    struct blob *blobs;
    size_t n_blobs, cap_blobs;
    char *path;  // the file it was loaded from, NULL otherwise: named by every getter's error
};

// The getters' error prefix: "checkpoint PATH: " for a loaded file, else "checkpoint ".
#define FROM_FMT "checkpoint%s%s%s "
#define FROM(ck) (ck)->path ? " " : "", (ck)->path ? (ck)->path : "", (ck)->path ? ":" : ""


// Makes room for one more element in a growing array.
static int reserve(void **items, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return TS_OK;
    size_t new_cap = *cap ? *cap * 2 : 8;
    if (new_cap > SIZE_MAX / elem) return ts_fail(TS_ERR_NOMEM, "checkpoint: array too large");
    void *grown = realloc(*items, new_cap * elem);
    if (!grown) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    *items = grown;
    *cap = new_cap;
    return TS_OK;
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
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
    free(ck);
}

// ---- validation shared by the setters and the loader -----------------------------

// Header keys and vocabulary names: 1..255 bytes of [A-Za-z0-9_.-].
static int key_ok(const char *s, size_t n) {
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
static int name_ok(const char *s, size_t n) {
    if (n == 0 || n > TS_CKPT_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e || c == '=') return 0;
    }
    return 1;
}

// Header values: at most TS_CKPT_MAX_VALUE bytes, no NUL (implied for C
// strings), no newline (it ends the line in the file).
static int value_ok(const char *s, size_t n) {
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
static int token_ok(const char *s, size_t n) {
    return n <= TS_CKPT_MAX_TOKEN && !memchr(s, '\n', n) && !memchr(s, '\0', n) &&
           utf8_ok((const unsigned char *)s, n);
}

// ---- header --------------------------------------------------------------------

int ts_ckpt_set(ts_ckpt *ck, const char *key, const char *value) {
    if (!ck || !key || !value) return ts_fail(TS_ERR_ARG, "ts_ckpt_set: NULL argument");
    if (!key_ok(key, strlen(key)))
        return ts_fail(TS_ERR_ARG, "checkpoint header key '%.64s' is not 1..%d bytes of "
                       "[A-Za-z0-9_.-]", key, TS_CKPT_MAX_NAME);
    size_t vlen = strlen(value);
    if (!value_ok(value, vlen))
        return ts_fail(TS_ERR_ARG, "checkpoint header value for '%s' is longer than %d bytes "
                       "or holds a newline", key, TS_CKPT_MAX_VALUE);
    char *copy = dup_bytes(value, vlen);
    if (!copy) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    for (size_t i = 0; i < ck->n_entries; i++) {
        if (strcmp(ck->entries[i].key, key) == 0) {
            free(ck->entries[i].value);
            ck->entries[i].value = copy;
            return TS_OK;
        }
    }
    if (ck->n_entries >= TS_CKPT_MAX_ENTRIES) {
        free(copy);
        return ts_fail(TS_ERR_ARG, "checkpoint header: more than %d entries",
                       TS_CKPT_MAX_ENTRIES);
    }
    char *kcopy = dup_bytes(key, strlen(key));
    int rc = kcopy ? reserve((void **)&ck->entries, &ck->cap_entries, ck->n_entries,
                             sizeof *ck->entries)
                   : ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    if (rc != TS_OK) {
        free(kcopy);
        free(copy);
        return rc;
    }
    ck->entries[ck->n_entries++] = (struct entry){kcopy, copy};
    return TS_OK;
}

int ts_ckpt_set_int(ts_ckpt *ck, const char *key, int64_t value) {
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)value);
    return ts_ckpt_set(ck, key, text);
}

// Writes x as C99 hex-float text ("-0x1.8p+1") without printf's %a, whose
// radix character follows LC_NUMERIC. Needs 32 bytes.
static void format_hex_double(double x, char *text) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    if (isnan(x)) {
        strcpy(text, "nan");
        return;
    }
    char *p = text;
    if (bits >> 63) *p++ = '-';
    int biased = (int)((bits >> 52) & 0x7ff);
    uint64_t mant = bits & ((UINT64_C(1) << 52) - 1);
    if (biased == 0x7ff) {
        strcpy(p, "inf");
        return;
    }
    if (biased == 0 && mant == 0) {
        strcpy(p, "0x0p+0");
        return;
    }
    int lead = biased != 0;
    int exp = biased ? biased - 1023 : -1022;
    p += sprintf(p, "0x%d", lead);
    if (mant) {
        static const char hex[] = "0123456789abcdef";
        char digits[14];
        for (int k = 0; k < 13; k++) digits[k] = hex[(mant >> (48 - 4 * k)) & 0xf];
        int nd = 13;
        while (digits[nd - 1] == '0') nd--;
        *p++ = '.';
        memcpy(p, digits, (size_t)nd);
        p += nd;
    }
    sprintf(p, "p%+d", exp);
}

// Parses the canonical hex-float text format_hex_double writes. Returns 1 and
// sets *out on success, 0 for any other text (the caller then tries strtod).
static int parse_hex_double(const char *s, double *out) {
    int neg = *s == '-';
    if (neg) s++;
    if (strcmp(s, "inf") == 0) {
        *out = neg ? -INFINITY : INFINITY;
        return 1;
    }
    if (s[0] != '0' || s[1] != 'x' || (s[2] != '0' && s[2] != '1')) return 0;
    int lead = s[2] - '0';
    s += 3;
    uint64_t mant = 0;
    int nd = 0;
    if (*s == '.') {
        s++;
        for (; nd < 13; nd++, s++) {
            int v;
            if (*s >= '0' && *s <= '9') v = *s - '0';
            else if (*s >= 'a' && *s <= 'f') v = *s - 'a' + 10;
            else break;
            mant = (mant << 4) | (uint64_t)v;
        }
        if (nd == 0) return 0;
        mant <<= 4 * (13 - nd);
    }
    if (*s++ != 'p') return 0;
    int esign = 1;
    if (*s == '+' || *s == '-') esign = *s++ == '-' ? -1 : 1;
    int exp = 0, ed = 0;
    for (; *s >= '0' && *s <= '9' && ed < 5; s++, ed++) exp = exp * 10 + (*s - '0');
    if (ed == 0 || *s != '\0') return 0;
    exp *= esign;
    uint64_t bits;
    if (lead == 1 && exp >= -1022 && exp <= 1023) bits = ((uint64_t)(exp + 1023) << 52) | mant;
    else if (lead == 0 && mant == 0) bits = 0;
    else if (lead == 0 && exp == -1022) bits = mant;
    else return 0;
    if (neg) bits |= UINT64_C(1) << 63;
    memcpy(out, &bits, sizeof *out);
    return 1;
}

int ts_ckpt_set_double(ts_ckpt *ck, const char *key, double value) {
    char text[32];
    format_hex_double(value, text);
    return ts_ckpt_set(ck, key, text);
}

size_t ts_ckpt_header_count(const ts_ckpt *ck) { return ck->n_entries; }

void ts_ckpt_header_at(const ts_ckpt *ck, size_t i, const char **key, const char **value) {
    if (key) *key = ck->entries[i].key;
    if (value) *value = ck->entries[i].value;
}

int ts_ckpt_get_string(const ts_ckpt *ck, const char *key, const char **out) {
    const char *found = NULL;
    size_t times = 0;
    for (size_t i = 0; i < ck->n_entries; i++) {
        if (strcmp(ck->entries[i].key, key) == 0) {
            if (!found) found = ck->entries[i].value;
            times++;
        }
    }
    if (times == 0)
        return ts_fail(TS_ERR_FORMAT, FROM_FMT "header key '%.64s' is missing", FROM(ck), key);
    if (times > 1)
        return ts_fail(TS_ERR_FORMAT, FROM_FMT "header key '%.64s' appears %zu times",
                       FROM(ck), key, times);
    *out = found;
    return TS_OK;
}

int ts_ckpt_get_int(const ts_ckpt *ck, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    const char *text = NULL;
    int rc = ts_ckpt_get_string(ck, key, &text);
    if (rc != TS_OK) return rc;
    // strtoll alone would accept " 7", "+7" and "7abc".
    int shape_ok = (text[0] >= '0' && text[0] <= '9') ||
                   (text[0] == '-' && text[1] >= '0' && text[1] <= '9');
    char *end = NULL;
    errno = 0;
    long long v = shape_ok ? strtoll(text, &end, 10) : 0;
    if (!shape_ok || *end != '\0')
        return ts_fail(TS_ERR_FORMAT, FROM_FMT "header '%.64s' = '%.40s' is not an integer",
                       FROM(ck), key, text);
    if (errno == ERANGE || v < lo || v > hi) {
        if (v < 0 && lo >= 0)
            return ts_fail(TS_ERR_FORMAT, FROM_FMT "header '%.64s' = %.40s is negative",
                           FROM(ck), key, text);
        return ts_fail(TS_ERR_FORMAT, FROM_FMT "header '%.64s' = %.40s is out of bounds "
                       "[%lld, %lld]", FROM(ck), key, text, (long long)lo, (long long)hi);
    }
    *out = v;
    return TS_OK;
}

int ts_ckpt_get_double(const ts_ckpt *ck, const char *key, double lo, double hi, double *out) {
    const char *text = NULL;
    int rc = ts_ckpt_get_string(ck, key, &text);
    if (rc != TS_OK) return rc;
    double v;
    if (!parse_hex_double(text, &v)) {
        int shape_ok = text[0] == '-' || text[0] == '.' || (text[0] >= '0' && text[0] <= '9');
        char *end = NULL;
        v = shape_ok ? strtod(text, &end) : 0.0;
        if (!shape_ok || *end != '\0')
            return ts_fail(TS_ERR_FORMAT, FROM_FMT "header '%.64s' = '%.40s' is not a number",
                           FROM(ck), key, text);
    }
    if (isnan(v))
        return ts_fail(TS_ERR_FORMAT, FROM_FMT "header '%.64s' is NaN", FROM(ck), key);
    if (!(v >= lo && v <= hi)) {
        if (v < 0 && lo >= 0)
            return ts_fail(TS_ERR_FORMAT, FROM_FMT "header '%.64s' = %.40s is negative",
                           FROM(ck), key, text);
        return ts_fail(TS_ERR_FORMAT, FROM_FMT "header '%.64s' = %.40s is out of bounds "
                       "[%.17g, %.17g]", FROM(ck), key, text, lo, hi);
    }
    *out = v;
    return TS_OK;
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
static int push_vocab(ts_ckpt *ck, char *name, char **tokens, char *text, size_t count) {
    int rc = reserve((void **)&ck->vocabs, &ck->cap_vocabs, ck->n_vocabs, sizeof *ck->vocabs);
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
    if (!key_ok(name, strlen(name)))
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
        if (!token_ok(tokens[i], len))
            return ts_fail(TS_ERR_ARG, "checkpoint vocabulary '%s': token %zu is not valid "
                           "UTF-8 of at most %d bytes without newline", name, i,
                           TS_CKPT_MAX_TOKEN);
        total += len + 1; // bounded: n <= 2^24 tokens of <= 1025 bytes
    }
    char *name_copy = dup_bytes(name, strlen(name));
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
    return push_vocab(ck, name_copy, ptrs, text, n);
}

// ---- tensors -----------------------------------------------------------------------

static int section_ok(enum ts_ckpt_section s) { return s == TS_CKPT_PARAMS || s == TS_CKPT_OPTIM; }

static const char *section_noun(enum ts_ckpt_section s) {
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
static int shape_size(int ndim, const size_t *shape, size_t limit, size_t *size) {
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
static int push_tensor(ts_ckpt *ck, enum ts_ckpt_section section, char *name, int ndim,
                       const size_t *shape, size_t size, double *data) {
    int rc = reserve((void **)&ck->tensors[section], &ck->cap_tensors[section],
                     ck->n_tensors[section], sizeof *ck->tensors[section]);
    if (rc != TS_OK) {
        free(name);
        free(data);
        return rc;
    }
    struct tensor *t = &ck->tensors[section][ck->n_tensors[section]++];
    *t = (struct tensor){.name = name, .data = data};
    t->pub = (ts_ckpt_tensor){.name = name, .ndim = ndim, .size = size, .data = data};
    for (int d = 0; d < TS_CKPT_MAX_NDIM; d++) t->pub.shape[d] = d < ndim ? shape[d] : 1;
    return TS_OK;
}

int ts_ckpt_add_tensor(ts_ckpt *ck, enum ts_ckpt_section section, const char *name,
                       int ndim, const size_t *shape, const double *data) {
    if (!ck || !name || (ndim > 0 && !shape))
        return ts_fail(TS_ERR_ARG, "ts_ckpt_add_tensor: NULL argument");
    if (!section_ok(section))
        return ts_fail(TS_ERR_ARG, "ts_ckpt_add_tensor: bad section %d", (int)section);
    if (!name_ok(name, strlen(name)))
        return ts_fail(TS_ERR_ARG, "checkpoint tensor name '%.64s' is not 1..%d printable "
                       "bytes without space or '='", name, TS_CKPT_MAX_NAME);
    if (ndim < 0 || ndim > TS_CKPT_MAX_NDIM)
        return ts_fail(TS_ERR_ARG, "checkpoint tensor '%s': ndim %d not in 0..%d", name, ndim,
                       TS_CKPT_MAX_NDIM);
    if (ts_ckpt_find_tensor(ck, section, name))
        return ts_fail(TS_ERR_ARG, "checkpoint already has a %s tensor '%s'",
                       section_noun(section), name);
    if (ck->n_tensors[section] >= TS_CKPT_MAX_TENSORS)
        return ts_fail(TS_ERR_ARG, "checkpoint: more than %d %s tensors", TS_CKPT_MAX_TENSORS,
                       section_noun(section));
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0)
            return ts_fail(TS_ERR_ARG, "checkpoint tensor '%s': dimension %d is 0", name, d);
    size_t size;
    if (!shape_size(ndim, shape, SIZE_MAX / sizeof(double), &size))
        return ts_fail(TS_ERR_ARG, "checkpoint tensor '%s': shape too large", name);
    if (!data) return ts_fail(TS_ERR_ARG, "checkpoint tensor '%s': NULL data", name);
    char *name_copy = dup_bytes(name, strlen(name));
    double *copy = malloc(size * sizeof *copy);
    if (!name_copy || !copy) {
        free(name_copy);
        free(copy);
        return ts_fail(TS_ERR_NOMEM, "checkpoint tensor '%s': out of memory", name);
    }
    memcpy(copy, data, size * sizeof *copy);
    return push_tensor(ck, section, name_copy, ndim, shape, size, copy);
}

double *ts_ckpt_take_tensor_data(ts_ckpt *ck, enum ts_ckpt_section section, const char *name) {
    if (!section_ok(section) || !name) return NULL;
    for (size_t i = 0; i < ck->n_tensors[section]; i++) {
        struct tensor *t = &ck->tensors[section][i];
        if (strcmp(t->name, name)) continue;
        double *data = t->data;
        t->data = NULL;
        t->pub.data = NULL;
        return data;
    }
    return NULL;
}

int ts_ckpt_expect_tensor(const ts_ckpt *ck, enum ts_ckpt_section section, const char *name,
                          int ndim, const size_t *shape, const ts_ckpt_tensor **out) {
    const ts_ckpt_tensor *t = ts_ckpt_find_tensor(ck, section, name);
    if (!t)
        return ts_fail(TS_ERR_FORMAT, FROM_FMT "has no %s tensor '%.64s'", FROM(ck),
                       section_ok(section) ? section_noun(section) : "such", name);
    int same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char got[96], want[96];
        shape_text(t->ndim, t->shape, got, sizeof got);
        shape_text(ndim, shape, want, sizeof want);
        return ts_fail(TS_ERR_SHAPE, FROM_FMT "%s tensor '%.64s' has shape %s, expected %s",
                       FROM(ck), section_noun(section), name, got, want);
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

static struct blob *find_blob(const ts_ckpt *ck, const char *name) {
    for (size_t i = 0; i < ck->n_blobs; i++)
        if (strcmp(ck->blobs[i].name, name) == 0) return &ck->blobs[i];
    return NULL;
}

int ts_ckpt_get_blob(const ts_ckpt *ck, const char *name, const void **bytes, size_t *n) {
    const struct blob *b = find_blob(ck, name);
    if (!b) return ts_fail(TS_ERR_FORMAT, FROM_FMT "has no blob '%.64s'", FROM(ck), name);
    *bytes = b->bytes;
    *n = b->n;
    return TS_OK;
}

int ts_ckpt_set_blob(ts_ckpt *ck, const char *name, const void *bytes, size_t n) {
    if (!ck || !name || (!bytes && n))
        return ts_fail(TS_ERR_ARG, "ts_ckpt_set_blob: NULL argument");
    if (!name_ok(name, strlen(name)))
        return ts_fail(TS_ERR_ARG, "checkpoint blob name '%.64s' is not 1..%d printable "
                       "bytes without space or '='", name, TS_CKPT_MAX_NAME);
    unsigned char *copy = malloc(n ? n : 1);
    if (!copy) return ts_fail(TS_ERR_NOMEM, "checkpoint blob '%s': out of memory", name);
    if (n) memcpy(copy, bytes, n);
    struct blob *b = find_blob(ck, name);
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
    char *name_copy = dup_bytes(name, strlen(name));
    int rc = name_copy ? reserve((void **)&ck->blobs, &ck->cap_blobs, ck->n_blobs,
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

// ---- little-endian encoding --------------------------------------------------------

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

// zlib's crc32 takes a uInt length; feed huge buffers in pieces.
static uint32_t crc_update(uint32_t crc, const unsigned char *p, size_t n) {
    uLong c = crc;
    while (n > 0) {
        uInt piece = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, piece);
        p += piece;
        n -= piece;
    }
    return (uint32_t)c;
}

// ---- writing: sizing pass ------------------------------------------------------------

static uint64_t head_body_size(const ts_ckpt *ck) {
    uint64_t n = 0;
    for (size_t i = 0; i < ck->n_entries; i++)
        n += strlen(ck->entries[i].key) + 1 + strlen(ck->entries[i].value) + 1;
    return n;
}

static uint64_t vocab_body_size(const ts_ckpt *ck) {
    uint64_t n = 4;
    for (size_t i = 0; i < ck->n_vocabs; i++) {
        const struct vocab *v = &ck->vocabs[i];
        n += 4 + strlen(v->name) + 4;
        for (size_t k = 0; k < v->pub.count; k++) n += 4 + strlen(v->tokens[k]);
    }
    return n;
}

static uint64_t tensor_body_size(const ts_ckpt *ck, int section) {
    uint64_t n = 4;
    for (size_t i = 0; i < ck->n_tensors[section]; i++) {
        const struct tensor *t = &ck->tensors[section][i];
        n += 4 + strlen(t->name) + 4 + 8 * (uint64_t)t->pub.ndim + 8 * (uint64_t)t->pub.size;
    }
    return n;
}

static uint64_t blob_body_size(const ts_ckpt *ck) {
    uint64_t n = 4;
    for (size_t i = 0; i < ck->n_blobs; i++)
        n += 4 + strlen(ck->blobs[i].name) + 8 + ck->blobs[i].n;
    return n;
}

// ---- writing: the deflate sink --------------------------------------------------------

// Serialised bytes go through `stage` (so tiny fields don't each cost a
// deflate call), the running CRCs, then deflate, then to a file or memory.
struct sink {
    z_stream z;
    gz_header gzhead;
    int z_ready;
    uint32_t crc_section, crc_payload;
    unsigned char stage[CHUNK];
    size_t staged;
    unsigned char out[CHUNK];
    // file target
    int fd;
    const ts_ckpt_save_opts *opts;
    const char *path;
    // memory target (fd < 0)
    unsigned char *mem;
    size_t mem_len, mem_cap;
    int status; // first failure, TS_OK until then
};

static int sink_output(struct sink *s, const unsigned char *p, size_t n) {
    if (s->fd < 0) {
        if (n > s->mem_cap - s->mem_len) {
            size_t cap = s->mem_cap ? s->mem_cap : CHUNK;
            while (n > cap - s->mem_len) cap *= 2;
            unsigned char *grown = realloc(s->mem, cap);
            if (!grown) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
            s->mem = grown;
            s->mem_cap = cap;
        }
        memcpy(s->mem + s->mem_len, p, n);
        s->mem_len += n;
        return TS_OK;
    }
    while (n > 0) {
        ssize_t w = s->opts && s->opts->write ? s->opts->write(s->opts->ctx, s->fd, p, n)
                                              : write(s->fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return ts_fail(TS_ERR_IO, "cannot save checkpoint %s: write failed: %s", s->path,
                           w < 0 ? strerror(errno) : "wrote 0 bytes");
        p += w;
        n -= (size_t)w;
    }
    return TS_OK;
}

// Runs deflate over the staged bytes with `flush`, writing what it produces.
static int sink_deflate(struct sink *s, int flush) {
    s->z.next_in = s->stage;
    s->z.avail_in = (uInt)s->staged;
    for (;;) {
        s->z.next_out = s->out;
        s->z.avail_out = sizeof s->out;
        int ret = deflate(&s->z, flush);
        if (ret == Z_STREAM_ERROR)
            return ts_fail(TS_ERR_NOMEM, "checkpoint: deflate failed");
        size_t produced = sizeof s->out - s->z.avail_out;
        int rc = sink_output(s, s->out, produced);
        if (rc != TS_OK) return rc;
        if (flush == Z_FINISH ? ret == Z_STREAM_END : s->z.avail_out != 0) break;
    }
    s->staged = 0;
    return TS_OK;
}

static void emit(struct sink *s, const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    while (n > 0 && s->status == TS_OK) {
        size_t piece = sizeof s->stage - s->staged;
        if (piece > n) piece = n;
        memcpy(s->stage + s->staged, p, piece);
        s->crc_section = crc_update(s->crc_section, p, piece);
        s->crc_payload = crc_update(s->crc_payload, p, piece);
        s->staged += piece;
        p += piece;
        n -= piece;
        if (s->staged == sizeof s->stage) s->status = sink_deflate(s, Z_NO_FLUSH);
    }
}

static void emit_u32(struct sink *s, uint32_t v) {
    unsigned char b[4];
    put_u32(b, v);
    emit(s, b, 4);
}

static void emit_u64(struct sink *s, uint64_t v) {
    unsigned char b[8];
    put_u64(b, v);
    emit(s, b, 8);
}

static void emit_name(struct sink *s, const char *name) {
    size_t n = strlen(name);
    emit_u32(s, (uint32_t)n);
    emit(s, name, n);
}

static void section_begin(struct sink *s, int tag, uint64_t body_len) {
    s->crc_section = 0;
    emit(s, SECTION_TAGS[tag], 4);
    emit_u64(s, body_len);
}

static void section_end(struct sink *s) {
    emit_u32(s, s->crc_section); // itself covered by the payload CRC only
}

static void emit_tensors(struct sink *s, const ts_ckpt *ck, int section) {
    emit_u32(s, (uint32_t)ck->n_tensors[section]);
    for (size_t i = 0; i < ck->n_tensors[section]; i++) {
        const struct tensor *t = &ck->tensors[section][i];
        emit_name(s, t->name);
        emit_u32(s, (uint32_t)t->pub.ndim);
        for (int d = 0; d < t->pub.ndim; d++) emit_u64(s, t->pub.shape[d]);
        // Explicit little-endian so files move between hosts.
        unsigned char b[8 * 512];
        for (size_t k = 0; k < t->pub.size;) {
            size_t m = 0;
            for (; m < 512 && k < t->pub.size; m++, k++) {
                uint64_t bits;
                memcpy(&bits, &t->data[k], 8);
                put_u64(b + 8 * m, bits);
            }
            emit(s, b, 8 * m);
        }
    }
}

// Serialises the whole payload into the sink and finishes the gzip stream.
static int serialise(struct sink *s, const ts_ckpt *ck) {
    memset(&s->z, 0, sizeof s->z);
    if (deflateInit2(&s->z, ZLEVEL, Z_DEFLATED, GZIP_WINDOW, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return ts_fail(TS_ERR_NOMEM, "checkpoint: deflateInit2 failed");
    s->z_ready = 1;
    // No name, mtime 0 and a fixed OS byte: the header depends on nothing but
    // the format, so the same content gives the same bytes on every host.
    memset(&s->gzhead, 0, sizeof s->gzhead);
    s->gzhead.os = GZIP_OS_UNKNOWN;
    if (deflateSetHeader(&s->z, &s->gzhead) != Z_OK)
        return ts_fail(TS_ERR_NOMEM, "checkpoint: deflateSetHeader failed");

    uint64_t body[SECTION_COUNT] = {
        head_body_size(ck), vocab_body_size(ck), tensor_body_size(ck, TS_CKPT_PARAMS),
        tensor_body_size(ck, TS_CKPT_OPTIM), blob_body_size(ck),
    };
    uint64_t payload_len = TRAILER_SIZE;
    for (int i = 0; i < SECTION_COUNT; i++) payload_len += SECTION_OVERHEAD + body[i];

    unsigned char prelude[PRELUDE_SIZE] = {0};
    memcpy(prelude, MAGIC, 8);
    put_u32(prelude + 8, TS_CKPT_VERSION);
    put_u32(prelude + 12, 0); // flags
    put_u64(prelude + 16, payload_len);
    put_u32(prelude + 24, 0); // reserved
    put_u32(prelude + 28, crc_update(0, prelude, 28));
    s->crc_payload = 0;
    emit(s, prelude, sizeof prelude);

    section_begin(s, SEC_HEAD, body[SEC_HEAD]);
    for (size_t i = 0; i < ck->n_entries; i++) {
        emit(s, ck->entries[i].key, strlen(ck->entries[i].key));
        emit(s, "=", 1);
        emit(s, ck->entries[i].value, strlen(ck->entries[i].value));
        emit(s, "\n", 1);
    }
    section_end(s);

    section_begin(s, SEC_VOCB, body[SEC_VOCB]);
    emit_u32(s, (uint32_t)ck->n_vocabs);
    for (size_t i = 0; i < ck->n_vocabs; i++) {
        const struct vocab *v = &ck->vocabs[i];
        emit_name(s, v->name);
        emit_u32(s, (uint32_t)v->pub.count);
        for (size_t k = 0; k < v->pub.count; k++) emit_name(s, v->tokens[k]);
    }
    section_end(s);

    section_begin(s, SEC_PARM, body[SEC_PARM]);
    emit_tensors(s, ck, TS_CKPT_PARAMS);
    section_end(s);
    section_begin(s, SEC_OPTM, body[SEC_OPTM]);
    emit_tensors(s, ck, TS_CKPT_OPTIM);
    section_end(s);

    section_begin(s, SEC_BLOB, body[SEC_BLOB]);
    emit_u32(s, (uint32_t)ck->n_blobs);
    for (size_t i = 0; i < ck->n_blobs; i++) {
        emit_name(s, ck->blobs[i].name);
        emit_u64(s, ck->blobs[i].n);
        emit(s, ck->blobs[i].bytes, ck->blobs[i].n);
    }
    section_end(s);

    emit_u32(s, s->crc_payload);
    if (s->status != TS_OK) return s->status;
    if (s->z.total_in + s->staged != PRELUDE_SIZE + payload_len)
        return ts_fail(TS_ERR_ARG, "checkpoint: internal error, sizing pass disagrees");
    return sink_deflate(s, Z_FINISH);
}

static void sink_close(struct sink *s) {
    if (s->z_ready) deflateEnd(&s->z);
    s->z_ready = 0;
}

int ts_ckpt_save_mem(const ts_ckpt *ck, unsigned char **out, size_t *len) {
    if (!ck || !out || !len) return ts_fail(TS_ERR_ARG, "ts_ckpt_save_mem: NULL argument");
    struct sink *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    s->fd = -1;
    int rc = serialise(s, ck);
    sink_close(s);
    if (rc == TS_OK) {
        *out = s->mem;
        *len = s->mem_len;
    } else {
        free(s->mem);
    }
    free(s);
    return rc;
}

// The directory part of `path` ("." when it has none), malloc'd.
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return dup_bytes(".", 1);
    if (slash == path) return dup_bytes("/", 1);
    return dup_bytes(path, (size_t)(slash - path));
}

int ts_ckpt_save(const ts_ckpt *ck, const char *path) { return ts_ckpt_save_ex(ck, path, NULL); }

int ts_ckpt_save_ex(const ts_ckpt *ck, const char *path, const ts_ckpt_save_opts *opts) {
    if (!ck || !path || !*path) return ts_fail(TS_ERR_ARG, "ts_ckpt_save: NULL argument");
    size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof ".tmp-XXXXXX");
    char *dir = dir_of(path);
    struct sink *s = calloc(1, sizeof *s);
    if (!tmp || !dir || !s) {
        free(tmp);
        free(dir);
        free(s);
        return ts_fail(TS_ERR_NOMEM, "checkpoint: out of memory");
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");

    int rc = TS_OK;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        rc = ts_fail(TS_ERR_IO, "cannot save checkpoint %s: cannot create temporary file "
                     "in %s: %s", path, dir, strerror(errno));
        goto done;
    }
    // mkstemp makes 0600; a checkpoint is an ordinary file.
    if (fchmod(fd, 0644) != 0) {
        rc = ts_fail(TS_ERR_IO, "cannot save checkpoint %s: fchmod %s: %s", path, tmp,
                     strerror(errno));
        goto fail;
    }
    s->fd = fd;
    s->opts = opts;
    s->path = path;
    rc = serialise(s, ck);
    if (rc != TS_OK) goto fail;
    int synced = opts && opts->fsync ? opts->fsync(opts->ctx, fd) : fsync(fd);
    if (synced != 0) {
        rc = ts_fail(TS_ERR_IO, "cannot save checkpoint %s: fsync %s: %s", path, tmp,
                     strerror(errno));
        goto fail;
    }
    int closed = close(fd);
    fd = -1;
    if (closed != 0) {
        rc = ts_fail(TS_ERR_IO, "cannot save checkpoint %s: close %s: %s", path, tmp,
                     strerror(errno));
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        rc = ts_fail(TS_ERR_IO, "cannot save checkpoint %s: rename from %s: %s", path, tmp,
                     strerror(errno));
        goto fail;
    }
    // The rename is only durable once the directory entry is on disk.
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL)) {
        rc = ts_fail(TS_ERR_IO, "checkpoint %s was renamed into place but fsync of directory "
                     "%s failed: %s", path, dir, strerror(errno));
    }
    if (dfd >= 0) close(dfd);
    goto done;

fail:
    if (fd >= 0) close(fd);
    unlink(tmp);
done:
    sink_close(s);
    free(s);
    free(tmp);
    free(dir);
    return rc;
}

// ---- loading: inflate ------------------------------------------------------------------

// Where compressed bytes come from: one memory buffer, or a FILE read in chunks.
struct source {
    const unsigned char *mem;
    size_t mem_len;
    FILE *file;
    unsigned char *chunk;
    const char *what; // path or "<memory>", for messages
    uint64_t consumed;
};

// Next compressed bytes into *p/*n; *n == 0 at end of input.
static int source_next(struct source *src, const unsigned char **p, size_t *n) {
    if (!src->file) {
        *p = src->mem;
        *n = src->mem_len;
        src->mem_len = 0;
    } else {
        *p = src->chunk;
        *n = fread(src->chunk, 1, CHUNK, src->file);
        if (*n == 0 && ferror(src->file))
            return ts_fail(TS_ERR_IO, "cannot read checkpoint %s: %s", src->what,
                           strerror(errno));
    }
    src->consumed += *n;
    return TS_OK;
}

// Checks the 32-byte prelude; on success *total is the whole payload size.
static int check_prelude(const unsigned char *p, uint64_t cap, const char *what,
                         size_t *total) {
    if (memcmp(p, MAGIC, 8) != 0)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: bad magic (not a tinyseq checkpoint)",
                       what);
    uint32_t version = get_u32(p + 8);
    if (version != TS_CKPT_VERSION)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: format version %u, this build reads "
                       "version %u", what, version, TS_CKPT_VERSION);
    if (CRC_CHECKED && get_u32(p + 28) != crc_update(0, p, 28))
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: prelude CRC mismatch", what);
    if (get_u32(p + 12) != 0)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: unknown flags 0x%x", what, get_u32(p + 12));
    if (get_u32(p + 24) != 0)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: reserved prelude field is not 0", what);
    uint64_t payload_len = get_u64(p + 16);
    uint64_t min = SECTION_COUNT * SECTION_OVERHEAD + 4 * 4 + TRAILER_SIZE;
    if (payload_len < min)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: declared payload of %llu bytes is "
                       "shorter than the %llu-byte minimum", what,
                       (unsigned long long)payload_len, (unsigned long long)min);
    if (payload_len > cap || payload_len > SIZE_MAX - PRELUDE_SIZE)
        return ts_fail(TS_ERR_FORMAT, "checkpoint %s: declared payload of %llu bytes exceeds "
                       "the limit of %llu bytes", what, (unsigned long long)payload_len,
                       (unsigned long long)cap);
    *total = PRELUDE_SIZE + (size_t)payload_len;
    return TS_OK;
}

// The last 8 bytes of the compressed input seen so far: at the end, gzip's
// trailer (CRC-32 and size of the payload).
static void keep_tail(unsigned char tail[8], const unsigned char *p, size_t n) {
    if (n >= 8) {
        memcpy(tail, p + n - 8, 8);
    } else if (n > 0) {
        memmove(tail, tail + n, 8 - n);
        memcpy(tail + 8 - n, p, n);
    }
}

// Inflates the single gzip member into *out (malloc'd, *len bytes), checking
// the prelude as soon as it arrives and never holding more than the declared
// size, then rejecting anything after the member. zlib does not check gzip's
// CRC and size: the caller does, from the CRCs it computes anyway, with the
// trailer left in gzip_trailer (one pass over the payload fewer).
static int inflate_payload(struct source *src, uint64_t cap, unsigned char **out,
                           size_t *len, unsigned char gzip_trailer[8]) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, GZIP_WINDOW) != Z_OK)
        return ts_fail(TS_ERR_NOMEM, "checkpoint %s: inflateInit2 failed", src->what);
    inflateValidate(&z, 0);  // gzip's CRC and size: see parse_payload
    memset(gzip_trailer, 0, 8);
    size_t have = 0, buf_cap = PRELUDE_SIZE, total = 0; // total known after the prelude
    unsigned char *buf = malloc(buf_cap);
    unsigned char extra;
    int at_eof = 0, rc = TS_OK;
    if (!buf) {
        rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", src->what);
        goto done;
    }
    for (;;) {
        if (z.avail_in == 0 && !at_eof) {
            const unsigned char *p;
            size_t n;
            if ((rc = source_next(src, &p, &n)) != TS_OK) goto done;
            // uInt is 32 bits: a memory source over 4 GiB is fed in pieces.
            if (n > UINT_MAX) {
                src->mem = p + UINT_MAX;
                src->mem_len = n - UINT_MAX;
                n = UINT_MAX;
            }
            z.next_in = (unsigned char *)p;
            z.avail_in = (uInt)n;
            at_eof = n == 0;
        }
        int past_end = total && have == total;
        if (past_end) {
            z.next_out = &extra; // any byte landing here is one too many
            z.avail_out = 1;
        } else {
            size_t want = total ? total : PRELUDE_SIZE;
            if (have == buf_cap) {
                // Grow with the bytes actually inflated, not the declared
                // size, so a lying prelude costs no memory.
                size_t grown = buf_cap <= want / 2 ? buf_cap * 2 : want;
                if (grown < ((size_t)1 << 20))
                    grown = want < ((size_t)1 << 20) ? want : ((size_t)1 << 20);
                unsigned char *bigger = realloc(buf, grown);
                if (!bigger) {
                    rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", src->what);
                    goto done;
                }
                buf = bigger;
                buf_cap = grown;
            }
            size_t room = (total ? buf_cap : PRELUDE_SIZE) - have;
            z.next_out = buf + have;
            z.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        }
        uInt before = z.avail_out, in_before = z.avail_in;
        const unsigned char *in = z.next_in;
        int ret = inflate(&z, Z_NO_FLUSH);
        keep_tail(gzip_trailer, in, in_before - z.avail_in);
        size_t produced = before - z.avail_out;
        if (past_end && produced) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: payload is longer than its declared "
                         "%zu bytes", src->what, total - PRELUDE_SIZE);
            goto done;
        }
        have += produced;
        if (!total && have == PRELUDE_SIZE) {
            if ((rc = check_prelude(buf, cap, src->what, &total)) != TS_OK) goto done;
        }
        if (ret == Z_STREAM_END) break;
        if (ret == Z_DATA_ERROR) {
            if (have == 0 && z.msg &&
                (strstr(z.msg, "header") || strstr(z.msg, "compression method")))
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: not a gzip file (%s)", src->what,
                             z.msg);
            else
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: corrupt gzip data: %s", src->what,
                             z.msg ? z.msg : "?");
            goto done;
        }
        if (ret == Z_MEM_ERROR) {
            rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory in inflate", src->what);
            goto done;
        }
        if (ret == Z_NEED_DICT || ret == Z_STREAM_ERROR) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: corrupt gzip data", src->what);
            goto done;
        }
        // Z_BUF_ERROR: no progress possible, so the input has run out.
        if (ret == Z_BUF_ERROR && z.avail_in == 0 && at_eof) {
            if (src->consumed == 0)
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: empty file", src->what);
            else
                rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: truncated: the gzip stream ends "
                             "early (after %zu payload bytes)", src->what, have);
            goto done;
        }
    }
    if (have < PRELUDE_SIZE || have < total) {
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: truncated payload: the stream ends after "
                     "%zu of %zu bytes", src->what, have, total ? total : (size_t)PRELUDE_SIZE);
        goto done;
    }
    // Exactly one gzip member and nothing after it.
    if (z.avail_in == 0 && !at_eof) {
        const unsigned char *p;
        size_t n;
        if ((rc = source_next(src, &p, &n)) != TS_OK) goto done;
        z.avail_in = n > UINT_MAX ? UINT_MAX : (uInt)n;
    }
    if (z.avail_in != 0) {
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: trailing bytes after the gzip stream",
                     src->what);
        goto done;
    }
done:
    inflateEnd(&z);
    if (rc != TS_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = have;
    return TS_OK;
}

// ---- loading: parse ----------------------------------------------------------------------

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
        if (!key_ok(line, klen))
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: header key at offset %zu is not 1..%d "
                           "bytes of [A-Za-z0-9_.-]", r->what, r->pos, TS_CKPT_MAX_NAME);
        if (!value_ok(eq + 1, vlen))
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: header value of '%.*s' is longer "
                           "than %d bytes or holds a NUL", r->what, (int)klen, line,
                           TS_CKPT_MAX_VALUE);
        if (ck->n_entries >= TS_CKPT_MAX_ENTRIES)
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: header has more than %d entries",
                           r->what, TS_CKPT_MAX_ENTRIES);
        // Duplicates are kept: the typed getters report them by key.
        char *key = dup_bytes(line, klen), *value = dup_bytes(eq + 1, vlen);
        int rc = key && value ? reserve((void **)&ck->entries, &ck->cap_entries, ck->n_entries,
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
        if ((rc = read_string(r, "vocabulary name", TS_CKPT_MAX_NAME, key_ok, &name, &nlen)))
            return rc;
        if ((rc = read_count(r, "token count", TS_CKPT_MAX_TOKENS, 4, &count))) return rc;
        // First pass: validate every token and size the text; second: copy.
        size_t start = r->pos, text_len = 0;
        for (uint32_t k = 0; k < count; k++) {
            const char *tok;
            size_t tlen = 0;
            if ((rc = read_string(r, "token", TS_CKPT_MAX_TOKEN, token_ok, &tok, &tlen)))
                return rc;
            text_len += tlen + 1;
        }
        char *name_copy = dup_bytes(name, nlen);
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
        rc = push_vocab(ck, name_copy, tokens, text, count);
    }
    return rc;
}

static int compare_names(const void *a, const void *b) {
    const struct tensor *x = *(const struct tensor *const *)a;
    const struct tensor *y = *(const struct tensor *const *)b;
    return strcmp(x->name, y->name);
}

static int parse_tensors(struct reader *r, ts_ckpt *ck, enum ts_ckpt_section section) {
    uint32_t n;
    // Smallest entry: name length (4) + 1 name byte + ndim (4).
    int rc = read_count(r, "tensor count", TS_CKPT_MAX_TENSORS, 9, &n);
    for (uint32_t i = 0; rc == TS_OK && i < n; i++) {
        const char *name = NULL;
        size_t nlen = 0;
        uint32_t ndim;
        size_t shape[TS_CKPT_MAX_NDIM], size;
        if ((rc = read_string(r, "tensor name", TS_CKPT_MAX_NAME, name_ok, &name, &nlen)))
            return rc;
        if ((rc = read_u32(r, "ndim", &ndim))) return rc;
        if (ndim > TS_CKPT_MAX_NDIM)
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: tensor '%.*s' has ndim %u > %d",
                           r->what, (int)nlen, name, ndim, TS_CKPT_MAX_NDIM);
        for (uint32_t d = 0; d < ndim; d++) {
            uint64_t dim;
            if ((rc = read_u64(r, "tensor dimension", &dim))) return rc;
            if (dim == 0 || dim > remaining(r) / 8)
                return ts_fail(TS_ERR_FORMAT, "checkpoint %s: tensor '%.*s' dimension %u = %llu "
                               "is 0 or does not fit in the %zu bytes left", r->what, (int)nlen,
                               name, d, (unsigned long long)dim, remaining(r));
            shape[d] = (size_t)dim;
        }
        if (!shape_size((int)ndim, shape, remaining(r) / 8, &size))
            return ts_fail(TS_ERR_FORMAT, "checkpoint %s: tensor '%.*s' data does not fit in the "
                           "%zu bytes left", r->what, (int)nlen, name, remaining(r));
        char *name_copy = dup_bytes(name, nlen);
        double *data = malloc(size * sizeof *data); // size >= 1: every dim is >= 1
        if (!name_copy || !data) {
            free(name_copy);
            free(data);
            return ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
        }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(data, r->p + r->pos, 8 * size);  // the file's byte order is this host's
#else
        for (size_t k = 0; k < size; k++) {
            uint64_t bits = get_u64(r->p + r->pos + 8 * k);
            memcpy(&data[k], &bits, 8);
        }
#endif
        r->pos += 8 * size;
        rc = push_tensor(ck, section, name_copy, (int)ndim, shape, size, data);
    }
    if (rc != TS_OK || n < 2) return rc;
    // Names must be unique in a section; sort pointers instead of an n^2 scan.
    struct tensor **sorted = malloc(n * sizeof *sorted);
    if (!sorted) return ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
    for (uint32_t i = 0; i < n; i++) sorted[i] = &ck->tensors[section][i];
    qsort(sorted, n, sizeof *sorted, compare_names);
    for (uint32_t i = 1; i < n && rc == TS_OK; i++)
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: %s tensor '%s' appears twice", r->what,
                         section_noun(section), sorted[i]->name);
    free(sorted);
    return rc;
}

static int parse_blobs(struct reader *r, ts_ckpt *ck) {
    uint32_t n;
    int rc = read_count(r, "blob count", TS_CKPT_MAX_BLOBS, 13, &n);
    for (uint32_t i = 0; rc == TS_OK && i < n; i++) {
        const char *name = NULL;
        size_t nlen = 0;
        uint64_t len;
        if ((rc = read_string(r, "blob name", TS_CKPT_MAX_NAME, name_ok, &name, &nlen))) return rc;
        if ((rc = read_u64(r, "blob length", &len))) return rc;
        if ((rc = need(r, len, "blob bytes"))) return rc;
        char *name_copy = dup_bytes(name, nlen);
        if (!name_copy) return ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", r->what);
        if (find_blob(ck, name_copy)) {
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
// reported by section; the payload CRC comes last.
static int parse_payload(const unsigned char *p, size_t total, const char *what, int skip_training,
                         const unsigned char gzip_trailer[8], ts_ckpt **out) {
    ts_ckpt *ck = ts_ckpt_new();
    if (!ck) return TS_ERR_NOMEM;
    struct reader r = {p, PRELUDE_SIZE, total - TRAILER_SIZE, what, "?"};
    int rc = TS_OK;
    // The payload CRC is built from the prelude's and each section's CRC
    // (crc32_combine): the same value as a second pass over every byte.
    uLong payload_crc = crc32(0, p, PRELUDE_SIZE);
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
        uint32_t section_crc = CRC_CHECKED ? crc_update(0, p + start, body_end - start) : 0;
        if (CRC_CHECKED && get_u32(p + body_end) != section_crc) {
            rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: section %s CRC mismatch", what, tag);
            break;
        }
        payload_crc = crc32_combine(payload_crc, section_crc, (z_off_t)(body_end - start));
        payload_crc = crc32(payload_crc, p + body_end, 4);
        struct reader body = {p, r.pos, body_end, what, tag};
        if (skip_training && (sec == SEC_OPTM || sec == SEC_BLOB)) body.pos = body_end;  // checked, not parsed
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
    if (rc == TS_OK && CRC_CHECKED &&
        (get_u32(gzip_trailer) != (uint32_t)crc32(payload_crc, p + total - TRAILER_SIZE, TRAILER_SIZE) ||
         get_u32(gzip_trailer + 4) != (uint32_t)total))
        rc = ts_fail(TS_ERR_FORMAT, "checkpoint %s: corrupt gzip data: its CRC or size does not match", what);
    if (rc != TS_OK) {
        ts_ckpt_free(ck);
        return rc;
    }
    *out = ck;
    return TS_OK;
}

static int load_from(struct source *src, const ts_ckpt_load_opts *opts, ts_ckpt **out) {
    uint64_t cap = opts && opts->max_payload ? opts->max_payload : TS_CKPT_DEFAULT_MAX_PAYLOAD;
    unsigned char *payload = NULL;
    size_t len = 0;
    unsigned char gzip_trailer[8];
    int rc = inflate_payload(src, cap, &payload, &len, gzip_trailer);
    if (rc != TS_OK) return rc;
    rc = parse_payload(payload, len, src->what, opts && opts->skip_training_state, gzip_trailer, out);
    free(payload);
    return rc;
}

const char *ts_ckpt_path(const ts_ckpt *ck) { return ck->path; }

int ts_ckpt_load_mem(const void *data, size_t len, const ts_ckpt_load_opts *opts,
                     ts_ckpt **out) {
    if (!out) return ts_fail(TS_ERR_ARG, "ts_ckpt_load_mem: NULL argument");
    *out = NULL;
    if (!data && len) return ts_fail(TS_ERR_ARG, "ts_ckpt_load_mem: NULL data");
    struct source src = {.mem = data, .mem_len = len, .what = "<memory>"};
    return load_from(&src, opts, out);
}

int ts_ckpt_load(const char *path, const ts_ckpt_load_opts *opts, ts_ckpt **out) {
    if (!out || !path) return ts_fail(TS_ERR_ARG, "ts_ckpt_load: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return ts_fail(TS_ERR_IO, "cannot open checkpoint %s: %s", path, strerror(errno));
    struct source src = {.file = f, .chunk = malloc(CHUNK), .what = path};
    int rc = src.chunk ? load_from(&src, opts, out)
                       : ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", path);
    free(src.chunk);
    fclose(f);
    if (rc == TS_OK && !((*out)->path = dup_bytes(path, strlen(path)))) {
        ts_ckpt_free(*out);
        *out = NULL;
        rc = ts_fail(TS_ERR_NOMEM, "checkpoint %s: out of memory", path);
    }
    return rc;
}
