// libFuzzer harness for what `tinyseq report` reads from a run directory
// (issue 38: attention.jsonl lines went into the page's script unparsed, and
// bytes after a NUL went unread).
//
// An input is the four files at once: three u16 (little-endian) give the
// lengths of metrics.csv, steps.csv and heads.csv (cut to what the input
// holds), and attention.jsonl is what follows. Each part is NUL-terminated
// after its bytes, as tinyseq report reads a file. Beyond "no crash, no
// leak, no sanitizer report":
//   - a failure is TS_ERR_FORMAT or TS_ERR_NOMEM, with a message;
//   - a page written holds exactly the page's own two "</script" and no
//     "<!--" (nothing from the files can close the script or hide it);
//   - every attention.jsonl line of a page written reads back through
//     viz/json.h to the very bytes the page holds (the copy is a fixed point);
//   - heads.csv reaches the page as numbers and nulls only.
#include "tensor/status.h"
#include "viz/json.h"
#include "viz/report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *part(const uint8_t *data, size_t n) {
    char *p = malloc(n + 1);
    if (n) memcpy(p, data, n);
    p[n] = '\0';
    return p;
}

static size_t count(const char *text, size_t n, const char *what) {
    size_t hits = 0, w = strlen(what);
    for (size_t i = 0; i + w <= n; i++) hits += !memcmp(text + i, what, w);
    return hits;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 6 || size > (1u << 20)) return 0;
    size_t rest = size - 6, metrics_len = (size_t)(data[0] | data[1] << 8), steps_len = (size_t)(data[2] | data[3] << 8),
           heads_len = (size_t)(data[4] | data[5] << 8);
    if (metrics_len > rest) metrics_len = rest;
    if (steps_len > rest - metrics_len) steps_len = rest - metrics_len;
    if (heads_len > rest - metrics_len - steps_len) heads_len = rest - metrics_len - steps_len;
    const uint8_t *at = data + 6;
    size_t jsonl_len = rest - metrics_len - steps_len - heads_len;
    char *metrics = part(at, metrics_len), *steps = part(at + metrics_len, steps_len),
         *heads = part(at + metrics_len + steps_len, heads_len),
         *jsonl = part(at + metrics_len + steps_len + heads_len, jsonl_len);
    ts_report_input in = {.title = "fuzz", .metrics_csv = metrics, .metrics_len = metrics_len,
                          .metrics_name = "metrics.csv", .steps_csv = steps, .steps_len = steps_len,
                          .steps_name = "steps.csv", .heads_csv = heads, .heads_len = heads_len,
                          .heads_name = "heads.csv", .epochs_jsonl = jsonl, .epochs_len = jsonl_len,
                          .epochs_name = "attention.jsonl"};
    char *page = NULL;
    size_t page_len = 0;
    FILE *f = open_memstream(&page, &page_len);
    int rc = ts_report_write_html_to(f, &in);
    fclose(f);
    if (rc != TS_OK) {
        if ((rc != TS_ERR_FORMAT && rc != TS_ERR_NOMEM) || ts_last_error()[0] == '\0' || page_len != 0) __builtin_trap();
    } else {
        if (count(page, page_len, "</script") != 2 || count(page, page_len, "<!--") != 0) __builtin_trap();
        const char *rows = strstr(page, "const HEADS={\"rows\":[");
        if (!rows) __builtin_trap();
        for (const char *p = rows + 21; *p != ';'; p++)  // numbers, nulls, brackets and commas up to "]}"
            if (!*p || !strchr("0123456789.-+e[],null}]", *p)) __builtin_trap();
        const char *start = strstr(page, "const EPOCHS=[\n"), *end = strstr(page, "\n];\n</script>");
        if (!start || !end) __builtin_trap();
        for (const char *p = start + 15; p < end;) {
            const char *eol = memchr(p, '\n', (size_t)(end - p));
            size_t n = (eol ? (size_t)(eol - p) : (size_t)(end - p)) - (eol ? 1 : 0);  // without its ','
            char *again = NULL;
            size_t again_len = 0;
            FILE *g = open_memstream(&again, &again_len);
            if (ts_json_copy_object(g, p, n) != TS_OK) __builtin_trap();
            fclose(g);
            if (again_len != n || memcmp(again, p, n)) __builtin_trap();
            free(again);
            p = eol ? eol + 1 : end;
        }
    }
    free(page);
    free(metrics);
    free(steps);
    free(heads);
    free(jsonl);
    return 0;
}
