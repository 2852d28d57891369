// The training loop: it learns, it is reproducible to the bit, it resumes
// exactly, a kill at any moment leaves a loadable checkpoint, and numeric
// blow-ups are skipped instead of saved.
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "infer/load.h"
#include "train/runlog.h"
#include "train/state.h"
#include "train/trainer.h"
#include "testutil.h"

// A small corpus the tests write: a word-for-word "translation" with one
// reordering, 120 pairs of 2-6 words.
static char *write_tiny_corpus(const char *dir) {
    static const char *src_words[] = {"red", "blue", "cat", "dog", "sees", "eats", "big", "small"};
    static const char *tgt_words[] = {"rouge", "bleu", "chat", "chien", "voit", "mange", "grand", "petit"};
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    unsigned state = 7;
    for (int i = 0; i < 120; i++) {
        int n = 2 + (int)((state = state * 1103515245u + 12345u) >> 16) % 5;
        int words[6];
        for (int k = 0; k < n; k++) words[k] = (int)((state = state * 1103515245u + 12345u) >> 16) % 8;
        for (int k = 0; k < n; k++) len += (size_t)sprintf(text + len, "%s%s", k ? " " : "", src_words[words[k]]);
        text[len++] = '\t';
        for (int k = n - 1; k >= 0; k--) len += (size_t)sprintf(text + len, "%s%s", k < n - 1 ? " " : "", tgt_words[words[k]]);
        text[len++] = '\n';
    }
    char *path = test_write_file(dir, "tiny.tsv", text, len);
    free(text);
    return path;
}

static ts_train_opts tiny_opts(const char *corpus, const char *out_dir) {
    ts_train_opts o = ts_train_defaults();
    o.data.corpus = corpus;
    o.out_dir = out_dir;
    o.model.emb = 8;
    o.model.hidden = 12;
    o.batch = 8;
    o.data.dev_pairs = 10;
    o.lr = 0.01;
    o.show = 0;
    o.out = fopen("/dev/null", "w");
    o.log = NULL;
    return o;
}

static void assert_same_file(char *a, char *b) {  // frees both paths
    size_t la, lb;
    char *x = test_read_file(a, &la), *y = test_read_file(b, &lb);
    cr_assert(la == lb && memcmp(x, y, la) == 0, "%s (%zu bytes) and %s (%zu bytes) differ", a, la, b, lb);
    free(x);
    free(y);
    free(a);
    free(b);
}

static char *join(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

Test(train, the_loss_goes_down_on_a_tiny_corpus) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *out = join(dir, "run");
    ts_train_opts o = tiny_opts(corpus, out);
    o.epochs = 20;
    o.patience = 100;
    ts_train_report r;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    // metrics.csv: one row per epoch; the last train loss is well below the first.
    char *csv_path = join(out, "metrics.csv");
    size_t len;
    char *csv = test_read_file(csv_path, &len);
    cr_assert(!strncmp(csv, "epoch,step,train_loss,dev_loss", 30), "header: %.60s", csv);
    double first = -1, last = -1, loss;
    int rows = 0;
    for (char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        int epoch;
        long step;
        cr_assert_eq(sscanf(line, "%d,%ld,%lf", &epoch, &step, &loss), 3);
        if (first < 0) first = loss;
        last = loss;
        rows++;
    }
    cr_assert_eq(rows, 20);
    cr_log_info("train loss: epoch 1 %.4f, epoch 20 %.4f", first, last);
    cr_assert(last < 0.5 * first, "epoch 1 %.4f, epoch 20 %.4f", first, last);
    cr_assert_eq(r.steps, 20 * 14, "110 train pairs in batches of 8: 14 steps per epoch, got %ld", r.steps);
    free(csv);
    free(csv_path);
    free(dir);
    free(corpus);
    free(out);
    fclose(o.out);
}

Test(train, same_seed_same_loss_and_checkpoint_to_the_bit) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b");
    ts_train_report ra, rb;
    ts_train_opts o = tiny_opts(corpus, a);
    o.epochs = 2;
    o.tf = 0.5;  // the teacher-forcing draws must repeat too
    cr_assert_eq(ts_train(&o, &ra), TS_OK, "%s", ts_last_error());
    o.out_dir = b;
    cr_assert_eq(ts_train(&o, &rb), TS_OK, "%s", ts_last_error());
    cr_assert(memcmp(&ra.last_loss, &rb.last_loss, sizeof(double)) == 0, "%.17g vs %.17g", ra.last_loss, rb.last_loss);
    assert_same_file(join(a, "last.ckpt"), join(b, "last.ckpt"));
    assert_same_file(join(a, "best.ckpt"), join(b, "best.ckpt"));
    free(dir);
    free(corpus);
    free(a);
    free(b);
    fclose(o.out);
}

// The step arena starts small and grows with the work; a step that found it
// full is redone (teacher-forcing draws included) and computes what it would
// have in a large arena, and so do the dev evaluations.
Test(train, a_full_arena_grows_and_the_run_is_the_same_to_the_bit) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b");
    ts_train_report ra, rb;
    ts_train_opts o = tiny_opts(corpus, a);
    o.epochs = 2;
    o.tf = 0.5;
    cr_assert_eq(ts_train(&o, &ra), TS_OK, "%s", ts_last_error());
    o.out_dir = b;
    o.arena_start = 4096;  // far too small: it grows many times
    cr_assert_eq(ts_train(&o, &rb), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ra.steps, rb.steps);
    assert_same_file(join(a, "last.ckpt"), join(b, "last.ckpt"));
    assert_same_file(join(a, "best.ckpt"), join(b, "best.ckpt"));
    free(dir);
    free(corpus);
    free(a);
    free(b);
    fclose(o.out);
}

// train --steps N; train --resume last.ckpt --steps N + M  ==  train --steps N + M,
// for a model of `cell`
static void check_resume_of(ts_cell_type cell, ts_attn_type attn, ts_decoder_type decoder, long first, long total,
                            double dropout, double smoothing, long warmup, int dtype, ts_optim_kind optim) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b"), *straight = join(dir, "s");
    ts_train_report r;
    ts_train_opts o = tiny_opts(corpus, a);
    o.model.attn = attn;
    o.model.decoder = decoder;
    o.model.cell = cell;
    o.tf = 0.75;
    o.dropout = dropout;
    o.label_smoothing = smoothing;
    o.warmup_steps = warmup;
    o.model.dtype = dtype;
    o.optim = optim;
    o.steps = first;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    cr_assert_eq(r.steps, first);
    char *last_a = join(a, "last.ckpt");
    o.out_dir = b;
    o.resume = last_a;
    o.steps = total;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    cr_assert_eq(r.steps, total);
    o.out_dir = straight;
    o.resume = NULL;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    assert_same_file(join(b, "last.ckpt"), join(straight, "last.ckpt"));
    ts_ckpt *ck;
    const char *saved = NULL;
    cr_assert_eq(ts_train_state_load(join(b, "last.ckpt"), &ck), TS_OK, "%s", ts_last_error());
    int has = ts_ckpt_get_string(ck, "model.dtype", &saved) == TS_OK;
    cr_assert_eq(has, dtype != TS_F64, "model.dtype is written for float32 models only");
    if (has) cr_assert_str_eq(saved, ts_dtype_name(dtype));
    has = ts_ckpt_get_string(ck, "model.cell", &saved) == TS_OK;  // written for another cell than the GRU
    cr_assert_eq(has, cell != TS_CELL_GRU);
    if (has) cr_assert_str_eq(saved, ts_cell_name(cell));
    // The weights and Adam's moments are stored in the model's dtype; the
    // loss history stays float64.
    for (int s = TS_CKPT_PARAMS; s <= TS_CKPT_OPTIM; s++)
        for (size_t i = 0; i < ts_ckpt_tensor_count(ck, s); i++) {
            const ts_ckpt_tensor *t = ts_ckpt_tensor_at(ck, s, i);
            cr_assert_eq(t->dtype, strncmp(t->name, "history.", 8) ? dtype : TS_F64, "%s is %s", t->name,
                         ts_dtype_name(t->dtype));
            // The optimizer's tensors are named by its row: "adamw.m.<parameter>".
            const ts_optim_row *row = ts_optim_kind_of(optim);
            if (s == TS_CKPT_OPTIM && strncmp(t->name, "history.", 8))
                cr_assert(!strncmp(t->name, row->moment[0], strlen(row->moment[0])) ||
                              (row->moments > 1 && !strncmp(t->name, row->moment[1], strlen(row->moment[1]))),
                          "%s in a %s checkpoint", t->name, row->name);
        }
    ts_ckpt_free(ck);
    free(dir);
    free(corpus);
    free(a);
    free(b);
    free(straight);
    free(last_a);
    fclose(o.out);
}

