// The trainer's state and its checkpoints (train/state.h). Everything that
// decides what a continued run computes is saved; nothing that depends on
// time or the machine is.
#include "train/state.h"

#include "infer/load.h"
#include "models/fields.h"
#include "tensor/atomic_write.h"  // ts_path_join
#include "train/options.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

int ts_train_state_init(ts_train_state *s, long seed, long max_epochs) {
    memset(s, 0, sizeof *s);
    s->best_dev = INFINITY;
    s->best = (ts_train_best){.step = 0, .loss = INFINITY, .bleu = -1};
    s->shuffle_rng = gsl_rng_alloc(gsl_rng_mt19937);
    s->tf_rng = gsl_rng_alloc(gsl_rng_mt19937);
    s->history_train = calloc((size_t)max_epochs + 1, sizeof(double));
    s->history_dev = calloc((size_t)max_epochs + 1, sizeof(double));
    if (!s->shuffle_rng || !s->tf_rng || !s->history_train || !s->history_dev ||
        !(s->epoch_start_state = malloc(gsl_rng_size(s->shuffle_rng))))
        return ts_fail(TS_ERR_NOMEM, "out of memory: cannot allocate the trainer");
    gsl_rng_set(s->shuffle_rng, (unsigned long)seed + 1);
    gsl_rng_set(s->tf_rng, (unsigned long)seed + 2);
    memcpy(s->epoch_start_state, gsl_rng_state(s->shuffle_rng), gsl_rng_size(s->shuffle_rng));
    return TS_OK;
}

void ts_train_state_free(ts_train_state *s) {
    if (s->shuffle_rng) gsl_rng_free(s->shuffle_rng);
    if (s->tf_rng) gsl_rng_free(s->tf_rng);
    free(s->epoch_start_state);
    free(s->history_train);
    free(s->history_dev);
}

int ts_train_best_is_beaten(const ts_train_best *best, ts_best_by by, double loss, double bleu) {
    if (isinf(best->loss)) return 1;
    if (by == TS_BEST_LOSS) return loss < best->loss;
    return bleu > best->bleu || (bleu == best->bleu && loss < best->loss);
}

int ts_train_best_offer(ts_train_best *best, ts_best_by by, long step, const ts_eval_result *dev) {
    if (!ts_train_best_is_beaten(best, by, dev->loss, dev->bleu)) return 0;
    *best = (ts_train_best){.step = step, .loss = dev->loss, .bleu = dev->bleu};
    return 1;
}

int ts_train_state_end_epoch(ts_train_state *s, const ts_train_opts *o, double train_loss, const ts_eval_result *dev,
                             double *lr, int *stop) {
    s->history_train[s->epoch] = train_loss;
    s->history_dev[s->epoch] = dev->loss;
    s->epoch++;  // below max_epochs <= TS_MAX_EPOCHS: the loop stops there
    s->position = 0;
    s->epoch_loss_sum = 0;
    s->epoch_tokens = 0;
    // best.ckpt follows --best; the schedule and early stopping, dev loss.
    int best = ts_train_best_offer(&s->best, o->best, s->step, dev);
    if (dev->loss < s->best_dev) {
        s->best_dev = dev->loss;
        s->stale = 0;
    } else {
        s->stale++;  // at most patience: the run stops there
        *lr *= o->lr_decay;
    }
    *stop = s->stale >= o->patience;
    // The next epoch starts here, so a checkpoint saved now resumes into it.
    memcpy(s->epoch_start_state, gsl_rng_state(s->shuffle_rng), gsl_rng_size(s->shuffle_rng));
    return best;
}

// ---- saving --------------------------------------------------------------------

