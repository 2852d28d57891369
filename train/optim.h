// Optimizers over the parameter registry: Adam and SGD with momentum, and
// global gradient-norm clipping. Their state (moments, velocities, the step
// count) is per parameter, allocated once, and saved in checkpoints.
#ifndef TS_OPTIM_H
#define TS_OPTIM_H

#include "autograd/params.h"
#include "ckpt/ckpt.h"
#include "tensor/names.h"

typedef enum { TS_OPTIM_ADAM, TS_OPTIM_SGD } ts_optim_kind;

typedef struct {
    ts_optim_kind kind;
    double lr;
    double beta1, beta2, eps;  // Adam (0.9, 0.999, 1e-8)
    double momentum;           // SGD (0.9; 0 = plain SGD)
    long step;                 // updates done so far (Adam's bias correction)
    int threads;               // threads for the update and norm passes (1, the default; same bits for any)
    int count;                 // parameters
    int dtype;                 // the moments' ts_dtype: the parameters'
    void **m;                  // (count) first moments / SGD velocities, each (param size)
    void **v;                  // (count) Adam second moments; NULL entries for SGD
} ts_optim;

// An optimizer for every parameter of p (the registry must not change
// afterwards). Returns TS_OK or TS_ERR_NOMEM. Free with ts_optim_free.
int ts_optim_init(ts_optim *o, const ts_params *p, ts_optim_kind kind, double lr);
void ts_optim_free(ts_optim *o);

// One update from the current gradients, each first multiplied by
// grad_scale (the clipping factor; 1 for none), in one pass per parameter
// over w, its gradient and its state. The gradients are left zeroed, ready
// for the next backward. Returns TS_OK, or TS_ERR_NUMERIC (nothing updated,
// gradients zeroed) when the step count is at LONG_MAX:
//   Adam: g = grad_scale grad;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//         w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)     (PyTorch's Adam)
//   SGD:  g = grad_scale grad;  u = momentum u + g;  w -= lr u           (PyTorch's SGD)
int ts_optim_step(ts_optim *o, ts_params *p, double grad_scale);

// The global L2 norm of every gradient, on up to `threads` threads (fixed
// summation order: the same bits every run, whatever the thread count); NaN
// or Inf when a gradient is not finite (NaN too when out of memory).
double ts_grad_norm(const ts_params *p, int threads);

// The factor that brings gradients of global norm `norm` down to max_norm, as
// PyTorch's clip_grad_norm_: min(1, max_norm / (norm + 1e-6)); 1 when
// max_norm <= 0 (no clipping) or norm is not finite.
double ts_clip_factor(double norm, double max_norm);

// The optimizer's own state in a checkpoint: the header key
// state.optimizer_step and, for every parameter of p, its moments as
// TS_CKPT_OPTIM tensors "adam.m.<name>" and "adam.v.<name>" (Adam) or
// "sgd.velocity.<name>" (SGD), as views of o's buffers (save or free ck
// before the next step). Errors: the checkpoint setters'.
int ts_optim_save(const ts_optim *o, const ts_params *p, ts_ckpt *ck);

// Restores what ts_optim_save wrote, into an optimizer made by ts_optim_init
// for the same parameters and kind. The step count must lie in 0..max_step
// (the run's steps: an optimizer never steps more often) and every moment
// must have its parameter's shape; else TS_ERR_FORMAT naming the key or
// tensor, and nothing is used.
int ts_optim_load(ts_optim *o, const ts_params *p, const ts_ckpt *ck, long max_step);

// "adam" / "sgd" <-> kind. Parse returns TS_ERR_ARG naming the choices.
const char *ts_optim_name(int kind);
extern const ts_names ts_optim_names;
int ts_optim_parse(const char *name, ts_optim_kind *kind);

#endif
