// tinyseq report: a run directory as one self-contained HTML page. A
// structural check always runs; headless Chromium, when installed, renders
// the page and its script must draw the attention explorer without errors.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char *dir, run[1024];

static void setup(void) {
    dir = test_tmpdir();
    snprintf(run, sizeof run, "%s/run", dir);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s train --toy-pairs 400 --emb 8 --hidden 8 --epochs 2 --show 0 --out %s", TS_PROGRAM, run);
    cr_assert_eq(test_run(cmd, NULL), 0, "training the run failed");
}
static void teardown(void) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(dir);
}
TestSuite(cli_report, .init = setup, .fini = teardown);

static int report(char **out, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s report %s", TS_PROGRAM, args);
    return test_run(cmd, out);
}

static size_t count(const char *text, const char *what) {
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++) n++;
    return n;
}

Test(cli_report, the_page_holds_the_run_and_fetches_nothing) {
    char *out, path[1200];
    int rc = report(&out, run);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "2 epochs of attention, with metrics"), "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/report.html", run);
    char *html = test_read_file(path, NULL);
    cr_assert(strstr(html, "const METRICS={\"columns\":[\"epoch\",\"step\",\"train_loss\",\"dev_loss\""), "metrics");
    cr_assert_eq(count(html, "{\"epoch\":"), 2, "one attention.jsonl line per epoch");
    cr_assert_eq(count(html, "\"sentences\":["), 2);
    cr_assert(strstr(html, "\"greedy\":{\"output\":") && strstr(html, "\"beam\":{\"output\":"));
    // Self-contained: no external scripts, styles, images or fetches.
    const char *fetches[] = {"src=", "href=", "<link", "@import", "url(", "fetch(", "XMLHttpRequest", "<iframe"};
    for (size_t i = 0; i < sizeof fetches / sizeof fetches[0]; i++)
        cr_assert_null(strstr(html, fetches[i]), "the page fetches something: %s", fetches[i]);
    cr_assert_eq(count(html, "<script>"), count(html, "</script>"));
    cr_assert_eq(count(html, "</script>"), 2, "no '</script>' inside the data");
    free(html);
}