// Without `full` (best.ckpt), only what inference needs and how the model was
// trained: no optimizer state, RNGs or position, a third of the bytes to load
// for translate.
int ts_train_state_save(const ts_train_state *s, const ts_train_opts *o, const ts_translator *trained,
                        const ts_optim *optim, const char *name, int full) {
    const ts_seq2seq *m = trained->model;
    // An update can overflow even when its loss and gradient were finite:
    // refuse to write such a model (the previous file stays as it was).
    for (int i = 0; i < m->params.count; i++) {
        const ts_tensor *p = m->params.items[i];
        for (size_t k = 0; k < p->size; k++)
            if (!isfinite(ts_value(p, k)))
                return ts_fail(TS_ERR_NUMERIC, "step %ld: %s[%zu] is %g; not saving %s", s->step, p->name, k, ts_value(p, k),
                               name);
    }
    ts_ckpt *ck = ts_ckpt_new();
    if (!ck) return ts_fail(TS_ERR_NOMEM, "cannot allocate a checkpoint");
    int rc = ts_model_to_ckpt(ck, trained);
    if (!rc) rc = ts_train_options_save(ck, o, optim->lr);
    if (!rc) rc = ts_ckpt_set(ck, "checkpoint.kind", full ? "training" : "inference");
    if (!rc && !full) goto save;
    if (!rc) rc = ts_ckpt_set_int(ck, "state.step", s->step);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.epoch", s->epoch);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.position", s->position);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.stale", s->stale);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.skipped", s->skipped);
    if (!rc) rc = ts_ckpt_set_double(ck, "state.best_dev_loss", s->best_dev);
    if (!rc) rc = ts_ckpt_set_double(ck, "state.epoch_loss_sum", s->epoch_loss_sum);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.epoch_tokens", s->epoch_tokens);
    if (!rc) rc = ts_ckpt_set_int(ck, "state.best_model_step", s->best.step);
    if (!rc) rc = ts_ckpt_set_double(ck, "state.best_model_dev_loss", s->best.loss);
    if (!rc) rc = ts_ckpt_set_double(ck, "state.best_dev_bleu", s->best.bleu);
    if (!rc && ts_lr_schedule_uses_horizon(o->lr_schedule)) rc = ts_ckpt_set_int(ck, "state.lr_horizon", s->lr_horizon);
    if (!rc) rc = ts_ckpt_set_blob(ck, "rng.shuffle_epoch_start", s->epoch_start_state, gsl_rng_size(s->shuffle_rng));
    if (!rc) rc = ts_ckpt_set_blob(ck, "rng.teacher_forcing", gsl_rng_state(s->tf_rng), gsl_rng_size(s->tf_rng));
    if (!rc) rc = ts_optim_save(optim, &m->params, ck);
    if (!rc && s->epoch > 0) {
        size_t n = (size_t)s->epoch;
        rc = ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, "history.train_loss", 1, &n, s->history_train);
        if (!rc) rc = ts_ckpt_add_tensor(ck, TS_CKPT_OPTIM, "history.dev_loss", 1, &n, s->history_dev);
    }
save:;
    char path[4096];
    if (!rc) rc = ts_path_join(path, sizeof path, o->out_dir, name);
    if (!rc) rc = ts_ckpt_save(ck, path);
    ts_ckpt_free(ck);
    return rc;
}

// ---- resuming --------------------------------------------------------------------

// Puts "<checkpoint path>: " before the message of a failure rc, unless the
// message names it already.
static int in_checkpoint(int rc, const char *path) {
    if (!rc || strstr(ts_last_error(), path)) return rc;
    char message[2048];  // ts_fail writes into the buffer ts_last_error reads
    snprintf(message, sizeof message, "%s", ts_last_error());
    return ts_fail(rc, "%s: %s", path, message);
}

int ts_train_state_load(const char *path, ts_ckpt **out) {
    int rc = ts_ckpt_load(path, NULL, out);
    // The container says "cannot open checkpoint PATH: reason"; the flag says it here.
    char opening[4200];
    snprintf(opening, sizeof opening, "cannot open checkpoint %s: ", path);
    if (rc == TS_ERR_IO && !strncmp(ts_last_error(), opening, strlen(opening))) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", ts_last_error() + strlen(opening));
        return ts_fail(rc, "--resume: cannot open '%s': %s", path, reason);
    }
    return in_checkpoint(rc, path);
}