static void check_resume(ts_attn_type attn, ts_decoder_type decoder, long first, long total, double dropout,
                         double smoothing, long warmup, int dtype, ts_optim_kind optim) {
    check_resume_of(TS_CELL_GRU, attn, decoder, first, total, dropout, smoothing, warmup, dtype, optim);
}

Test(train, resume_is_exact_with_the_bahdanau_decoder) {
    check_resume(TS_ATTN_BAHDANAU, TS_DECODER_BAHDANAU, 9, 40, 0, 0, 0, TS_F64, TS_OPTIM_ADAM);   // stops mid-epoch, crosses two epoch ends
}

// Dropout masks come from the teacher-forcing generator, saved with it.
Test(train, resume_is_exact_with_dropout_and_label_smoothing) {
    check_resume(TS_ATTN_BAHDANAU, TS_DECODER_BAHDANAU, 9, 40, 0.3, 0.1, 0, TS_F64, TS_OPTIM_ADAM);
}

// A float32 run: its weights, moments and steps in float32, its checkpoint
// says so and stores them as float32, and resuming it is exact to the bit.
Test(train, resume_is_exact_in_float32) {
    check_resume(TS_ATTN_BAHDANAU, TS_DECODER_BAHDANAU, 9, 40, 0.3, 0.1, 0, TS_F32, TS_OPTIM_ADAM);
}

// AdamW's moments and its weight decay (torch's 0.01) resume exactly, the
// decay taken with the warmup's rate as each update's.
Test(train, resume_is_exact_with_adamw) {
    check_resume(TS_ATTN_BAHDANAU, TS_DECODER_BAHDANAU, 9, 40, 0, 0, 6, TS_F32, TS_OPTIM_ADAMW);
}

Test(train, dropout_and_label_smoothing_change_the_run_and_report_plain_loss) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b"), *c = join(dir, "c");
    ts_train_report plain, dropped, smoothed;
    ts_train_opts o = tiny_opts(corpus, a);
    o.steps = 12;
    cr_assert_eq(ts_train(&o, &plain), TS_OK, "%s", ts_last_error());
    o.out_dir = b;
    o.dropout = 0.5;
    cr_assert_eq(ts_train(&o, &dropped), TS_OK, "%s", ts_last_error());
    cr_assert(dropped.last_loss != plain.last_loss);
    o.out_dir = c;
    o.dropout = 0.0;
    o.label_smoothing = 0.2;
    cr_assert_eq(ts_train(&o, &smoothed), TS_OK, "%s", ts_last_error());
    cr_assert(smoothed.last_loss != plain.last_loss);
    // The reported loss is the plain cross-entropy: with 0.2 of the target
    // spread over the vocabulary the smoothed objective would be far larger.
    cr_assert(smoothed.last_loss < plain.last_loss + 0.5, "%g vs %g", smoothed.last_loss, plain.last_loss);
    char *config = join(c, "config.txt");
    size_t len;
    char *text = test_read_file(config, &len);
    cr_assert(strstr(text, "label_smoothing = 0.2\n") && strstr(text, "dropout = 0\n"), "%s", text);
    cr_assert_null(strstr(text, "toy_pairs"), "a TSV run's config.txt lists no toy_* keys:\n%s", text);
    free(text);
    free(config);
    free(dir);
    free(corpus);
    free(a);
    free(b);
    free(c);
    fclose(o.out);
}

// An LSTM's state has two parts (h and c): resuming one is exact too, in
// float32 with dropout, its checkpoint naming the cell.
Test(train, resume_is_exact_for_an_lstm) {
    check_resume_of(TS_CELL_LSTM, TS_ATTN_GENERAL, TS_DECODER_LUONG, 9, 40, 0.3, 0.1, 0, TS_F32, TS_OPTIM_ADAM);
}

Test(train, resume_is_exact_with_the_luong_decoder) {
    check_resume(TS_ATTN_GENERAL, TS_DECODER_LUONG, 14, 31, 0, 0, 0, TS_F64, TS_OPTIM_ADAM);      // stops exactly at an epoch end
}

Test(train, resume_refuses_another_model_or_other_flags) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b");
    ts_train_report r;
    ts_train_opts o = tiny_opts(corpus, a);
    o.steps = 3;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    o.out_dir = b;
    char *last = join(a, "last.ckpt");
    o.resume = last;
    o.model.hidden = 10;
    cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "trained with --hidden 12; this run asks for --hidden 10"), "%s", ts_last_error());
    o.model.hidden = 12;
    o.lr = 0.02;  // same model, another learning rate: not a continuation of that run
    cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "--lr 0.01; this run asks for 0.02"), "%s", ts_last_error());
    o.lr = 0.01;
    o.dropout = 0.1;
    cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "--dropout 0; this run asks for 0.1"), "%s", ts_last_error());
    free(dir);
    free(corpus);
    free(a);
    free(b);
    free(last);
    fclose(o.out);
}

// Dot and scaled-dot attention have the same parameters (none of their own):
// a checkpoint of one must not continue as the other, whose scores differ.
Test(train, resume_refuses_another_attention_with_the_same_parameters) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b");
    ts_train_report r;
    ts_train_opts o = tiny_opts(corpus, a);
    o.steps = 3;
    o.model.attn = TS_ATTN_DOT;
    o.model.decoder = TS_DECODER_LUONG;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    o.out_dir = b;
    char *last = join(a, "last.ckpt");
    o.resume = last;
    o.steps = 4;
    o.model.attn = TS_ATTN_SCALED_DOT;
    cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "trained with --attn dot; this run asks for --attn scaled-dot"), "%s", ts_last_error());
    cr_assert(strstr(ts_last_error(), last), "names the file: %s", ts_last_error());
    o.model.attn = TS_ATTN_DOT;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "the same attention continues: %s", ts_last_error());
    cr_assert_eq(r.steps, 4);
    free(dir);
    free(corpus);
    free(a);
    free(b);
    free(last);
    fclose(o.out);
}

