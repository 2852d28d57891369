#include "train/record.h"

#include "infer/decode.h"
#include "infer/heads.h"

#include "models/search.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double ts_record_elapsed(const ts_record *r) { return r->elapsed_before + ts_progress_now() - r->progress->started; }

void ts_record_free_hyps(ts_hypothesis *hyps, size_t n) {
    if (!hyps) return;
    for (size_t i = 0; i < n; i++) ts_hypothesis_free(&hyps[i]);
    free(hyps);
}

int ts_record_init_heads(ts_record *r) {
    if (!ts_heads_available(r->model) || !r->data->dev->has_align) return TS_OK;
    int layers, heads = ts_model_cross_heads(&r->model->cfg, &layers);
    return ts_head_table_init(&r->head_aer, layers, heads);
}

void ts_record_free(ts_record *r) { ts_head_table_free(&r->head_aer); }

// rows NULL: every pair of c (the test set); hyps NULL: not wanted;
// head_aer NULL: the heads not scored.
static int evaluate(ts_record *r, const ts_corpus *c, const size_t *rows, size_t n_rows, int beam,
                    ts_head_table *head_aer, ts_eval_result *res, ts_hypothesis **hyps) {
    ts_eval_opts eo = {.beam = beam, .batch = 64, .head_aer = head_aer};
    // The step arena chains more blocks as the evaluation needs them (tensor/arena.h).
    int rc = ts_evaluate(&r->trained, r->ctx, c, rows, n_rows, &eo, res, hyps);
    ts_ctx_reset(r->ctx);
    return rc;
}

int ts_record_dev(ts_record *r, int beam, ts_eval_result *res, ts_hypothesis **hyps) {
    ts_head_table *heads = beam == 1 && r->head_aer.cells ? &r->head_aer : NULL;
    return evaluate(r, r->data->dev, r->data->dev_rows, r->data->n_dev, beam, heads, res, hyps);
}

int ts_record_test(ts_record *r) {
    const ts_train_opts *o = r->opts;
    ts_eval_result res;
    int rc = evaluate(r, r->data->test, NULL, 0, 1, NULL, &res, NULL);
    if (rc || !o->out) return rc;
    ts_progress_test(o->out, 1, &res, o->data.test_file);
    if (o->beam <= 1) return TS_OK;
    if ((rc = evaluate(r, r->data->test, NULL, 0, (int)o->beam, NULL, &res, NULL))) return rc;
    ts_progress_test(o->out, (int)o->beam, &res, o->data.test_file);
    return TS_OK;
}

int ts_record_final(ts_record *r, const ts_train_state *s, const ts_eval_result *res, ts_hypothesis *hyps,
                    const ts_train_best *best) {
    const ts_train_opts *o = r->opts;
    const ts_dataset *d = r->data;
    int rc = TS_OK;
    if (o->out) {
        size_t n = (size_t)o->show < d->n_dev ? (size_t)o->show : d->n_dev;
        ts_progress_examples(o->out, d->dev, d->dev_rows, n, &r->trained, hyps);
        ts_progress_dev(o->out, 1, res, o->out_dir);
        if (o->beam > 1) {
            // The search a user translates with (tinyseq translate --beam): it
            // scores higher than greedy, most with label smoothing (docs/models.md).
            ts_eval_result beam;
            if ((rc = ts_record_dev(r, (int)o->beam, &beam, NULL))) goto done;
            ts_progress_dev(o->out, (int)o->beam, &beam, o->out_dir);
        }
        // A checkpoint from before --best may hold no BLEU for its best
        // epoch (-1): say the loss alone chose it.
        ts_progress_best(o->out, res, best->bleu < 0 ? TS_BEST_LOSS : o->best, best, (long)ts_batcher_count(d->batcher),
                         s->step, o->out_dir);
    }
done:
    ts_record_free_hyps(hyps, d->n_dev);
    if (rc) return rc;
    return o->data.test_file ? ts_record_test(r) : TS_OK;
}

double ts_record_lr(const ts_record *r, long k) {
    return ts_lr_rate(r->opts->lr_schedule, r->optim->lr, k, r->opts->warmup_steps, r->lr_horizon);
}

// Rows record the rate of the next update.
int ts_record_steps(ts_record *r, const ts_run_point *at) {
    if (r->window_tokens == 0) return TS_OK;
    ts_steps_row row = {.at = *at, .train_loss = r->window_loss / (double)r->window_tokens, .lr = ts_record_lr(r, at->step + 1),
                        .tokens_per_s = ts_progress_rate(r->progress), .elapsed = ts_record_elapsed(r)};
    r->window_loss = 0;
    r->window_tokens = 0;
    return ts_runlog_append_steps(r->opts->out_dir, &row);
}