// The vocabulary a checkpoint was trained with must be the one this run's
// data builds, word for word: the same size with other words would make
// every id mean another word.
static int check_same_vocab(const char *side, const ts_vocab *saved, const ts_vocab *now) {
    size_t n_saved = ts_vocab_size(saved), n_now = ts_vocab_size(now);
    for (size_t id = 0; id < n_saved || id < n_now; id++) {
        const char *a = id < n_saved ? ts_vocab_word(saved, (int32_t)id) : NULL;
        const char *b = id < n_now ? ts_vocab_word(now, (int32_t)id) : NULL;
        if (a && b && !strcmp(a, b)) continue;
        return ts_fail(TS_ERR_ARG,
                       "the data changed since it was saved: %s word %zu is %s%s%s in the checkpoint but %s%s%s in this "
                       "run's corpus (%zu words then, %zu now); resuming needs the same corpus and flags",
                       side, id, a ? "'" : "", a ? a : "absent", a ? "'" : "", b ? "'" : "", b ? b : "absent", b ? "'" : "",
                       n_saved, n_now);
    }
    return TS_OK;
}

int ts_train_state_resume_translator(const ts_ckpt *ck, const char *path, ts_translator *out) {
    return in_checkpoint(ts_translator_from_ckpt(ck, out), path);
}

int ts_train_state_resume_model(ts_translator *loaded, const char *path, const ts_vocab *src, const ts_vocab *tgt,
                                const ts_model_config *cfg, ts_seq2seq **model) {
    *model = NULL;
    int rc = check_same_vocab("source", loaded->src_vocab, src);
    if (!rc) rc = check_same_vocab("target", loaded->tgt_vocab, tgt);
    const ts_model_config *saved = &loaded->model->cfg;
    // The first field that differs, named by its flag with both values.
    for (int i = 0; !rc && i < ts_model_field_count; i++) {
        const ts_model_field *f = &ts_model_fields[i];
        int was = ts_model_field_get(saved, f), now = ts_model_field_get(cfg, f);
        if (!ts_model_field_applies(f, saved->arch) || was == now) continue;
        char what[64], a[32], b[32];
        if (f->set.flag) snprintf(what, sizeof what, "--%s", f->set.flag);
        else snprintf(what, sizeof what, "%s", f->label);
        snprintf(a, sizeof a, "%s", f->set.names ? ts_names_name(f->set.names, was) : "");
        snprintf(b, sizeof b, "%s", f->set.names ? ts_names_name(f->set.names, now) : "");
        if (!f->set.names) snprintf(a, sizeof a, "%d", was), snprintf(b, sizeof b, "%d", now);
        rc = ts_fail(TS_ERR_ARG, "it was trained with %s %s; this run asks for %s %s (resuming must keep the model's flags)",
                     what, a, what, b);
    }
    if (!rc) {
        *model = loaded->model;  // the one model of the run; the data's vocabularies are the same words
        loaded->model = NULL;
    }
    return in_checkpoint(rc, path);
}

static int restore_rng(const ts_ckpt *ck, const char *name, gsl_rng *rng, unsigned char *into) {
    const void *bytes;
    size_t n;
    int rc = ts_ckpt_get_blob(ck, name, &bytes, &n);
    if (rc) return rc;
    if (n != gsl_rng_size(rng)) return ts_fail(TS_ERR_FORMAT, "blob %s has %zu bytes, the RNG needs %zu", name, n, gsl_rng_size(rng));
    memcpy(into ? (void *)into : gsl_rng_state(rng), bytes, n);
    return TS_OK;
}

// The evaluation best.ckpt holds. Its step and dev loss are saved since any
// evaluation could choose it (state.best_model_*); an older checkpoint's best
// was an epoch's (state.best_epoch, an epoch's end `batches` steps each), and
// one from before --best chose by dev loss: its best epoch is the one with the
// lowest, its BLEU unknown (-1), so the next evaluation replaces it under
// --best bleu.
static int restore_best(ts_train_state *s, const ts_ckpt *ck, long batches) {
    ts_train_best *b = &s->best;
    const char *present;
    int rc;
    if (ts_ckpt_get_string(ck, "state.best_model_step", &present) == TS_OK) {
        int64_t step;
        rc = ts_ckpt_get_int(ck, "state.best_model_step", 0, s->step, &step);
        if (!rc) rc = ts_ckpt_get_double(ck, "state.best_model_dev_loss", 0, INFINITY, &b->loss);
        if (!rc) rc = ts_ckpt_get_double(ck, "state.best_dev_bleu", -1, 1, &b->bleu);
        if (!rc && isinf(b->loss) && (step != 0 || b->bleu != -1))
            rc = ts_fail(TS_ERR_FORMAT, "state.best_model_dev_loss inf (no best yet) disagrees with state.best_model_step "
                         "%lld and state.best_dev_bleu %g", (long long)step, b->bleu);
        b->step = step;
        return rc;
    }
    ts_clear_error();
    int64_t epoch = 0;
    b->bleu = -1;
    if (ts_ckpt_get_string(ck, "state.best_epoch", &present) == TS_OK) {
        rc = ts_ckpt_get_int(ck, "state.best_epoch", 0, s->epoch, &epoch);
        if (!rc) rc = ts_ckpt_get_double(ck, "state.best_dev_bleu", -1, 1, &b->bleu);
        if (!rc && epoch == 0 && b->bleu != -1)
            rc = ts_fail(TS_ERR_FORMAT, "state.best_epoch 0 (none) and state.best_dev_bleu %g disagree", b->bleu);
        if (rc) return rc;
    } else {
        ts_clear_error();
        for (long e = 0; e < s->epoch; e++)
            if (s->history_dev[e] == s->best_dev) epoch = e + 1;
    }
    b->step = (long)epoch * batches;
    b->loss = epoch ? s->history_dev[epoch - 1] : INFINITY;
    return TS_OK;
}

