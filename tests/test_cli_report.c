// tinyseq report: a run directory as one self-contained HTML page. A
// structural check always runs; headless Chromium, when installed, renders
// the page and its script must draw the attention explorer without errors.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/subword.h"
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

// The whole of run_dir/name (malloc'd); fails the test when it is missing.
static char *run_file(const char *run_dir, const char *name) {
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", run_dir, name);
    cr_assert_eq(access(path, R_OK), 0, "%s was not written", path);
    return test_read_file(path, NULL);
}

// Fails unless the step column (`field`) of run_dir/name's rows reads `want`
// ("2 4 6"); returns the file's text (malloc'd).
static char *expect_rows_at(const char *run_dir, const char *name, int field, const char *want) {
    char *csv = run_file(run_dir, name), steps[512] = "";
    for (const char *line = strchr(csv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        const char *p = line + 1;
        for (int k = 0; k < field; k++) p = strchr(p, ',') + 1;
        size_t used = strlen(steps);
        snprintf(steps + used, sizeof steps - used, "%s%ld", used ? " " : "", strtol(p, NULL, 10));
    }
    cr_assert_str_eq(steps, want, "%s rows at steps %s, not %s", name, steps, want);
    return csv;
}

Test(cli_report, the_page_holds_the_run_and_fetches_nothing) {
    char *out, path[1200];
    int rc = report(&out, run);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "2 evaluations with attention, with metrics"), "%s", out);
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
        for (const char *at = html; (at = strstr(at, fetches[i])); at++)  // url(#id): a gradient of the page's own SVG
            cr_assert(!strncmp(at, "url(#", 5), "the page fetches something: %.40s", at);
    cr_assert_eq(count(html, "<script>"), count(html, "</script>"));
    cr_assert_eq(count(html, "</script>"), 2, "no '</script>' inside the data");
    free(html);
}

// Renders run_dir/report.html in headless Chromium and returns the DOM its
// script left (malloc'd); fails the test on a script error. Skips the test
// when Chromium is not installed.
static char *render_page(const char *run_dir);

static char *render_report(const char *run_dir) {
    if (access("/usr/bin/chromium", X_OK) != 0) {
        cr_log_warn("skipped: /usr/bin/chromium is not installed (scripts/setup.sh installs it)");
        cr_skip_test("/usr/bin/chromium is not installed");
    }
    char *out, args[4096];
    snprintf(args, sizeof args, "%s --force", run_dir);  // the page may be there already
    cr_assert_eq(report(&out, args), 0, "%s", out);
    free(out);
    return render_page(run_dir);
}

// The DOM of run_dir/report.html as it stands, rendered as render_report does.
static char *render_page(const char *run_dir) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --window-size=1400,1000 "
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

// The learning-rate chart's axis label (rotated, its right edge about 20 px
// from the left) stays clear of its tick labels ("0.0030" ends at x, 10 px
// text about 6 px a character), however long they are (issue 47 point 7).
Test(cli_report, axis_labels_stay_clear_of_the_tick_labels, .timeout = 120) {
    char *dom = render_report(run), *chart = strstr(dom, ">learning rate</text>");
    cr_assert(chart, "no learning-rate chart");
    char *end = strstr(chart, "</svg>");
    cr_assert(end);
    *end = '\0';
    int ticks = 0;
    for (char *p = chart; (p = strstr(p, "<text x=\"")); p++) {
        double x = strtod(p + 9, NULL);
        char *tag_end = strchr(p, '>'), *close = tag_end ? strstr(tag_end, "</text>") : NULL;
        if (!close || !strstr(p, "text-anchor=\"end\"") || strstr(p, "text-anchor=\"end\"") > tag_end) continue;
        int chars = (int)(close - tag_end - 1);
        cr_assert_gt(x - 6.0 * chars, 22.0, "tick label '%.*s' ends at x %.0f: under the axis label", chars, tag_end + 1, x);
        ticks++;
    }
    cr_assert_geq(ticks, 3, "%d tick labels", ticks);
    free(dom);
}

