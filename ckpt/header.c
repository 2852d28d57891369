// A checkpoint's header entries (ckpt/ckpt.h): key=value text, set and read
// typed (integers, and doubles as exact hex-float text that no locale
// changes), each getter checking the value's form and bounds and naming the
// file. The container they live in: ckpt.c.
#include "ckpt/container.h"

#include "tensor/status.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ts_ckpt_set(ts_ckpt *ck, const char *key, const char *value) {
    if (!ck || !key || !value) return ts_fail(TS_ERR_ARG, "ts_ckpt_set: NULL argument");
    if (!ts_ckpt_key_ok(key, strlen(key)))
        return ts_fail(TS_ERR_ARG, "checkpoint header key '%.64s' is not 1..%d bytes of "
                       "[A-Za-z0-9_.-]", key, TS_CKPT_MAX_NAME);
    size_t vlen = strlen(value);
    if (!ts_ckpt_value_ok(value, vlen))
        return ts_fail(TS_ERR_ARG, "checkpoint header value for '%s' is longer than %d bytes "
                       "or holds a newline", key, TS_CKPT_MAX_VALUE);
    char *copy = ts_ckpt_dup(value, vlen);
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
    char *kcopy = ts_ckpt_dup(key, strlen(key));
    int rc = kcopy ? ts_ckpt_reserve((void **)&ck->entries, &ck->cap_entries, ck->n_entries,
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