static int restore_state(ts_train_state *s, ts_optim *optim, const ts_params *params, const ts_ckpt *ck,
                         const ts_train_opts *o, long batches, long max_epochs) {
    int64_t step, epoch, position, stale, skipped, tokens;
    double lr, best_dev, loss_sum;
    const char *kind;
    if (!ts_ckpt_get_string(ck, "checkpoint.kind", &kind) && !strcmp(kind, "inference"))
        return ts_fail(TS_ERR_FORMAT, "%s holds a model for inference, no training state: resume from last.ckpt", o->resume);
    int rc = ts_ckpt_get_int(ck, "state.step", 0, TS_COUNT_MAX, &step);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.epoch", 0, TS_MAX_EPOCHS, &epoch);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.position", 0, batches, &position);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.stale", 0, o->patience, &stale);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.skipped", 0, step, &skipped);
    if (!rc) rc = ts_ckpt_get_int(ck, "state.epoch_tokens", 0, TS_COUNT_MAX, &tokens);
    if (!rc) rc = ts_ckpt_get_double(ck, "state.best_dev_loss", 0, INFINITY, &best_dev);
    if (!rc) rc = ts_ckpt_get_double(ck, "state.epoch_loss_sum", 0, DBL_MAX, &loss_sum);
    if (!rc) rc = ts_ckpt_get_double(ck, "train.lr", 0, o->lr, &lr);  // decay only lowers it
    if (!rc) rc = restore_rng(ck, "rng.shuffle_epoch_start", s->shuffle_rng, s->epoch_start_state);
    if (!rc) rc = restore_rng(ck, "rng.teacher_forcing", s->tf_rng, NULL);
    if (!rc) rc = ts_optim_load(optim, params, ck, (long)step);
    if (rc) return rc;
    if (epoch > max_epochs)  // only with --epochs: max_epochs is TS_MAX_EPOCHS with --steps
        return ts_fail(TS_ERR_ARG, "it has done %lld epochs; --epochs %ld asks for fewer (give --epochs %lld or more to continue it)",
                       (long long)epoch, o->epochs, (long long)epoch);
    if (o->steps > 0 && step > o->steps)
        return ts_fail(TS_ERR_ARG, "it has done %lld steps; --steps %ld asks for fewer (give --steps %lld or more to continue it)",
                       (long long)step, o->steps, (long long)step);
    // A schedule that ends at the run's last step must end where the saved run's did.
    int64_t horizon;
    if (ts_lr_schedule_uses_horizon(o->lr_schedule) &&
        (rc = ts_ckpt_get_int(ck, "state.lr_horizon", 1, TS_COUNT_MAX, &horizon)))
        return rc;
    if (ts_lr_schedule_uses_horizon(o->lr_schedule) && horizon != s->lr_horizon)
        return ts_fail(TS_ERR_ARG, "its --lr-schedule %s ends at step %lld; %s %ld makes it end at step %ld "
                       "(resuming must keep --epochs and --steps)", ts_lr_schedule_name(o->lr_schedule), (long long)horizon,
                       o->steps > 0 ? "--steps" : "--epochs", o->steps > 0 ? o->steps : o->epochs, s->lr_horizon);
    s->step = step;
    s->epoch = epoch;
    s->position = position;
    s->stale = stale;
    s->skipped = skipped;
    s->epoch_tokens = tokens;
    s->best_dev = best_dev;
    s->epoch_loss_sum = loss_sum;
    optim->lr = lr;
    if (epoch > 0) {
        size_t n = (size_t)epoch;
        const ts_ckpt_tensor *train, *dev;
        if ((rc = ts_ckpt_expect_tensor(ck, TS_CKPT_OPTIM, "history.train_loss", 1, &n, &train)) ||
            (rc = ts_ckpt_expect_tensor(ck, TS_CKPT_OPTIM, "history.dev_loss", 1, &n, &dev)))
            return rc;
        ts_values_convert(s->history_train, TS_F64, train->raw, train->dtype, n);  // float64 as written; any dtype read
        ts_values_convert(s->history_dev, TS_F64, dev->raw, dev->dtype, n);
    }
    return restore_best(s, ck, batches);
}

