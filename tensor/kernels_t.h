// The kernels for one dtype, included twice by tensor/kernels.c through
// tensor/dtype_twice.h (REAL, FN, BLAS). No
// include guard. Scalars, sums and maxima are double in both instances.

// ---- products: cblas_dgemm / cblas_sgemm ------------------------------------

// Part `part` of a product cut by rows of C into runs of whole blocks of
// row_grain rows (kernels.c: 48, or 16 where the kernels allow): rows
// [r0, r1) of C are rows [r0, r1) of op(A) times op(B), and every entry is
// the same sum as in the whole product as long as no kernel block straddles
// a cut.
// The parts a product of C (m, n) with inner dimension k is cut into:
// more than 1 for a matrix product (not gemv's) of 2e7 multiply-adds or
// more with 128 rows or more, when threads were asked for.
static int FN(row_parts)(int m, int n, int k) {
    double mnk = (double)m * n * k;
    if (n < 2 || k < 1 || m < 128 || mnk < TS_SPLIT_GEMM_MNK || ts_parallel_in_part()) return 1;
    return ts_parallel_parts((size_t)mnk, m / 64);
}

// Rows [r0, r1) of C set to p->addend's plus p->rows_from, where given.
static void FN(set_rows)(const FN(ts_product) *p, size_t r0, size_t r1) {
    size_t n = (size_t)p->n, ld = (size_t)p->ldc;
    for (size_t r = r0; r < r1 && (p->addend || p->rows_from); r++) {
        REAL *row = p->C + r * ld;
        if (!p->addend) {
            memcpy(row, p->rows_from, n * sizeof(REAL));
            continue;
        }
        memcpy(row, p->addend + r * ld, n * sizeof(REAL));
        if (p->rows_from)
            for (size_t c = 0; c < n; c++) row[c] += p->rows_from[c];
    }
}

// Rows [r0, r1) of C clamped at 0, with p->relu.
static void FN(relu_rows)(const FN(ts_product) *p, size_t r0, size_t r1) {
    for (size_t r = r0; r < r1 && p->relu; r++) {
        REAL *row = p->C + r * (size_t)p->ldc;
        for (size_t c = 0; c < (size_t)p->n; c++) row[c] = row[c] > 0 ? row[c] : 0;
    }
}

static void FN(rows_part)(void *arg, int part, int parts) {
    const FN(ts_product) *p = arg;
    size_t b0, b1, grain = row_grain(TS_REAL);
    ts_part_range(((size_t)p->m + grain - 1) / grain, part, parts, &b0, &b1);
    size_t r0 = grain * b0, r1 = grain * b1 < (size_t)p->m ? grain * b1 : (size_t)p->m;
    if (r1 <= r0) return;
    FN(set_rows)(p, r0, r1);
    const REAL *A = p->A + (p->trans_a ? r0 : r0 * (size_t)p->lda);  // op(A)'s rows: A's columns when transposed
    BLAS(gemm)(CblasRowMajor, p->trans_a ? CblasTrans : CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans,
               (int)(r1 - r0), p->n, p->k, p->alpha, A, p->lda, p->B, p->ldb, p->beta, p->C + r0 * (size_t)p->ldc,
               p->ldc);
    FN(relu_rows)(p, r0, r1);
}

// p cut into `parts` (> 1) by rows, each part on one OpenBLAS thread.
static int FN(cut_product)(FN(ts_product) *p, int parts) {
    ts_threads_for_product(0);  // one OpenBLAS thread each: inside a part the count stays as it is
    ts_parallel_run(parts, FN(rows_part), p);
    return p->rc = TS_OK;
}