Test(train, a_blow_up_is_skipped_and_never_saved) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *out = join(dir, "run");
    ts_train_report r;
    ts_train_opts o = tiny_opts(corpus, out);
    o.optim = TS_OPTIM_SGD;
    o.lr = 1e308;  // updates overflow to Inf: the losses that follow are NaN
    o.clip = 0;
    o.epochs = 3;
    int rc = ts_train(&o, &r);
    cr_log_info("rc %d: %s", rc, ts_last_error());
    cr_assert(rc == TS_ERR_NUMERIC || rc == TS_OK, "%s", ts_last_error());
    cr_assert_eq(rc, TS_ERR_NUMERIC, "the blow-up went unnoticed");
    cr_assert(strstr(ts_last_error(), "non-finite") || strstr(ts_last_error(), "not saving"), "%s", ts_last_error());
    // Whatever was saved holds finite numbers only.
    const char *names[2] = {"last.ckpt", "best.ckpt"};
    for (int i = 0; i < 2; i++) {
        ts_ckpt *ck;
        char *path = join(out, names[i]);
        int exists = access(path, F_OK) == 0;
        int loaded = exists ? ts_ckpt_load(path, NULL, &ck) : TS_OK;
        free(path);
        if (!exists) continue;
        cr_assert_eq(loaded, TS_OK, "%s", ts_last_error());
        for (size_t t = 0; t < ts_ckpt_tensor_count(ck, TS_CKPT_PARAMS); t++) {
            const ts_ckpt_tensor *p = ts_ckpt_tensor_at(ck, TS_CKPT_PARAMS, t);
            for (size_t k = 0; k < p->size; k++) {
                double v = p->dtype == TS_F32 ? p->data_f32[k] : p->data[k];
                cr_assert(isfinite(v), "%s[%zu] = %g in %s", p->name, k, v, names[i]);
            }
        }
        ts_ckpt_free(ck);
    }
    free(dir);
    free(corpus);
    free(out);
    fclose(o.out);
}

// A child trains with a checkpoint every epoch (an epoch is a few ms here);
// the parent kills it with SIGKILL at a random moment. last.ckpt, once it
// exists, must always load: old or new, never half-written. The delays are
// scaled to how long this build takes to reach its first save (sanitizer
// builds are several times slower), so the kills land among the saves.
static pid_t start_training_child(const char *corpus, const char *out) {
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        ts_train_opts o = tiny_opts(corpus, out);
        o.data.dev_pairs = 1;
        o.epochs = 100000;
        o.patience = 100000;
        o.model.hidden = 4;
        // The directory holds the previous trial's run: continue it.
        char *last = join(out, "last.ckpt");
        if (access(last, F_OK) == 0) o.resume = last;
        ts_train_report r;
        int rc = ts_train(&o, &r);
        if (rc) fprintf(stderr, "child: %s\n", ts_last_error());
        _exit(rc == TS_OK ? 0 : 3);
    }
    return pid;
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void kill_and_reap(pid_t pid, int trial) {
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
              "trial %d: the child failed by itself (status %d)", trial, status);
}

Test(train, kill_9_at_random_moments_leaves_a_loadable_checkpoint, .timeout = 300) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *out = join(dir, "run"), *last = join(out, "last.ckpt");
    // Calibrate: how long until the first save?
    double t0 = seconds_now(), first_save = -1;
    pid_t pid = start_training_child(corpus, out);
    while (seconds_now() - t0 < 60 && first_save < 0) {
        if (access(last, F_OK) == 0) first_save = seconds_now() - t0;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    kill_and_reap(pid, 0);
    cr_assert(first_save > 0, "no checkpoint within 60 s");
    srand(12345);
    int loaded = 0;
    for (int trial = 1; trial <= 100; trial++) {
        pid = start_training_child(corpus, out);
        // From half the time to the first save up to three times it: the kills
        // land before, during and between saves.
        double delay = first_save * (0.5 + 2.5 * (double)rand() / RAND_MAX);
        struct timespec pause = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        nanosleep(&pause, NULL);
        kill_and_reap(pid, trial);
        ts_translator t;
        cr_assert_eq(ts_translator_load(last, &t), TS_OK, "trial %d: %s", trial, ts_last_error());
        ts_translator_free(&t);
        loaded++;
    }
    cr_log_info("first save after %.3f s; last.ckpt loaded after all %d kills", first_save, loaded);
    free(dir);
    free(corpus);
    free(out);
    free(last);
}

// Trains `steps` steps (0: `epochs` epochs) of the tiny setup into dir/name
// and returns the path of its last.ckpt (malloc'd).
static char *train_tiny(const char *corpus, const char *dir, const char *name, long epochs, long steps) {
    char *out = join(dir, name);
    ts_train_opts o = tiny_opts(corpus, out);
    o.epochs = epochs;
    o.steps = steps;
    ts_train_report r;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    fclose(o.out);
    char *last = join(out, "last.ckpt");
    free(out);
    return last;
}

// A copy of checkpoint `from` at dir/name with header key set to value.
static char *hostile_copy(const char *from, const char *dir, const char *name, const char *key, int64_t value) {
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(from, NULL, &ck), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_set_int(ck, key, value), TS_OK, "%s", ts_last_error());
    char *path = join(dir, name);
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    return path;
}

// Resumes from ckpt into a fresh dir/name with the tiny setup; returns the status.
static int resume_tiny(const char *corpus, const char *ckpt, const char *dir, const char *name, long epochs, long steps) {
    char *out = join(dir, name);
    ts_train_opts o = tiny_opts(corpus, out);
    o.epochs = epochs;
    o.steps = steps;
    o.resume = ckpt;
    ts_train_report r;
    int rc = ts_train(&o, &r);
    fclose(o.out);
    free(out);
    return rc;
}

Test(train, resuming_with_fewer_epochs_than_done_is_refused_clearly) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *last = train_tiny(corpus, dir, "a", 3, 0);
    int rc = resume_tiny(corpus, last, dir, "b", 1, 0);
    cr_assert_eq(rc, TS_ERR_ARG, "%d: %s", rc, ts_last_error());
    cr_assert(strstr(ts_last_error(), last) && strstr(ts_last_error(), "has done 3 epochs; --epochs 1 asks for fewer"),
              "%s", ts_last_error());
    cr_assert_eq(resume_tiny(corpus, last, dir, "c", 3, 0), TS_OK, "as many epochs as done: %s", ts_last_error());
    free(dir);
    free(corpus);
    free(last);
}

