#include "train/progress.h"

#include "tensor/blas_setup.h"
#include "tensor/kernels.h"
#include "tensor/threads.h"
#include "train/optim.h"
#include "infer/translate.h"

#include <math.h>
#include <stdlib.h>

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

void ts_progress_show(ts_progress *p, FILE *log, long epoch, long epochs, long position, size_t total, long step,
                      double loss, int final) {
    if (!log) return;
    int tty = isatty(fileno(log));
    double elapsed = ts_progress_now() - p->started;
    if (!tty && !final && elapsed - p->last_log < 5.0) return;
    if (tty && !final && elapsed - p->last_log < 0.1) return;
    p->last_log = elapsed;
    double rate = ts_progress_rate(p);
    double per_batch = position > 0 ? p->step_seconds / (double)position : 0;
    char eta[32], run_eta[32] = "?", of[32] = "";
    format_duration(eta, sizeof eta, per_batch * (double)(total - (size_t)position));
    long done = step - p->first_step, left = p->last_step - step;
    if (done > 0 && left >= 0) format_duration(run_eta, sizeof run_eta, elapsed / (double)done * (double)left);
    if (epochs > 0) snprintf(of, sizeof of, "/%ld", epochs);
    if (tty) {
        int width = 24, filled = total ? (int)((double)position / (double)total * width) : 0;
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '=' : i == filled ? '>' : ' ';
        bar[width] = '\0';
        fprintf(log, "\r\033[Kepoch %ld%s [%s] %ld/%zu  loss %.4f  %.0f tok/s  ETA %s, run %s", epoch + 1, of, bar,
                position, total, loss, rate, eta, run_eta);
        if (final) fputc('\n', log);
    } else {
        fprintf(log, "epoch %ld%s: %ld/%zu batches, loss %.4f, %.0f tok/s, ETA %s, run %s\n", epoch + 1, of, position,
                total, loss, rate, eta, run_eta);
    }
    fflush(log);
}

void ts_progress_epoch(const ts_progress *p, FILE *out, long epoch, double train_loss, const ts_eval_result *res,
                       double lr, double elapsed, int improved) {
    fprintf(out,
            "epoch %ld: train loss %.4f, dev loss %.4f, dev ppl %.3f, dev BLEU %.4f, chrF %.4f, exact %.1f%%, lr %.3g, "
            "%.0f tok/s, %.1f s%s\n",
            epoch, train_loss, res->loss, res->perplexity, res->bleu, res->chrf, 100 * res->exact, lr, ts_progress_rate(p),
            elapsed, improved ? " (best)" : "");
    fflush(out);
}

void ts_progress_heads(FILE *out, const ts_head_table *head_aer, int guided_layer, int guided_head) {
    int best_layer, best_head, guided = guided_layer >= 0 && guided_layer < head_aer->layers && guided_head >= 0 &&
                                        guided_head < head_aer->heads;
    ts_head_table_best(head_aer, &best_layer, &best_head);
    int best_guided = guided && best_layer == guided_layer && best_head == guided_head;
    fprintf(out, "  heads: best-aligned layer %d head %d%s, aer %.4f;", best_layer, best_head,
            best_guided ? " (guided)" : "", ts_head_cell(head_aer, best_layer, best_head));
    if (guided && !best_guided)
        fprintf(out, " guided layer %d head %d, aer %.4f;", guided_layer, guided_head,
                ts_head_cell(head_aer, guided_layer, guided_head));
    fprintf(out, " each layer's head mean");
    for (int l = 0; l < head_aer->layers; l++) fprintf(out, " %.4f", ts_head_cell(head_aer, l, -1));
    fputc('\n', out);
    fflush(out);
}