// "Attention beside attributions" draws a short sentence at its own size:
// the page never scales the figures up (they were twice their size), only
// down to fit (issue 47 point 7).
Test(cli_report, a_short_sentence_beside_its_attributions_keeps_its_size, .timeout = 120) {
    char path[1300], *out;
    snprintf(path, sizeof path, "%s/dev-pairs.tsv", run);
    cr_assert_eq(test_runf(&out, "sed -i '1s/.*/he sleeps .\til dort ./' '%s'", path), 0, "%s", out);
    free(out);
    char *dom = render_report(run), *scale = strstr(dom, "data-beside-scale=\"");
    cr_assert(scale && strstr(dom, "<h2>Attention beside attributions</h2>"), "no attention beside attributions");
    double k = strtod(scale + 19, NULL);
    cr_assert(k > 0.9 && k <= 1.0, "the figures are drawn at %.2f times their size", k);
    free(dom);
}

// A run shorter than an epoch (45 batches here) ends with its training rows
// every --log-every steps (default: about 20 an epoch, 2 here), its final
// evaluation's metrics row, attention figure and attention.jsonl line, a
// loss.svg with the curve and the dev point, and a report that draws them;
// --eval-every adds evaluations inside the epoch; a continued run keeps the
// rows up to its checkpoint's step (issue 22 item 2).
Test(cli_report, a_run_shorter_than_an_epoch_ends_with_its_rows_and_figures, .timeout = 180) {
    char short_run[1200], *svg;
    snprintf(short_run, sizeof short_run, "%s/short", dir);
    const char *flags = "--toy-pairs 400 --emb 8 --hidden 8 --batch 8 --show 0";
    cr_assert_eq(test_runf(NULL, "%s train %s --steps 10 --out %s", TS_PROGRAM, flags, short_run), 0);
    char *csv = expect_rows_at(short_run, "steps.csv", 0, "2 4 6 8 10");
    cr_assert(!strncmp(csv, "step,epoch,train_loss,", 22), "%s", csv);
    free(csv);
    csv = expect_rows_at(short_run, "metrics.csv", 1, "10");
    cr_assert(strstr(csv, "\n0.222,10,"), "epoch 10/45 of the first: %s", csv);
    free(csv);
    char *jsonl = run_file(short_run, "attention.jsonl");
    cr_assert(!strncmp(jsonl, "{\"epoch\":0.222,\"step\":10,", 25), "%.60s", jsonl);
    free(jsonl);
    // The figure shows the reference, so a wrong output looks wrong (item 9).
    char *tsv = run_file(short_run, "dev-pairs.tsv"), caption[512];
    snprintf(caption, sizeof caption, " reference: %.*s", (int)strcspn(strchr(tsv, '\t') + 1, "\n'&<>\""),
             strchr(tsv, '\t') + 1);  // up to a character XML escapes
    svg = run_file(short_run, "attention-step-10.svg");
    char *text = test_svg_text(svg);  // the caption wraps to the heatmap
    cr_assert(strstr(text, caption), "no '%s' in the figure", caption);
    free(text);
    free(svg);
    free(tsv);
    svg = run_file(short_run, "loss.svg");
    cr_assert(strstr(svg, "<polyline fill=\"none\" stroke=\"#1f77b4\""), "no training curve in loss.svg");
    cr_assert(strstr(svg, "<circle"), "no dev point in loss.svg");
    free(svg);
    char *dom = render_report(short_run);
    cr_assert_gt(strtol(strstr(dom, "data-rendered=\"") + 15, NULL, 10), 10, "no heatmap drawn");
    cr_assert_null(strstr(dom, ">no data yet<"), "a chart says 'no data yet'");
    // Item 8: greedy and beam side by side for a 17-word sentence in a 1400
    // px window, a colour scale, wrong output words marked (a 10-step model
    // gets most wrong), human legends, not CSV column names.
    cr_assert(strstr(dom, "data-side-by-side=\"true\""), "greedy and beam are stacked");
    cr_assert(strstr(dom, "class=\"scale\""), "no colour scale in the explorer");
    cr_assert(strstr(dom, "<span class=\"wrong\""), "no wrong output word marked");
    cr_assert(strstr(dom, ">training</text>") && strstr(dom, ">exact match</text>"), "legends");
    cr_assert_null(strstr(dom, ">train_loss</text>"), "a legend shows a CSV column name");
    free(dom);

    // --eval-every and --log-every, then a continued run.
    cr_assert_eq(test_runf(NULL, "%s train %s --steps 10 --eval-every 4 --log-every 3 --force --out %s", TS_PROGRAM, flags,
                           short_run), 0);
    free(expect_rows_at(short_run, "metrics.csv", 1, "4 8 10"));
    free(run_file(short_run, "attention-step-4.svg"));
    cr_assert_eq(test_runf(NULL, "cp %s/last.ckpt %s/ten.ckpt && %s train %s --steps 14 --eval-every 4 --log-every 3 "
                           "--resume %s/last.ckpt --out %s && %s train %s --steps 13 --eval-every 4 --log-every 3 "
                           "--resume %s/ten.ckpt --out %s",
                           short_run, short_run, TS_PROGRAM, flags, short_run, short_run, TS_PROGRAM, flags, short_run,
                           short_run), 0);
    free(expect_rows_at(short_run, "steps.csv", 0, "3 6 9 10 12 13"));
    free(expect_rows_at(short_run, "metrics.csv", 1, "4 8 10 12 13"));
    char path[1300];
    snprintf(path, sizeof path, "%s/attention-step-14.svg", short_run);
    cr_assert_neq(access(path, F_OK), 0, "the figure of step 14 outlived its run");
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
    cr_assert(strstr(dom, "muted\">no weights to show: this model has no attention"), "no message saying the model has no attention");
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
    // A checkpoint of the run names the run's directory (issue 47).
    snprintf(args, sizeof args, "%s/best.ckpt", run);
    cr_assert_eq(report(&out, args), 1, "%s", out);
    char want[4200];
    snprintf(want, sizeof want, "did you mean tinyseq report %s?", run);
    cr_assert(strstr(out, "is not a tinyseq run directory") && strstr(out, want), "%s", out);
    free(out);
    snprintf(args, sizeof args, "%s -o %s/run/config.txt", run, dir);
    cr_assert_eq(report(&out, args), 1, "%s", out);
    cr_assert(strstr(out, "exists; pass --force"), "%s", out);
    free(out);
    // A line that is not one JSON object is refused, naming file:line.
    snprintf(path, sizeof path, "%s/attention.jsonl", run);
    FILE *f = fopen(path, "a");
    fputs("{\"epoch\":3,\"x\":\"ok\"} {\"epoch\":4}\n", f);
    fclose(f);
    cr_assert_eq(report(&out, run), 1, "%s", out);
    cr_assert(strstr(out, "attention.jsonl:3: byte 22: bytes after the object"), "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/metrics.csv", run);
    f = fopen(path, "a");
    fputs("3,9,abc,1,1,1,1,1,1,1,1\n", f);
    fclose(f);
    cr_assert_eq(report(&out, run), 1, "%s", out);
    cr_assert(strstr(out, "metrics.csv:4: field 3 is not a number"), "%s", out);
    free(out);
}