// Every state field is bounded on load; the message names the file and the key.
Test(train, a_checkpoint_with_hostile_state_is_refused_naming_file_and_key) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *last = train_tiny(corpus, dir, "a", 0, 20);  // mid epoch 2
    struct { const char *key; int64_t value; long epochs, steps; } cases[] = {
        {"state.epoch", 1000000, 0, 100}, {"state.epoch", 1000000, 5, 0},  {"state.step", INT64_MAX, 5, 0},
        {"state.step", -1, 5, 0},         {"state.position", 1000, 5, 0},  {"state.position", INT64_MAX, 5, 0},
        {"state.stale", INT64_MAX, 5, 0}, {"state.skipped", 21, 5, 0},     {"state.epoch_tokens", INT64_MAX, 5, 0},
        {"state.optimizer_step", INT64_MAX, 5, 0}, {"state.optimizer_step", 21, 5, 0},
        {"state.best_model_step", 21, 5, 0}, {"state.best_model_step", -1, 5, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "hostile-%zu.ckpt", i);
        char *bad = hostile_copy(last, dir, name, cases[i].key, cases[i].value);
        snprintf(name, sizeof name, "run-%zu", i);
        int rc = resume_tiny(corpus, bad, dir, name, cases[i].epochs, cases[i].steps);
        cr_assert_eq(rc, TS_ERR_FORMAT, "%s = %lld: status %d (%s)", cases[i].key, (long long)cases[i].value, rc, ts_last_error());
        cr_assert(strstr(ts_last_error(), bad) && strstr(ts_last_error(), cases[i].key), "%s = %lld: %s", cases[i].key,
                  (long long)cases[i].value, ts_last_error());
        free(bad);
    }
    free(dir);
    free(corpus);
    free(last);
}

// Counters that a checkpoint brings to their limit stop the run with a
// message at the increment, never overflow.
Test(train, counters_at_their_limit_fail_at_the_increment) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *last = train_tiny(corpus, dir, "a", 0, 20);
    const int64_t limit = (int64_t)1 << 52;
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(last, NULL, &ck), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_set_int(ck, "state.step", limit), TS_OK);
    cr_assert_eq(ts_ckpt_set_int(ck, "state.optimizer_step", limit - 1), TS_OK);
    char *at_limit = join(dir, "limit.ckpt");
    cr_assert_eq(ts_ckpt_save(ck, at_limit), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    int rc = resume_tiny(corpus, at_limit, dir, "b", 5, 0);
    cr_assert_eq(rc, TS_ERR_NUMERIC, "%d: %s", rc, ts_last_error());
    cr_assert(strstr(ts_last_error(), "step counter"), "%s", ts_last_error());
    char *tokens = hostile_copy(last, dir, "tokens.ckpt", "state.epoch_tokens", limit);
    rc = resume_tiny(corpus, tokens, dir, "c", 5, 0);
    cr_assert_eq(rc, TS_ERR_NUMERIC, "%d: %s", rc, ts_last_error());
    cr_assert(strstr(ts_last_error(), "epoch token counter"), "%s", ts_last_error());
    free(dir);
    free(corpus);
    free(last);
    free(at_limit);
    free(tokens);
}

// A corpus whose words changed since the checkpoint is refused, naming the
// first word that differs, even when the vocabulary sizes still match.
Test(train, resuming_on_a_corpus_with_other_words_is_refused) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *last = train_tiny(corpus, dir, "a", 0, 5);
    size_t len;
    char *text = test_read_file(corpus, &len);
    for (char *p = strstr(text, "chat"); p; p = strstr(p + 4, "chat")) memcpy(p, "chut", 4);  // one word renamed
    char *other = test_write_file(dir, "other.tsv", text, len);
    int rc = resume_tiny(other, last, dir, "b", 0, 10);
    cr_assert_eq(rc, TS_ERR_ARG, "%d: %s", rc, ts_last_error());
    cr_assert(strstr(ts_last_error(), last) && strstr(ts_last_error(), "target word") &&
              strstr(ts_last_error(), "in the checkpoint but"), "%s", ts_last_error());
    cr_assert(strstr(ts_last_error(), "'chat'") || strstr(ts_last_error(), "'chut'"), "%s", ts_last_error());
    free(text);
    free(other);
    free(dir);
    free(corpus);
    free(last);
}

// train refuses a model whose checkpoint the loader would refuse; the count
// it judges by is the model's own, for every configuration.
Test(train, the_parameter_count_without_allocating_is_the_models) {
    ts_attn_type attns[] = {TS_ATTN_BAHDANAU, TS_ATTN_DOT, TS_ATTN_GENERAL, TS_ATTN_CONCAT, TS_ATTN_SCALED_DOT, TS_ATTN_NONE};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (size_t a = 0; a < sizeof attns / sizeof attns[0]; a++)
        for (int d = 0; d < 2; d++)
            for (int bi = 0; bi < 2; bi++) {
                ts_model_config cfg = {.src_vocab = 11, .tgt_vocab = 13, .emb = 5, .hidden = 7, .attn = attns[a],
                                       .decoder = d ? TS_DECODER_LUONG : TS_DECODER_BAHDANAU, .bidirectional = bi};
                ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
                cr_assert_not_null(m, "%s", ts_last_error());
                cr_assert_eq(ts_seq2seq_param_count(&cfg), ts_params_size(&m->params), "%s attention, %s decoder, bidirectional %d",
                             ts_attn_name(cfg.attn), ts_decoder_name(cfg.decoder), bi);
                ts_seq2seq_free(m);
            }
    gsl_rng_free(rng);
}

// best.ckpt holds what inference needs (header, vocabularies, parameters) and
// no training state; last.ckpt holds it all. Resuming from best.ckpt says so.
Test(train, best_ckpt_is_for_inference_and_last_ckpt_for_resuming) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b");
    ts_train_report r;
    ts_train_opts o = tiny_opts(corpus, a);
    o.epochs = 1;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    char *best = join(a, "best.ckpt"), *last = join(a, "last.ckpt");
    ts_ckpt *cb, *cl;
    cr_assert_eq(ts_ckpt_load(best, NULL, &cb), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_load(last, NULL, &cl), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_tensor_count(cb, TS_CKPT_OPTIM), 0, "no optimizer state in best.ckpt");
    cr_assert_eq(ts_ckpt_blob_count(cb), 0, "no RNG state in best.ckpt");
    cr_assert_gt(ts_ckpt_tensor_count(cl, TS_CKPT_OPTIM), 0);
    cr_assert_eq(ts_ckpt_tensor_count(cb, TS_CKPT_PARAMS), ts_ckpt_tensor_count(cl, TS_CKPT_PARAMS));
    ts_translator tr;
    cr_assert_eq(ts_translator_from_ckpt(cb, &tr), TS_OK, "%s", ts_last_error());
    ts_translator_free(&tr);
    ts_ckpt_free(cb);
    ts_ckpt_free(cl);
    o.out_dir = b;
    o.resume = best;
    o.epochs = 2;
    cr_assert_eq(ts_train(&o, &r), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "resume from last.ckpt"), "%s", ts_last_error());
    free(dir);
    free(corpus);
    free(a);
    free(b);
    free(best);
    free(last);
    fclose(o.out);
}

// The checkpoint to resume from is read first: one that cannot be read fails
// with the flag's message before --out is made or the corpus is read.
Test(train, an_unreadable_resume_checkpoint_fails_before_anything_is_written) {
    char *dir = test_tmpdir();
    char *out = join(dir, "never"), *missing = join(dir, "missing.ckpt");
    ts_train_report r;
    ts_train_opts o = tiny_opts("/nonexistent/corpus.tsv", out);
    o.resume = missing;
    cr_assert_eq(ts_train(&o, &r), TS_ERR_IO);
    char want[4200];
    snprintf(want, sizeof want, "--resume: cannot open '%s': ", missing);
    cr_assert(!strncmp(ts_last_error(), want, strlen(want)), "%s", ts_last_error());
    cr_assert_neq(access(out, F_OK), 0, "--out was created");
    free(dir);
    free(out);
    free(missing);
    fclose(o.out);
}

