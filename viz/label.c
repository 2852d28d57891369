// What the terminal and SVG heatmaps share (viz/label.h): a word made safe
// to show, and the checks of what they draw.
#include "viz/label.h"

#include "tensor/status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>
#include <uniwidth.h>

// Width of one code point, or -1 when it must be replaced.
static int char_cols(ucs4_t uc, int len, const uint8_t *p) {
    if (uc == 0xfffd && !(len == 3 && p[0] == 0xef)) return -1;  // invalid UTF-8
    if (uc < 0x20 || (uc >= 0x7f && uc < 0xa0)) return -1;       // C0, DEL, C1
    return uc_width(uc, "UTF-8");
}

void ts_label_make(ts_label *l, const char *const *labels, size_t k, int max_cols) {
    char number[32];
    const char *s = labels ? labels[k] : number;
    if (!labels) snprintf(number, sizeof number, "%zu", k);
    const uint8_t *p = (const uint8_t *)s;
    size_t left = strlen(s), used = 0;
    l->cols = 0;
    while (left > 0) {
        ucs4_t uc;
        int len = u8_mbtouc(&uc, p, left);
        int w = char_cols(uc, len, p);
        const char *bytes = (const char *)p;
        size_t nbytes = (size_t)len;
        if (w < 0) {
            bytes = "?";
            nbytes = 1;
            w = 1;
        }
        // Keep one column and 3 bytes (plus NUL) for the ellipsis.
        int last = (size_t)len == left;
        if (l->cols + w > max_cols - (last ? 0 : 1) || used + nbytes + 4 > sizeof l->text) {
            memcpy(l->text + used, "\xe2\x80\xa6", 3);  // …
            used += 3;
            l->cols += 1;
            break;
        }
        memcpy(l->text + used, bytes, nbytes);
        used += nbytes;
        l->cols += w;
        p += len;
        left -= (size_t)len;
    }
    l->text[used] = '\0';
}

ts_label *ts_labels_make(const char *const *target, size_t T, const char *const *source, size_t S, int max_cols) {
    ts_label *all = malloc((T + S) * sizeof *all);
    if (!all) return NULL;
    for (size_t j = 0; j < T; j++) ts_label_make(&all[j], target, j, max_cols);
    for (size_t i = 0; i < S; i++) ts_label_make(&all[T + i], source, i, max_cols);
    return all;
}

// ---- checks ----------------------------------------------------------------

int ts_heatmap_check_matrix(const char *who, const double *weights, size_t T, size_t S) {
    if (T == 0 || S == 0)
        return ts_fail(TS_ERR_SHAPE, "%s: empty attention matrix (%zu x %zu)", who, T, S);
    if (!weights) return ts_fail(TS_ERR_ARG, "%s: weights is NULL", who);
    if (T > (SIZE_MAX / sizeof(ts_label)) / 2 || S > (SIZE_MAX / sizeof(ts_label)) / 2)
        return ts_fail(TS_ERR_SHAPE, "%s: %zu x %zu is too large", who, T, S);
    return TS_OK;
}

int ts_heatmap_check_grid(const char *who, const ts_heatmap_grid *g) {
    if (!g || !g->panels) return ts_fail(TS_ERR_ARG, "%s: no panels", who);
    if (g->rows == 0 || g->cols == 0 || g->rows > 1024 || g->cols > 1024)
        return ts_fail(TS_ERR_SHAPE, "%s: a grid of %zu x %zu panels", who, g->rows, g->cols);
    if (g->R == 0 || g->C == 0 || g->R > 100000 || g->C > 100000)
        return ts_fail(TS_ERR_SHAPE, "%s: panels of %zu x %zu", who, g->R, g->C);
    return TS_OK;
}
