// The learning-rate schedules: each update's learning rate from the step
// alone. Every schedule starts with the linear
// warmup (--warmup-steps W); what follows it is the schedule's own:
//   plateau       1 (the rate changes only by --lr-decay when dev loss stalls)
//   inverse-sqrt  sqrt(W / k): Vaswani et al.'s decay, from 1 at the warmup's end
//   cosine        (1 + cos(pi p)) / 2, p = (k - W) / (H - W): to 0 at the run's last step H
//   linear        1 - p: to 0 at the run's last step H
// k counts updates from 1; H (the horizon) is --steps, else --epochs x the
// batches of an epoch. The plateau rule (--lr-decay) applies under every
// schedule: it multiplies the rate the factor scales.
#ifndef TS_TRAIN_SCHEDULE_H
#define TS_TRAIN_SCHEDULE_H

#include "tensor/names.h"

typedef enum { TS_LR_PLATEAU, TS_LR_INVERSE_SQRT, TS_LR_COSINE, TS_LR_LINEAR, TS_LR_SCHEDULE_COUNT } ts_lr_schedule;

// "plateau", "inverse-sqrt", "cosine", "linear"; NULL out of range.
const char *ts_lr_schedule_name(int kind);
extern const ts_names ts_lr_schedule_names;
// Sets *kind from its name; TS_ERR_ARG naming the choices otherwise.
int ts_lr_schedule_parse(const char *text, ts_lr_schedule *kind);
// Whether the schedule reads the horizon (its checkpoint must then keep it).
int ts_lr_schedule_uses_horizon(ts_lr_schedule kind);

// The learning rate of update k >= 1 when the rate the schedule scales is lr,
// with warmup W >= 0 and horizon H (read only when the schedule uses it):
// lr k / W during the warmup, then lr times the schedule's factor in [0, 1].
double ts_lr_rate(ts_lr_schedule kind, double lr, long k, long warmup, long horizon);

#endif