// Hostile run directories (issue 38). Each line below, as line 3 of
// attention.jsonl, is refused naming the file and line, and the page the run
// had stays as it was: the issue's injection (an object, a call, an object:
// it starts with '{' and ends with '}', and ran in Chromium), two objects,
// NaN, a NUL with bytes after it, nesting too deep. A NUL in metrics.csv or
// steps.csv is refused alike.
Test(cli_report, hostile_lines_are_refused_by_file_and_line_and_the_page_stays) {
    static const char deep[] = "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
                               "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}";
    static const struct {
        const char *file, *line;
        size_t len;
        const char *says;
    } cases[] = {
        {"attention.jsonl", "{\"epoch\":1,\"step\":1,\"sentences\":[]},(function(){document.title=\"injected\"})(),"
                            "{\"epoch\":2,\"step\":2,\"sentences\":[]}", 0, "attention.jsonl:3: byte 36: bytes after the object"},
        {"attention.jsonl", "{\"epoch\":3}{\"epoch\":4}", 0, "attention.jsonl:3: byte 12: bytes after the object"},
        {"attention.jsonl", "{\"epoch\":3,\"bleu\":NaN}", 0, "attention.jsonl:3: byte 19: not a JSON value"},
        {"attention.jsonl", "{\"epoch\":3}\0{\"x\":\"</script>\"}", 30, "attention.jsonl:3: a NUL byte"},
        {"attention.jsonl", deep, 0, "attention.jsonl:3: byte 69: nested deeper than 64 levels"},
        {"metrics.csv", "3,9,1,1,1,1,1,1,1,1,1\0,,garbage", 32, "metrics.csv:4: a NUL byte"},
        {"steps.csv", "\0", 1, "steps.csv:"},
    };
    char *out, path[1300], saved[1300], page[1300], forced[1300];
    snprintf(page, sizeof page, "%s/report.html", run);
    snprintf(forced, sizeof forced, "%s --force", run);
    cr_assert_eq(report(&out, run), 0, "%s", out);
    free(out);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(path, sizeof path, "%s/%s", run, cases[i].file);
        snprintf(saved, sizeof saved, "%s/saved", dir);
        cr_assert_eq(test_runf(NULL, "cp '%s' '%s' && cp '%s' '%s/page'", path, saved, page, dir), 0);
        FILE *f = fopen(path, "a");
        fwrite(cases[i].line, 1, cases[i].len ? cases[i].len : strlen(cases[i].line), f);
        fputc('\n', f);
        fclose(f);
        int rc = report(&out, forced);
        cr_assert(rc == 1 && strstr(out, cases[i].says), "case %zu: exit %d, not saying '%s': %s", i, rc, cases[i].says, out);
        free(out);
        rc = test_runf(&out, "%s report %s -o - 2>/dev/null | wc -c", TS_PROGRAM, run);
        cr_assert(rc == 0 && atoi(out) == 0, "case %zu: %s bytes of a page on standard output", i, out);
        free(out);
        snprintf(saved, sizeof saved, "%s/page", dir);
        cr_assert(test_same_bytes(page, saved), "case %zu changed report.html", i);
        cr_assert_eq(test_runf(NULL, "mv '%s/saved' '%s'", dir, path), 0);
    }
}