int FN(ts_gemm_ld)(int trans_a, int trans_b, int m, int n, int k, REAL alpha, const REAL *A, int lda,
                   const REAL *B, int ldb, REAL beta, REAL *C, int ldc) {
    if (m <= 0 || n <= 0) return TS_OK;
    if (k <= 0) {  // BLAS rejects the leading dimension 0 of an empty A; the product is zero
        for (size_t i = 0; i < (size_t)m; i++)
            for (size_t j = 0; j < (size_t)n; j++) {
                REAL *c = C + i * (size_t)ldc + j;
                *c = beta == 0 ? 0 : beta * *c;
            }
        return TS_OK;
    }
    // A single row or column of C is a matrix-vector product: gemv streams
    // the matrix once, where gemm would first copy (pack) all of it. This is
    // the output projection of one decoded sentence: 13 MB of W at H = 256.
    if (m == 1 || n == 1) {
        const REAL *M;  // the matrix: y = op(M) x
        int rows, cols, tda, x_stride, y_stride = m == 1 ? 1 : ldc;
        const REAL *xv;
        int trans;
        if (m == 1) {  // C^T (n) = op(B)^T a: B is (n, k) when trans_b, else (k, n)
            M = B, tda = ldb, xv = A, x_stride = trans_a ? lda : 1;
            rows = trans_b ? n : k, cols = trans_b ? k : n, trans = !trans_b;
        } else {  // C (m) = op(A) b: A is (k, m) when trans_a, else (m, k)
            M = A, tda = lda, xv = B, x_stride = trans_b ? 1 : ldb;
            rows = trans_a ? k : m, cols = trans_a ? m : k, trans = trans_a;
        }
        if (beta == 0)  // C may be memory never written (autograd's input_grad_written): no 0 * NaN
            for (int i = 0; i < (m == 1 ? n : m); i++) C[(size_t)i * y_stride] = 0;
        ts_threads_for_product((double)rows * cols >= TS_BIG_GEMV ? TS_SMALL_GEMM_MNK : 0);
        BLAS(gemv)(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, rows, cols, alpha, M, tda, xv, x_stride, beta,
                   C, y_stride);
        return TS_OK;
    }
    int parts = FN(row_parts)(m, n, k);
    if (parts > 1) {  // C's rows as parts (FN(rows_part))
        FN(ts_product) p = {trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, TS_OK, NULL, NULL, 0};
        return FN(cut_product)(&p, parts);
    }
    ts_threads_for_product((double)m * n * k);
    BLAS(gemm)(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k,
               alpha, A, lda, B, ldb, beta, C, ldc);
    return TS_OK;
}

int FN(ts_gemm)(int trans_a, int trans_b, int m, int n, int k, REAL alpha, const REAL *A, const REAL *B, REAL beta,
                REAL *C) {
    return FN(ts_gemm_ld)(trans_a, trans_b, m, n, k, alpha, A, trans_a ? m : k, B, trans_b ? k : n, beta, C, n);
}

int FN(ts_gemm_product)(FN(ts_product) *p) {
    int parts = p->m > 0 ? FN(row_parts)(p->m, p->n, p->k) : 1;
    if (parts > 1) return FN(cut_product)(p, parts);
    if (p->m <= 0 || p->n <= 0) return p->rc = TS_OK;
    FN(set_rows)(p, 0, (size_t)p->m);
    p->rc = FN(ts_gemm_ld)(p->trans_a, p->trans_b, p->m, p->n, p->k, p->alpha, p->A, p->lda, p->B, p->ldb, p->beta,
                           p->C, p->ldc);
    if (!p->rc) FN(relu_rows)(p, 0, (size_t)p->m);
    return p->rc;
}

static void FN(product_part)(void *arg, int part, int parts) {
    (void)parts;
    FN(ts_product) *p = ((FN(ts_product) **)arg)[part];
    p->rc = FN(ts_gemm_ld)(p->trans_a, p->trans_b, p->m, p->n, p->k, p->alpha, p->A, p->lda, p->B, p->ldb, p->beta,
                           p->C, p->ldc);
}

// Two products on more than two threads: each cut by C's rows (as
// FN(rows_part) cuts one) into a share of the threads that follows its
// multiply-adds, all parts in one run. parts[i] == 1: product i whole.
typedef struct {
    FN(ts_product) *both[2];
    int parts[2];
} FN(pair_cut);

static void FN(pair_part)(void *arg, int part, int parts) {
    (void)parts;
    FN(pair_cut) *c = arg;
    int which = part >= c->parts[0], own = part - (which ? c->parts[0] : 0);
    if (c->parts[which] == 1) FN(product_part)(c->both, which, 1);
    else FN(rows_part)(c->both[which], own, c->parts[which]);
}

