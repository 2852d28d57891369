// Attention from scratch, one stage at a time, with tinyseq's own ops.
//
// Part 1 is one decoder step of dot-product attention: score every encoder
// annotation against the decoder's hidden state, turn the scores into weights
// with a softmax, and average the annotations with those weights.
// Part 2 is scaled dot-product self-attention over four word vectors with
// query, key and value projections.
//
// S = source positions (4), D = vector width (3).
// Every number is typed in below (the reference values are in
// docs/attention.md); the program reads no files. Build target:
// attention_basics. Run it and read the output next to this file.
#include "autograd/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

// Prints a matrix with a title, one row per line, each value with `fmt`.
static void show(const char *title, const ts_tensor *t, const char *fmt) {
    int rows = (int)ts_rows(t), cols = ts_cols(t);
    printf("%s  (%d x %d)\n", title, rows, cols);
    for (int r = 0; r < rows; r++) {
        printf("   ");
        for (int c = 0; c < cols; c++) {
            printf("  ");
            printf(fmt, t->data[(size_t)r * cols + c]);
        }
        putchar('\n');
    }
    putchar('\n');
}

// A constant (rows, cols) matrix holding `values` row by row.
static ts_tensor *matrix(ts_ctx *ctx, int rows, int cols, const double *values) {
    int dims[2] = {rows, cols};
    return ts_constant(ctx, 2, dims, values);
}

static int dot_attention(ts_ctx *ctx) {
    enum { S = 4, D = 3 };
    printf("== Part 1: dot-product attention for one decoder step ==\n\n");
    // The decoder's hidden state h, and one annotation per source position:
    // the encoder's hidden state there. Annotations are stored as rows.
    static const double hidden_values[D] = {5, 1, 20};
    static const double annotation_values[S * D] = {
        3, 12, 45,    // a1
        59, 2, 5,     // a2
        1, 43, 5,     // a3
        4, 3, 45.3,   // a4
    };
    ts_tensor *h = matrix(ctx, 1, D, hidden_values);              // (1, D)
    ts_tensor *annotations = matrix(ctx, S, D, annotation_values);  // (S, D)
    if (!h || !annotations) return ctx->status;
    show("decoder hidden state h", h, "%8g");
    show("annotations a1..a4 (one per row)", annotations, "%8g");

    // 1. How well does one annotation match the state? Their dot product.
    ts_tensor *a1 = ts_slice_rows(ctx, annotations, 0, 1);  // (1, D)
    ts_tensor *score1 = ts_matmul(ctx, h, a1, 0, 1);         // (1, 1) = h a1^T
    if (!score1) return ctx->status;
    show("score of a1: h . a1 = 5*3 + 1*12 + 20*45", score1, "%8g");

    // 2. All positions at once: one matrix product, h A^T.
    ts_tensor *scores = ts_matmul(ctx, h, annotations, 0, 1);  // (1, S)
    if (!scores) return ctx->status;
    show("scores h A^T, one per source position", scores, "%8g");

    // 3. Softmax. exp(929) is larger than the largest double, so the
    // textbook formula exp(e_j) / sum_k exp(e_k) gives inf / inf = nan.
    double naive_top = exp(scores->data[3]), naive_sum = 0.0;
    for (int j = 0; j < S; j++) naive_sum += exp(scores->data[j]);
    double naive_a4 = naive_top / naive_sum;
    printf("naive softmax: exp(929) = %g, sum = %g, weight of a4 = inf / inf = %s\n", naive_top, naive_sum,
           isnan(naive_a4) ? "nan, not a number" : "(unexpectedly a number)");
    // Subtracting the largest score first changes nothing mathematically
    // (the factor exp(-max) cancels) but keeps every exponent <= 0.
    printf("stable softmax: subtract the max (929) first -> exponents");
    for (int j = 0; j < S; j++) printf(" %g", scores->data[j] - 929);
    printf("\n\n");
    ts_tensor *weights = ts_softmax(ctx, scores, NULL);  // (1, S), subtracts the max per row
    if (!weights) return ctx->status;
    show("attention weights softmax(scores)", weights, "%12.6g");
    printf("the weight of a3 (score 148) is exp(-781), below the smallest double: exactly %s\n",
           weights->data[2] == 0.0 ? "0" : "not 0 (unexpected)");
    printf("the weights sum to %.17g\n\n", weights->data[0] + weights->data[1] + weights->data[2] + weights->data[3]);

    // 4. Each annotation scaled by its weight.
    ts_tensor *weighted[S];
    for (int j = 0; j < S; j++) weighted[j] = ts_scale(ctx, ts_slice_rows(ctx, annotations, j, 1), weights->data[j]);
    ts_tensor *weighted_all = ts_stack_rows(ctx, weighted, S);  // (S, D)
    if (!weighted_all) return ctx->status;
    show("weighted annotations w_j * a_j (a2's is tiny, a3's exactly 0)", weighted_all, "%13.6g");

    // 5. The context vector is their sum: again one product, weights A.
    ts_tensor *context = ts_matmul(ctx, weights, annotations, 0, 0);  // (1, D)
    if (!context) return ctx->status;
    show("context vector c = sum_j w_j a_j", context, "%12.5f");
    printf("c to full precision: %.17g %.17g %.17g\n\n", context->data[0], context->data[1], context->data[2]);

    // The model does step 5 with a batched node: weights (B, S) and memory
    // (B, S, D) give contexts (B, D). Same numbers.
    int memory_dims[3] = {1, S, D};
    ts_tensor *memory = ts_constant(ctx, 3, memory_dims, annotation_values);  // (1, S, D)
    ts_tensor *fused = ts_attn_context(ctx, weights, memory);              // (1, D)
    if (!fused) return ctx->status;
    show("the same context from ts_attn_context", fused, "%12.5f");
    return TS_OK;
}