// A line that is one JSON object holding text that would close the page's
// script is written from what was parsed: the text escaped, its script never
// run (Chromium renders the page, its title and body as tinyseq wrote them).
Test(cli_report, hostile_text_in_a_valid_line_reaches_the_page_only_escaped, .timeout = 120) {
    char path[1300];
    snprintf(path, sizeof path, "%s/attention.jsonl", run);
    FILE *f = fopen(path, "a");
    fputs("{\"epoch\":3, \"step\" : 9,\"x\":\"</script><script>document.title='injected'</script>\\u003c!--\","
          "\"sentences\":[],\"bleu_by_length\":[]}\n", f);
    fclose(f);
    char *out;
    cr_assert_eq(report(&out, run), 0, "%s", out);
    free(out);
    char *html = run_file(run, "report.html");
    cr_assert_eq(count(html, "</script>"), 2, "a '</script>' from the data reached the page");
    cr_assert_null(strstr(html, "<!--"));
    cr_assert(strstr(html, "{\"epoch\":3,\"step\":9,\"x\":\"\\u003c/script\\u003e\\u003cscript\\u003edocument.title='injected'"),
              "the line is not written back escaped and without its spaces");
    free(html);
    char *dom = render_report(run);
    cr_assert_null(strstr(dom, "injected</title>"), "the data's script ran");
    free(dom);
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

// A Transformer run records every head of its first few greedy outputs
// (attention.jsonl's "heads", docs/runs.md) and the page draws them: one
// matrix chosen by attention, layer and head, or every layer x head (issue
// 24 item 4). A GRU run's lines have no "heads".
Test(cli_report, a_transformer_run_records_every_head_and_the_page_draws_them, .timeout = 180) {
    char *gru = run_file(run, "attention.jsonl");
    cr_assert_null(strstr(gru, "\"heads\""), "a GRU run wrote heads");
    free(gru);
    char tr[1200];
    snprintf(tr, sizeof tr, "%s/transformer", dir);
    // --heads and --layers left to the row's defaults (2 and 2), which the page reads from the checkpoint.
    cr_assert_eq(test_runf(NULL, "%s train --arch transformer --d-model 8 --ff 16 --toy-pairs 400 "
                                 "--epochs 1 --show 0 --beam 1 --out %s", TS_PROGRAM, tr), 0);
    char *jsonl = run_file(tr, "attention.jsonl");
    cr_assert_eq(count(jsonl, "\"heads\":{\"layers\":2,\"heads\":2,\"cross\":"), 4, "the first 4 sentences have heads");
    free(jsonl);
    // Shapes, each layer's last entry the mean of its heads, the last layer's
    // cross mean the greedy weights (3 and 4 digits), the causal mask.
    char *out;
    int rc = test_runf(&out,
                       "/usr/bin/python3 -c 'import json,sys\n"
                       "line=json.loads(open(sys.argv[1]).readline())\n"
                       "for s in line[\"sentences\"][:4]:\n"
                       "  g,h=s[\"greedy\"],s[\"heads\"]; S,T=len(s[\"source\"]),len(g[\"output\"])+1\n"
                       "  side={\"cross\":(T,S),\"enc\":(S,S),\"dec\":(T,T)}\n"
                       "  for v,(R,C) in side.items():\n"
                       "    assert len(h[v])==2 and all(len(l)==3 for l in h[v]), v\n"
                       "    for l in h[v]:\n"
                       "      for m in l: assert len(m)==R and all(len(r)==C for r in m), v\n"
                       "      for i in range(R):\n"
                       "        for j in range(C):\n"
                       "          assert abs((l[0][i][j]+l[1][i][j])/2-l[2][i][j])<2e-3, (v,i,j)\n"
                       "          assert v!=\"dec\" or j<=i or l[0][i][j]==0, (i,j)\n"
                       "  assert all(abs(a-b)<2e-3 for r,q in zip(g[\"weights\"],h[\"cross\"][1][2]) for a,b in zip(r,q))\n"
                       "assert \"heads\" not in line[\"sentences\"][4]\n"
                       "print(\"ok\")' %s/attention.jsonl", tr);
    cr_assert_eq(rc, 0, "python3: %s", out);
    free(out);
    // What was trained is the checkpoint's model as its row describes it (the page once said 4 heads by its own default).
    cr_assert_eq(report(&out, tr), 0, "%s", out);
    free(out);
    char *html = run_file(tr, "report.html");
    cr_assert(strstr(html, "const MODEL=\"transformer, d_model 8, 2 heads, 2 layers per stack, feed-forward 16\";\n"
                          "const MODEL_HEADS=[2,2];"),
              "%.300s", strstr(html, "const MODEL=") ? strstr(html, "const MODEL=") : "no MODEL");
    free(html);
    char *dom = render_report(tr);
    cr_assert(strstr(dom, "<h3>Every head of the greedy output</h3>"), "no heads explorer");
    cr_assert(strstr(dom, "<select data-head=\"view\">") && strstr(dom, "<option value=\"dec\">decoder self-attention"),
              "no attention selector");
    // It opens on the grid of every layer x head, the words on its first row and column of panels, and a
    // caption that says what its rows and columns are.
    cr_assert(strstr(dom, "cross-attention: one row per layer, one column per head and their mean; rows: the output "
                          "words (and &lt;eos&gt;); columns: the source words"), "no grid caption");
    cr_assert_eq(count(dom, "<table class=\"heat\""), 2 + 2 * 3, "greedy, beam 5 and the 2 x 3 panels of the grid");
    cr_assert(strstr(dom, "<b>beam 5: </b>"), "the beam is the default search's");
    size_t grid_words = count(dom, "class=\"src\"");
    free(dom);
    // One layer's head mean, as the selector chooses it: the column words once.
    rc = test_runf(&out, "sed -i \"s/const headPick={view:'cross',layer:'all',head:'mean'}/const headPick={view:'cross',"
                         "layer:'1',head:'mean'}/\" %s/report.html && grep -q \"layer:'1'\" %s/report.html", tr, tr);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    dom = render_page(tr);
    cr_assert(strstr(dom, "cross-attention, layer 1, mean of 2 heads (what the search attends with"),
              "the last layer's cross mean when chosen");
    cr_assert_lt(count(dom, "class=\"src\""), grid_words, "the grid labels its panels with words");
    free(dom);
    // A sentence without heads says so.
    rc = test_runf(&out, "sed -i \"s/s=Number(pick.value)/s=4/\" %s/report.html && grep -q 's=4;' %s/report.html", tr, tr);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    dom = render_page(tr);
    cr_assert(strstr(dom, "No per-head view for sentence 5: the trainer records every head for the first 4 dev sentences"),
              "no note for a sentence without heads");
    free(dom);
    // The grid of the encoder's self-attention (as the selector does).
    rc = test_runf(&out,
                   "sed \"s/const headPick={view:'cross',layer:'1',head:'mean'}/const headPick={view:'enc',layer:'all',"
                   "head:'mean'}/;s/s=4;/s=0;/\" %s/report.html > %s/grid.html && grep -q \"layer:'all'\" %s/grid.html && "
                   "timeout 90 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=%s/chromium "
                   "--dump-dom file://%s/grid.html 2>/dev/null | grep -o '<table class=\"heat\"' | wc -l",
                   tr, tr, tr, dir, tr);
    cr_assert_eq(rc, 0, "%s", out);
    // greedy, beam 5 and the 2 x 3 panels of the grid
    cr_assert_eq(strtol(out, NULL, 10), 2 + 2 * 3, "heatmap tables drawn: %s", out);
    free(out);
}

// A guided run (issue 47 point 6): train's heads: line names the guided
// head, the page says what guided alignment trained (config.txt) and shows
// each evaluation's AER per head (heads.csv), the guided head marked in the
// table and drawn over the evaluations; eval --align's tables mark it too.
Test(cli_report, a_guided_run_names_its_head_in_the_page_the_heads_line_and_eval, .timeout = 300) {
    char guided[1200], *out;
    snprintf(guided, sizeof guided, "%s/guided", dir);
    int rc = test_runf(&out, "%s train --arch transformer --d-model 8 --heads 2 --layers 2 --ff 16 --toy-pairs 400 "
                             "--epochs 2 --show 0 --beam 1 --guided-alignment toy --out %s", TS_PROGRAM, guided);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "  heads: best-aligned layer 0 head 0 (guided), aer ") || strstr(out, "; guided layer 0 head 0, aer "),
              "the heads: line does not name the guided head:\n%s", out);
    free(out);
    cr_assert_eq(report(&out, guided), 0, "%s", out);
    free(out);
    char *html = run_file(guided, "report.html");
    // heads.csv's rows as numbers, a layer's mean as head -1.
    cr_assert(strstr(html, "const HEADS={\"rows\":[[1,"), "no heads.csv rows");
    cr_assert(strstr(html, ",0,-1,0.") || strstr(html, ",0,-1,1]"), "no layer mean");
    free(html);
    if (access("/usr/bin/chromium", X_OK) == 0) {
        char *dom = render_report(guided);
        cr_assert(strstr(dom, "guided alignment: cross-attention layer 0 head 0 trained towards the toy corpus's gold "
                              "links (weight 0.1)."), "what was trained:\n%.3000s", dom);
        cr_assert(strstr(dom, "<h2>Attention heads</h2>") && strstr(dom, "<td class=\"guided") &&
                  strstr(dom, "* the guided head, layer 0 head 0 (train --guided-alignment)"), "no marked head:\n%s", dom);
        cr_assert(strstr(dom, ">layer 0 head 0 (guided)</text>"), "the guided head is not drawn over the evaluations");
        free(dom);
    }
    rc = test_runf(&out, "%s corpus --toy --n 40 --seed 9 --align %s/test.align > %s/test.tsv && %s eval --model "
                         "%s/best.ckpt --corpus %s/test.tsv --align %s/test.align --beam 1",
                   TS_PROGRAM, dir, dir, TS_PROGRAM, guided, dir, dir);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\n  layer 0    *0.") && strstr(out, "* the guided head, layer 0 head 0 (train --guided-alignment)"),
              "eval's tables do not mark the guided head:\n%s", out);
    free(out);
    // An unguided GRU run's page says nothing of guided alignment and hides the heads section (no heads.csv).
    if (access("/usr/bin/chromium", X_OK) == 0) {
        char *dom = render_report(run), *trained = strstr(dom, "<div id=\"trained\">"), *end = strstr(dom, "<h2>Training");
        cr_assert(trained && end, "%s", dom);
        *end = '\0';
        cr_assert_null(strstr(trained, "guided"), "%s", trained);
        cr_assert(strstr(end + 1, "<h2 style=\"display: none;\">Attention heads</h2>"), "the heads section of a GRU run is shown");
        free(dom);
    }
    // A guided GRU: its one attention head is "the attention", as its checkpoint says (1 layer of 1 head),
    // not as the page once decided by the architecture's name.
    char gru[1200];
    snprintf(gru, sizeof gru, "%s/guided-gru", dir);
    rc = test_runf(&out, "%s train --toy-pairs 300 --emb 8 --hidden 8 --epochs 1 --show 0 --beam 1 --guided-alignment toy "
                         "--out %s", TS_PROGRAM, gru);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    cr_assert_eq(report(&out, gru), 0, "%s", out);
    free(out);
    html = run_file(gru, "report.html");
    cr_assert(strstr(html, "const MODEL_HEADS=[1,1]"), "%.200s", strstr(html, "const MODEL=") ? strstr(html, "const MODEL=") : "");
    free(html);
    if (access("/usr/bin/chromium", X_OK) == 0) {
        char *dom = render_report(gru);
        cr_assert(strstr(dom, "guided alignment: the attention trained towards the toy corpus's gold links"), "%.3000s",
                  dom);
        free(dom);
    }
}