// The most parts product p may be cut into: whole row blocks, ~1e6
// multiply-adds or more each (a part costs a wake-up and a packing of B).
static int FN(most_parts)(const FN(ts_product) *p) {
    double mnk = (double)p->m * p->n * p->k;
    size_t blocks = ((size_t)(p->m > 0 ? p->m : 0) + row_grain(TS_REAL) - 1) / row_grain(TS_REAL);
    if (p->n < 2 || p->k < 1 || blocks < 2 || mnk < 2e6) return 1;
    double most = fmin((double)blocks, mnk / 1e6);
    return most < TS_PARALLEL_MAX_PARTS ? (int)most : TS_PARALLEL_MAX_PARTS;
}

int FN(ts_gemm_two)(FN(ts_product) *first, FN(ts_product) *second) {
    FN(ts_product) *both[2] = {first, second};
    if (!first || !second) {
        if (!first && !second) return TS_OK;
        FN(product_part)(both, !first, 1);
        return both[!first]->rc;
    }
    double work[2] = {(double)first->m * first->n * first->k, (double)second->m * second->n * second->k};
    double smaller = fmin(work[0], work[1]);
    int parts = smaller >= TS_SMALL_GEMM_MNK && !ts_parallel_in_part() ? ts_parallel_parts((size_t)smaller, 0) : 1;
    if (parts > 2) {  // each product its share of the threads, cut by rows: the same bits as whole
        int share = (int)lround(parts * work[0] / (work[0] + work[1]));
        share = share < 1 ? 1 : share > parts - 1 ? parts - 1 : share;
        FN(pair_cut) c = {{first, second}, {share, parts - share}};
        for (int i = 0; i < 2; i++) {
            int most = FN(most_parts)(both[i]);
            if (c.parts[i] > most) c.parts[i] = most;
            both[i]->rc = TS_OK;
        }
        ts_threads_for_product(0);  // one OpenBLAS thread each: inside a part the count stays as it is
        ts_parallel_run(c.parts[0] + c.parts[1], FN(pair_part), &c);
    } else if (parts == 2) {
        ts_threads_for_product(0);  // one OpenBLAS thread each: inside a part the count stays as it is
        ts_parallel_run(2, FN(product_part), both);
    } else {  // not as parts, which would keep the count: each product is threaded as ts_gemm_ld chooses
        FN(product_part)(both, 0, 1);
        FN(product_part)(both, 1, 1);
    }
    return first->rc ? first->rc : second->rc;
}

void FN(ts_softmax_rows)(REAL *y, const REAL *x, size_t rows, size_t cols, const double *mask) {
    for (size_t r = 0; r < rows; r++) {
        const REAL *xr = x + r * cols;
        const double *mr = mask ? mask + r * cols : NULL;
        REAL *yr = y + r * cols;
        double max = -INFINITY;
        for (size_t c = 0; c < cols; c++)
            if ((!mr || mr[c] != 0.0) && xr[c] > max) max = xr[c];
        if (max == -INFINITY) {  // every position masked: no weight anywhere
            for (size_t c = 0; c < cols; c++) yr[c] = 0;
            continue;
        }
        double sum = 0.0;
        for (size_t c = 0; c < cols; c++) {
            double e = (!mr || mr[c] != 0.0) ? exp(xr[c] - max) : 0.0;
            yr[c] = e;
            sum += e;
        }
        double inv = 1.0 / sum;
        for (size_t c = 0; c < cols; c++) yr[c] *= inv;
    }
}

TS_VECTOR_CLONES
void FN(ts_exp_array)(REAL *y, const REAL *x, size_t n) { TS_MAP_BLOCKS(y, x, n, FN(exp_inline)); }

TS_VECTOR_CLONES
void FN(ts_tanh_array)(REAL *y, const REAL *x, size_t n) { TS_MAP_BLOCKS(y, x, n, FN(tanh_inline)); }

TS_VECTOR_CLONES
void FN(ts_sigmoid_array)(REAL *y, const REAL *x, size_t n) { TS_MAP_BLOCKS(y, x, n, FN(sigmoid_inline)); }

// Eight running sums in a fixed order: deterministic, and not one long chain
// of dependent additions.
TS_VECTOR_CLONES
double FN(ts_sum_array)(const REAL *x, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += x[i + j];
    double sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) sum += x[i];
    return sum;
}