// --warmup-steps N: step k updates with lr k / N. Two steps with warmup 2
// at lr X make the first update with X / 2, exactly what lr X / 2 without
// warmup makes: the second step's loss (computed before its update) is the
// same to the bit, and differs from lr X without warmup.
Test(train, warmup_scales_the_first_updates_linearly) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *out = join(dir, "run");
    ts_train_opts o = tiny_opts(corpus, out);
    o.steps = 2;
    o.force = 1;
    ts_train_report warm, half, full;
    o.warmup_steps = 2;
    cr_assert_eq(ts_train(&o, &warm), TS_OK, "%s", ts_last_error());
    o.warmup_steps = 0;
    o.lr = 0.005;
    cr_assert_eq(ts_train(&o, &half), TS_OK, "%s", ts_last_error());
    o.lr = 0.01;
    cr_assert_eq(ts_train(&o, &full), TS_OK, "%s", ts_last_error());
    cr_assert(warm.last_loss == half.last_loss, "warmup %.17g, half lr %.17g", warm.last_loss, half.last_loss);
    cr_assert(warm.last_loss != full.last_loss, "the warmup changed nothing");
    free(dir);
    free(corpus);
    free(out);
    fclose(o.out);
}

// Resuming inside the warmup continues its ramp where it stopped.
Test(train, resume_is_exact_inside_the_warmup) { check_resume(TS_ATTN_BAHDANAU, TS_DECODER_BAHDANAU, 3, 12, 0, 0, 6, TS_F64, TS_OPTIM_ADAM); }

// --best: an evaluation beats the one best.ckpt holds by a higher dev BLEU
// (an equal BLEU by a lower dev loss), or by a lower dev loss alone; any
// evaluation beats none, and one that beats it takes its place.
Test(train, the_best_evaluation_is_chosen_by_bleu_or_by_loss) {
    ts_train_best best = {.step = 0, .loss = INFINITY, .bleu = -1};
    cr_assert(ts_train_best_is_beaten(&best, TS_BEST_BLEU, 9.0, 0.0), "any evaluation beats none");
    cr_assert(ts_train_best_is_beaten(&best, TS_BEST_LOSS, 9.0, 0.0), "any evaluation beats none");
    best = (ts_train_best){.step = 14, .loss = 2.0, .bleu = 0.25};
    cr_assert(ts_train_best_is_beaten(&best, TS_BEST_BLEU, 2.5, 0.26), "a higher BLEU wins despite a higher loss");
    cr_assert_not(ts_train_best_is_beaten(&best, TS_BEST_LOSS, 2.5, 0.26), "a higher loss loses by loss");
    cr_assert_not(ts_train_best_is_beaten(&best, TS_BEST_BLEU, 1.5, 0.24), "a lower BLEU loses despite a lower loss");
    cr_assert(ts_train_best_is_beaten(&best, TS_BEST_LOSS, 1.5, 0.24), "a lower loss wins by loss");
    cr_assert(ts_train_best_is_beaten(&best, TS_BEST_BLEU, 1.5, 0.25), "an equal BLEU with a lower loss wins");
    cr_assert_not(ts_train_best_is_beaten(&best, TS_BEST_BLEU, 2.0, 0.25), "an equal BLEU and loss does not");
    cr_assert_not(ts_train_best_offer(&best, TS_BEST_BLEU, 20, &(ts_eval_result){.loss = 1.0, .bleu = 0.2}));
    cr_assert(best.step == 14 && best.loss == 2.0 && best.bleu == 0.25, "a losing offer changed the best");
    cr_assert(ts_train_best_offer(&best, TS_BEST_BLEU, 21, &(ts_eval_result){.loss = 3.0, .bleu = 0.3}));
    cr_assert(best.step == 21 && best.loss == 3.0 && best.bleu == 0.3, "step %ld loss %g bleu %g", best.step, best.loss,
              best.bleu);
}

// An epoch's end: the history and the best epoch; a dev loss that does not
// improve decays the rate, and --patience of them stop the run.
Test(train, an_epochs_end_keeps_the_best_and_stops_on_a_plateau) {
    ts_train_state s;
    cr_assert_eq(ts_train_state_init(&s, 1, 4), TS_OK);
    ts_train_opts o = ts_train_defaults();
    o.best = TS_BEST_LOSS;
    o.patience = 2;
    o.lr_decay = 0.5;
    double lr = 1.0;
    int stop = -1;
    s.position = s.step = 7;
    cr_assert(ts_train_state_end_epoch(&s, &o, 3.0, &(ts_eval_result){.loss = 2.0, .bleu = 0.1}, &lr, &stop));
    cr_assert(s.epoch == 1 && s.position == 0 && s.best.step == 7 && s.best.loss == 2.0 && s.best_dev == 2.0 && lr == 1.0 &&
              !stop);
    cr_assert(s.history_train[0] == 3.0 && s.history_dev[0] == 2.0);
    cr_assert_not(ts_train_state_end_epoch(&s, &o, 2.5, &(ts_eval_result){.loss = 2.5}, &lr, &stop));
    cr_assert(s.best.loss == 2.0 && s.stale == 1 && lr == 0.5 && !stop, "stale %d lr %g", s.stale, lr);
    cr_assert_not(ts_train_state_end_epoch(&s, &o, 2.4, &(ts_eval_result){.loss = 2.0}, &lr, &stop), "equal is no better");
    cr_assert(s.epoch == 3 && s.stale == 2 && lr == 0.25 && stop, "patience 2 reached");
    ts_train_state_free(&s);
}

// The epoch of metrics.csv's rows (epoch, dev_loss, dev_bleu) that criterion
// `by` makes best.ckpt, by the rule above.
static int best_epoch_in_metrics(const char *dir, ts_best_by by) {
    char *path = join(dir, "metrics.csv");
    char *text = test_read_file(path, NULL);
    int best = 0;
    double best_loss = 0, best_bleu = 0;
    for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        int epoch;
        long step;
        char train[32];
        double loss, ppl, bleu;
        cr_assert_eq(sscanf(line + 1, "%d,%ld,%31[^,],%lf,%lf,%lf", &epoch, &step, train, &loss, &ppl, &bleu), 6, "%s", line);
        int better = by == TS_BEST_LOSS ? loss < best_loss : bleu > best_bleu || (bleu == best_bleu && loss < best_loss);
        if (!best || better) best = epoch, best_loss = loss, best_bleu = bleu;
    }
    free(text);
    free(path);
    return best;
}