static int self_attention(ts_ctx *ctx) {
    enum { N = 4, D = 3 };
    printf("== Part 2: scaled dot-product self-attention ==\n\n");
    // Four words, each a 3-number embedding (rows of X), attend to each other.
    static const double x_values[N * D] = {
        1, 0, 0,  // w1
        0, 1, 0,  // w2
        1, 1, 0,  // w3
        0, 0, 1,  // w4
    };
    // Learned projections (made up here): what a word asks for (query), what
    // it offers to be found by (key) and what it hands over (value).
    static const double wq_values[D * D] = {2, 0, 2, 2, 0, 0, 2, 1, 2};
    static const double wk_values[D * D] = {2, 2, 2, 0, 2, 1, 0, 1, 1};
    static const double wv_values[D * D] = {1, 1, 0, 0, 1, 1, 0, 0, 0};
    ts_tensor *x = matrix(ctx, N, D, x_values);
    ts_tensor *w_q = matrix(ctx, D, D, wq_values), *w_k = matrix(ctx, D, D, wk_values);
    ts_tensor *w_v = matrix(ctx, D, D, wv_values);
    ts_tensor *queries = ts_matmul(ctx, x, w_q, 0, 0);  // (N, D) = X W_Q
    ts_tensor *keys = ts_matmul(ctx, x, w_k, 0, 0);     // (N, D) = X W_K
    ts_tensor *values = ts_matmul(ctx, x, w_v, 0, 0);   // (N, D) = X W_V
    if (!values || !queries || !keys) return ctx->status;
    show("words X (one per row)", x, "%6g");
    show("queries Q = X W_Q", queries, "%6g");
    show("keys K = X W_K", keys, "%6g");
    show("values V = X W_V", values, "%6g");

    // Every query against every key: row i holds word i's scores.
    ts_tensor *scores = ts_matmul(ctx, queries, keys, 0, 1);  // (N, N) = Q K^T
    if (!scores) return ctx->status;
    show("scores Q K^T", scores, "%6g");
    // Dividing by sqrt(D) keeps the scores' spread from growing with the
    // width, so the softmax does not saturate on wide vectors.
    ts_tensor *scaled = ts_scale(ctx, scores, 1.0 / sqrt((double)D));
    ts_tensor *weights = ts_softmax(ctx, scaled, NULL);  // (N, N), each row sums to 1
    if (!weights) return ctx->status;
    show("scaled scores Q K^T / sqrt(3)", scaled, "%10.5f");
    show("weights softmax(...) per row", weights, "%10.5f");
    ts_tensor *out = ts_matmul(ctx, weights, values, 0, 0);  // (N, D)
    if (!out) return ctx->status;
    show("outputs softmax(Q K^T / sqrt(3)) V, one row per word", out, "%10.5f");
    printf("word 1's output to full precision: %.17g %.17g %.17g\n", out->data[0], out->data[1], out->data[2]);
    return TS_OK;
}

int main(void) {
    ts_arena *arena = ts_arena_new(1 << 20);
    if (!arena) {
        fprintf(stderr, "attention_basics: %s\n", ts_last_error());
        return 1;
    }
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_set_grad_enabled(&ctx, 0);  // only forward values here: no tape
    int rc = dot_attention(&ctx);
    if (!rc) rc = self_attention(&ctx);
    if (rc) fprintf(stderr, "attention_basics: %s: %s\n", ts_strerror(rc), ts_last_error());
    ts_arena_free(arena);
    return rc ? 1 : 0;
}
