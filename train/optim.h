// Optimizers over the parameter registry, one row of a table each (train/
// optim.c): Adam, SGD with momentum and AdamW; and global gradient-norm
// clipping. Their state (moments, velocities, the step count) is per
// parameter, allocated once, and saved in checkpoints. Code outside train/
// optim* reads a kind's row (ts_optim_kind_of), never asks which kind it is.
#ifndef TS_OPTIM_H
#define TS_OPTIM_H

#include "autograd/params.h"
#include "ckpt/ckpt.h"
#include "tensor/names.h"

typedef enum { TS_OPTIM_ADAM, TS_OPTIM_SGD, TS_OPTIM_ADAMW, TS_OPTIM_COUNT } ts_optim_kind;

// torch.optim.AdamW's default weight decay: --weight-decay's default.
#define TS_OPTIM_WEIGHT_DECAY 0.01

typedef struct ts_optim_pass ts_optim_pass;  // one step's pass over the registry (train/optim.c)

// An optimizer kind: its row of the table in train/optim.c.
typedef struct {
    const char *name;         // "adam": --optim's value, config.txt's and the checkpoint's train.optimizer
    int moments;              // state tensors per parameter (1 or 2), each of its parameter's shape and dtype
    const char *moment[2];    // their checkpoint names' prefixes: "adam.m" -> "adam.m.<parameter>"
    const char *state;        // what messages call that state: "Adam's two moments"
    int decays;               // 1: reads weight_decay (--weight-decay applies to it)
    // Updates values from .. from + n of parameter i, zeroing their gradient.
    void (*update)(const ts_optim_pass *pass, int i, size_t from, size_t n);
} ts_optim_row;

// The row of kind (in range).
const ts_optim_row *ts_optim_kind_of(ts_optim_kind kind);

typedef struct {
    ts_optim_kind kind;
    double lr;
    double beta1, beta2, eps;  // Adam and AdamW (0.9, 0.999, 1e-8)
    double momentum;           // SGD (0.9; 0 = plain SGD)
    double weight_decay;       // AdamW's decoupled decay (TS_OPTIM_WEIGHT_DECAY); read by rows that decay only
    long step;                 // updates done so far (Adam's bias correction)
    int threads;               // threads for the update and norm passes (1, the default; same bits for any)
    int count;                 // parameters
    int dtype;                 // the moments' ts_dtype: the parameters'
    void **m;                  // (count) first moments / SGD velocities, each (param size)
    void **v;                  // (count) second moments (Adam, AdamW); NULL entries for a one-moment kind
} ts_optim;

// An optimizer of kind (in range) for every parameter of p (the registry
// must not change afterwards), with the defaults above (PyTorch's); the
// caller may change them before the first step. Returns TS_OK or
// TS_ERR_NOMEM. Free with ts_optim_free.
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
//   AdamW: w *= 1 - lr weight_decay, then Adam's update                (PyTorch's AdamW)
// (lr: o->lr at this step, the schedule's rate when the trainer sets it.)
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
// TS_CKPT_OPTIM tensors named by its row: "adam.m.<name>" and
// "adam.v.<name>" (Adam), "adamw.m.<name>" and "adamw.v.<name>" (AdamW),
// "sgd.velocity.<name>" (SGD), as views of o's buffers (save or free ck
// before the next step). Errors: the checkpoint setters'.
int ts_optim_save(const ts_optim *o, const ts_params *p, ts_ckpt *ck);

// Restores what ts_optim_save wrote, into an optimizer made by ts_optim_init
// for the same parameters and kind. The step count must lie in 0..max_step
// (the run's steps: an optimizer never steps more often) and every moment
// must have its parameter's shape; else TS_ERR_FORMAT naming the key or
// tensor, and nothing is used.
int ts_optim_load(ts_optim *o, const ts_params *p, const ts_ckpt *ck, long max_step);

// A kind's row name ("adam", "sgd", "adamw"; "?" out of range) <-> kind.
// Parse returns TS_ERR_ARG naming the choices.
const char *ts_optim_name(int kind);
extern const ts_names ts_optim_names;
int ts_optim_parse(const char *name, ts_optim_kind *kind);

#endif
