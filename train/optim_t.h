// The optimizers' per-parameter passes for one dtype, compiled twice by
// optim.c (tensor/dtype_twice.h): the weights, their gradient and the
// moments are all in the model's dtype, and so is the arithmetic, as in
// PyTorch; the step's scalars come in as double. Every array is touched
// once per step, which is what a memory-bound update can hope for; the
// gradient is zeroed on the way.

// Adam, and AdamW through `keep`: the weights first decay, w *= keep = 1 -
// lr weight_decay (torch.optim.AdamW's order, each product rounded as
// torch's). Adam passes keep = 1: w * 1 is w exactly, so its bits are as
// without the product.
TS_VECTOR_CLONES
static void FN(adam_update)(size_t n, REAL *restrict w, REAL *restrict grad, REAL *restrict m, REAL *restrict v,
                            double grad_scale, double beta1, double beta2, double step_size, double sqrt_c2,
                            double eps, double keep) {
    // The scalars in REAL once: float32 computes in float (twice the lanes,
    // no conversions), float64 exactly as it always did.
    const REAL scale = (REAL)grad_scale, b1 = (REAL)beta1, c1 = (REAL)(1.0 - beta1), b2 = (REAL)beta2,
               c2 = (REAL)(1.0 - beta2), lr = (REAL)step_size, sc2 = (REAL)sqrt_c2, e = (REAL)eps,
               decay = (REAL)keep;
    for (size_t k = 0; k < n; k++) {
        REAL g = grad[k] * scale;
        m[k] = b1 * m[k] + c1 * g;
        v[k] = b2 * v[k] + c2 * g * g;
        w[k] *= decay;
        w[k] -= lr * m[k] / (MATH(sqrt)(v[k]) / sc2 + e);
        grad[k] = 0;
    }
}

TS_VECTOR_CLONES
static void FN(sgd_update)(size_t n, REAL *restrict w, REAL *restrict grad, REAL *restrict u, double grad_scale,
                           double momentum, double lr) {
    const REAL mu = (REAL)momentum, scale = (REAL)grad_scale, rate = (REAL)lr;
    for (size_t k = 0; k < n; k++) {
        u[k] = mu * u[k] + grad[k] * scale;
        w[k] -= rate * u[k];
        grad[k] = 0;
    }
}
