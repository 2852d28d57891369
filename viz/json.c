// Strict JSON, read and written back (viz/json.h): a recursive descent over
// the RFC 8259 grammar that writes each value as it is understood.
#include "viz/json.h"

#include "tensor/status.h"
#include "viz/render.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

typedef struct {
    const char *text, *at, *end;
    FILE *out;        // NULL: check only
    char *buf;        // (cap) a string's decoded bytes
    size_t cap;
} parser;

static int fail(const parser *p, const char *what) {
    return ts_fail(TS_ERR_FORMAT, "byte %zu: %s", (size_t)(p->at - p->text) + 1, what);
}

static void emit(parser *p, const char *s, size_t n) {
    if (p->out) fwrite(s, 1, n, p->out);
}

static void skip_space(parser *p) {
    while (p->at < p->end && (*p->at == ' ' || *p->at == '\t' || *p->at == '\n' || *p->at == '\r')) p->at++;
}

// The four hex digits after "\u" as a code unit, or -1.
static long hex4(const char *s, const char *end) {
    if (end - s < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static int append(parser *p, size_t *len, const uint8_t *bytes, size_t n) {
    if (*len + n + 1 > p->cap) {
        size_t cap = (*len + n + 1) * 2;
        char *grown = realloc(p->buf, cap);
        if (!grown) return ts_fail(TS_ERR_NOMEM, "out of memory for a JSON string of %zu bytes", *len + n);
        p->buf = grown;
        p->cap = cap;
    }
    memcpy(p->buf + *len, bytes, n);
    *len += n;
    p->buf[*len] = '\0';
    return TS_OK;
}

// A string (at its opening quote): decoded, checked, written escaped.
static int string(parser *p) {
    p->at++;
    size_t len = 0;
    int rc = append(p, &len, (const uint8_t *)"", 0);
    while (!rc) {
        if (p->at == p->end) return fail(p, "a string is not closed");
        unsigned char c = (unsigned char)*p->at;
        if (c == '"') break;
        if (c < 0x20) return fail(p, "a control character in a string (JSON escapes them)");
        if (c != '\\') {  // a UTF-8 character, copied whole
            ucs4_t uc;
            int n = u8_mbtoucr(&uc, (const uint8_t *)p->at, (size_t)(p->end - p->at));
            if (n < 0) return fail(p, "invalid UTF-8 in a string");
            rc = append(p, &len, (const uint8_t *)p->at, (size_t)n);
            p->at += n;
            continue;
        }
        if (p->end - p->at < 2) return fail(p, "a string is not closed");
        const char *simple = strchr("\"\\/bfnrt", p->at[1]);
        if (simple && p->at[1]) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            rc = append(p, &len, (const uint8_t *)&decoded[simple - "\"\\/bfnrt"], 1);
            p->at += 2;
            continue;
        }
        if (p->at[1] != 'u') return fail(p, "an escape JSON does not have");
        long unit = hex4(p->at + 2, p->end), low = -1;
        if (unit < 0) return fail(p, "\\u without four hex digits");
        ucs4_t uc = (ucs4_t)unit;
        size_t used = 6;
        if (unit >= 0xd800 && unit <= 0xdbff) {
            if (p->end - p->at >= 12 && p->at[6] == '\\' && p->at[7] == 'u') low = hex4(p->at + 8, p->end);
            if (low < 0xdc00 || low > 0xdfff) return fail(p, "a \\u surrogate without its pair");
            uc = 0x10000 + (((ucs4_t)unit - 0xd800) << 10) + ((ucs4_t)low - 0xdc00);
            used = 12;
        } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            return fail(p, "a \\u surrogate without its pair");
        } else if (unit == 0) {
            return fail(p, "\\u0000 in a string (tinyseq's text holds no NUL)");
        }
        uint8_t utf8[6];
        int n = u8_uctomb(utf8, uc, sizeof utf8);
        rc = n > 0 ? append(p, &len, utf8, (size_t)n) : fail(p, "an escape that is no character");
        p->at += used;
    }
    if (rc) return rc;
    p->at++;  // the closing quote
    if (p->out) ts_render_json_string(p->out, p->buf);
    return TS_OK;
}

