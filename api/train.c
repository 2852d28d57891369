// tinyseq_train (api/tinyseq.h): the trainer with options given as flag
// names and text values, read through the options table (train/options.h)
// as `tinyseq train` reads its flags, the printed lines handed to a callback,
// and Ctrl-C stopping the run as the CLI's does.
#define _GNU_SOURCE  // fopencookie: the trainer's streams call the caller back, line by line
#include "api/tinyseq.h"

#include "train/options.h"
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// ---- the options: one row of the table per name ------------------------------

// The row a name gives: its flag ("max-len", or "max_len" as Python spells
// it), else its config.txt key ("attention"); NULL if neither.
static const ts_train_option *row_named(const char *name) {
    char flag[64];
    size_t n = strlen(name);
    if (n >= sizeof flag) return NULL;
    for (size_t i = 0; i <= n; i++) flag[i] = name[i] == '_' ? '-' : name[i];
    const ts_train_option *r = ts_train_option_by_flag(flag);
    return r ? r : ts_train_option_by_key(name);
}

// Two rows in a row with one flag take "N|FILE" (--dev): a whole number is
// the first row's, anything else the second's.
static int count_or_text(const ts_train_option *r) {
    return r->flag && r + 1 < ts_train_options + ts_train_options_count && r[1].flag && !strcmp(r[1].flag, r->flag);
}

// Sets row r of o from text as its flag would; TS_ERR_ARG naming it otherwise.
static int set_option(ts_train_opts *o, const ts_train_option *r, const char *name, const char *text) {
    void *field = ts_train_option_field(o, r);
    char *end;
    errno = 0;
    switch (r->kind) {
    case TS_OPTION_INT: {
        long v = strtol(text, &end, 10);
        if (end == text || *end || errno) {
            if (count_or_text(r)) {  // --dev FILE
                *(const char **)ts_train_option_field(o, r + 1) = text;
                ts_train_option_set_whole(o, r, 0);
                return TS_OK;
            }
            return ts_fail(TS_ERR_ARG, "%s expects a whole number, got '%s'", name, text);
        }
        if (v < r->lo || v > r->hi)
            return ts_fail(TS_ERR_ARG, "%s is %ld, outside %.0f..%.0f", name, v, r->lo, r->hi);
        ts_train_option_set_whole(o, r, v);
        if (count_or_text(r)) *(const char **)ts_train_option_field(o, r + 1) = NULL;
        return TS_OK;
    }
    case TS_OPTION_REAL: {
        double v = strtod(text, &end);
        if (end == text || *end || !isfinite(v))
            return ts_fail(TS_ERR_ARG, "%s expects a number, got '%s'", name, text);
        if (v < r->lo || v > r->hi) return ts_fail(TS_ERR_ARG, "%s is %g, outside %g..%g", name, v, r->lo, r->hi);
        *(double *)field = v;
        return TS_OK;
    }
    case TS_OPTION_TEXT: *(const char **)field = text; return TS_OK;
    case TS_OPTION_SWITCH:
        if (strcmp(text, "0") && strcmp(text, "1")) return ts_fail(TS_ERR_ARG, "%s is 0 or 1, got '%s'", name, text);
        *(int *)field = text[0] == '1';
        return TS_OK;
    case TS_OPTION_CHOICE: {
        int rc = r->parse(o, text);
        return rc ? ts_fail(rc, "%s: %s", name, ts_last_error()) : TS_OK;
    }
    }
    return ts_fail(TS_ERR_ARG, "%s: an option of unknown kind", name);
}

// ---- the printed lines, to the caller's callback ------------------------------

typedef struct {
    tinyseq_line_fn on_line;
    void *user;
    int err;
    char line[4096];  // the line so far; a longer one is passed on in pieces
    size_t len;
} line_sink;

static void sink_flush(line_sink *s) {
    s->line[s->len] = '\0';
    if (s->on_line) s->on_line(s->line, s->err, s->user);
    s->len = 0;
}

// A live progress bar redraws with '\r': each redraw counts as a line.
static ssize_t sink_write(void *cookie, const char *buf, size_t size) {
    line_sink *s = cookie;
    for (size_t i = 0; i < size; i++) {
        if (buf[i] == '\n' || buf[i] == '\r') {
            if (s->len || buf[i] == '\n') sink_flush(s);
        } else {
            s->line[s->len++] = buf[i];
            if (s->len == sizeof s->line - 1) sink_flush(s);
        }
    }
    return (ssize_t)size;
}

static int sink_close(void *cookie) {
    line_sink *s = cookie;
    if (s->len) sink_flush(s);
    return 0;
}

static FILE *sink_open(line_sink *s) {
    cookie_io_functions_t io = {.write = sink_write, .close = sink_close};
    FILE *f = fopencookie(s, "w", io);
    if (f) setvbuf(f, NULL, _IOLBF, 0);
    return f;
}

// ---- Ctrl-C: stop at the next step and save, as the CLI does -------------------

static volatile sig_atomic_t stop_signal;

// The first signal asks the trainer to stop; a second one takes the
// signal's default action (the process ends), as in `tinyseq train`.
static void on_stop_signal(int sig) {
    if (!stop_signal) {
        stop_signal = sig;
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

int tinyseq_train(const char *const *keys, const char *const *values, int n, tinyseq_line_fn on_line, void *user,
                  int *stopped, long *steps) {
    if (stopped) *stopped = 0;
    if (steps) *steps = 0;
    ts_train_opts o = ts_train_defaults();
    char default_out[64];
    time_t now = time(NULL);
    struct tm tm;
    strftime(default_out, sizeof default_out, "runs/%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    o.out_dir = default_out;
    int decoder_given = 0;
    for (int i = 0; i < n; i++) {
        if (!keys[i] || !values[i]) return ts_fail(TS_ERR_ARG, "option %d has no name or no value", i);
        const ts_train_option *r = row_named(keys[i]);
        if (!r) return ts_fail(TS_ERR_ARG, "unknown option '%s' (the options are train's flags, docs/python.md)", keys[i]);
        int rc = set_option(&o, r, keys[i], values[i]);
        if (rc) return rc;
        decoder_given |= !strcmp(r->flag ? r->flag : "", "decoder");
    }
    // As `tinyseq train`: attention bahdanau goes with its decoder, the others with Luong's.
    if (!decoder_given) o.model.decoder = o.model.attn == TS_ATTN_BAHDANAU ? TS_DECODER_BAHDANAU : TS_DECODER_LUONG;

    line_sink out_sink = {on_line, user, 0, {0}, 0}, log_sink = {on_line, user, 1, {0}, 0};
    o.out = sink_open(&out_sink);
    o.log = sink_open(&log_sink);
    if (!o.out || !o.log) {
        if (o.out) fclose(o.out);
        if (o.log) fclose(o.log);
        return ts_fail(TS_ERR_NOMEM, "cannot open the output streams");
    }
    // Our handler for the run's length, the caller's back afterwards.
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    o.stop = &stop_signal;
    ts_train_report report;
    int rc = ts_train(&o, &report);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    fclose(o.out);
    fclose(o.log);
    if (rc) return rc;
    if (steps) *steps = report.steps;
    if (report.stopped) {
        if (stopped) *stopped = report.stopped;
        return TINYSEQ_STOPPED;
    }
    return TINYSEQ_OK;
}