// best.ckpt is the epoch --best chose: the same bytes as that epoch's
// --keep checkpoint, and the run's output names the criterion.
Test(train, best_ckpt_is_the_epoch_the_criterion_chose, .timeout = 120) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir);
    for (int by = 0; by < TS_BEST_COUNT; by++) {
        char *run = join(dir, ts_best_name((ts_best_by)by)), *log = join(dir, "out.txt");
        ts_train_opts o = tiny_opts(corpus, run);
        fclose(o.out);
        o.out = fopen(log, "w");
        o.epochs = 5;
        o.patience = 10;
        o.keep = 5;
        o.best = (ts_best_by)by;
        ts_train_report r;
        cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
        fclose(o.out);
        int e = best_epoch_in_metrics(run, o.best);
        char name[32], want[64];
        snprintf(name, sizeof name, "epoch-%d.ckpt", e);
        char *best = join(run, "best.ckpt"), *kept = join(run, name);
        cr_assert(test_same_bytes(best, kept), "--best %s: best.ckpt is not %s", ts_best_name(o.best), name);
        free(best);
        free(kept);
        char *out = test_read_file(log, NULL);
        snprintf(want, sizeof want, "best: epoch %d by dev %s (--best %s", e, by == TS_BEST_LOSS ? "loss" : "BLEU",
                 ts_best_name(o.best));
        cr_assert(strstr(out, want), "no '%s' in:\n%s", want, out);
        free(out);
        free(run);
        free(log);
    }
    free(corpus);
    free(dir);
}

// Whether two checkpoints hold the same parameters, to the bit.
static int same_parameters(const char *a, const char *b) {
    ts_ckpt *x, *y;
    cr_assert_eq(ts_ckpt_load(a, NULL, &x), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_load(b, NULL, &y), TS_OK, "%s", ts_last_error());
    size_t n = ts_ckpt_tensor_count(x, TS_CKPT_PARAMS);
    int same = n > 0 && n == ts_ckpt_tensor_count(y, TS_CKPT_PARAMS);
    for (size_t i = 0; same && i < n; i++) {
        const ts_ckpt_tensor *p = ts_ckpt_tensor_at(x, TS_CKPT_PARAMS, i), *q = ts_ckpt_tensor_at(y, TS_CKPT_PARAMS, i);
        same = !strcmp(p->name, q->name) && p->dtype == q->dtype && p->size == q->size &&
               !memcmp(p->raw, q->raw, p->size * ts_dtypes[p->dtype].size);
    }
    ts_ckpt_free(x);
    ts_ckpt_free(y);
    return same;
}

// The step of metrics.csv's row (step, dev_loss, dev_bleu) that criterion
// `by` chooses, by ts_train_best_offer's rule, over every row.
static long best_step_in_metrics(const char *dir, ts_best_by by) {
    char *path = join(dir, "metrics.csv");
    char *text = test_read_file(path, NULL);
    ts_train_best best = {.step = 0, .loss = INFINITY, .bleu = -1};
    for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char epoch[32], train[32];
        long step;
        double ppl;
        ts_eval_result res = {0};
        cr_assert_eq(sscanf(line + 1, "%31[^,],%ld,%31[^,],%lf,%lf,%lf", epoch, &step, train, &res.loss, &ppl, &res.bleu), 6,
                     "%s", line);
        ts_train_best_offer(&best, by, step, &res);
    }
    free(text);
    free(path);
    return best.step;
}

// Every evaluation a run prints is offered to best.ckpt: those of
// --eval-every and the final one of a run that --steps ends inside an epoch
// as well as the epochs'. Once only the epochs' were, and 'best: epoch 1 ...'
// named a model that scored below the final one (issue 44 point 6). The
// model best.ckpt holds is the one a run stopped at the chosen step trains.
Test(train, every_evaluation_printed_is_a_candidate_for_best_ckpt, .timeout = 120) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir);
    for (int by = 0; by < TS_BEST_COUNT; by++) {
        char name[64];
        snprintf(name, sizeof name, "%s", ts_best_name((ts_best_by)by));
        char *run = join(dir, name), *log = join(dir, "out.txt");
        ts_train_opts o = tiny_opts(corpus, run);
        fclose(o.out);
        o.out = fopen(log, "w");
        o.best = (ts_best_by)by;
        o.steps = 25;  // epoch 1 ends at step 14: evaluations at 5, 10, 14, 15, 20 and 25
        o.eval_every = 5;
        ts_train_report r;
        cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
        fclose(o.out);
        long chosen = best_step_in_metrics(run, o.best);
        cr_assert(chosen != 14, "--best %s: the epoch's evaluation is the best: this test shows nothing",
                  ts_best_name(o.best));
        // The same run stopped at the chosen step.
        snprintf(name, sizeof name, "%s-at-%ld", ts_best_name(o.best), chosen);
        char *at = join(dir, name), *at_last = join(at, "last.ckpt"), *best = join(run, "best.ckpt");
        o.out = fopen("/dev/null", "w");
        o.out_dir = at;
        o.steps = chosen;
        o.eval_every = 0;
        cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
        fclose(o.out);
        cr_assert(same_parameters(best, at_last), "--best %s: best.ckpt is not the model of step %ld", ts_best_name(o.best),
                  chosen);
        char *out = test_read_file(log, NULL), want[64];
        snprintf(want, sizeof want, "best: step %ld (epoch ", chosen);
        cr_assert(strstr(out, want), "no '%s' in:\n%s", want, out);
        // The first evaluation is the best so far: its line says so.
        const char *between = strstr(out, "step 5 (epoch 0.357): dev loss"), *end = between ? strchr(between, '\n') : NULL;
        cr_assert(end && end - between > 7 && !strncmp(end - 7, " (best)", 7), "step 5 without (best):\n%s", out);
        free(out);
        free(best);
        free(at_last);
        free(at);
        free(run);
        free(log);
    }
    free(corpus);
    free(dir);
}

// The evaluations inside epochs choose best.ckpt, so last.ckpt keeps what
// they chose: stopped and resumed, a run ends where one never stopped does.
// The final evaluation of the stopped run (step 9) is not kept: a longer run
// does not make it.
Test(train, resume_is_exact_with_evaluations_inside_epochs, .timeout = 60) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b"), *straight = join(dir, "s");
    ts_train_report r;
    ts_train_opts o = tiny_opts(corpus, a);
    o.eval_every = 4;
    o.steps = 9;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    char *last_a = join(a, "last.ckpt");
    o.out_dir = b;
    o.resume = last_a;
    o.steps = 40;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    o.out_dir = straight;
    o.resume = NULL;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    assert_same_file(join(b, "last.ckpt"), join(straight, "last.ckpt"));
    assert_same_file(join(b, "best.ckpt"), join(straight, "best.ckpt"));
    fclose(o.out);
    free(last_a);
    free(straight);
    free(b);
    free(a);
    free(corpus);
    free(dir);
}

