// libFuzzer harness for what a continued run reads back of its run log
// (train --resume into the checkpoint's own --out, train/runlog.c): the
// clock it goes on from (ts_runlog_elapsed: steps.csv and metrics.csv), the
// loss curve drawn from steps.csv and metrics.csv (ts_runlog_write_loss),
// and the lines kept of metrics.csv, steps.csv, heads.csv and
// attention.jsonl up to the checkpoint's step (ts_runlog_trim).
//
// An input is: one byte, the checkpoint's epoch; two bytes, its step; three
// pairs of bytes, the lengths of metrics.csv, steps.csv and heads.csv (all
// little-endian, each cut to what the input holds); the three files;
// attention.jsonl (the rest). Beyond "no crash, no leak, no sanitizer report":
//   - the clock is finite and not negative; loss.svg is written, one <svg>
//     element with no script, no NaN or infinity in it;
//   - a failure is TS_ERR_FORMAT (a NUL byte) or TS_ERR_NOMEM, with a message;
//   - each file keeps a subsequence of its lines; a CSV line kept is the
//     header or a row whose step field is a number in [0, step]; a row whose
//     step field is a number past the step is dropped;
//   - a second trim changes nothing (what is kept is kept).
#include "fuzz_dir.h"
#include "tensor/status.h"
#include "train/runlog.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { METRICS, STEPS, HEADS, JSONL, FILES };
static const char *const names[FILES] = {"metrics.csv", "steps.csv", "heads.csv", "attention.jsonl"};
static const int step_field[FILES] = {1, 0, 1, -1};  // the CSV field runlog.c reads a row's step from

// dir/name's bytes (malloc'd, NUL-terminated) and their count; NULL when absent.
static char *slurp(const char *dir, const char *name, size_t *n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *bytes = NULL;
    size_t cap = 0;
    *n = 0;
    for (int c; (c = getc(f)) != EOF;) {
        if (*n + 2 > cap) bytes = realloc(bytes, cap = 2 * cap + 256);
        bytes[(*n)++] = (char)c;
    }
    fclose(f);
    if (!bytes) bytes = malloc(1);
    bytes[*n] = '\0';
    return bytes;
}

// The next line of text[*at..n) (its '\n' included) as [*start, *start + *len); 0 at the end.
static int next_line(const char *text, size_t n, size_t *at, size_t *start, size_t *len) {
    if (*at >= n) return 0;
    const char *eol = memchr(text + *at, '\n', n - *at);
    *start = *at;
    *len = eol ? (size_t)(eol - (text + *at)) + 1 : n - *at;
    *at += *len;
    return 1;
}

// Field `field` of a CSV line as a number: 1 and *v when it is one (the
// whole field, as runlog.c reads it: strtod up to ',' or the line's end).
static int step_of(const char *line, size_t len, int field, double *v) {
    char copy[128];
    size_t at = 0;
    for (int k = 0; k < field; k++) {
        const char *comma = memchr(line + at, ',', len - at);
        if (!comma) return 0;
        at = (size_t)(comma - line) + 1;
    }
    size_t end = at;
    while (end < len && line[end] != ',' && line[end] != '\n') end++;
    if (end == at || end - at >= sizeof copy) return 0;
    memcpy(copy, line + at, end - at);
    copy[end - at] = '\0';
    char *stop;
    *v = strtod(copy, &stop);
    return *stop == '\0';
}

// kept is a subsequence of the lines of was; CSV lines kept are the header
// or rows up to `step`, and rows past it are gone.
static void check_kept(int file, const char *was, size_t was_n, const char *kept, size_t kept_n, long step) {
    size_t at = 0, k_at = 0, start, len, k_start, k_len;
    int have = next_line(kept, kept_n, &k_at, &k_start, &k_len);
    for (int first = 1; next_line(was, was_n, &at, &start, &len); first = 0) {
        int same = have && k_len == len && !memcmp(kept + k_start, was + start, len);
        double v;
        int number = step_field[file] >= 0 && step_of(was + start, len, step_field[file], &v);
        int header = step_field[file] >= 0 && first && was[start] >= 'a' && was[start] <= 'z';
        if (same && step_field[file] >= 0 && !header && !(number && v >= 0 && v <= (double)step)) __builtin_trap();
        if (!same && header) __builtin_trap();
        if (!same && number && v >= 0 && v <= (double)step && step_field[file] >= 0 && was[start] >= '0' &&
            was[start] <= '9' && len > 1 && was[start + len - 1] == '\n')
            __builtin_trap();  // a plain row up to the step, dropped
        if (same) have = next_line(kept, kept_n, &k_at, &k_start, &k_len);
    }
    if (have) __builtin_trap();  // a line kept that was not there, or out of order
}

// loss.svg: one svg element, no script, only finite numbers.
static void check_svg(const char *dir) {
    size_t n;
    char *svg = slurp(dir, "loss.svg", &n);
    if (!svg || strlen(svg) != n) __builtin_trap();
    const char *open = strstr(svg, "<svg"), *close = strstr(svg, "</svg>");
    if (!open || !close || strstr(open + 1, "<svg") || strstr(svg, "<script") || strstr(svg, "nan") ||
        strstr(svg, "inf") || strstr(svg, "NaN") || strstr(svg, "Inf"))
        __builtin_trap();
    free(svg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 9 || size > (1u << 16)) return 0;
    long epoch = data[0], step = (long)(data[1] | data[2] << 8);
    size_t rest = size - 9, lengths[FILES];
    for (int i = 0; i < HEADS + 1; i++) {
        lengths[i] = (size_t)(data[3 + 2 * i] | data[4 + 2 * i] << 8);
        if (lengths[i] > rest) lengths[i] = rest;
        rest -= lengths[i];
    }
    lengths[JSONL] = rest;
    const char *dir = fuzz_dir();
    const uint8_t *at = data + 9;
    char path[4096];
    for (int i = 0; i < FILES; i++) {
        fuzz_write(dir, names[i], at, lengths[i], path);
        at += lengths[i];
    }

    double seconds = -1;
    if (ts_runlog_elapsed(dir, &seconds) != TS_OK || !isfinite(seconds) || seconds < 0) __builtin_trap();
    int rc = ts_runlog_write_loss(dir);
    if (rc == TS_OK) check_svg(dir);
    else if (rc != TS_ERR_NOMEM || ts_last_error()[0] == '\0') __builtin_trap();

    rc = ts_runlog_trim(dir, epoch, step);
    if (rc != TS_OK) {
        int nul = 0;
        for (size_t i = 0; i < size - 9; i++) nul |= data[9 + i] == '\0';
        if (!((rc == TS_ERR_FORMAT && nul) || rc == TS_ERR_NOMEM) || ts_last_error()[0] == '\0') __builtin_trap();
        return 0;
    }
    char *kept[FILES];
    size_t kept_n[FILES];
    at = data + 9;
    for (int i = 0; i < FILES; i++) {
        kept[i] = slurp(dir, names[i], &kept_n[i]);
        if (!kept[i]) __builtin_trap();
        check_kept(i, (const char *)at, lengths[i], kept[i], kept_n[i], step);
        at += lengths[i];
    }
    if (ts_runlog_trim(dir, epoch, step) != TS_OK) __builtin_trap();
    for (int i = 0; i < FILES; i++) {
        size_t n;
        char *again = slurp(dir, names[i], &n);
        if (!again || n != kept_n[i] || memcmp(again, kept[i], n)) __builtin_trap();
        free(again);
        free(kept[i]);
    }
    return 0;
}
