// The learning-rate schedules (train/schedule.h): one table of kinds.
#include "train/schedule.h"

#include "tensor/status.h"

#include <math.h>
#include <string.h>

static const double pi = 3.14159265358979323846;

// The decay after the warmup; p in [0, 1] is how far the run is from the warmup's end to the horizon.
static double plateau(long k, long warmup, double p) { return (void)k, (void)warmup, (void)p, 1.0; }
static double inverse_sqrt(long k, long warmup, double p) {
    return (void)p, sqrt((double)(warmup > 0 ? warmup : 1) / (double)k);  // 1 at k = W
}
static double cosine(long k, long warmup, double p) { return (void)k, (void)warmup, 0.5 * (1.0 + cos(pi * p)); }
static double linear(long k, long warmup, double p) { return (void)k, (void)warmup, 1.0 - p; }

static const struct {
    const char *name;
    double (*decay)(long k, long warmup, double p);
    int uses_horizon;
} schedules[] = {
    [TS_LR_PLATEAU] = {"plateau", plateau, 0},
    [TS_LR_INVERSE_SQRT] = {"inverse-sqrt", inverse_sqrt, 0},
    [TS_LR_COSINE] = {"cosine", cosine, 1},
    [TS_LR_LINEAR] = {"linear", linear, 1},
};
_Static_assert(sizeof schedules / sizeof *schedules == TS_LR_SCHEDULE_COUNT, "a row per schedule");

const char *ts_lr_schedule_name(int kind) { return kind >= 0 && kind < TS_LR_SCHEDULE_COUNT ? schedules[kind].name : NULL; }

const ts_names ts_lr_schedule_names = {.what = "learning-rate schedule", .count = TS_LR_SCHEDULE_COUNT, .name = ts_lr_schedule_name};

int ts_lr_schedule_parse(const char *text, ts_lr_schedule *kind) {
    int v, rc = ts_names_parse(&ts_lr_schedule_names, text, &v);
    if (!rc) *kind = (ts_lr_schedule)v;
    return rc;
}

int ts_lr_schedule_uses_horizon(ts_lr_schedule kind) { return schedules[kind].uses_horizon; }

double ts_lr_rate(ts_lr_schedule kind, double lr, long k, long warmup, long horizon) {
    if (k < warmup) return lr * (double)k / (double)warmup;
    double p = horizon > warmup ? (double)(k - warmup) / (double)(horizon - warmup) : 1.0;
    return lr * schedules[kind].decay(k, warmup, p < 1.0 ? p : 1.0);
}
