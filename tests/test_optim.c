// The optimizers and gradient clipping against PyTorch (tests/fixtures/torch/
// optimizer.txt): clip_grad_norm_(max_norm=1) then Adam, SGD with momentum
// or AdamW, four steps, two of them clipped. The update is one fused pass that also
// zeroes the gradients; these tests pin both.
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tensor/kernels.h"
#include "train/optim.h"
#include "testutil.h"
#include "tensor/threads.h"

#define STEPS 4
static const char *const names[2] = {"a", "b"};

// The fixture's two parameters, at their starting values, in a registry.
static void start_params(ts_params *p, const fixture *f) {
    ts_params_init(p);
    for (int i = 0; i < 2; i++) {
        char key[32];
        snprintf(key, sizeof key, "start.%s", names[i]);
        const fixture_record *r = fixture_get(f, key);
        ts_tensor *w = ts_params_add(p, names[i], r->ndim, r->dims);
        cr_assert_not_null(w);
        memcpy(w->data, r->values, r->n * sizeof(double));
    }
}

static void set_grads(ts_params *p, const fixture *f, int step) {
    for (int i = 0; i < 2; i++) {
        char key[32];
        snprintf(key, sizeof key, "grad.%s.%d", names[i], step);
        const fixture_record *r = fixture_get(f, key);
        cr_assert_eq(r->n, p->items[i]->size);
        memcpy(p->items[i]->grad, r->values, r->n * sizeof(double));
    }
}

static void follows_torch(const char *optim, int threads) {
    fixture f = fixture_load("optimizer.txt");
    ts_params p;
    start_params(&p, &f);
    ts_optim_kind kind;
    cr_assert_eq(ts_optim_parse(optim, &kind), TS_OK);
    ts_optim o;
    cr_assert_eq(ts_optim_init(&o, &p, kind, strcmp(optim, "sgd") ? 0.01 : 0.1), TS_OK);  // the fixture's rates
    o.threads = threads;
    int clipped = 0;
    for (int t = 0; t < STEPS; t++) {
        set_grads(&p, &f, t);
        char key[64];
        snprintf(key, sizeof key, "%s.norm.%d", optim, t);
        double norm = ts_grad_norm(&p, threads);
        assert_allclose(&norm, fixture_get(&f, key)->values, 1, 0, 1e-14);
        double factor = ts_clip_factor(norm, 1.0);
        clipped += factor < 1.0;
        ts_optim_step(&o, &p, factor);
        for (int i = 0; i < 2; i++) {
            snprintf(key, sizeof key, "%s.%s.%d", optim, names[i], t);
            const fixture_record *want = fixture_get(&f, key);
            assert_allclose(p.items[i]->data, want->values, want->n, 1e-15, 1e-13);
            for (size_t k = 0; k < p.items[i]->size; k++)
                cr_assert_eq(p.items[i]->grad[k], 0.0, "step %d left %s.grad[%zu] = %g; it must zero it", t,
                             names[i], k, p.items[i]->grad[k]);
        }
    }
    cr_assert_eq(clipped, 2, "the fixture clips steps 0 and 2; %d were clipped", clipped);
    ts_optim_free(&o);
    ts_params_free(&p);
    fixture_free(&f);
}

Test(optim, adam_after_clipping_follows_torch_for_four_steps) {
    follows_torch("adam", 1);
    follows_torch("adam", 2);
}

Test(optim, sgd_with_momentum_after_clipping_follows_torch_for_four_steps) {
    follows_torch("sgd", 1);
    follows_torch("sgd", 2);
}

// With ts_optim_init's weight decay, which the fixture's torch.optim.AdamW
// has by default (0.01): the default is pinned too.
Test(optim, adamw_after_clipping_follows_torch_for_four_steps) {
    follows_torch("adamw", 1);
    follows_torch("adamw", 2);
}

// Every row: its name parses back to it, and its moments are allocated.
Test(optim, each_kind_is_a_row_with_its_name_and_moments) {
    ts_params p;
    ts_params_init(&p);
    cr_assert_not_null(ts_params_add(&p, "w", 1, (int[]){3}));
    for (int k = 0; k < TS_OPTIM_COUNT; k++) {
        const ts_optim_row *row = ts_optim_kind_of((ts_optim_kind)k);
        ts_optim_kind parsed;
        cr_assert_eq(ts_optim_parse(row->name, &parsed), TS_OK, "%s", row->name);
        cr_assert_eq(parsed, k);
        cr_assert_str_eq(ts_optim_name(k), row->name);
        cr_assert(row->moments == 1 || row->moments == 2, "%s", row->name);
        ts_optim o;
        cr_assert_eq(ts_optim_init(&o, &p, (ts_optim_kind)k, 0.1), TS_OK);
        cr_assert_not_null(o.m[0]);
        cr_assert_eq(o.v[0] != NULL, row->moments == 2, "%s", row->name);
        ts_optim_free(&o);
    }
    cr_assert_str_eq(ts_optim_name(TS_OPTIM_COUNT), "?");
    ts_params_free(&p);
}