// A number: the RFC's grammar, finite as a double; written as its token.
static int number(parser *p) {
    const char *start = p->at, *s = p->at, *end = p->end;
    if (s < end && *s == '-') s++;
    if (s < end && *s == '0') s++;
    else if (s < end && *s >= '1' && *s <= '9')
        while (s < end && *s >= '0' && *s <= '9') s++;
    else return fail(p, "not a JSON value");
    if (s < end && *s == '.') {
        if (++s == end || *s < '0' || *s > '9') return fail(p, "a number with no digit after its point");
        while (s < end && *s >= '0' && *s <= '9') s++;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        if (++s < end && (*s == '+' || *s == '-')) s++;
        if (s == end || *s < '0' || *s > '9') return fail(p, "a number with no digit in its exponent");
        while (s < end && *s >= '0' && *s <= '9') s++;
    }
    // strtod needs a NUL after the token: copy it (a token is short unless hostile).
    size_t n = (size_t)(s - start);
    char small[64], *copy = n < sizeof small ? small : malloc(n + 1);
    if (!copy) return ts_fail(TS_ERR_NOMEM, "out of memory for a JSON number of %zu bytes", n);
    memcpy(copy, start, n);
    copy[n] = '\0';
    double v = strtod(copy, NULL);
    if (copy != small) free(copy);
    if (!isfinite(v)) return fail(p, "a number too large for a double");
    emit(p, start, n);
    p->at = s;
    return TS_OK;
}

static int value(parser *p, int depth);

// An object or an array (at its opening bracket): members or elements.
static int container(parser *p, int depth) {
    int object = *p->at == '{';
    if (depth >= TS_JSON_MAX_DEPTH)
        return ts_fail(TS_ERR_FORMAT, "byte %zu: nested deeper than %d levels", (size_t)(p->at - p->text) + 1,
                       TS_JSON_MAX_DEPTH);
    emit(p, p->at++, 1);
    skip_space(p);
    char close = object ? '}' : ']';
    if (p->at < p->end && *p->at == close) {
        emit(p, p->at++, 1);
        return TS_OK;
    }
    for (int first = 1;; first = 0) {
        if (!first) emit(p, ",", 1);
        int rc;
        if (object) {
            if (p->at == p->end || *p->at != '"') return fail(p, "an object's key is not a string");
            if ((rc = string(p))) return rc;
            skip_space(p);
            if (p->at == p->end || *p->at != ':') return fail(p, "no ':' after an object's key");
            emit(p, p->at++, 1);
        }
        if ((rc = value(p, depth + 1))) return rc;
        if (p->at < p->end && *p->at == ',') {
            p->at++;
            skip_space(p);
            continue;
        }
        if (p->at < p->end && *p->at == close) {
            emit(p, p->at++, 1);
            return TS_OK;
        }
        return fail(p, object ? "no ',' or '}' after an object's member" : "no ',' or ']' after an array's element");
    }
}

// A value with the whitespace around it.
static int value(parser *p, int depth) {
    skip_space(p);
    if (p->at == p->end) return fail(p, "no value where one belongs");
    int rc;
    static const char *const words[] = {"true", "false", "null"};
    char c = *p->at;
    if (c == '{' || c == '[') rc = container(p, depth);
    else if (c == '"') rc = string(p);
    else if (c == 't' || c == 'f' || c == 'n') {
        const char *w = words[c == 't' ? 0 : c == 'f' ? 1 : 2];
        size_t n = strlen(w);
        if ((size_t)(p->end - p->at) < n || memcmp(p->at, w, n)) return fail(p, "not a JSON value");
        emit(p, w, n);
        p->at += n;
        rc = TS_OK;
    } else rc = number(p);
    if (!rc) skip_space(p);
    return rc;
}

int ts_json_copy_object(FILE *out, const char *text, size_t n) {
    parser p = {.text = text, .at = text, .end = text + n, .out = out};
    skip_space(&p);
    int rc = p.at < p.end && *p.at == '{' ? value(&p, 0) : fail(&p, "not a JSON object");
    if (!rc && p.at != p.end) rc = fail(&p, "bytes after the object (one object a line)");
    free(p.buf);
    return rc;
}
