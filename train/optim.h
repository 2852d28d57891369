// Optimizers over the parameter registry: Adam and SGD with momentum, and
// global gradient-norm clipping. Their state (moments, velocities, the step
// count) is per parameter, allocated once, and saved in checkpoints.
#ifndef TS_OPTIM_H
#define TS_OPTIM_H

#include "autograd/params.h"

typedef enum { TS_OPTIM_ADAM, TS_OPTIM_SGD } ts_optim_kind;

typedef struct {
    ts_optim_kind kind;
    double lr;
    double beta1, beta2, eps;  // Adam (0.9, 0.999, 1e-8)
    double momentum;           // SGD (0.9; 0 = plain SGD)
    long step;                 // updates done so far (Adam's bias correction)
    int count;                 // parameters
    double **m;                // (count) first moments / SGD velocities, each (param size)
    double **v;                // (count) Adam second moments; NULL entries for SGD
} ts_optim;

// An optimizer for every parameter of p (the registry must not change
// afterwards). Returns TS_OK or TS_ERR_NOMEM. Free with ts_optim_free.
int ts_optim_init(ts_optim *o, const ts_params *p, ts_optim_kind kind, double lr);
void ts_optim_free(ts_optim *o);

// One update from the current gradients:
//   Adam: m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//         w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)     (PyTorch's Adam)
//   SGD:  u = momentum u + g;  w -= lr u                                  (PyTorch's SGD)
void ts_optim_step(ts_optim *o, ts_params *p);

// The global L2 norm of every gradient; scales them all by max_norm / norm
// when it exceeds max_norm (max_norm <= 0: no clipping). Returns the norm
// before clipping (NaN or Inf when a gradient is not finite).
double ts_clip_grad_norm(ts_params *p, double max_norm);

// "adam" / "sgd" <-> kind. Parse returns TS_ERR_ARG naming the choices.
const char *ts_optim_name(ts_optim_kind kind);
int ts_optim_parse(const char *name, ts_optim_kind *kind);

#endif