// AdamW multiplies by 1 - lr weight_decay before Adam's update: with no
// decay it is Adam to the bit, in both dtypes; with some, not.
Test(optim, adamw_without_weight_decay_is_adam_to_the_bit) {
    for (int dtype = 0; dtype < 2; dtype++)
        for (int decays = 0; decays < 2; decays++) {
            ts_params p[2];
            ts_optim o[2];
            for (int r = 0; r < 2; r++) {
                ts_params_init(&p[r]);
                ts_tensor *w = ts_params_add_dtype(&p[r], dtype ? TS_F32 : TS_F64, "w", 1, (int[]){37});
                cr_assert_not_null(w);
                cr_assert_eq(ts_optim_init(&o[r], &p[r], r ? TS_OPTIM_ADAMW : TS_OPTIM_ADAM, 0.05), TS_OK);
                o[r].weight_decay = decays ? 0.1 : 0.0;
                for (int step = 0; step < 3; step++) {
                    for (size_t k = 0; k < w->size; k++) {
                        double value = step ? 0 : cos(0.3 * (double)k), grad = sin(0.7 * (double)k + step);
                        if (dtype) w->grad_f32[k] = (float)grad, w->data_f32[k] += (float)value;
                        else w->grad[k] = grad, w->data[k] += value;
                    }
                    ts_optim_step(&o[r], &p[r], 1.0);
                }
            }
            int same = !memcmp(p[0].items[0]->raw, p[1].items[0]->raw, ts_tensor_bytes(p[0].items[0]));
            cr_assert_eq(same, !decays, "%s, weight decay %g: %s", dtype ? "float32" : "float64", o[1].weight_decay,
                         same ? "the same bits as Adam" : "not Adam's bits");
            for (int r = 0; r < 2; r++) {
                ts_optim_free(&o[r]);
                ts_params_free(&p[r]);
            }
        }
}

// Many tensors of uneven sizes, each optimizer and dtype: 2, 3, 5 and 8
// threads give one thread's bits (the update's parts cut tensors at ragged
// places; the norm's squares are added in one order).
static void threads_give_the_same_bits(ts_optim_kind kind, int dtype) {
    enum { RUNS = 5, TENSORS = 9 };
    const int threads[RUNS] = {1, 2, 3, 5, 8};
    ts_params p[RUNS];
    ts_optim o[RUNS];
    double norm[RUNS];
    for (int r = 0; r < RUNS; r++) {
        ts_params_init(&p[r]);
        for (int i = 0; i < TENSORS; i++) {
            char name[8];
            snprintf(name, sizeof name, "p%d", i);
            ts_tensor *w = ts_params_add_dtype(&p[r], dtype, name, 1, (int[]){1 + 3701 * i * i});
            for (size_t k = 0; k < w->size; k++) {
                double value = cos(0.3 * (double)k + i), grad = sin(0.7 * (double)k * (i + 1)) * 10;
                if (dtype == TS_F32) w->data_f32[k] = (float)value, w->grad_f32[k] = (float)grad;
                else w->data[k] = value, w->grad[k] = grad;
            }
        }
        cr_assert_eq(ts_optim_init(&o[r], &p[r], kind, 1e-3), TS_OK);
        ts_threads_use(threads[r]);  // the parts ts_parallel_run may use
        o[r].threads = threads[r];
        for (int step = 0; step < 2; step++) {
            norm[r] = ts_grad_norm(&p[r], threads[r]);
            ts_optim_step(&o[r], &p[r], ts_clip_factor(norm[r], 5.0));
            for (int i = 0; i < TENSORS; i++)  // the step zeroed them: a second step needs gradients
                memcpy(p[r].items[i]->grad_raw, p[r].items[i]->raw, ts_tensor_bytes(p[r].items[i]));
        }
    }
    ts_threads_use(1);
    for (int r = 1; r < RUNS; r++) {
        cr_assert_eq(memcmp(&norm[0], &norm[r], sizeof(double)), 0, "norm %.17g vs %.17g", norm[0], norm[r]);
        for (int i = 0; i < TENSORS; i++) {
            const ts_tensor *a = p[0].items[i], *b = p[r].items[i];
            size_t bytes = ts_tensor_bytes(a);
            cr_assert_eq(memcmp(a->raw, b->raw, bytes), 0, "tensor %d differs on %d threads", i, threads[r]);
            cr_assert_eq(memcmp(o[0].m[i], o[r].m[i], bytes), 0);
            if (o[0].v[i]) cr_assert_eq(memcmp(o[0].v[i], o[r].v[i], bytes), 0);
        }
    }
    for (int r = 0; r < RUNS; r++) {
        ts_optim_free(&o[r]);
        ts_params_free(&p[r]);
    }
}