// A checkpoint written before any evaluation could choose best.ckpt names
// its best epoch (state.best_epoch): it resumes as the same run with the
// best at that epoch's end.
Test(train, a_checkpoint_with_a_best_epoch_resumes_as_one_with_its_step) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *last = train_tiny(corpus, dir, "a", 2, 0);
    ts_ckpt *ck, *old;
    cr_assert_eq(ts_ckpt_load(last, NULL, &ck), TS_OK, "%s", ts_last_error());
    int64_t step;
    cr_assert_eq(ts_ckpt_get_int(ck, "state.best_model_step", 0, 28, &step), TS_OK, "%s", ts_last_error());
    cr_assert(step == 14 || step == 28, "an epoch's end: %lld", (long long)step);
    old = ts_ckpt_new();
    for (size_t i = 0; i < ts_ckpt_header_count(ck); i++) {
        const char *key, *value;
        ts_ckpt_header_at(ck, i, &key, &value);
        if (strncmp(key, "state.best_model_", 17)) cr_assert_eq(ts_ckpt_set(old, key, value), TS_OK);
    }
    cr_assert_eq(ts_ckpt_set_int(old, "state.best_epoch", step / 14), TS_OK);
    for (size_t i = 0; i < ts_ckpt_vocab_count(ck); i++) {
        const ts_ckpt_vocab *v = ts_ckpt_vocab_at(ck, i);
        cr_assert_eq(ts_ckpt_add_vocab(old, v->name, v->tokens, v->count), TS_OK);
    }
    for (int section = TS_CKPT_PARAMS; section <= TS_CKPT_OPTIM; section++)
        for (size_t i = 0; i < ts_ckpt_tensor_count(ck, section); i++) {
            const ts_ckpt_tensor *t = ts_ckpt_tensor_at(ck, section, i);
            cr_assert_eq(ts_ckpt_add_tensor_view_dtype(old, section, t->name, t->dtype, t->ndim, t->shape, t->raw), TS_OK);
        }
    for (size_t i = 0; i < ts_ckpt_blob_count(ck); i++) {
        const char *name;
        const void *bytes;
        size_t n;
        ts_ckpt_blob_at(ck, i, &name, &bytes, &n);
        cr_assert_eq(ts_ckpt_set_blob(old, name, bytes, n), TS_OK);
    }
    char *old_path = join(dir, "old.ckpt");
    cr_assert_eq(ts_ckpt_save(old, old_path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(old);
    ts_ckpt_free(ck);
    cr_assert_eq(resume_tiny(corpus, last, dir, "new-format", 3, 0), TS_OK, "%s", ts_last_error());
    cr_assert_eq(resume_tiny(corpus, old_path, dir, "old-format", 3, 0), TS_OK, "%s", ts_last_error());
    char *x = join(dir, "new-format"), *y = join(dir, "old-format");
    assert_same_file(join(x, "last.ckpt"), join(y, "last.ckpt"));
    free(x);
    free(y);
    free(old_path);
    free(last);
    free(corpus);
    free(dir);
}

// A continued run's clock once went on from steps.csv's last row, written
// before the epoch's evaluation, so its first metrics.csv row could come out
// earlier than the last one before --resume (test_cli_stop saw it under load).
Test(train, a_continued_run_clocks_on_from_the_later_of_its_files) {
    char *dir = test_tmpdir();
    static const char steps[] = "step,epoch,train_loss,lr,tokens_per_s,elapsed_s\n27,3,5.6,0.003,1000,0.15\n";
    static const char metrics[] = "epoch,step,train_loss,dev_loss,dev_ppl,dev_bleu,dev_chrf,dev_exact,lr,tokens_per_s,"
                                  "elapsed_s\n3,27,5.6,5.5,265,0,0.06,0,0.003,1000,0.20\n";
    free(test_write_file(dir, "steps.csv", steps, sizeof steps - 1));
    free(test_write_file(dir, "metrics.csv", metrics, sizeof metrics - 1));
    double seconds = -1;
    cr_assert_eq(ts_runlog_elapsed(dir, &seconds), TS_OK, "%s", ts_last_error());
    cr_assert_float_eq(seconds, 0.20, 1e-12, "got %g", seconds);
    free(dir);
}

// A continued run keeps each file's header and its rows up to the
// checkpoint's step, and nothing else. A second header, a row whose step is
// "inf" or "nan" (read as headers: they start with a letter), a JSON line in
// a CSV file and a CSV row in attention.jsonl were all kept (found by
// tests/fuzz/fuzz_rundir).
Test(train, a_continued_run_keeps_only_its_files_own_lines_up_to_its_step) {
    char *dir = test_tmpdir();
    static const char steps[] = "step,epoch,train_loss,lr,tokens_per_s,elapsed_s\n3,0.25,5.7,0.003,1000,0.1\n"
                                "step,epoch,train_loss,lr,tokens_per_s,elapsed_s\ninf,9,5.7,0.003,1000,0.2\n"
                                "{\"epoch\":1,\"step\":6}\n12,1,5.6,0.003,1000,0.3\n30,2,5.5,0.003,1000,0.4\n";
    static const char heads[] = "epoch,step,layer,head,aer\n1,12,0,mean,0.5\nnan,nan,0,0,0.4\n2,30,0,0,0.3\n";
    static const char jsonl[] = "{\"epoch\":1,\"step\":12,\"sentences\":[]}\n12,1,5.6\n{\"epoch\":2,\"step\":30}\n";
    free(test_write_file(dir, "steps.csv", steps, sizeof steps - 1));
    free(test_write_file(dir, "heads.csv", heads, sizeof heads - 1));
    free(test_write_file(dir, "attention.jsonl", jsonl, sizeof jsonl - 1));
    cr_assert_eq(ts_runlog_trim(dir, 1, 12), TS_OK, "%s", ts_last_error());
    static const char *const names[] = {"steps.csv", "heads.csv", "attention.jsonl"};
    static const char *const kept[] = {
        "step,epoch,train_loss,lr,tokens_per_s,elapsed_s\n3,0.25,5.7,0.003,1000,0.1\n12,1,5.6,0.003,1000,0.3\n",
        "epoch,step,layer,head,aer\n1,12,0,mean,0.5\n", "{\"epoch\":1,\"step\":12,\"sentences\":[]}\n"};
    for (int i = 0; i < 3; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char *text = test_read_file(path, NULL);
        cr_expect_str_eq(text, kept[i], "%s", names[i]);
        free(text);
    }
    free(dir);
}

// ---- --lr-schedule ---------------------------------------------------------------

// Each schedule's rate at the points that define it (warmup 10, horizon 110).
Test(train, each_schedule_has_its_rate_at_its_defining_steps) {
    const long W = 10, H = 110;
    for (int kind = 0; kind < TS_LR_SCHEDULE_COUNT; kind++) {
        cr_assert_eq(ts_lr_rate(kind, 2.0, 5, W, H), 1.0, "%s: halfway up the warmup", ts_lr_schedule_name(kind));
        cr_assert_eq(ts_lr_rate(kind, 2.0, W, W, H), 2.0, "%s: the warmup's end", ts_lr_schedule_name(kind));
    }
    cr_assert_eq(ts_lr_rate(TS_LR_PLATEAU, 2.0, H + 5, W, H), 2.0);
    cr_assert_float_eq(ts_lr_rate(TS_LR_INVERSE_SQRT, 2.0, 4 * W, W, H), 1.0, 1e-15);
    cr_assert_float_eq(ts_lr_rate(TS_LR_COSINE, 2.0, 60, W, H), 1.0, 1e-15);
    cr_assert_float_eq(ts_lr_rate(TS_LR_LINEAR, 2.0, 60, W, H), 1.0, 1e-15);
    cr_assert_float_eq(ts_lr_rate(TS_LR_COSINE, 2.0, H, W, H), 0.0, 1e-15);
    cr_assert_eq(ts_lr_rate(TS_LR_LINEAR, 2.0, H + 3, W, H), 0.0, "past the horizon the rate stays 0");
    ts_lr_schedule kind;
    cr_assert_eq(ts_lr_schedule_parse("inverse-sqrt", &kind), TS_OK);
    cr_assert_eq(kind, TS_LR_INVERSE_SQRT);
    cr_assert_eq(ts_lr_schedule_parse("noam", &kind), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "'noam'") && strstr(ts_last_error(), "cosine"), "%s", ts_last_error());
}

