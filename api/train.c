// tinyseq_train (api/tinyseq.h): the trainer with options given as flag
// names and text values, read through the options table (train/options.h)
// as `tinyseq train` reads its flags, the printed lines handed to a callback,
// and Ctrl-C stopping the run as the CLI's does.
#define _GNU_SOURCE  // fopencookie: the trainer's streams call the caller back, line by line
#include "api/tinyseq.h"

#include "api/json.h"
#include "viz/render.h"  // ts_render_json_string

#include "train/options.h"
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return tinyseq_train_dir(keys, values, n, on_line, user, stopped, steps, NULL);
}

int tinyseq_train_dir(const char *const *keys, const char *const *values, int n, tinyseq_line_fn on_line, void *user,
                      int *stopped, long *steps, char **out_dir) {
    if (stopped) *stopped = 0;
    if (out_dir) *out_dir = NULL;
    if (steps) *steps = 0;
    ts_train_opts o = ts_train_defaults();
    char default_out[TS_RUN_NAME_SIZE];
    int given[TS_TRAIN_OPTIONS_MAX] = {0};
    for (int i = 0; i < n; i++) {
        if (!keys[i] || !values[i]) return ts_fail(TS_ERR_ARG, "option %d has no name or no value", i);
        const ts_train_option *r = ts_train_option_by_name(keys[i]);
        if (!r) return ts_fail(TS_ERR_ARG, "unknown option '%s' (the options are train's flags, docs/python.md)", keys[i]);
        int rc = ts_train_option_set(&o, r, keys[i], values[i]);
        if (rc) return rc;
        given[r - ts_train_options] = 1;
    }
    int rc = ts_train_options_finish(&o, given, default_out);
    if (!rc) rc = ts_train_options_refuse(&o, given);
    if (rc) return rc;
    if (out_dir && !(*out_dir = strdup(o.out_dir))) return ts_fail(TS_ERR_NOMEM, "out of memory");
    char misplaced[256] = "";  // a warning, printed once the streams are open
    if (ts_train_options_check_arch(&o, given)) snprintf(misplaced, sizeof misplaced, "%s", ts_last_error());

    line_sink out_sink = {on_line, user, 0, {0}, 0}, log_sink = {on_line, user, 1, {0}, 0};
    o.out = sink_open(&out_sink);
    o.log = sink_open(&log_sink);
    if (!o.out || !o.log) {
        if (o.out) fclose(o.out);
        if (o.log) fclose(o.log);
        return ts_fail(TS_ERR_NOMEM, "cannot open the output streams");
    }
    if (*misplaced) fprintf(o.log, "tinyseq train: warning: %s\n", misplaced);
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
    rc = ts_train(&o, &report);
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

// A help text with the default (and a choice's names) filled in, its lines joined by spaces.
static void json_help(FILE *f, const ts_train_option *r, const ts_train_opts *defaults) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        ts_render_json_string(f, "");
        return;
    }
    ts_train_option_help(m, r, defaults, " ");
    fclose(m);
    ts_render_json_string(f, text ? text : "");
    free(text);
}

int tinyseq_train_options(char **json) {
    if (!json) return ts_fail(TS_ERR_ARG, "tinyseq_train_options: NULL argument");
    *json = NULL;
    api_text t;
    int rc = api_text_open(&t);
    if (rc) return rc;
    ts_train_opts defaults = ts_train_defaults();
    char name[64], number[32];
    fputs("{\"options\": [", t.f);
    int n = 0;
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->set->flag || !r->set->help) continue;
        snprintf(name, sizeof name, "%s", r->set->flag);
        for (char *c = name; *c; c++) *c = *c == '-' ? '_' : *c;
        fprintf(t.f, "%s\n {\"name\": ", n++ ? "," : "");
        ts_render_json_string(t.f, name);
        fputs(", \"flag\": ", t.f);
        ts_render_json_string(t.f, r->set->flag);
        fputs(", \"key\": ", t.f);
        ts_render_json_string(t.f, r->set->key ? r->set->key : "");
        fputs(", \"meta\": ", t.f);
        ts_render_json_string(t.f, r->set->meta ? r->set->meta : "");
        fputs(", \"default\": ", t.f);
        ts_render_json_string(t.f, ts_train_option_format(&defaults, r, number));
        fputs(", \"help\": ", t.f);
        json_help(t.f, r, &defaults);
        fputc('}', t.f);
    }
    fputs("],\n\"presets\": [", t.f);
    for (size_t i = 1; i < ts_train_presets_count; i++) {
        const ts_train_preset *p = &ts_train_presets[i];
        fputs(i > 1 ? ",\n {\"name\": " : "\n {\"name\": ", t.f);
        ts_render_json_string(t.f, p->name);
        fputs(", \"help\": ", t.f);
        ts_render_json_string(t.f, p->help);
        fputs(", \"flags\": ", t.f);
        ts_render_json_string(t.f, p->flags);
        fputc('}', t.f);
    }
    fputs("]}\n", t.f);
    return api_text_close(&t, TS_OK, json);
}