Test(optim, any_thread_count_gives_the_same_bits_as_one) {
    for (int dtype = 0; dtype < 2; dtype++)
        for (int kind = 0; kind < TS_OPTIM_COUNT; kind++) threads_give_the_same_bits((ts_optim_kind)kind, dtype ? TS_F32 : TS_F64);
}

Test(optim, clip_factor_is_torchs_rule) {
    cr_assert_eq(ts_clip_factor(0.5, 1.0), 1.0);
    cr_assert_eq(ts_clip_factor(4.0, 1.0), 1.0 / (4.0 + 1e-6));
    cr_assert_eq(ts_clip_factor(1e9, 0.0), 1.0, "max_norm 0 means no clipping");
    cr_assert_eq(ts_clip_factor(NAN, 1.0), 1.0);
    cr_assert_eq(ts_clip_factor(INFINITY, 1.0), 1.0);
}

Test(optim, the_gradient_norm_is_exact_and_not_finite_when_a_gradient_is_not) {
    ts_params p;
    ts_params_init(&p);
    ts_tensor *a = ts_params_add(&p, "a", 1, (int[]){1001});  // not a multiple of 8: the tail counts
    ts_tensor *b = ts_params_add(&p, "b", 2, (int[]){3, 5});
    long double want = 0;
    for (size_t k = 0; k < a->size; k++) {
        a->grad[k] = sin(0.1 * (double)k) * (1 + (double)k / 100);
        want += (long double)a->grad[k] * a->grad[k];
    }
    for (size_t k = 0; k < b->size; k++) {
        b->grad[k] = -1.5 + 0.25 * (double)k;
        want += (long double)b->grad[k] * b->grad[k];
    }
    double got = ts_grad_norm(&p, 2), w = (double)sqrtl(want);
    assert_allclose(&got, &w, 1, 0, 1e-14);
    b->grad[7] = NAN;
    cr_assert(isnan(ts_grad_norm(&p, 2)));
    b->grad[7] = INFINITY;
    cr_assert(isinf(ts_grad_norm(&p, 1)));
    ts_params_free(&p);
}

Test(optim, sum_of_squares_keeps_the_fixed_order_of_ts_sum_array) {
    double x[19], sq[19];
    for (int i = 0; i < 19; i++) {
        x[i] = 1.0 / (i + 1) * (i % 3 ? 1e8 : 1e-8);
        sq[i] = x[i] * x[i];
    }
    for (size_t n = 0; n <= 19; n++)
        cr_assert_eq(ts_sumsq_array(x, n), ts_sum_array(sq, n), "n = %zu", n);
}

// A step count at its limit (a restored one can be anything) is an error,
// not an overflow; nothing is updated and the gradients are cleared.
Test(optim, a_step_count_at_its_limit_fails_without_updating) {
    ts_params p;
    ts_params_init(&p);
    ts_tensor *w = ts_params_add(&p, "w", 1, (int[]){3});
    cr_assert_not_null(w);
    for (int i = 0; i < 3; i++) {
        w->data[i] = i;
        w->grad[i] = 1;
    }
    ts_optim o;
    cr_assert_eq(ts_optim_init(&o, &p, TS_OPTIM_ADAM, 0.1), TS_OK);
    o.step = LONG_MAX;
    cr_assert_eq(ts_optim_step(&o, &p, 1.0), TS_ERR_NUMERIC);
    cr_assert(strstr(ts_last_error(), "step count"), "%s", ts_last_error());
    cr_assert_eq(o.step, LONG_MAX);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(w->data[i], (double)i);
        cr_assert_eq(w->grad[i], 0.0);
    }
    ts_optim_free(&o);
    ts_params_free(&p);
}

