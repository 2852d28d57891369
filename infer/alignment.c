// Alignments and attention analysis: AER, argmax and diagonal alignments,
// entropy, padding mass, pieces merged into words, agreement with
// attributions. See alignment.h for the definitions.
//
// T = target length, S = source length; weights (T, S) row-major.
#include "infer/alignment.h"

#include "tensor/kernels.h"
#include "tensor/status.h"

#include <math.h>
#include <string.h>

// ---- alignments ------------------------------------------------------------

static int link_eq(ts_link a, ts_link b) { return a.src == b.src && a.tgt == b.tgt; }

static int link_in(ts_link a, const ts_link *set, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (link_eq(a, set[k])) return 1;
    return 0;
}

// |A|, |G| and |A∩G| as sets. Quadratic, which is fine for sentence-sized
// link lists and needs no allocation (so nothing here can fail).
static void aer_counts(const ts_link *pred, size_t n_pred, const ts_link *gold, size_t n_gold,
                       int64_t *both, int64_t *n_a, int64_t *n_g) {
    *both = *n_a = *n_g = 0;
    for (size_t k = 0; k < n_pred; k++) {
        if (link_in(pred[k], pred, k)) continue;  // a duplicate
        (*n_a)++;
        *both += link_in(pred[k], gold, n_gold);
    }
    for (size_t k = 0; k < n_gold; k++) *n_g += !link_in(gold[k], gold, k);
}

static double aer_from_counts(int64_t both, int64_t n_a, int64_t n_g) {
    if (n_a + n_g == 0) return 0.0;
    return 1.0 - 2.0 * (double)both / (double)(n_a + n_g);
}

double ts_aer(const ts_link *pred, size_t n_pred, const ts_link *gold, size_t n_gold) {
    int64_t both, n_a, n_g;
    aer_counts(pred, n_pred, gold, n_gold, &both, &n_a, &n_g);
    return aer_from_counts(both, n_a, n_g);
}

void ts_aer_add(ts_aer_acc *acc, const ts_link *pred, size_t n_pred,
                const ts_link *gold, size_t n_gold) {
    int64_t both, n_a, n_g;
    aer_counts(pred, n_pred, gold, n_gold, &both, &n_a, &n_g);
    acc->both += both;
    acc->pred += n_a;
    acc->gold += n_g;
}

double ts_aer_score(const ts_aer_acc *acc) {
    return aer_from_counts(acc->both, acc->pred, acc->gold);
}

// The rows and columns the alignment helpers look at.
static int align_extent(size_t T, size_t S, int flags, size_t *rows, size_t *cols) {
    if (flags & ~TS_ALIGN_SKIP_EOS) return ts_fail(TS_ERR_ARG, "align: unknown flags %#x", flags);
    if (T > INT32_MAX || S > INT32_MAX)
        return ts_fail(TS_ERR_ARG, "align: %zu x %zu is too large for int32 links", T, S);
    size_t skip = (flags & TS_ALIGN_SKIP_EOS) ? 1 : 0;
    *rows = T > skip ? T - skip : 0;
    *cols = S > skip ? S - skip : 0;
    if (*cols == 0) *rows = 0;  // nothing to align to
    return TS_OK;
}

int ts_align_argmax(const double *weights, size_t T, size_t S, int flags,
                    ts_link *links, size_t *n_links) {
    size_t rows = 0, cols = 0;  // set by the check below (zeroed for -O3's flow analysis)
    *n_links = 0;
    int status = align_extent(T, S, flags, &rows, &cols);
    if (status != TS_OK) return status;
    for (size_t j = 0; j < rows; j++) {
        const double *row = weights + j * S;  // (S)
        size_t best = 0;
        for (size_t i = 0; i < cols; i++) {
            if (!isfinite(row[i]))
                return ts_fail(TS_ERR_NUMERIC, "align: attention weight [%zu][%zu] is %g",
                               j, i, row[i]);
            if (row[i] > row[best]) best = i;
        }
        links[j] = (ts_link){.src = (int32_t)best, .tgt = (int32_t)j};
    }
    *n_links = rows;
    return TS_OK;
}

int ts_align_diagonal(size_t T, size_t S, int flags, ts_link *links, size_t *n_links) {
    size_t rows = 0, cols = 0;
    *n_links = 0;
    int status = align_extent(T, S, flags, &rows, &cols);
    if (status != TS_OK) return status;
    for (size_t j = 0; j < rows; j++) {
        // round(j * S / T) in integers, exact for every size that fits int32.
        uint64_t i = (2 * (uint64_t)j * cols + rows) / (2 * (uint64_t)rows);
        if (i > cols - 1) i = cols - 1;
        links[j] = (ts_link){.src = (int32_t)i, .tgt = (int32_t)j};
    }
    *n_links = rows;
    return TS_OK;
}

// ---- attention diagnostics -------------------------------------------------

double ts_attn_entropy(const double *weights, size_t T, size_t S) {
    if (T == 0) return NAN;
    double sum = 0.0;
    for (size_t j = 0; j < T; j++) {
        double h = 0.0;
        for (size_t i = 0; i < S; i++) {
            double w = weights[j * S + i];
            if (w > 0.0) h -= w * log(w);  // 0 log 0 = 0
        }
        sum += h;
    }
    return sum / (double)T;
}

void ts_attn_merge(const double *weights, size_t T, size_t S, const int32_t *row_group, size_t n_rows,
                   const int32_t *col_group, size_t n_cols, double *out) {
    memset(out, 0, n_rows * n_cols * sizeof *out);
    for (size_t r = 0; r < n_rows; r++) {
        size_t pieces = 0;
        for (size_t j = 0; j < T; j++) {
            if ((size_t)row_group[j] != r) continue;
            pieces++;
            for (size_t i = 0; i < S; i++) out[r * n_cols + (size_t)col_group[i]] += weights[j * S + i];
        }
        for (size_t c = 0; pieces > 1 && c < n_cols; c++) out[r * n_cols + c] /= (double)pieces;
    }
}

double ts_attn_pad_mass(const double *weights, size_t T, size_t S, const double *src_mask) {
    if (T == 0) return NAN;
    double sum = 0.0;
    for (size_t j = 0; j < T; j++)
        for (size_t i = 0; i < S; i++)
            if (src_mask[i] == 0.0) sum += weights[j * S + i];
    return sum / (double)T;
}

double ts_js_divergence(const double *p, const double *q, size_t n) {
    double js = 0.0;
    for (size_t i = 0; i < n; i++) {
        double m = 0.5 * (p[i] + q[i]);
        double from_p = p[i] > 0.0 ? p[i] * log(p[i] / m) : 0.0, from_q = q[i] > 0.0 ? q[i] * log(q[i] / m) : 0.0;
        js += 0.5 * (from_p + from_q);  // one sum of the two terms: the same bits with p and q swapped
    }
    return js > 0.0 ? js : 0.0;  // rounding may leave -1e-17 for equal rows
}

void ts_agreement_add(ts_agreement_acc *acc, const double *a, const double *b, size_t R, size_t S) {
    for (size_t r = 0; r < R; r++) {
        const double *p = a + r * S, *q = b + r * S;
        acc->js += ts_js_divergence(p, q, S);
        acc->same += ts_argmax_array(p, S) == ts_argmax_array(q, S);
        acc->rows++;
    }
}
