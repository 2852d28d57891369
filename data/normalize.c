#include "data/normalize.h"

#include "tensor/status.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>

int ts_normalize(const char *text, size_t len, char **tokens, size_t *n_tokens) {
    *tokens = NULL;
    if (n_tokens) *n_tokens = 0;
    const uint8_t *in = (const uint8_t *)text;
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (nul) return ts_fail(TS_ERR_FORMAT, "NUL byte at byte %zu", (size_t)(nul - text) + 1);
    const uint8_t *bad = u8_check(in, len);
    if (bad) return ts_fail(TS_ERR_FORMAT, "invalid UTF-8 at byte %zu", (size_t)(bad - in) + 1);

    // Case-map first, then compose: u8_tolower applies NFC to its own output.
    uint8_t stack[512];
    size_t low_len = sizeof stack;
    uint8_t *low = len ? u8_tolower(in, len, NULL, UNINORM_NFC, stack, &low_len) : stack;
    if (!len) low_len = 0;
    if (!low) {
        return errno == ENOMEM ? ts_fail(TS_ERR_NOMEM, "out of memory normalising a sentence")
                               : ts_fail(TS_ERR_FORMAT, "cannot lowercase the sentence");
    }
    // Worst case every byte is a punctuation mark that gains a space.
    if (low_len > (SIZE_MAX - 1) / 2) {
        if (low != stack) free(low);
        return ts_fail(TS_ERR_NOMEM, "sentence too long");
    }
    char *out = malloc(2 * low_len + 1);
    if (!out) {
        if (low != stack) free(low);
        return ts_fail(TS_ERR_NOMEM, "out of memory normalising a sentence");
    }
    size_t o = 0, count = 0;
    int in_token = 0;
    for (size_t i = 0; i < low_len;) {
        ucs4_t uc;
        int k = u8_mbtouc_unsafe(&uc, low + i, low_len - i);
        if (uc_is_property_white_space(uc)) {
            in_token = 0;
        } else if (uc < 0x80 && strchr(TS_PUNCT_TOKENS, (int)uc)) {
            if (o) out[o++] = ' ';
            out[o++] = (char)uc;
            count++;
            in_token = 0;
        } else {
            if (!in_token) {
                if (o) out[o++] = ' ';
                count++;
                in_token = 1;
            }
            memcpy(out + o, low + i, (size_t)k);
            o += (size_t)k;
        }
        i += (size_t)k;
    }
    out[o] = '\0';
    if (low != stack) free(low);
    *tokens = out;
    if (n_tokens) *n_tokens = count;
    return TS_OK;
}

int ts_normalize_nfc(const char *text, size_t len, char **out, size_t *n_tokens) {
    *out = NULL;
    if (n_tokens) *n_tokens = 0;
    const uint8_t *in = (const uint8_t *)text;
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (nul) return ts_fail(TS_ERR_FORMAT, "NUL byte at byte %zu", (size_t)(nul - text) + 1);
    const uint8_t *bad = u8_check(in, len);
    if (bad) return ts_fail(TS_ERR_FORMAT, "invalid UTF-8 at byte %zu", (size_t)(bad - in) + 1);
    uint8_t stack[512];
    size_t nfc_len = sizeof stack;
    uint8_t *nfc = len ? u8_normalize(UNINORM_NFC, in, len, stack, &nfc_len) : stack;
    if (!len) nfc_len = 0;
    if (!nfc) {
        return errno == ENOMEM ? ts_fail(TS_ERR_NOMEM, "out of memory normalising a sentence")
                               : ts_fail(TS_ERR_FORMAT, "cannot compose the sentence (NFC)");
    }
    char *text_out = malloc(nfc_len + 1);  // a space run only ever shrinks
    if (!text_out) {
        if (nfc != stack) free(nfc);
        return ts_fail(TS_ERR_NOMEM, "out of memory normalising a sentence");
    }
    size_t o = 0, count = 0;
    int in_token = 0;
    for (size_t i = 0; i < nfc_len;) {
        ucs4_t uc;
        int k = u8_mbtouc_unsafe(&uc, nfc + i, nfc_len - i);
        if (uc_is_property_white_space(uc)) {
            in_token = 0;
        } else {
            if (!in_token) {
                if (o) text_out[o++] = ' ';
                count++;
                in_token = 1;
            }
            memcpy(text_out + o, nfc + i, (size_t)k);
            o += (size_t)k;
        }
        i += (size_t)k;
    }
    text_out[o] = '\0';
    if (nfc != stack) free(nfc);
    *out = text_out;
    if (n_tokens) *n_tokens = count;
    return TS_OK;
}

const ts_normalisation_kind ts_normalisations[TS_NORM_COUNT] = {
    [TS_NORM_SPLIT] = {"nfc-lowercase-punct-split", "lowercased, . ! ? , ; : split off as words", ts_normalize, 0},
    [TS_NORM_NFC] = {"nfc", "text as written: case and punctuation kept, NFC", ts_normalize_nfc, 1},
};

static const char *normalisation_name(int i) { return i >= 0 && i < TS_NORM_COUNT ? ts_normalisations[i].name : NULL; }
const ts_names ts_normalisation_names = {.what = "normalisation", .count = TS_NORM_COUNT, .name = normalisation_name};
