// The kernels' declarations for one dtype: included twice by
// tensor/kernels.h through tensor/dtype_twice.h (REAL, FN). No include guard.
// Sums and maxima are returned as double in both dtypes.

// C (m, n) = alpha * op(A) op(B) + beta * C, through cblas_dgemm
// (cblas_sgemm for float32). op(A) is (m, k): A is stored (m, k), or (k, m) when
// trans_a. op(B) is (k, n): B is stored (k, n), or (n, k) when trans_b.
// Returns TS_OK. Empty products are allowed (k = 0 scales C by beta).
int FN(ts_gemm)(int trans_a, int trans_b, int m, int n, int k, REAL alpha, const REAL *A,
            const REAL *B, REAL beta, REAL *C);

// As ts_gemm, on sub-matrices: row i of A starts at A + i * lda (and likewise
// B with ldb, C with ldc), so a block of columns of a wider matrix can be
// used in place. lda >= the stored row length of A (k, or m when trans_a).
int FN(ts_gemm_ld)(int trans_a, int trans_b, int m, int n, int k, REAL alpha, const REAL *A, int lda,
               const REAL *B, int ldb, REAL beta, REAL *C, int ldc);

// One product of ts_gemm_ld's arguments, C = alpha op(A) op(B) + beta C,
// for ts_gemm_two; rc is its status once run.
typedef struct {
    int trans_a, trans_b, m, n, k;
    REAL alpha;
    const REAL *A;
    int lda;
    const REAL *B;
    int ldb;
    REAL beta;
    REAL *C;
    int ldc;
    int rc;
    const REAL *rows_from;  // ts_gemm_product: NULL, or the n values every row of C starts as (a bias under the product)
    const REAL *addend;     // ts_gemm_product: NULL, or (m, n) with C's ldc: C starts as it (plus rows_from)
    int relu;               // ts_gemm_product: C = max(C, 0) after the product
} FN(ts_product);

// One product as ts_gemm_ld computes it; first, when p->addend or
// p->rows_from is set, every row of C is set to the addend's row plus
// rows_from (with beta 1 the product is then added to them), and after it,
// with p->relu, every entry below 0 becomes 0; each in the part of the
// product that computes the row. Sets and returns p->rc.
int FN(ts_gemm_product)(FN(ts_product) *p);

// Two independent products (their C disjoint from each other and from
// every input of the other), each as ts_gemm_ld. With two or more threads
// asked for (ts_threads_use) and both products large, they run side
// by side as the two parts of a ts_parallel_run, each on one OpenBLAS
// thread, instead of one after the other each split by OpenBLAS: no
// synchronisation inside a product, no packed panel shared between cores.
// With more than two threads each product gets a share of them that
// follows its multiply-adds, cut by C's rows into whole blocks of the
// kernels' row grain (as a large product alone is): the two products
// otherwise kept the backward pass on two cores. OpenBLAS splits a
// product over its rows and columns, never over k, and a cut at the grain
// keeps every entry the same sum: the bits do not depend on the thread
// count. Either may be NULL: the other runs alone. Returns the first
// failure, else TS_OK. (rows_from, addend and relu are ts_gemm_product's:
// leave them NULL and 0.)
int FN(ts_gemm_two)(FN(ts_product) *first, FN(ts_product) *second);

// Row-wise softmax of x (rows, cols) into y; may be called with y == x.
// Subtracts each row's maximum first, so scores like 929 do not overflow.
// With a mask (rows, cols; 0 = masked) masked entries get exactly 0 weight;
// a row with every entry masked becomes all zeros.
void FN(ts_softmax_rows)(REAL *y, const REAL *x, size_t rows, size_t cols, const double *mask);

// Elementwise y[i] = f(x[i]) for i < n, vectorised (y may be x). exp is
// within 1 ulp of libm's, tanh and sigmoid within 2; exp gives subnormal
// results below -708.39 (gradually, as libm's does), 0 below -745.13 and
// +Inf above 709.78; NaN stays NaN. The float32 instances compute in float
// (their own polynomials): exp and tanh within 1 ulp of the correctly
// rounded value, sigmoid within 2; exp is +Inf above 88.72 and 0 below
// -103.97, sigmoid exactly 0 below -88.72 (where it is under FLT_MIN).
void FN(ts_exp_array)(REAL *y, const REAL *x, size_t n);
void FN(ts_tanh_array)(REAL *y, const REAL *x, size_t n);
void FN(ts_sigmoid_array)(REAL *y, const REAL *x, size_t n);  // 1 / (1 + exp(-x))

// Sum and maximum of x[0..n), in a fixed order (eight interleaved partial
// sums): the same bits on every machine. NaNs are skipped by the maximum;
// n = 0 gives 0 and -Inf.
double FN(ts_sum_array)(const REAL *x, size_t n);
double FN(ts_max_array)(const REAL *x, size_t n);
double FN(ts_sumsq_array)(const REAL *x, size_t n);  // sum of x[i]^2, same order as ts_sum_array

// The first index of the largest of x[0..n) (n >= 1), as a scan that moves
// only to a strictly greater value finds it: ties go to the lowest index,
// later NaNs are skipped, and a NaN at 0 is never left (0). Two vectorised
// passes: the maximum, then its first place.
size_t FN(ts_argmax_array)(const REAL *x, size_t n);

// x[i] += b[i] for i < n; returns the new maximum (as ts_max_array).
double FN(ts_add_max_array)(REAL *x, const REAL *b, size_t n);

// x[i] *= s, then acc[i] += t x[i], for i < n (x and acc do not overlap).
void FN(ts_scale_accumulate)(REAL *x, REAL s, REAL *acc, REAL t, size_t n);

// x[i] = exp(x[i] - shift) for i < n; returns their sum (ts_sum_array).
double FN(ts_exp_shift_sum)(REAL *x, size_t n, double shift);

// sum_i exp(x[i] - shift), leaving x as it is (blocks of 512 in a local buffer).
double FN(ts_sum_exp_shift)(const REAL *x, size_t n, double shift);

// The first i in [from, n) whose candidate score + ((x[i] - max) - log_sum),
// computed in double as written, is above floor; n when none is (a NaN
// never is). Beam search extends a hypothesis of total log-probability
// score by each word of a logit row x with its max and log-sum-exp: this
// skips, vectorised, the words that cannot enter its list of the best.
size_t FN(ts_first_log_prob_above)(const REAL *x, size_t from, size_t n, double score, double max, double log_sum,
                                   double floor);

// Row-wise log-softmax: y = x - max - log(sum(exp(x - max))).
void FN(ts_log_softmax_rows)(REAL *y, const REAL *x, size_t rows, size_t cols);
