// The optimizers' per-parameter passes for one dtype, compiled twice by
// optim.c (tensor/dtype_twice.h): the weights, their gradient and the
// moments are all in the model's dtype, as in PyTorch; the step's scalars
// are double. Every array is touched once per step, which is what a
// memory-bound update can hope for; the gradient is zeroed on the way.

TS_VECTOR_CLONES
static void FN(adam_update)(size_t n, REAL *restrict w, REAL *restrict grad, REAL *restrict m, REAL *restrict v,
                            double grad_scale, double beta1, double beta2, double step_size, double sqrt_c2,
                            double eps) {
    for (size_t k = 0; k < n; k++) {
        double g = grad[k] * grad_scale;
        m[k] = beta1 * m[k] + (1.0 - beta1) * g;
        v[k] = beta2 * v[k] + (1.0 - beta2) * g * g;
        w[k] -= step_size * m[k] / (sqrt(v[k]) / sqrt_c2 + eps);
        grad[k] = 0.0;
    }
}

TS_VECTOR_CLONES
static void FN(sgd_update)(size_t n, REAL *restrict w, REAL *restrict grad, REAL *restrict u, double grad_scale,
                           double momentum, double lr) {
    for (size_t k = 0; k < n; k++) {
        u[k] = momentum * u[k] + grad[k] * grad_scale;
        w[k] -= lr * u[k];
        grad[k] = 0.0;
    }
}