// An epoch line's lr is the rate its steps ran at: steps.csv's row before
// the epoch's last step (a row records the next update's rate) says it. The
// line once showed the next epoch's rate (issue 44 point 6): under a linear
// schedule the two differ at every step.
Test(train, an_epoch_line_shows_the_rate_its_last_step_ran_at) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *run = join(dir, "run"), *log = join(dir, "out.txt");
    ts_train_opts o = tiny_opts(corpus, run);
    fclose(o.out);
    o.out = fopen(log, "w");
    o.lr_schedule = TS_LR_LINEAR;
    o.epochs = 3;  // the last epoch's last step runs at 0, as the next would
    o.log_every = 1;
    ts_train_report r;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    fclose(o.out);
    char *out = test_read_file(log, NULL), *steps_path = join(run, "steps.csv");
    char *steps = test_read_file(steps_path, NULL);
    const long batches = 14;  // 110 train pairs in batches of 8
    for (long epoch = 1; epoch <= 2; epoch++) {
        char head[32], row[32], shown[32] = "", want[32], next[32];
        snprintf(head, sizeof head, "epoch %ld: ", epoch);
        const char *line = strstr(out, head), *lr = line ? strstr(line, ", lr ") : NULL;
        cr_assert(lr && sscanf(lr, ", lr %31[^,]", shown) == 1, "no lr on '%s' in:\n%s", head, out);
        long last = epoch * batches;
        snprintf(row, sizeof row, "\n%ld,", last - 1);
        const char *csv = strstr(steps, row);
        cr_assert_not_null(csv, "no row for step %ld in:\n%s", last - 1, steps);
        double ran_at = 0;
        cr_assert_eq(sscanf(csv + strlen(row), "%*[^,],%*[^,],%lf", &ran_at), 1, "%s", csv);
        snprintf(want, sizeof want, "%.3g", ran_at);
        snprintf(next, sizeof next, "%.3g", ts_lr_rate(TS_LR_LINEAR, o.lr, last + 1, 0, 3 * batches));
        cr_assert_str_eq(shown, want, "epoch %ld: lr %s, but its last step (%ld) ran at %s", epoch, shown, last, want);
        cr_assert_str_neq(shown, next, "epoch %ld: the next epoch's rate", epoch);
    }
    free(out);
    free(steps);
    free(steps_path);
    free(log);
    free(run);
    free(corpus);
    free(dir);
}

static volatile sig_atomic_t stop_flag;
static long stop_at;
static void stop_after(long step, int rank) {
    (void)rank;
    if (step == stop_at) stop_flag = SIGINT;
}

// A run of 3 epochs stopped after step 9 and resumed ends with the
// checkpoint of the run that was never stopped, for every schedule; the
// schedules train different models; resuming with another --epochs (another
// horizon) is refused for the schedules that read it.
Test(train, resume_is_exact_under_every_schedule, .timeout = 120) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *plateau_last = NULL;
    for (int kind = 0; kind < TS_LR_SCHEDULE_COUNT; kind++) {
        char name[64];
        snprintf(name, sizeof name, "%s-a", ts_lr_schedule_name(kind));
        char *a = join(dir, name), *b = NULL, *straight = NULL;
        ts_train_opts o = tiny_opts(corpus, a);
        o.lr_schedule = kind;
        o.warmup_steps = 4;
        o.epochs = 3;
        o.patience = 3;
        ts_train_report r;
        stop_flag = 0;
        stop_at = 9;
        o.stop = &stop_flag;
        o.after_step = stop_after;
        cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
        cr_assert(r.stopped && r.steps == 9, "stopped %d at %ld", r.stopped, r.steps);
        o.after_step = NULL;
        stop_flag = 0;
        char *last_a = join(a, "last.ckpt");
        o.resume = last_a;
        if (ts_lr_schedule_uses_horizon(kind)) {
            o.epochs = 4;
            snprintf(name, sizeof name, "%s-x", ts_lr_schedule_name(kind));
            o.out_dir = b = join(dir, name);
            cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG, "%s resumed with another horizon", ts_lr_schedule_name(kind));
            cr_assert(strstr(ts_last_error(), "--epochs 4 makes it end at step 56") &&
                      strstr(ts_last_error(), "ends at step 42"), "%s", ts_last_error());
            free(b);
            o.epochs = 3;
        }
        snprintf(name, sizeof name, "%s-b", ts_lr_schedule_name(kind));
        o.out_dir = b = join(dir, name);
        cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
        cr_assert(!r.stopped && r.steps == 42, "%s: %ld steps", ts_lr_schedule_name(kind), r.steps);
        snprintf(name, sizeof name, "%s-s", ts_lr_schedule_name(kind));
        o.out_dir = straight = join(dir, name);
        o.resume = NULL;
        cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
        char *last_s = join(straight, "last.ckpt");
        if (kind == TS_LR_PLATEAU) {
            plateau_last = strdup(last_s);
        } else {
            size_t la, lb;
            char *x = test_read_file(plateau_last, &la), *y = test_read_file(last_s, &lb);
            cr_assert(la != lb || memcmp(x, y, la), "%s trains what plateau trains", ts_lr_schedule_name(kind));
            free(x);
            free(y);
        }
        assert_same_file(join(b, "last.ckpt"), last_s);
        fclose(o.out);
        free(a);
        free(b);
        free(straight);
        free(last_a);
    }
    free(plateau_last);
    free(corpus);
    free(dir);
}

// A checkpoint from before --lr-schedule (no train.lr_schedule row) trained
// with plateau: resuming it with another schedule is refused, naming both.
Test(train, a_checkpoint_without_a_schedule_resumes_only_as_plateau) {
    char *dir = test_tmpdir();
    char *corpus = write_tiny_corpus(dir), *a = join(dir, "a"), *b = join(dir, "b");
    ts_train_opts o = tiny_opts(corpus, a);
    o.steps = 3;
    ts_train_report r;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    char *last = join(a, "last.ckpt");
    ts_ckpt *ck;
    const char *saved;
    cr_assert_eq(ts_train_state_load(last, &ck), TS_OK, "%s", ts_last_error());
    cr_assert_neq(ts_ckpt_get_string(ck, "train.lr_schedule", &saved), TS_OK, "plateau's row is written only when given");
    ts_clear_error();
    ts_ckpt_free(ck);
    o.resume = last;
    o.out_dir = b;
    o.steps = 5;
    o.lr_schedule = TS_LR_INVERSE_SQRT;
    cr_assert_eq(ts_train(&o, &r), TS_ERR_ARG);
    cr_assert(strstr(ts_last_error(), "was trained with --lr-schedule 'plateau'; this run asks for 'inverse-sqrt'"), "%s",
              ts_last_error());
    o.lr_schedule = TS_LR_PLATEAU;
    cr_assert_eq(ts_train(&o, &r), TS_OK, "%s", ts_last_error());
    fclose(o.out);
    free(last);
    free(corpus);
    free(a);
    free(b);
    free(dir);
}
