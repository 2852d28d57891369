#include "train/progress.h"

#include "tensor/blas_setup.h"
#include "tensor/kernels.h"
#include "tensor/threads.h"
#include "train/optim.h"
#include "infer/translate.h"
#include "viz/render.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>
#include <unistd.h>

double ts_progress_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double ts_progress_rate(const ts_progress *p) {
    return p->measured_seconds > 0 ? p->measured_tokens / p->measured_seconds : 0;
}

void ts_progress_step(ts_progress *p, double seconds, int tokens, int measured) {
    p->step_seconds += seconds;
    p->run_tokens += tokens;
    p->run_seconds += seconds;
    if (measured) {
        p->measured_tokens += tokens;
        p->measured_seconds += seconds;
    }
}

static void format_duration(char *buf, size_t n, double seconds) {
    long s = (long)(seconds + 0.5);
    if (s >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(buf, n, "%ld:%02ld", s / 60, s % 60);
}

// One line on out (printf's format): at a terminal, wrapped to its width,
// the lines after the first indented by `indent`; elsewhere as it is.
static void put_line(FILE *out, int indent, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void put_line(FILE *out, int indent, const char *format, ...) {
    char text[512], *line = text;
    va_list args, again;
    va_start(args, format);
    va_copy(again, args);
    int n = vsnprintf(text, sizeof text, format, args);
    if (n >= (int)sizeof text && (line = malloc((size_t)n + 1))) vsnprintf(line, (size_t)n + 1, format, again);
    if (!line) line = text;  // out of memory: the line cut short
    va_end(again);
    va_end(args);
    ts_term_put_wrapped(out, line, isatty(fileno(out)) ? ts_term_width(out) : 0, indent);
    if (line != text) free(line);
}

// The live line's fields in the order they show. As the terminal narrows,
// they go by rank, the highest first (the bar shrinks to BAR_LEAST columns
// before it goes); the epoch always stays.
enum { LIVE_EPOCH, LIVE_BAR, LIVE_BATCHES, LIVE_LOSS, LIVE_RATE, LIVE_ELAPSED, LIVE_LEFT, LIVE_EPOCH_LEFT, LIVE_FIELDS };
static const struct {
    int rank;
    const char *gap;  // before the field
} live_fields[LIVE_FIELDS] = {
    [LIVE_EPOCH] = {0, ""},       [LIVE_BATCHES] = {1, " "},   [LIVE_LOSS] = {2, "  "}, [LIVE_LEFT] = {3, "  "},
    [LIVE_ELAPSED] = {4, "  "},   [LIVE_RATE] = {5, "  "},     [LIVE_BAR] = {6, " "},   [LIVE_EPOCH_LEFT] = {7, " "},
};
#define BAR_LEAST 6
#define BAR_MOST 24
// A field's text: "epoch ", a long and "/epochs" (32) fit whole, which gcc's
// -Wformat-truncation checks at -O1 and -O0 with sanitizers.
#define FIELD_MOST 64

// The live line in `line` for a terminal of `width` columns: the fields of
// text[] (text[LIVE_BAR] unused) that fit, with a bar `done` full.
static void live_line(char *line, size_t n, char text[LIVE_FIELDS][FIELD_MOST], double done, int width) {
    int on[LIVE_FIELDS], cols = 0;
    for (int f = 0; f < LIVE_FIELDS; f++) {
        on[f] = 1;
        cols += (int)strlen(live_fields[f].gap) + (f == LIVE_BAR ? BAR_LEAST + 2 : (int)strlen(text[f]));
    }
    while (cols > width) {  // drop the highest rank still on
        int last = LIVE_EPOCH;
        for (int f = 0; f < LIVE_FIELDS; f++)
            if (on[f] && live_fields[f].rank > live_fields[last].rank) last = f;
        if (last == LIVE_EPOCH) break;
        on[last] = 0;
        cols -= (int)strlen(live_fields[last].gap) + (last == LIVE_BAR ? BAR_LEAST + 2 : (int)strlen(text[last]));
    }
    if (on[LIVE_BAR]) {  // what room is left widens it
        int bar = BAR_LEAST + (width - cols < BAR_MOST - BAR_LEAST ? width - cols : BAR_MOST - BAR_LEAST);
        int filled = (int)(done * bar);
        for (int i = 0; i < bar; i++) text[LIVE_BAR][1 + i] = i < filled ? '=' : i == filled ? '>' : ' ';
        text[LIVE_BAR][0] = '[';
        text[LIVE_BAR][bar + 1] = ']';
        text[LIVE_BAR][bar + 2] = '\0';
    }
    size_t used = 0;
    line[0] = '\0';
    for (int f = 0; f < LIVE_FIELDS && used < n; f++)
        if (on[f]) used += (size_t)snprintf(line + used, n - used, "%s%s", live_fields[f].gap, text[f]);
    if (width > 0 && (size_t)width < n) line[width] = '\0';  // the epoch alone is wider
}

void ts_progress_show(ts_progress *p, FILE *log, long epoch, long epochs, long position, size_t total, long step,
                      double loss, int final) {
    if (!log) return;
    int tty = isatty(fileno(log));
    double elapsed = ts_progress_now() - p->started;
    if (!tty && !final && elapsed - p->last_log < 5.0) return;
    if (tty && !final && elapsed - p->last_log < 0.1) return;
    p->last_log = elapsed;
    double per_batch = position > 0 ? p->step_seconds / (double)position : 0;
    char epoch_left[32], left[32] = "?", since[32], of[32] = "";
    format_duration(epoch_left, sizeof epoch_left, per_batch * (double)(total - (size_t)position));
    format_duration(since, sizeof since, elapsed);
    long done = step - p->first_step, steps_left = p->last_step - step;
    if (done > 0 && steps_left >= 0) format_duration(left, sizeof left, elapsed / (double)done * (double)steps_left);
    if (epochs > 0) snprintf(of, sizeof of, "/%ld", epochs);
    // Elapsed: this run's time so far; left: the whole run's, then the epoch's.
    if (!tty) {
        fprintf(log, "epoch %ld%s: %ld/%zu batches, loss %.4f, %.0f tok/s, elapsed %s, left %s (epoch %s)\n", epoch + 1,
                of, position, total, loss, ts_progress_rate(p), since, left, epoch_left);
        fflush(log);
        return;
    }
    char text[LIVE_FIELDS][FIELD_MOST], line[512];
    snprintf(text[LIVE_EPOCH], sizeof text[0], "epoch %ld%s", epoch + 1, of);
    snprintf(text[LIVE_BATCHES], sizeof text[0], "%ld/%zu", position, total);
    snprintf(text[LIVE_LOSS], sizeof text[0], "loss %.4f", loss);
    snprintf(text[LIVE_RATE], sizeof text[0], "%.0f tok/s", ts_progress_rate(p));
    snprintf(text[LIVE_ELAPSED], sizeof text[0], "elapsed %s", since);
    snprintf(text[LIVE_LEFT], sizeof text[0], "left %s", left);
    snprintf(text[LIVE_EPOCH_LEFT], sizeof text[0], "(epoch %s)", epoch_left);
    // The last columns stay empty: a line that reaches the last one wraps on
    // some terminals, and Ctrl-C's echo (^C) comes after it.
    int width = ts_term_width(log);
    live_line(line, sizeof line, text, total ? (double)position / (double)total : 0, (width > 0 ? width : 80) - 3);
    fprintf(log, "\r\033[K%s", line);
    p->drawn = !final;
    if (final) fputc('\n', log);
    fflush(log);
}

void ts_progress_leave(ts_progress *p, FILE *log) {
    if (!log || !p->drawn) return;
    fputc('\n', log);
    fflush(log);
    p->drawn = 0;
}

void ts_progress_erase(ts_progress *p, FILE *log) {
    if (!log || !p->drawn) return;
    fputs("\r\033[K", log);
    fflush(log);
    p->drawn = 0;
}

void ts_progress_epoch(const ts_progress *p, FILE *out, long epoch, double train_loss, const ts_eval_result *res,
                       double lr, double elapsed, int improved) {
    put_line(out, 2,
             "epoch %ld: train loss %.4f, dev loss %.4f, dev ppl %.3f, dev BLEU %.4f, chrF %.4f, exact %.1f%%, lr %.3g, "
             "%.0f tok/s, %.1f s%s",
             epoch, train_loss, res->loss, res->perplexity, res->bleu, res->chrf, 100 * res->exact, lr, ts_progress_rate(p),
             elapsed, improved ? " (best)" : "");
    fflush(out);
}

void ts_progress_heads(FILE *out, const ts_head_table *head_aer, int guided_layer, int guided_head) {
    int best_layer, best_head, guided = guided_layer >= 0 && guided_layer < head_aer->layers && guided_head >= 0 &&
                                        guided_head < head_aer->heads;
    ts_head_table_best(head_aer, &best_layer, &best_head);
    int best_guided = guided && best_layer == guided_layer && best_head == guided_head;
    char other[96] = "", means[TS_MODEL_MAX_LAYERS * 16] = "";
    if (guided && !best_guided)
        snprintf(other, sizeof other, " guided layer %d head %d, aer %.4f;", guided_layer, guided_head,
                 ts_head_cell(head_aer, guided_layer, guided_head));
    for (int l = 0, used = 0; l < head_aer->layers && used < (int)sizeof means; l++)
        used += snprintf(means + used, sizeof means - (size_t)used, " %.4f", ts_head_cell(head_aer, l, -1));
    put_line(out, 4, "  heads: best-aligned layer %d head %d%s, aer %.4f;%s each layer's head mean%s", best_layer,
             best_head, best_guided ? " (guided)" : "", ts_head_cell(head_aer, best_layer, best_head), other, means);
    fflush(out);
}

void ts_progress_banner(FILE *out, const ts_progress_start *st) {
    const ts_train_opts *o = st->opts;
    const ts_model_config *cfg = st->model;
    if (st->parts > 1)
        put_line(out, 2, "data-parallel: %d rank%s x --accumulate %ld: a batch of %ld sentences in %d parts of about %ld",
                 st->ranks, st->ranks > 1 ? "s" : "", o->accumulate, o->batch, st->parts, o->batch / st->parts);
    const char *slow = ts_blas_kernels_caveat();  // the kernels are --verbose's unless they slow the run
    if (o->verbose || slow) put_line(out, 2, "kernels: %s; %d BLAS threads", ts_blas_kernels(), ts_threads_asked());
    if (slow) put_line(out, 2, "warning: %s", slow);
    char pieces[160] = "";
    if (o->data.subword)
        snprintf(pieces, sizeof pieces, " subword pieces (%s, %s, at most %ld%s)", ts_subword_kind_name(o->data.subword_kind),
                 o->data.subword_joint ? "joint" : "per side", o->data.subword, st->resumed ? "; the checkpoint's models" : "");
    const ts_normalisation_kind *norm = &ts_normalisations[o->data.normalisation];
    put_line(out, 2, "data: %s, %zu train / %zu dev pairs, vocabularies %d / %d%s; normalisation %s (%s)",
             o->data.corpus ? o->data.corpus : "toy corpus", st->n_train, st->n_dev, cfg->src_vocab, cfg->tgt_vocab, pieces,
             norm->name, norm->what);
    char model[256];
    put_line(out, 2, "model: %s, %zu parameters; %s lr %g, batch %ld", ts_model_describe(cfg, model, sizeof model),
             st->parameters, ts_optim_name(o->optim), st->lr, o->batch);
    // How long: a user should not have to know --arch transformer's 20 epochs.
    if (o->steps > 0)
        put_line(out, 2, "length: %ld step%s (--steps), %ld batch%s an epoch", o->steps, o->steps == 1 ? "" : "s",
                 st->batches, st->batches == 1 ? "" : "es");
    else
        put_line(out, 2, "length: %ld epoch%s (--epochs) of %ld batch%s, %ld step%s%s", o->epochs, o->epochs == 1 ? "" : "s",
                 st->batches, st->batches == 1 ? "" : "es", o->epochs * st->batches, o->epochs * st->batches == 1 ? "" : "s",
                 o->patience < o->epochs ? "; fewer if dev loss stops improving (--patience)" : "");
    // The regularisers and the final search are defaults a user may not expect: say them.
    char search[32] = "";
    if (o->beam > 1) snprintf(search, sizeof search, " and beam %ld", o->beam);
    put_line(out, 2, "training: label smoothing %g, dropout %g, teacher forcing %g; final dev evaluation greedy%s",
             o->label_smoothing, o->dropout, o->tf, search);
    if (o->guided_alignment) {  // resolved: NULL when off (train/guided.h)
        put_line(out, 2, "guided alignment: %s, weight %g, cross-attention layer %ld head %ld", o->guided_alignment,
                 o->guided_weight, o->guided_layer, o->guided_head);
        const ts_model_kind *kind = ts_model_kind_of(cfg->arch);
        const char *caveat = kind->guided_caveat ? kind->guided_caveat(cfg) : NULL;
        if (caveat) put_line(out, 2, "warning: %s", caveat);
    }
    if (st->resumed)
        put_line(out, 2, "resumed from %s at step %ld (epoch %ld, batch %ld)", o->resume, st->step, st->epoch + 1,
                 st->position);
    fflush(out);
}

void ts_progress_examples(FILE *out, const ts_corpus *dev, const size_t *rows, size_t n, const ts_translator *trained,
                          const ts_hypothesis *hyps) {
    for (size_t i = 0; i < n; i++) {
        const ts_pair *p = &dev->pairs[rows[i]];
        char *source = NULL, *reference = NULL, *output = NULL;  // a line left out when out of memory
        ts_subword_detokenize(trained->src_sw, (const char *const *)p->src, (size_t)p->src_len, &source);
        ts_subword_detokenize(trained->tgt_sw, (const char *const *)p->tgt, (size_t)p->tgt_len, &reference);
        ts_translator_text(trained, hyps[i].tokens, hyps[i].len, &output);
        put_line(out, 13, "  source:    %s", source ? source : "");
        put_line(out, 13, "  reference: %s", reference ? reference : "");
        put_line(out, 13, "  output:    %s", output ? output : "");
        fputc('\n', out);
        free(source);
        free(reference);
        free(output);
    }
}

void ts_progress_test(FILE *out, int beam, const ts_eval_result *res, const char *test_file) {
    if (beam == 1)
        put_line(out, 2, "test: loss %.4f, ppl %.3f, BLEU %.4f, chrF %.4f, exact %.1f%% on %zu pair%s of %s (last model)",
                 res->loss, res->perplexity, res->bleu, res->chrf, 100 * res->exact, res->pairs, res->pairs == 1 ? "" : "s",
                 test_file);
    else
        put_line(out, 2, "test, beam %d: BLEU %.4f, chrF %.4f, exact %.1f%%", beam, res->bleu, res->chrf, 100 * res->exact);
}

void ts_progress_summary(FILE *out, const ts_train_report *report, const ts_dist *dist, size_t parameters) {
    if (dist->size > 1 && dist->allreduce_calls > 0)
        put_line(out, 2, "allreduce: %ld steps, %.3f s in all, %.3f ms a step, %zu bytes a step (%zu parameters)",
                 dist->allreduce_calls, dist->allreduce_seconds, 1e3 * dist->allreduce_seconds / (double)dist->allreduce_calls,
                 dist->allreduce_bytes, parameters);
    put_line(out, 2, "train: tokens_per_s=%.1f steps=%ld last_batch_loss=%.4f", report->tokens_per_s, report->steps,
             report->last_loss);
    fflush(out);
}

void ts_progress_dev(FILE *out, int beam, const ts_eval_result *res, const char *out_dir) {
    if (beam == 1)
        put_line(out, 2, "dev: loss %.4f, ppl %.3f, BLEU %.4f, chrF %.4f, exact %.1f%% on %zu pair%s (last model: %s/last.ckpt)",
                 res->loss, res->perplexity, res->bleu, res->chrf, 100 * res->exact, res->pairs, res->pairs == 1 ? "" : "s",
                 out_dir);
    else
        put_line(out, 2, "dev, beam %d: BLEU %.4f, chrF %.4f, exact %.1f%% (last model, as tinyseq eval --beam %d scores it)",
                 beam, res->bleu, res->chrf, 100 * res->exact, beam);
}

void ts_progress_best(FILE *out, const ts_eval_result *dev, ts_best_by by, const ts_train_best *best, long batches,
                      long last_step, const char *out_dir) {
    if (dev->pairs && dev->short_refs == dev->pairs)
        put_line(out, 2, "note: BLEU-4 is 0 on this dev set whatever the outputs (no reference has 4 words): read chrF");
    if (isinf(best->loss)) return;
    // An epoch's evaluation by its epoch; one inside an epoch by its step.
    char where[96], epoch[32];
    if (best->step > 0 && batches > 0 && best->step % batches == 0) {
        snprintf(where, sizeof where, "epoch %ld", best->step / batches);
    } else {
        ts_run_point at = {.epoch = batches > 0 ? (double)best->step / (double)batches : 0, .step = best->step};
        snprintf(where, sizeof where, "step %ld (epoch %s%s)", best->step, ts_run_point_epoch(epoch, &at),
                 best->step == last_step ? ", the last model" : "");
    }
    if (by == TS_BEST_LOSS)
        put_line(out, 2, "best: %s by dev loss (--best loss): dev loss %.4f, BLEU %.4f (%s/best.ckpt)", where, best->loss,
                 best->bleu, out_dir);
    else
        put_line(out, 2, "best: %s by dev BLEU (--best bleu, greedy): BLEU %.4f, dev loss %.4f (%s/best.ckpt)", where,
                 best->bleu, best->loss, out_dir);
}

void ts_progress_between(FILE *out, const ts_run_point *at, const ts_eval_result *dev, int best) {
    if (!out) return;
    char epoch[32];
    put_line(out, 2, "step %ld (epoch %s): dev loss %.4f, ppl %.3f, BLEU %.4f, chrF %.4f, exact %.1f%%%s", at->step,
             ts_run_point_epoch(epoch, at), dev->loss, dev->perplexity, dev->bleu, dev->chrf, 100 * dev->exact,
             best ? " (best)" : "");
    fflush(out);
}

double ts_progress_run_rate(const ts_progress *p) {
    return p->measured_seconds > 0 ? ts_progress_rate(p) : p->run_seconds > 0 ? p->run_tokens / p->run_seconds : 0;
}