// Renders run_dir/report.html in headless Chromium and returns the DOM its
// script left (malloc'd); fails the test on a script error. Skips the test
// when Chromium is not installed.
static char *render_report(const char *run_dir) {
    if (access("/usr/bin/chromium", X_OK) != 0) {
        cr_log_warn("skipped: /usr/bin/chromium is not installed (scripts/setup.sh installs it)");
        cr_skip_test("/usr/bin/chromium is not installed");
    }
    char *out, cmd[8192];
    cr_assert_eq(report(&out, run_dir), 0, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=%s/chromium "
             "--enable-logging=stderr --v=0 --dump-dom file://%s/report.html > %s/dom.html 2> %s/chromium.log",
             dir, run_dir, dir, dir);
    cr_assert_eq(test_run(cmd, NULL), 0, "chromium failed: see %s/chromium.log", dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/chromium.log", dir);
    char *log = test_read_file(path, NULL);
    cr_assert_null(strstr(log, "Uncaught"), "script error:\n%s", log);
    free(log);
    snprintf(path, sizeof path, "%s/dom.html", dir);
    char *dom = test_read_file(path, NULL);
    cr_assert_not_null(strstr(dom, "data-rendered=\""), "the script did not finish drawing");
    return dom;
}

Test(cli_report, chromium_renders_the_explorer_without_script_errors, .timeout = 120) {
    char *dom = render_report(run);
    long cells = strtol(strstr(dom, "data-rendered=\"") + 15, NULL, 10);
    cr_assert_gt(cells, 10, "only %ld heatmap cells drawn", cells);
    cr_assert(strstr(dom, "<polyline"), "no loss curve drawn");
    free(dom);
}

// A model without attention records no weights (not rows of zeros, which
// docs/runs.md's "each row sums to 1" forbids), and the page says so
// instead of drawing a solid block.
Test(cli_report, a_model_without_attention_has_no_weights_and_says_so, .timeout = 180) {
    char none[1200], path[1300];
    snprintf(none, sizeof none, "%s/none", dir);
    cr_assert_eq(test_runf(NULL, "%s train --toy-pairs 400 --emb 8 --hidden 8 --epochs 1 --show 0 --attn none --out %s",
                           TS_PROGRAM, none), 0);
    snprintf(path, sizeof path, "%s/attention.jsonl", none);
    char *text = test_read_file(path, NULL);
    cr_assert_gt(count(text, "\"weights\":[]"), 0, "%s", text);
    cr_assert_eq(count(text, "\"weights\":[]"), count(text, "\"weights\":"), "a none model wrote weights");
    free(text);
    char *dom = render_report(none);
    cr_assert_eq(strtol(strstr(dom, "data-rendered=\"") + 15, NULL, 10), 0, "heatmap cells drawn for a none model");
    cr_assert(strstr(dom, "this model has no attention"), "no message saying the model has no attention");
    free(dom);
}

Test(cli_report, bad_runs_and_files_are_refused_by_name) {
    char *out, args[4096], path[1200];
    cr_assert_eq(report(&out, ""), 2, "%s", out);
    cr_assert(strstr(out, "RUN_DIR is required"), "%s", out);
    free(out);
    snprintf(args, sizeof args, "%s/nothing", dir);
    cr_assert_eq(report(&out, args), 1, "%s", out);
    cr_assert(strstr(out, "is not a tinyseq run directory"), "%s", out);
    free(out);
    snprintf(args, sizeof args, "%s -o %s/run/config.txt", run, dir);
    cr_assert_eq(report(&out, args), 1, "%s", out);
    cr_assert(strstr(out, "exists; pass --force"), "%s", out);
    free(out);
    // A line that would close the page's script is refused, naming file:line.
    snprintf(path, sizeof path, "%s/attention.jsonl", run);
    FILE *f = fopen(path, "a");
    fputs("{\"epoch\":3,\"x\":\"</script><script>alert(1)</script>\"}\n", f);
    fclose(f);
    cr_assert_eq(report(&out, run), 1, "%s", out);
    cr_assert(strstr(out, "attention.jsonl:3: not a line tinyseq train writes"), "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/metrics.csv", run);
    f = fopen(path, "a");
    fputs("3,9,abc,1,1,1,1,1,1,1,1\n", f);
    fclose(f);
    cr_assert_eq(report(&out, run), 1, "%s", out);
    cr_assert(strstr(out, "metrics.csv:4: field 3 is not a number"), "%s", out);
    free(out);
}

// A continued run drops the epochs after its checkpoint from attention.jsonl too.
Test(cli_report, a_continued_run_keeps_the_attention_of_its_own_epochs) {
    char cmd[16384], path[1200];
    snprintf(cmd, sizeof cmd, "cp %s/last.ckpt %s/two.ckpt && %s train --toy-pairs 400 --emb 8 --hidden 8 --epochs 3 "
                              "--show 0 --resume %s/last.ckpt --out %s && %s train --toy-pairs 400 --emb 8 --hidden 8 "
                              "--epochs 3 --show 0 --resume %s/two.ckpt --out %s",
             run, run, TS_PROGRAM, run, run, TS_PROGRAM, run, run);
    cr_assert_eq(test_run(cmd, NULL), 0);
    snprintf(path, sizeof path, "%s/attention.jsonl", run);
    char *text = test_read_file(path, NULL);
    cr_assert_eq(count(text, "{\"epoch\":"), 3, "%zu lines", count(text, "{\"epoch\":"));
    cr_assert(strstr(text, "{\"epoch\":1,") && strstr(text, "{\"epoch\":2,") && strstr(text, "{\"epoch\":3,"));
    free(text);
}
