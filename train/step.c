// One optimizer step (train/step.h): this rank's shards, the sum over ranks,
// the update.
#include "train/step.h"

#include "autograd/ops.h"
#include "tensor/tokens.h"
#include "train/guided.h"

#include <math.h>
#include <string.h>

enum { MAX_SKIPPED_IN_A_ROW = 10 };

// What run_shards sums over this rank's shards (and the allreduce over ranks).
enum { SUM_LOSS, SUM_PLAIN, SUM_BAD, SUM_STOP, N_SUMS };
_Static_assert(N_SUMS == TS_STEP_SUMS, "the sums step.h announces");

int ts_stop_requested(const ts_train_opts *o) { return o->stop ? (int)*o->stop : 0; }

// The training loss of a view whose sentences are rows[0..view->B) of the
// corpus: the model's, plus the guided-alignment term when it is on
// (train/guided.h); *plain gets the cross-entropy alone.
static ts_tensor *view_loss(ts_stepper *st, const ts_batch_view *view, const size_t *rows, gsl_rng *rng,
                            int *n_tokens, double *plain) {
    const ts_train_opts *o = st->opts;
    ts_regularizer reg = {o->dropout, o->label_smoothing};
    ts_attention_tap tap = {.layer = (int)o->guided_layer, .head = (int)o->guided_head};
    int guided = ts_guided_on(o);
    ts_tensor *loss = ts_seq2seq_loss_tapped(st->model, st->ctx, view, o->tf, rng, &reg, guided ? &tap : NULL, n_tokens);
    if (!loss) return NULL;
    *plain = ts_cross_entropy_nll(loss);
    if (!guided) return loss;
    size_t cells = (size_t)view->B * view->T * view->S;
    double *gold = ts_arena_alloc(st->ctx->arena, cells * sizeof *gold);  // (B, T, S)
    if (!gold) return ts_ctx_fail(st->ctx, TS_ERR_ARENA, "%s", ts_last_error());
    int rc = ts_guided_gold(st->aligned, st->units, rows, view->B, view->S, view->T, gold, NULL);
    if (rc) return ts_ctx_fail(st->ctx, rc, "%s", ts_last_error());
    double scale = *n_tokens ? o->guided_weight / *n_tokens : 0.0;  // per target token, as the cross-entropy
    return ts_add(st->ctx, loss, ts_guided_loss(st->ctx, tap.chosen, gold, scale));
}

// Forward and backward of this rank's shards of b (all of b when it is one
// part), each shard's gradient weighted by its share of the batch's n_batch
// target tokens and added into the parameters'. sums[SUM_LOSS] and
// sums[SUM_PLAIN] get the optimised loss and its plain cross-entropy times
// tokens, sums[SUM_BAD] the shards whose loss was not finite (no backward
// for them). *plain is the one part's mean cross-entropy. On failure the
// gradients hold part of the work: the caller zeroes them.
static int run_shards(ts_stepper *st, const ts_batch *b, gsl_rng *tf_rng, long step_before, long n_batch,
                      double sums[N_SUMS], double *plain) {
    const ts_train_opts *o = st->opts;
    int K = (int)o->accumulate;
    memset(sums, 0, N_SUMS * sizeof *sums);
    *plain = NAN;
    for (int k = 0; k < K; k++) {
        ts_batch_view view = {.B = b->B, .S = b->S, .T = b->T, .src = b->src, .src_len = b->src_len,
                              .tgt_in = b->tgt_in, .tgt_out = b->tgt_out};
        const size_t *rows = b->rows;
        gsl_rng *rng = tf_rng;
        if (st->shards->count > 1) {
            int shard = st->dist->rank * K + k, empty;
            int rc = ts_shard_view(st->shards, b, shard, &view, &empty);
            if (rc) return rc;
            if (empty) continue;
            rows += ts_shard_first(st->shards, b->B, shard);
            rng = ts_shard_rng(st->shards, o->seed, step_before, shard);
        }
        ts_ctx_reset(st->ctx);
        int n_tokens = 0;
        ts_tensor *loss = view_loss(st, &view, rows, rng, &n_tokens, plain);
        if (!loss) return st->ctx->status;
        double value = ts_value(loss, 0);
        if (!isfinite(value)) {
            sums[SUM_BAD] += 1;
            continue;
        }
        // One part: the weight is 1 and the step is what it always was.
        double weight = st->shards->count > 1 ? (double)n_tokens / (double)n_batch : 1.0;
        int rc = ts_backward_weighted(st->ctx, loss, weight);
        if (rc) return rc;
        sums[SUM_LOSS] += value * n_tokens;
        sums[SUM_PLAIN] += *plain * n_tokens;
    }
    return TS_OK;
}

int ts_step_run(ts_stepper *st, const ts_batch *b, gsl_rng *tf_rng, long step, double lr, ts_step_result *out) {
    const ts_train_opts *o = st->opts;
    ts_params *params = &st->model->params;
    memset(out, 0, sizeof *out);
    long n_batch = 0;  // the loss's divisor, the same on every rank: no communication needed
    for (size_t i = 0; i < (size_t)b->T * b->B; i++) n_batch += b->tgt_out[i] != TS_PAD;
    double sums[N_SUMS], plain;
    // The step arena chains more blocks when a step needs them
    // (tensor/arena.h): a step runs once, its draws made once.
    int rc = run_shards(st, b, tf_rng, step - 1, n_batch, sums, &plain);
    if (rc) {
        ts_params_zero_grad(params);
        return rc;
    }
    if (st->dist->size > 1) {
        // The stop flag travels with the sums: the ranks stop at one step.
        sums[SUM_STOP] = ts_stop_requested(o) ? 1 : 0;
        if ((rc = ts_shards_sum_over_ranks(st->shards, st->dist, params, sums, N_SUMS))) {
            ts_params_zero_grad(params);
            return rc;
        }
        st->stop_agreed = sums[SUM_STOP] > 0;
    }
    if (st->shards->count > 1) plain = sums[SUM_PLAIN] / (double)n_batch;
    out->tokens = n_batch;
    out->plain_sum = sums[SUM_PLAIN];
    out->plain = plain;
    int finite_loss = sums[SUM_BAD] == 0;
    double norm = finite_loss ? ts_grad_norm(params, st->optim->threads) : NAN;
    if (!finite_loss || !isfinite(norm)) {
        ts_params_zero_grad(params);
        out->skipped = 1;
        if (o->log)
            fprintf(o->log, "\nstep %ld: %s is %s; update skipped (%ld in a row)\n", step,
                    finite_loss ? "the gradient norm" : "the loss", finite_loss ? (isnan(norm) ? "NaN" : "Inf") : "not finite",
                    st->skipped_in_row + 1);
        if (++st->skipped_in_row >= MAX_SKIPPED_IN_A_ROW)
            return ts_fail(TS_ERR_NUMERIC, "%d steps in a row had a non-finite loss or gradient (last: step %ld); stopping without saving them",
                           MAX_SKIPPED_IN_A_ROW, step);
        return TS_OK;
    }
    st->skipped_in_row = 0;
    double base = st->optim->lr;
    st->optim->lr = lr;
    rc = ts_optim_step(st->optim, params, ts_clip_factor(norm, o->clip));
    st->optim->lr = base;
    return rc;
}