void ts_progress_banner(FILE *out, const ts_progress_start *st) {
    const ts_train_opts *o = st->opts;
    const ts_model_config *cfg = st->model;
    if (st->parts > 1)
        fprintf(out, "data-parallel: %d rank%s x --accumulate %ld: a batch of %ld sentences in %d parts of about %ld\n",
                st->ranks, st->ranks > 1 ? "s" : "", o->accumulate, o->batch, st->parts, o->batch / st->parts);
    fprintf(out, "kernels: %s; %d BLAS threads\n", ts_blas_kernels(), ts_threads_asked());
    fprintf(out, "data: %s, %zu train / %zu dev pairs, vocabularies %d / %d", o->data.corpus ? o->data.corpus : "toy corpus",
            st->n_train, st->n_dev, cfg->src_vocab, cfg->tgt_vocab);
    if (o->data.subword)
        fprintf(out, " subword pieces (%s, %s, at most %ld%s)", ts_subword_kind_name(o->data.subword_kind),
                o->data.subword_joint ? "joint" : "per side", o->data.subword, st->resumed ? "; the checkpoint's models" : "");
    const ts_normalisation_kind *norm = &ts_normalisations[o->data.normalisation];
    fprintf(out, "; normalisation %s (%s)\n", norm->name, norm->what);
    char model[256];
    fprintf(out, "model: %s, %zu parameters; %s lr %g, batch %ld\n", ts_model_describe(cfg, model, sizeof model),
            st->parameters, ts_optim_name(o->optim), st->lr, o->batch);
    // How long: a user should not have to know --arch transformer's 20 epochs.
    if (o->steps > 0)
        fprintf(out, "length: %ld steps (--steps), %ld batches an epoch\n", o->steps, st->batches);
    else
        fprintf(out, "length: %ld epochs (--epochs) of %ld batches, %ld steps%s\n", o->epochs, st->batches,
                o->epochs * st->batches, o->patience < o->epochs ? "; fewer if dev loss stops improving (--patience)" : "");
    // The regularisers and the final search are defaults a user may not expect: say them.
    char search[32] = "";
    if (o->beam > 1) snprintf(search, sizeof search, " and beam %ld", o->beam);
    fprintf(out, "training: label smoothing %g, dropout %g, teacher forcing %g; final dev evaluation greedy%s\n",
            o->label_smoothing, o->dropout, o->tf, search);
    if (o->guided_alignment) {  // resolved: NULL when off (train/guided.h)
        fprintf(out, "guided alignment: %s, weight %g, cross-attention layer %ld head %ld\n", o->guided_alignment,
                o->guided_weight, o->guided_layer, o->guided_head);
        const ts_model_kind *kind = ts_model_kind_of(cfg->arch);
        const char *caveat = kind->guided_caveat ? kind->guided_caveat(cfg) : NULL;
        if (caveat) fprintf(out, "warning: %s\n", caveat);
    }
    if (st->resumed)
        fprintf(out, "resumed from %s at step %ld (epoch %ld, batch %ld)\n", o->resume, st->step, st->epoch + 1, st->position);
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
        fprintf(out, "  source:    %s\n  reference: %s\n  output:    %s\n\n", source ? source : "", reference ? reference : "",
                output ? output : "");
        free(source);
        free(reference);
        free(output);
    }
}

void ts_progress_test(FILE *out, int beam, const ts_eval_result *res, const char *test_file) {
    if (beam == 1)
        fprintf(out, "test: loss %.4f, ppl %.3f, BLEU %.4f, chrF %.4f, exact %.1f%% on %zu pair%s of %s (last model)\n",
                res->loss, res->perplexity, res->bleu, res->chrf, 100 * res->exact, res->pairs, res->pairs == 1 ? "" : "s",
                test_file);
    else
        fprintf(out, "test, beam %d: BLEU %.4f, chrF %.4f, exact %.1f%%\n", beam, res->bleu, res->chrf, 100 * res->exact);
}

void ts_progress_summary(FILE *out, const ts_train_report *report, const ts_dist *dist, size_t parameters) {
    if (dist->size > 1 && dist->allreduce_calls > 0)
        fprintf(out, "allreduce: %ld steps, %.3f s in all, %.3f ms a step, %zu bytes a step (%zu parameters)\n",
                dist->allreduce_calls, dist->allreduce_seconds, 1e3 * dist->allreduce_seconds / (double)dist->allreduce_calls,
                dist->allreduce_bytes, parameters);
    fprintf(out, "train: tokens_per_s=%.1f steps=%ld last_batch_loss=%.4f\n", report->tokens_per_s, report->steps,
            report->last_loss);
    fflush(out);
}

void ts_progress_dev(FILE *out, int beam, const ts_eval_result *res, const char *out_dir) {
    if (beam == 1)
        fprintf(out, "dev: loss %.4f, ppl %.3f, BLEU %.4f, chrF %.4f, exact %.1f%% on %zu pair%s (last model: %s/last.ckpt)\n",
                res->loss, res->perplexity, res->bleu, res->chrf, 100 * res->exact, res->pairs, res->pairs == 1 ? "" : "s",
                out_dir);
    else
        fprintf(out, "dev, beam %d: BLEU %.4f, chrF %.4f, exact %.1f%% (last model, as tinyseq eval --beam %d scores it)\n",
                beam, res->bleu, res->chrf, 100 * res->exact, beam);
}

void ts_progress_best(FILE *out, const ts_eval_result *dev, ts_best_by by, const ts_train_best *best, long batches,
                      long last_step, const char *out_dir) {
    if (dev->pairs && dev->short_refs == dev->pairs)
        fprintf(out, "note: BLEU-4 is 0 on this dev set whatever the outputs (no reference has 4 words): read chrF\n");
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
        fprintf(out, "best: %s by dev loss (--best loss): dev loss %.4f, BLEU %.4f (%s/best.ckpt)\n", where, best->loss,
                best->bleu, out_dir);
    else
        fprintf(out, "best: %s by dev BLEU (--best bleu, greedy): BLEU %.4f, dev loss %.4f (%s/best.ckpt)\n", where,
                best->bleu, best->loss, out_dir);
}

void ts_progress_between(FILE *out, const ts_run_point *at, const ts_eval_result *dev, int best) {
    if (!out) return;
    char epoch[32];
    fprintf(out, "step %ld (epoch %s): dev loss %.4f, ppl %.3f, BLEU %.4f, chrF %.4f, exact %.1f%%%s\n", at->step,
            ts_run_point_epoch(epoch, at), dev->loss, dev->perplexity, dev->bleu, dev->chrf, 100 * dev->exact,
            best ? " (best)" : "");
    fflush(out);
}

double ts_progress_run_rate(const ts_progress *p) {
    return p->measured_seconds > 0 ? ts_progress_rate(p) : p->run_seconds > 0 ? p->run_tokens / p->run_seconds : 0;
}