int ts_train_state_restore(ts_train_state *s, ts_optim *optim, const ts_params *params, const ts_ckpt *ck,
                           const ts_train_opts *o, long batches, long max_epochs) {
    return in_checkpoint(restore_state(s, optim, params, ck, o, batches, max_epochs), o->resume);
}

int ts_train_state_check_size(const ts_train_opts *o, const ts_model_config *cfg, const ts_vocab *src, const ts_vocab *tgt,
                              long max_epochs) {
    const ts_optim_row *optim = ts_optim_kind_of(o->optim);
    double values = (double)ts_seq2seq_param_count(cfg) * (1 + optim->moments);
    double bytes = 8 * values + 16.0 * (double)max_epochs + (double)(1 << 20);
    const ts_vocab *vocabs[2] = {src, tgt};
    for (int k = 0; k < 2; k++)
        for (size_t id = 0; id < ts_vocab_size(vocabs[k]); id++) {
            const char *word = ts_vocab_word(vocabs[k], (int32_t)id);
            bytes += 4 + (word ? (double)strlen(word) : 0);
        }
    double cap = (double)TS_CKPT_DEFAULT_MAX_PAYLOAD;
    if (bytes <= cap) return TS_OK;
    return ts_fail(TS_ERR_ARG,
                   "the model (%s) with vocabularies of %d / %d words: a checkpoint would hold %.2f GB "
                   "(%zu parameters, each with %s), more than the %.0f GiB a checkpoint may hold; choose a smaller "
                   "model (or a larger --min-count)",
                   ts_model_describe(cfg, (char[160]){0}, 160), cfg->src_vocab, cfg->tgt_vocab, bytes / 1e9,
                   ts_seq2seq_param_count(cfg), optim->state, cap / (1 << 30));
}

int ts_train_model(const ts_train_opts *o, const ts_dataset *data, ts_translator *resumed, long max_epochs,
                   ts_seq2seq **model) {
    ts_model_config cfg = o->model;
    int rc;
    ts_model_config_default_sizes(&cfg);
    cfg.src_vocab = (int)ts_vocab_size(data->src_vocab);
    cfg.tgt_vocab = (int)ts_vocab_size(data->tgt_vocab);
    if ((rc = ts_model_config_check_as(&cfg, 1)) ||
        (rc = ts_train_state_check_size(o, &cfg, data->src_vocab, data->tgt_vocab, max_epochs)))
        return rc;
    if (resumed->model)
        return ts_train_state_resume_model(resumed, o->resume, data->src_vocab, data->tgt_vocab, &cfg, model);
    gsl_rng *init_rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!init_rng) return ts_fail(TS_ERR_NOMEM, "rng");
    gsl_rng_set(init_rng, (unsigned long)o->seed);
    *model = ts_seq2seq_new(&cfg, init_rng);
    gsl_rng_free(init_rng);
    return TS_OK;
}

int ts_train_state_count_up(long *counter, long n, const char *name) {
    if (*counter > TS_COUNT_MAX - n)
        return ts_fail(TS_ERR_NUMERIC, "the %s counter (%ld) cannot grow by %ld past its limit %ld", name, *counter, n,
                       TS_COUNT_MAX);
    *counter += n;
    return TS_OK;
}