// Two steps, a save, two more steps from the loaded copy: the same bits as
// four steps in one go (what resuming a run relies on), for every kind.
static void state_round_trips(const char *optim) {
    fixture f = fixture_load("optimizer.txt");
    ts_params p, q;
    start_params(&p, &f);
    start_params(&q, &f);
    ts_optim_kind kind;
    cr_assert_eq(ts_optim_parse(optim, &kind), TS_OK);
    ts_optim a, b;
    cr_assert_eq(ts_optim_init(&a, &p, kind, 0.01), TS_OK);
    cr_assert_eq(ts_optim_init(&b, &q, kind, 0.01), TS_OK);
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert_not_null(ck);
    for (int t = 0; t < STEPS; t++) {
        if (t == 2) {
            cr_assert_eq(ts_optim_save(&a, &p, ck), TS_OK);
            cr_assert_eq(ts_optim_load(&b, &q, ck, 2), TS_OK, "%s", ts_last_error());
            cr_assert_eq(b.step, 2);
            for (int i = 0; i < 2; i++) memcpy(q.items[i]->data, p.items[i]->data, p.items[i]->size * sizeof(double));
        }
        set_grads(&p, &f, t);
        ts_optim_step(&a, &p, 1.0);
        if (t >= 2) {
            set_grads(&q, &f, t);
            ts_optim_step(&b, &q, 1.0);
        }
    }
    for (int i = 0; i < 2; i++)
        cr_assert_arr_eq(q.items[i]->data, p.items[i]->data, p.items[i]->size * sizeof(double), "%s %s", optim, names[i]);
    ts_ckpt_free(ck);
    ts_optim_free(&a);
    ts_optim_free(&b);
    ts_params_free(&p);
    ts_params_free(&q);
    fixture_free(&f);
}

Test(optim, adam_state_saved_and_loaded_continues_bit_for_bit) { state_round_trips("adam"); }
Test(optim, sgd_state_saved_and_loaded_continues_bit_for_bit) { state_round_trips("sgd"); }
Test(optim, adamw_state_saved_and_loaded_continues_bit_for_bit) { state_round_trips("adamw"); }

Test(optim, a_loaded_state_is_checked_before_any_of_it_is_used) {
    ts_params p;
    ts_params_init(&p);
    cr_assert_not_null(ts_params_add(&p, "w", 1, (int[]){3}));
    cr_assert_not_null(ts_params_add(&p, "u", 1, (int[]){2}));
    ts_optim o;
    cr_assert_eq(ts_optim_init(&o, &p, TS_OPTIM_ADAM, 0.1), TS_OK);
    ts_ckpt *ck = ts_ckpt_new();
    cr_assert_not_null(ck);
    o.step = 5;
    for (int i = 0; i < 3; i++) ((double *)o.m[0])[i] = 1.5;
    cr_assert_eq(ts_optim_save(&o, &p, ck), TS_OK);  // views of o's moments: o stays as it is
    cr_assert_not_null(ts_ckpt_find_tensor(ck, TS_CKPT_OPTIM, "adam.v.u"));
    ts_optim fresh;
    cr_assert_eq(ts_optim_init(&fresh, &p, TS_OPTIM_ADAM, 0.1), TS_OK);
    // More steps than the run made: a damaged file.
    cr_assert_eq(ts_optim_load(&fresh, &p, ck, 4), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "state.optimizer_step"), "%s", ts_last_error());
    cr_assert_eq(fresh.step, 0);
    cr_assert_eq(((double *)fresh.m[0])[0], 0);
    // SGD looks for its velocities, which an Adam state does not hold: nothing is copied.
    ts_optim sgd;
    cr_assert_eq(ts_optim_init(&sgd, &p, TS_OPTIM_SGD, 0.1), TS_OK);
    cr_assert_neq(ts_optim_load(&sgd, &p, ck, 5), TS_OK);
    cr_assert(strstr(ts_last_error(), "sgd.velocity.w"), "%s", ts_last_error());
    cr_assert_eq(sgd.step, 0);
    // AdamW's moments have their own names: an Adam state is not AdamW's.
    ts_optim adamw;
    cr_assert_eq(ts_optim_init(&adamw, &p, TS_OPTIM_ADAMW, 0.1), TS_OK);
    cr_assert_neq(ts_optim_load(&adamw, &p, ck, 5), TS_OK);
    cr_assert(strstr(ts_last_error(), "adamw.m.w"), "%s", ts_last_error());
    cr_assert_eq(adamw.step, 0);
    ts_optim_free(&adamw);
    cr_assert_eq(ts_optim_load(&fresh, &p, ck, 5), TS_OK);
    cr_assert_eq(fresh.step, 5);
    cr_assert_eq(((double *)fresh.m[0])[0], 1.5);
    ts_optim_free(&fresh);
    ts_optim_free(&sgd);
    ts_ckpt_free(ck);
    ts_optim_free(&o);
    ts_params_free(&p);
}