// attention.jsonl for `tinyseq report`: the first TS_REPORT_SENTENCES dev
// sentences with this evaluation's greedy outputs and the model's beam
// search of the default width (TS_BEAM_DEFAULT, as translate's), each with its attention.
static int append_report(ts_record *r, const ts_run_point *at, const ts_eval_result *res, const ts_hypothesis *greedy) {
    const ts_dataset *d = r->data;
    size_t n = d->n_dev < TS_REPORT_SENTENCES ? d->n_dev : TS_REPORT_SENTENCES;
    ts_hypothesis beam[TS_REPORT_SENTENCES];
    ts_report_sentence rows[TS_REPORT_SENTENCES];
    int len[TS_REPORT_SENTENCES], S = 1;
    memset(beam, 0, sizeof beam);
    for (size_t i = 0; i < n; i++) {
        const ts_pair *p = &d->dev->pairs[d->dev_rows[i]];
        len[i] = p->src_len < TS_MAX_SENTENCE_TOKENS ? p->src_len : TS_MAX_SENTENCE_TOKENS;
        if (len[i] > S) S = len[i];
        rows[i] = (ts_report_sentence){p, &greedy[i], &beam[i], NULL};
    }
    // The sentences search their beams in one batch, each to its own limit.
    int *src = malloc((size_t)S * n * sizeof *src);  // (S, n) time-major, TS_PAD past len[i]
    int rc = src ? TS_OK : ts_fail(TS_ERR_NOMEM, "cannot allocate %d x %zu report tokens", S, n);
    for (int s = 0; src && s < S; s++)
        for (size_t i = 0; i < n; i++)
            src[(size_t)s * n + i] = s < len[i] ? ts_vocab_id(d->src_vocab, rows[i].pair->src[s]) : TS_PAD;
    ts_batch_view bv = {.B = (int)n, .S = S, .src = src, .src_len = len};
    if (!rc) rc = ts_decode_batch(r->model, r->ctx, &bv, TS_BEAM_DEFAULT, 0, NULL, beam);
    // A Transformer's heads of the first few greedy outputs.
    ts_heads heads[TS_REPORT_HEAD_SENTENCES];
    memset(heads, 0, sizeof heads);
    for (size_t i = 0; !rc && ts_heads_available(r->model) && i < n && i < TS_REPORT_HEAD_SENTENCES; i++) {
        int ids[TS_MAX_SENTENCE_TOKENS];  // (len[i]) sentence i's column of src
        for (int s = 0; s < len[i]; s++) ids[s] = src[(size_t)s * n + i];
        rc = ts_heads_compute(r->model, r->ctx, ids, len[i], greedy[i].tokens, greedy[i].len, &heads[i]);
        rows[i].heads = &heads[i];
    }
    free(src);
    if (!rc)
        rc = ts_runlog_append_report(r->opts->out_dir, at, res, d->tgt_vocab, ts_model_attends(&r->model->cfg), rows, n);
    for (size_t i = 0; i < n; i++) ts_hypothesis_free(&beam[i]);
    for (size_t i = 0; i < TS_REPORT_HEAD_SENTENCES; i++) ts_heads_free(&heads[i]);
    return rc;
}

int ts_record_evaluation(ts_record *r, const ts_run_point *at, double train_loss, const ts_eval_result *res,
                         const ts_hypothesis *hyps) {
    const ts_dataset *d = r->data;
    const char *dir = r->opts->out_dir;
    ts_metrics_row row = {.at = *at, .train_loss = train_loss, .dev = res, .lr = ts_record_lr(r, at->step + 1),
                          .tokens_per_s = ts_progress_rate(r->progress), .elapsed = ts_record_elapsed(r)};
    int rc = ts_runlog_append_metrics(dir, &row);
    if (!rc && hyps && d->n_dev > 0)
        rc = ts_runlog_write_attention(dir, at, &r->model->cfg, &r->trained, &d->dev->pairs[d->dev_rows[0]], &hyps[0]);
    if (!rc && hyps && d->n_dev > 0) rc = append_report(r, at, res, hyps);
    if (!rc) rc = ts_runlog_write_loss(dir);
    if (!rc && res->has_head_aer) rc = ts_runlog_append_heads(dir, at, &r->head_aer);
    if (!rc && res->has_head_aer && r->opts->out)
        ts_progress_heads(r->opts->out, &r->head_aer, ts_guided_on(r->opts) ? (int)r->opts->guided_layer : -1,
                          (int)r->opts->guided_head);
    r->recorded_step = at->step;
    return rc;
}

int ts_record_keep_epoch(ts_record *r, const ts_train_state *s, const ts_optim *optim) {
    const ts_train_opts *o = r->opts;
    char name[64], path[4096];
    snprintf(name, sizeof name, "epoch-%ld.ckpt", s->epoch);
    int rc = ts_train_state_save(s, o, &r->trained, optim, name, 0);
    if (rc || s->epoch <= o->keep) return rc;
    snprintf(name, sizeof name, "epoch-%ld.ckpt", s->epoch - o->keep);
    if ((rc = ts_path_join(path, sizeof path, o->out_dir, name))) return rc;
    if (unlink(path) != 0 && errno != ENOENT) return ts_fail(TS_ERR_IO, "cannot delete '%s': %s", path, strerror(errno));
    return TS_OK;
}