// heads.csv is parsed, never pasted: a line of another shape is refused by
// file and line, and the page stays as it was.
Test(cli_report, a_hostile_heads_csv_is_refused_by_line) {
    static const struct {
        const char *text, *says;
    } cases[] = {
        {"epoch,step,layer,head,aer,x\n", "heads.csv:1: not the header tinyseq train writes"},
        {"epoch,step,layer,head,aer\n1,2,0,mean,0.5\n1,2,0,</script>,0.1\n", "heads.csv:3: not a row"},
        {"epoch,step,layer,head,aer\n1,2,0,0,0.5,9\n", "heads.csv:2: not a row"},
        {"epoch,step,layer,head,aer\n1,2,5000,0,0.5\n", "heads.csv:2: not a row"},
        {"epoch,step,layer,head,aer\n1,2.5,0,0,0.5\n", "heads.csv:2: not a row"},
        {"epoch,step,layer,head,aer\n1,2,0,0,0.5\r\n", "heads.csv:2: not a row"},
    };
    char path[1300], *out;
    snprintf(path, sizeof path, "%s/heads.csv", run);
    cr_assert_eq(report(&out, run), 0, "%s", out);
    free(out);
    char *page = run_file(run, "report.html"), forced[1300];
    snprintf(forced, sizeof forced, "%s --force", run);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        free(test_write_file(run, "heads.csv", cases[i].text, strlen(cases[i].text)));
        int rc = report(&out, forced);
        cr_assert(rc == 1 && strstr(out, cases[i].says), "case %zu: exit %d, not saying '%s': %s", i, rc, cases[i].says, out);
        free(out);
        char *now = run_file(run, "report.html");
        cr_assert_str_eq(now, page, "case %zu changed report.html", i);
        free(now);
    }
    // A run's own rows, empty AER (not measured) and nan included, go in as numbers and nulls.
    static const char good[] = "epoch,step,layer,head,aer\n1,2,0,0,0.5\n1.500,3,0,mean,\n2,4,0,1,nan\n";
    free(test_write_file(run, "heads.csv", good, strlen(good)));
    cr_assert_eq(report(&out, forced), 0, "%s", out);
    free(out);
    char *html = run_file(run, "report.html");
    cr_assert(strstr(html, "const HEADS={\"rows\":[[1,2,0,0,0.5],[1.5,3,0,-1,null],[2,4,0,1,null]]};"), "%s",
              strstr(html, "const HEADS="));
    free(html);
    free(page);
    unlink(path);
}