TS_VECTOR_CLONES
double FN(ts_sumsq_array)(const REAL *x, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)x[i + j] * x[i + j];
    double sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) sum += (double)x[i] * x[i];
    return sum;
}

TS_VECTOR_CLONES
double FN(ts_max_array)(const REAL *x, size_t n) {
    REAL acc[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    double max = -INFINITY;
    for (int j = 0; j < 8; j++) max = acc[j] > max ? acc[j] : max;
    for (; i < n; i++) max = x[i] > max ? x[i] : max;
    return max;
}

size_t FN(ts_argmax_array)(const REAL *x, size_t n) {
    if (isnan(x[0])) return 0;  // nothing compares greater than it
    double max = FN(ts_max_array)(x, n);  // >= x[0]: the NaNs after it skipped
    size_t i = 0;
    while (x[i] != max) i++;
    return i;
}

TS_VECTOR_CLONES
static void FN(exp_shift)(REAL *x, size_t n, double shift) {
    REAL s = (REAL)shift;  // callers pass a row's maximum, a value of x: exact in REAL
#define EXP_SHIFTED(v) FN(exp_inline)((v) - s)
    TS_MAP_BLOCKS(x, x, n, EXP_SHIFTED);
#undef EXP_SHIFTED
}

TS_VECTOR_CLONES
double FN(ts_add_max_array)(REAL *x, const REAL *b, size_t n) {
    REAL acc[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            REAL v = x[i + j] + b[i + j];
            x[i + j] = v;
            acc[j] = v > acc[j] ? v : acc[j];
        }
    double max = -INFINITY;
    for (int j = 0; j < 8; j++) max = acc[j] > max ? acc[j] : max;
    for (; i < n; i++) {
        x[i] += b[i];
        max = x[i] > max ? x[i] : max;
    }
    return max;
}

TS_VECTOR_CLONES
void FN(ts_scale_accumulate)(REAL *x, REAL s, REAL *acc, REAL t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        REAL v = x[i] * s;
        x[i] = v;
        acc[i] += t * v;
    }
}

double FN(ts_exp_shift_sum)(REAL *x, size_t n, double shift) {
    FN(exp_shift)(x, n, shift);
    return FN(ts_sum_array)(x, n);
}

double FN(ts_sum_exp_shift)(const REAL *x, size_t n, double shift) {
    REAL chunk[512];
    double sum = 0.0;  // in double, as the sums of each block
    for (size_t i = 0; i < n; i += 512) {
        size_t m = n - i < 512 ? n - i : 512;
        memcpy(chunk, x + i, m * sizeof(REAL));
        sum += FN(ts_exp_shift_sum)(chunk, m, shift);
    }
    return sum;
}

TS_VECTOR_CLONES
size_t FN(ts_first_log_prob_above)(const REAL *x, size_t from, size_t n, double score, double max, double log_sum,
                                   double floor) {
#define TS_CANDIDATE(v) (score + (((double)(v) - max) - log_sum))
    size_t i = from;
    // Blocks of 64 with no exit inside, vectorised: the candidates, then
    // whether any is above; the scan below finds the first place in the
    // first block that has one.
    for (; i + 64 <= n; i += 64) {
        double c[64];
        for (int j = 0; j < 64; j++) c[j] = TS_CANDIDATE(x[i + j]);
        int above = 0;
        for (int j = 0; j < 64; j++) above |= c[j] > floor;
        if (above) break;
    }
    for (; i < n; i++)
        if (TS_CANDIDATE(x[i]) > floor) return i;
#undef TS_CANDIDATE
    return n;
}

void FN(ts_log_softmax_rows)(REAL *y, const REAL *x, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; r++) {
        const REAL *xr = x + r * cols;
        REAL *yr = y + r * cols;
        double max = FN(ts_max_array)(xr, cols);
        double sum = FN(ts_sum_exp_shift)(xr, cols, max);
        // (x - max) - log(sum), not x - (max + log(sum)): with scores near
        // 929 the latter loses ~13 digits to cancellation.
        double log_sum = log(sum);
        for (size_t c = 0; c < cols; c++) yr[c] = (xr[c] - max) - log_sum;
    }
}