// The page says what was trained (config.txt) and which epoch best.ckpt is
// and why, draws the learning rate, and shows a subword run in words (the
// pieces merged as attend --words merges them), its pieces on request.
Test(cli_report, the_page_says_what_was_trained_and_shows_subwords_in_words, .timeout = 300) {
    NEEDS_SPM();
    char sw[1200];
    snprintf(sw, sizeof sw, "%s/subword", dir);
    cr_assert_eq(test_runf(NULL, "%s train --subword 300 --toy-pairs 400 --emb 8 --hidden 8 --epochs 2 --show 0 --beam 1 "
                                 "--out %s", TS_PROGRAM, sw), 0);
    char *dom = render_report(sw);
    cr_assert(strstr(dom, "the model: bahdanau attention, bahdanau decoder, unidirectional encoder, embedding 8, hidden 8; "
                          "on bpe subword pieces (at most 300 a side), float32"), "what was trained:\n%.3000s", dom);
    cr_assert(strstr(dom, "best.ckpt: epoch ") && strstr(dom, "the highest greedy dev BLEU"), "no best epoch");
    cr_assert(strstr(dom, ">learning rate</text>"), "no learning-rate chart");
    cr_assert(strstr(dom, "<summary>every option (config.txt)</summary>"), "no options table");
    // In words: no piece mark in the heatmaps' labels; the pieces when the box is unticked.
    const char *mark = "\xe2\x96\x81";
    char *explorer = strstr(dom, "<div id=\"view\">"), *end = explorer ? strstr(explorer, "<div id=\"tip\"") : NULL;
    cr_assert(explorer && end, "no explorer");
    *end = '\0';  // the explorer alone, not the data after it
    cr_assert(strstr(explorer, "<th class=\"src\">") && !strstr(explorer, mark), "the explorer shows pieces:\n%s", explorer);
    free(dom);
    // "Attention beside attributions" too (it drew the pieces before).
    char *page = run_file(sw, "report.html"), *beside = strstr(page, "<h2>Attention beside attributions</h2>");
    cr_assert(beside, "no attention beside attributions");
    char *after = strstr(beside, "<script");
    if (after) *after = '\0';
    cr_assert(!strstr(beside, mark) && strstr(beside, "in words: a word's pieces merged"), "%.4000s", beside);
    free(page);
    char *out;
    cr_assert_eq(test_runf(&out, "sed -i 's/id=\"words\" checked/id=\"words\"/' %s/report.html", sw), 0, "%s", out);
    free(out);
    dom = render_page(sw);
    explorer = strstr(dom, "<div id=\"view\">");
    end = explorer ? strstr(explorer, "<div id=\"tip\"") : NULL;
    cr_assert(explorer && end, "no explorer");
    *end = '\0';
    cr_assert(strstr(explorer, mark), "the pieces are not shown when asked");
    free(dom);
}

// A run that diverged (a learning rate of 100, no clipping) records dev_ppl
// inf; its report is still written, that figure a gap (null) in the chart,
// and the page draws without a script error. Before, report refused the
// run's own metrics.csv ("field 5 is not a number").
Test(cli_report, a_diverged_run_has_a_report_with_gaps, .timeout = 180) {
    char diverged[1200], cmd[4096], *out;
    snprintf(diverged, sizeof diverged, "%s/diverged", dir);
    snprintf(cmd, sizeof cmd, "%s train --toy-pairs 500 --epochs 2 --lr 100 --clip 0 --threads 1 --show 0 --out %s",
             TS_PROGRAM, diverged);
    cr_assert_eq(test_run(cmd, &out), 0, "%s", out);
    free(out);
    char *metrics = run_file(diverged, "metrics.csv"), *jsonl = run_file(diverged, "attention.jsonl");
    cr_assert(strstr(metrics, ",inf,") || strstr(metrics, ",nan,"), "the run did not diverge:\n%s", metrics);
    cr_assert(!strstr(jsonl, ",nan") && !strstr(jsonl, "[nan") && !strstr(jsonl, "-nan") && !strstr(jsonl, "inf"),
              "attention.jsonl holds a NaN or Inf, which is not JSON");
    free(metrics);
    free(jsonl);
    cr_assert_eq(report(&out, diverged), 0, "%s", out);
    free(out);
    char *page = run_file(diverged, "report.html");
    cr_assert_null(strstr(page, ",inf,"), "an inf reached the page");
    free(page);
    if (access("/usr/bin/chromium", X_OK) == 0) free(render_page(diverged));
}
