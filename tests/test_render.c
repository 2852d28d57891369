// Tests for viz/render: SVG heatmap and loss curve are well-formed XML
// (checked by xmllint) with every word escaped, JSON parses (checked by
// Python's json module) and round-trips the weights bit for bit, terminal
// output is exact in plain mode and uses the right characters otherwise.
#include "infer/alignment.h"
#include "viz/heatmap.h"
#include "viz/plot.h"
#include "viz/render.h"

#include "tensor/status.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(render);

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", dir, name);
    return path;
}

static void assert_xml_well_formed(const char *path) {
    char cmd[1024], *output = NULL;
    cr_assert_eq(test_run("command -v xmllint", NULL), 0,
                 "xmllint missing: apt-get install libxml2-utils (scripts/setup.sh)");
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s'", path);
    int status = test_run(cmd, &output);
    cr_assert_eq(status, 0, "%s is not well-formed XML:\n%s", path, output);
    free(output);
}

// Awkward words: every XML special character, a quote, UTF-8.
static const char *const target[] = {"a&b", "<unk>", "l'homme", "\"q\"", "été", "<eos>"};
static const char *const source[] = {"x<y>z", "naïve", "日本語", "it's", "b&&c", "<eos>"};
static const char *const target_escaped[] = {"a&amp;b", "&lt;unk&gt;", "l&apos;homme",
                                             "&quot;q&quot;", "été", "&lt;eos&gt;"};
static const char *const source_escaped[] = {"x&lt;y&gt;z", "naïve", "日本語", "it&apos;s",
                                             "b&amp;&amp;c", "&lt;eos&gt;"};

static void fill_rows(double *w, size_t T, size_t S) {
    for (size_t j = 0; j < T; j++) {
        double sum = 0;
        for (size_t i = 0; i < S; i++) sum += w[j * S + i] = 1.0 / (1.0 + (double)((i + 2 * j) % 5));
        for (size_t i = 0; i < S; i++) w[j * S + i] /= sum;
    }
}

// ---- SVG heatmap -----------------------------------------------------------

Test(render, heatmap_svg_is_well_formed_with_every_word_escaped) {
    double w[6 * 6];
    fill_rows(w, 6, 6);
    w[7] = NAN;  // a NaN cell is drawn grey, not skipped
    char *dir = test_tmpdir(), *path = join(dir, "heat.svg");
    cr_assert_eq(ts_render_heatmap_svg_path(path, w, 6, 6, target, source, NULL,
                                            "attention: <bahdanau> & co"), TS_OK,
                 "%s", ts_last_error());
    assert_xml_well_formed(path);
    char *svg = read_all(path);
    for (int k = 0; k < 6; k++) {
        cr_assert_not_null(strstr(svg, target_escaped[k]), "missing %s", target_escaped[k]);
        cr_assert_not_null(strstr(svg, source_escaped[k]), "missing %s", source_escaped[k]);
    }
    cr_assert_not_null(strstr(svg, "attention: &lt;bahdanau&gt; &amp; co"));
    cr_assert_null(strstr(svg, "<unk>"));
    cr_assert_not_null(strstr(svg, ">nan<"));
    char cell[16];
    snprintf(cell, sizeof cell, ">%.2f<", w[0]);  // weights written in the cells
    cr_assert_not_null(strstr(svg, cell), "no %s", cell);
    // The rename left no temporary file behind.
    char *ls;
    test_runf(&ls, "ls -a '%s'", dir);
    cr_assert_null(strstr(ls, ".tmp"), "%s", ls);
    free(ls);
    free(svg);
    free(path);
    free(dir);
}

// A figure is as wide as its heatmap: a long title (a run's per-epoch
// figure: its reference under the title) wraps to it, in lines of even
// length, instead of widening it (issue 47 point 7); a small heatmap's
// figure is at most 420 px wide.
Test(render, a_long_title_wraps_to_the_heatmap) {
    double w[2 * 3];
    fill_rows(w, 2, 3);
    const char *title = "attention: bahdanau (bahdanau decoder), epoch 12, step 4567, greedy, in words (subword "
                        "pieces merged)\nreference: the doctors cannot open the heavy door tomorrow because the old "
                        "key was lost in the garden behind the white church";
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(ts_render_heatmap_svg(f, w, 2, 3, target, source, NULL, title), TS_OK, "%s", ts_last_error());
    fclose(f);
    const char *width = strstr(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"");
    cr_assert_not_null(width);
    long px = strtol(width + 47, NULL, 10);
    cr_assert(px >= 300 && px <= 420, "%ld px wide: %.300s", px, buf);
    // Every word is there, in order; the bold title in more than one line, the reference in several.
    size_t bold = 0, caption = 0;
    for (const char *p = buf; (p = strstr(p, "font-weight=\"bold\">")); p++) bold++;
    for (const char *p = buf; (p = strstr(p, "fill=\"#333333\">")); p++) caption++;
    cr_assert(bold >= 2 && caption >= 3, "%zu title lines, %zu caption lines:\n%s", bold, caption, buf);
    const char *at = buf;
    char copy[512];
    snprintf(copy, sizeof copy, "%s", title);
    for (char *word = strtok(copy, " \n"); word; word = strtok(NULL, " \n")) {
        at = strstr(at, word);
        cr_assert_not_null(at, "'%s' is missing or out of order:\n%s", word, buf);
    }
    free(buf);
}

Test(render, heatmap_svg_survives_invalid_utf8_and_control_characters) {
    const char *const rows[] = {"bad\xff\xfe", "ctl\x01\x1b[31m", "\xe2\x82"};  // truncated UTF-8
    const char *const cols[] = {"tab\there", "\xc0\xaf", "ok"};
    double w[3 * 3];
    fill_rows(w, 3, 3);
    char *dir = test_tmpdir(), *path = join(dir, "bad.svg");
    cr_assert_eq(ts_render_heatmap_svg_path(path, w, 3, 3, rows, cols, NULL, NULL), TS_OK);
    assert_xml_well_formed(path);
    free(path);
    free(dir);
}

Test(render, heatmap_svg_labels_positions_when_words_are_missing) {
    double w[2 * 2] = {1, 0, 0, 1};
    char *dir = test_tmpdir(), *path = join(dir, "nolabels.svg");
    cr_assert_eq(ts_render_heatmap_svg_path(path, w, 2, 2, NULL, NULL, NULL, "t"), TS_OK);
    assert_xml_well_formed(path);
    free(path);
    free(dir);
}

Test(render, svg_path_reports_io_errors) {
    double w[1] = {1};
    cr_assert_eq(ts_render_heatmap_svg_path("/nonexistent-dir/x.svg", w, 1, 1, NULL, NULL, NULL, NULL),
                 TS_ERR_IO);
    cr_assert_not_null(strstr(ts_last_error(), "/nonexistent-dir/x.svg"), "%s", ts_last_error());
    cr_assert_eq(ts_render_heatmap_svg(stdout, w, 0, 1, NULL, NULL, NULL, NULL), TS_ERR_SHAPE);
}

// ---- JSON ------------------------------------------------------------------

// The one JSON string escaper: quotes, backslashes, every control character,
// and '<', '>', '&' (the line may sit in an HTML script) escaped; invalid
// UTF-8 becomes U+FFFD; other text, non-ASCII included, passes as it is.
Test(render, json_string_escapes_controls_html_and_bad_utf8_only) {
    char *text;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    ts_render_json_string(f, "a\"b\\c\x01\x1f\t\n\x7f <eos> & </script> \xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80 \xff\xc3 \xef\xbf\xbd");
    fclose(f);
    cr_assert_str_eq(text, "\"a\\\"b\\\\c\\u0001\\u001f\\u0009\\u000a\x7f \\u003ceos\\u003e \\u0026 \\u003c/script\\u003e "
                           "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80 \\ufffd\\ufffd \xef\xbf\xbd\"");
    free(text);
}

Test(render, attention_json_parses_and_round_trips_exactly) {
    enum { T = 3, S = 4 };
    const double w[T * S] = {0.1, 1.0 / 3.0, 1e-300, 5e-324,
                             0.9999999999999999, 0.0, 1.0, 2.0 / 7.0,
                             NAN, 0.5, 0.25, 0.125};
    const char *const tgt[T] = {"\"quoted\" \\ back", "new\nline\ttab\x01", "été"};
    const char *const src[S] = {"日本", "a", "</script>", "<eos>"};
    char *dir = test_tmpdir(), *path = join(dir, "attn.json");
    cr_assert_eq(ts_render_attention_json_path(path, w, T, S, tgt, src, "bahdanau"), TS_OK);

    // Python reads it back and prints what it understood: the labels as hex
    // UTF-8 bytes, the weights as hex floats (exact), null as "null".
    char cmd[1024], *output = NULL;
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import json,sys\n"
             "d=json.load(open(sys.argv[1], encoding=\"utf-8\"))\n"
             "print(d[\"attention\"])\n"
             "for s in d[\"source\"]+d[\"target\"]: print(s.encode().hex())\n"
             "for r in d[\"weights\"]:\n"
             "  for x in r: print(\"null\" if x is None else float.hex(float(x)))\n' '%s'",
             path);
    cr_assert_eq(test_run(cmd, &output), 0, "python could not parse the JSON:\n%s", output);
    char *line = strtok(output, "\n");
    cr_assert_str_eq(line, "bahdanau");
    for (int k = 0; k < S + T; k++) {
        const char *label = k < S ? src[k] : tgt[k - S];
        char hex[256] = "";
        for (size_t b = 0; label[b]; b++)
            snprintf(hex + 2 * b, 3, "%02x", (unsigned char)label[b]);
        line = strtok(NULL, "\n");
        cr_assert_not_null(line);
        cr_assert_str_eq(line, hex, "label %d", k);
    }
    for (int k = 0; k < T * S; k++) {
        line = strtok(NULL, "\n");
        cr_assert_not_null(line);
        if (isnan(w[k])) {
            cr_assert_str_eq(line, "null");
        } else {
            double got = strtod(line, NULL);  // C99 reads Python's hex floats
            cr_assert(got == w[k], "weight %d: got %a, want %a", k, got, w[k]);
        }
    }
    free(output);
    free(path);
    free(dir);
}

// ---- terminal --------------------------------------------------------------

static char *term_output_at(const double *w, size_t T, size_t S, const char *const *tgt, const char *const *src,
                            enum ts_term_mode mode, int values, int width) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    ts_term_opts opts = {.mode = mode, .values = values, .width = width};
    cr_assert_eq(ts_render_heatmap_term(f, w, T, S, tgt, src, &opts), TS_OK, "%s",
                 ts_last_error());
    cr_assert_eq(fclose(f), 0);
    return buf;
}

static char *term_output(const double *w, size_t T, size_t S, const char *const *tgt,
                         const char *const *src, enum ts_term_mode mode, int values) {
    return term_output_at(w, T, S, tgt, src, mode, values, 0);
}

static const double two_by_three[2 * 3] = {0.9, 0.05, 0.05, 0.1, 0.2, 0.7};
static const char *const tgt2[] = {"the", "<eos>"};
static const char *const src3[] = {"le", "chat", "<eos>"};

Test(render, plain_terminal_output_is_an_exact_table) {
    char *got = term_output(two_by_three, 2, 3, tgt2, src3, TS_TERM_PLAIN, 0);
    const char *want =
        "         le  chat  <eos>\n"
        "the    0.90  0.05   0.05\n"
        "<eos>  0.10  0.20   0.70\n";
    cr_assert_str_eq(got, want, "got:\n%s", got);
    free(got);
}

Test(render, plain_terminal_output_aligns_wide_utf8_words) {
    const char *const tgt[] = {"été", "日本"};  // 3 and 4 columns, more bytes
    const char *const src[] = {"naïve", "x"};
    const double w[4] = {0.5, 0.5, 0.25, 0.75};
    char *got = term_output(w, 2, 2, tgt, src, TS_TERM_PLAIN, 0);
    const char *want =
        "      naïve     x\n"
        "été    0.50  0.50\n"
        "日本   0.25  0.75\n";
    cr_assert_str_eq(got, want, "got:\n%s", got);
    free(got);
}

Test(render, shade_mode_uses_shade_characters_and_no_escapes) {
    const double w[5] = {0.0, 0.25, 0.5, 0.75, 1.0};
    const char *const src[] = {"a", "b", "c", "d", "e"};
    const char *const tgt[] = {"x"};
    char *got = term_output(w, 1, 5, tgt, src, TS_TERM_SHADE, 0);
    // The cells, then the scale --heads prints (issue 47 point 4).
    const char *want =
        "   a  b  c  d  e\n"
        "x    ░░░▒▒▒▓▓▓███\n"
        "\n"
        "scale: 0    .25 ░░ .5 ▒▒ .75 ▓▓ 1 ██\n";
    cr_assert_str_eq(got, want, "got:\n%s", got);
    free(got);
    got = term_output(w, 1, 5, tgt, src, TS_TERM_SHADE, 1);
    cr_assert_not_null(strstr(got, "\nx    .00░.25▒.50▓.751.0\n") || strstr(got, "▒.50"), "got:\n%s", got);
    cr_assert_not_null(strstr(got, "▒.50"), "got:\n%s", got);
    cr_assert_not_null(strstr(got, "█1.0"), "got:\n%s", got);
    cr_assert_null(strchr(got, '\x1b'));
    free(got);
}

// Columns are named by their words (issue 22 item 9), set as a staircase
// when they are longer than a cell: each starts over its column.
Test(render, terminal_columns_are_named_by_their_words) {
    const double w[3] = {0.2, 0.3, 0.5};
    const char *const src[] = {"the", "cat", "."};
    const char *const tgt[] = {"le"};
    char *got = term_output(w, 1, 3, tgt, src, TS_TERM_SHADE, 0);
    const char *want =
        "    the\n"
        "    │  cat\n"
        "    │  │  .\n"
        "le ░░░░░░▒▒▒\n"
        "\n"
        "scale: 0    .25 ░░ .5 ▒▒ .75 ▓▓ 1 ██\n";
    cr_assert_str_eq(got, want, "got:\n%s", got);
    free(got);
}

Test(render, colour_modes_paint_backgrounds_and_reset_each_line) {
    char *got = term_output(two_by_three, 2, 3, tgt2, src3, TS_TERM_TRUECOLOR, 1);
    cr_assert_not_null(strstr(got, "\x1b[48;2;"));
    cr_assert_not_null(strstr(got, ".90"));
    cr_assert_not_null(strstr(got, "\x1b[0m\n<eos>"), "row 0 not reset");
    cr_assert_not_null(strstr(got, "chat"), "got:\n%s", got);
    free(got);
    got = term_output(two_by_three, 2, 3, tgt2, src3, TS_TERM_256, 0);
    cr_assert_not_null(strstr(got, "\x1b[48;5;"));
    cr_assert_null(strstr(got, ".90"));
    free(got);
    // 24-bit colour tells 0.14, 0.20 and 0.29 apart (xterm's 256 merge two).
    const double close[3] = {0.14, 0.20, 0.29};
    got = term_output(close, 1, 3, tgt2, src3, TS_TERM_TRUECOLOR, 0);
    char cells[3][32];
    const char *p = got;
    for (int k = 0; k < 3; k++) {
        p = strstr(p, "\x1b[48;2;");
        cr_assert_not_null(p);
        snprintf(cells[k], sizeof cells[k], "%.*s", (int)strcspn(p, "m"), p);
        p++;
    }
    cr_assert(strcmp(cells[0], cells[1]) && strcmp(cells[1], cells[2]), "%s %s %s", cells[0] + 1, cells[1] + 1,
              cells[2] + 1);
    free(got);
}

// A 25-word sentence fits the width in every mode, with and without values
// (issue 47 point 4: at 80 columns it took 133 with values, 100 without):
// the columns go in blocks, a word cut is given in full under the cells,
// so every word is on the page whole.
Test(render, a_long_sentence_fits_the_width_in_every_mode) {
    enum { S = 25, T = 5 };
    char words[S][48];
    const char *src[S], *const tgt[T] = {"un", "deux", "very-long-target-word-of-thirty", "日本語", "<eos>"};
    double w[T * S];
    for (int i = 0; i < S; i++) {
        // Short and long words, a wide one and one with a combining accent.
        if (i == 7) snprintf(words[i], sizeof words[i], "日本語の単語");
        else if (i == 11) snprintf(words[i], sizeof words[i], "cafe\xcc\x81s");
        else snprintf(words[i], sizeof words[i], "%.*s%d", i % 4 == 3 ? 30 : i % 3 * 3, "wordswordswordswordswordswords", i);
        src[i] = words[i];
    }
    for (int k = 0; k < T * S; k++) w[k] = (double)(k % 7) / 6;
    static const int widths[] = {40, 60, 80, 120};
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++)
        for (int mode = TS_TERM_PLAIN; mode <= TS_TERM_TRUECOLOR; mode++)
            for (int values = 0; values <= 1; values++) {
                char *got = term_output_at(w, T, S, tgt, src, (enum ts_term_mode)mode, values, widths[k]);
                cr_assert_leq(test_widest_line(got), widths[k], "width %d, mode %d, values %d: %d columns:\n%s",
                              widths[k], mode, values, test_widest_line(got), got);
                for (int i = 0; i < S; i++)
                    cr_assert_not_null(strstr(got, words[i]), "width %d, mode %d: no %s in full:\n%s", widths[k], mode,
                                       words[i], got);
                cr_assert_not_null(strstr(got, "very-long-target-word-of-thirty"), "%s", got);
                free(got);
            }
}

// Values in colour are four columns apart (" .00 1.0 .00"), not run
// together as ".001.0.00"; the cells keep their colours.
Test(render, values_in_colour_stay_apart) {
    const double w[4] = {0.0, 1.0, 0.004, 0.5};
    const char *const src[] = {"a", "b", "c", "d"}, *const tgt[] = {"x"};
    char *got = term_output(w, 1, 4, tgt, src, TS_TERM_256, 1);
    // Without its escapes the row reads as the weights with a space between.
    char plain[512];
    size_t n = 0;
    for (const char *p = got; *p && n + 1 < sizeof plain; p++) {
        if (*p == '\x1b') {
            while (*p && *p != 'm') p++;
            continue;
        }
        plain[n++] = *p;
    }
    plain[n] = '\0';
    cr_assert_not_null(strstr(plain, "\nx  .00 1.0 .00 .50\n"), "%s", plain);
    cr_assert_not_null(strstr(got, "\x1b[48;5;"), "%s", got);
    free(got);
}

// The columns that do not fit go in blocks of even size, each under its own
// words, with the row labels again.
Test(render, columns_that_do_not_fit_go_in_even_blocks) {
    enum { S = 30 };
    char words[S][8];
    const char *src[S], *const tgt[] = {"row"};
    double w[S];
    for (int i = 0; i < S; i++) {
        snprintf(words[i], sizeof words[i], "w%d", i);
        src[i] = words[i];
        w[i] = 0.5;
    }
    char *got = term_output_at(w, 1, S, tgt, src, TS_TERM_SHADE, 0, 60);
    // (60 - 4) / 3 = 18 fit a line: two blocks of 15.
    cr_assert_not_null(strstr(got, "columns 1-15 of 30\n"), "%s", got);
    cr_assert_not_null(strstr(got, "\ncolumns 16-30 of 30\n"), "%s", got);
    cr_assert_not_null(strstr(got, "\nrow ▒▒▒"), "%s", got);
    const char *second = strstr(got, "columns 16-30");
    cr_assert_not_null(strstr(second, "\nrow ▒▒▒"), "the second block has its rows:\n%s", got);
    cr_assert_leq(test_widest_line(got), 60, "%s", got);
    free(got);
}

Test(render, terminal_never_echoes_control_characters_from_labels) {
    const char *const tgt[] = {"\x1b]0;pwned\x07", "ok"};
    const double w[2] = {1, 1};
    const char *const src[] = {"\x1b[2J"};
    for (int mode = TS_TERM_PLAIN; mode <= TS_TERM_SHADE; mode++) {
        char *got = term_output(w, 2, 1, tgt, src, (enum ts_term_mode)mode, 0);
        cr_assert_null(strchr(got, '\x1b'), "mode %d:\n%s", mode, got);
        cr_assert_null(strchr(got, '\x07'));
        free(got);
    }
}

// A row label is cut to a sixth of the width (6 to 24 columns), and given
// in full under the cells.
Test(render, long_row_labels_are_cut_with_an_ellipsis_and_given_in_full) {
    const char *const tgt[] = {"abcdefghijklmnopqrstuvwxyz0123456789"};
    const double w[1] = {1};
    char *got = term_output(w, 1, 1, tgt, NULL, TS_TERM_PLAIN, 0);
    cr_assert_not_null(strstr(got, "abcdefghijkl…  1.00"), "got:\n%s", got);
    cr_assert_not_null(strstr(got, "\ncut labels: abcdefghijkl… = abcdefghijklmnopqrstuvwxyz0123456789\n"), "got:\n%s", got);
    free(got);
    got = term_output_at(w, 1, 1, tgt, NULL, TS_TERM_PLAIN, 0, 200);
    cr_assert_not_null(strstr(got, "abcdefghijklmnopqrstuvw…  1.00"), "got:\n%s", got);
    free(got);
}

// Lines of text break between words at the width, the lines after the
// first indented; nothing from the words reaches the terminal unmade-safe.
Test(render, wrapped_text_breaks_between_words_and_makes_them_safe) {
    const char *const words[] = {"alpha", "beta", "gamma", "delta", "\x1b[2Jepsilon", "zeta"};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(ts_term_wrap(f, "source: ", -1, words, 6, " ", 24), TS_OK);
    cr_assert_eq(ts_term_wrap(f, "list: ", 2, words, 4, ", ", 20), TS_OK);
    cr_assert_eq(ts_term_wrap(f, "one: ", -1, words, 6, " ", 0), TS_OK);
    fclose(f);
    cr_assert_str_eq(buf,
                     "source: alpha beta gamma\n"
                     "        delta\n"
                     "        ?[2Jepsilon zeta\n"
                     "list: alpha, beta,\n"
                     "  gamma, delta\n"
                     "one: alpha beta gamma delta ?[2Jepsilon zeta\n",
                     "got:\n%s", buf);
    free(buf);
}

Test(render, terminal_mode_comes_from_the_environment) {
    cr_assert_eq(ts_term_mode_choose(0, NULL, "truecolor", "xterm-256color"), TS_TERM_PLAIN);
    cr_assert_eq(ts_term_mode_choose(1, NULL, "truecolor", "xterm"), TS_TERM_TRUECOLOR);
    cr_assert_eq(ts_term_mode_choose(1, NULL, "24bit", NULL), TS_TERM_TRUECOLOR);
    cr_assert_eq(ts_term_mode_choose(1, NULL, NULL, "xterm-256color"), TS_TERM_256);
    cr_assert_eq(ts_term_mode_choose(1, NULL, NULL, "xterm"), TS_TERM_SHADE);
    cr_assert_eq(ts_term_mode_choose(1, "1", "truecolor", "xterm-256color"), TS_TERM_SHADE);
    cr_assert_eq(ts_term_mode_choose(1, "", "truecolor", NULL), TS_TERM_TRUECOLOR);
    cr_assert_eq(ts_term_mode_choose(1, NULL, "truecolor", "dumb"), TS_TERM_PLAIN);
    // A memory stream is never a terminal.
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(ts_term_mode_detect(f), TS_TERM_PLAIN);
    fclose(f);
    free(buf);
}

// ts_term_put_wrapped's text on a memory stream.
static char *wrapped(const char *text, int width, int indent) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ts_term_put_wrapped(f, text, width, indent);
    fclose(f);
    return buf;
}

// A line wider than the terminal breaks after its last ", " in the second
// half of the room, else at its last space, else at the edge, and goes on
// indented; columns are characters, not bytes (é is one).
Test(render, a_line_wraps_after_a_comma_then_a_space_then_the_edge) {
    static const struct {
        const char *text;
        int width, indent;
        const char *want;
    } cases[] = {
        {"short enough", 30, 2, "short enough\n"},
        {"epoch 1: train loss 5.7066, dev loss 5.6373, dev ppl 280.691", 40, 2,
         "epoch 1: train loss 5.7066,\n  dev loss 5.6373, dev ppl 280.691\n"},
        {"alpha, beta gamma delta epsilon zeta eta theta iota", 30, 4,
         "alpha, beta gamma delta\n    epsilon zeta eta theta\n    iota\n"},
        {"reference: mon église triste dort vite et le chat dort", 33, 11,
         "reference: mon église triste dort\n           vite et le chat dort\n"},
        {"path: /a/very/long/directory/name/without/any/space/in/it/best.ckpt", 30, 2,
         "path:\n  /a/very/long/directory/name/\n  without/any/space/in/it/best\n  .ckpt\n"},
        {"as it is when the width leaves too little room after the indent", 25, 10,
         "as it is when the width leaves too little room after the indent\n"},
        {"as it is at width 0", 0, 2, "as it is at width 0\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = wrapped(cases[i].text, cases[i].width, cases[i].indent);
        cr_assert_str_eq(got, cases[i].want, "width %d:\n%s", cases[i].width, got);
        free(got);
    }
}

// Without a terminal the width is $COLUMNS, else unknown (0).
Test(render, the_terminal_width_is_columns_without_a_terminal) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    setenv("COLUMNS", "97", 1);
    cr_assert_eq(ts_term_width(f), 97);
    setenv("COLUMNS", "wide", 1);
    cr_assert_eq(ts_term_width(f), 0);
    unsetenv("COLUMNS");
    cr_assert_eq(ts_term_width(f), 0);
    fclose(f);
    free(buf);
}

// ---- colours, Pharaoh ------------------------------------------------------

Test(render, colour_ramp_ends_at_viridis_and_text_contrasts) {
    uint8_t lo[3], hi[3], nan_grey[3];
    ts_render_colour(0.0, lo);
    ts_render_colour(1.0, hi);
    ts_render_colour(NAN, nan_grey);
    cr_assert(lo[0] == 0x44 && lo[1] == 0x01 && lo[2] == 0x54);
    cr_assert(hi[0] == 0xfd && hi[1] == 0xe7 && hi[2] == 0x25);
    cr_assert_eq(ts_render_dark_text_on(lo), 0, "white text on dark purple");
    cr_assert_eq(ts_render_dark_text_on(hi), 1, "black text on yellow");
    ts_render_colour(-3.0, nan_grey);  // clamped
    cr_assert_eq(nan_grey[0], 0x44);
}

Test(render, pharaoh_line_of_argmax_alignment) {
    const double w[3 * 3] = {0.8, 0.1, 0.1, 0.1, 0.2, 0.7, 0.3, 0.6, 0.1};
    ts_link links[3];
    size_t n;
    cr_assert_eq(ts_align_argmax(w, 3, 3, 0, links, &n), TS_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(ts_pharaoh_write(f, links, n), TS_OK);
    cr_assert_eq(ts_pharaoh_write(f, links, 0), TS_OK);
    fclose(f);
    cr_assert_str_eq(buf, "0-0 2-1 1-2\n\n");
    free(buf);
}

// ---- loss curve ------------------------------------------------------------

Test(render, loss_svg_is_well_formed_in_every_shape) {
    const double steps[6] = {20, 40, 60, 80, 100, 120};
    const double train[6] = {4.2, 3.1, NAN, 2.0, 1.7, 1.65};
    const double dev_steps[3] = {40, 80, 120};
    const double dev[3] = {4.5, INFINITY, 2.62};
    const double one[1] = {2.5}, one_step[1] = {150};
    const double none[2] = {NAN, NAN};
    const double flat[3] = {0, 0, 0};
    char *dir = test_tmpdir();
    struct {
        const char *name;
        ts_loss_curves c;
    } cases[] = {
        {"curve.svg", {steps, train, 6, dev_steps, dev, 3}},
        {"one.svg", {one_step, one, 1, one_step, one, 1}},
        {"none.svg", {steps, none, 2, steps, none, 2}},
        {"flat.svg", {steps, flat, 3, NULL, NULL, 0}},
        {"empty.svg", {NULL, NULL, 0, NULL, NULL, 0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *path = join(dir, cases[k].name);
        cr_assert_eq(ts_render_loss_svg_path(path, &cases[k].c, "loss & <toy>"), TS_OK, "%s: %s", cases[k].name,
                     ts_last_error());
        assert_xml_well_formed(path);
        char *svg = read_all(path);
        cr_assert_null(strstr(svg, "nan"), "%s has a NaN coordinate", cases[k].name);
        cr_assert_null(strstr(svg, "inf"), "%s has an Inf coordinate", cases[k].name);
        cr_assert_not_null(strstr(svg, ">step<"));
        cr_assert_not_null(strstr(svg, ">loss<"));
        free(svg);
        free(path);
    }
    char *path = join(dir, "curve.svg"), *svg = read_all(path);
    free(path);
    // The NaN at step 60 breaks the training curve in two; dev's Inf at 80
    // breaks its line too, leaving two dev points alone.
    int polylines = 0, dots = 0;
    for (char *p = svg; (p = strstr(p, " points=\"")); p++) polylines++;
    for (char *p = svg; (p = strstr(p, "<circle")); p++) dots++;
    cr_assert_eq(polylines, 1 + 4, "got %d polylines (the axes and four pieces)", polylines);
    cr_assert_eq(dots, 2, "got %d dots: the dev points", dots);
    cr_assert_not_null(strstr(svg, ">dev<"));
    cr_assert_not_null(strstr(svg, ">training<"));
    free(svg);
    path = join(dir, "none.svg");
    svg = read_all(path);
    cr_assert_not_null(strstr(svg, "no finite loss values"));
    free(svg);
    free(path);
    free(dir);
}

// Tick labels are round numbers (1, 1.5, 2 or 0, 50, 100), never the data's
// own values (1.91, 1.43, 0.955): issue 22 item 8.
Test(render, loss_svg_ticks_are_round_numbers) {
    const double steps[3] = {50, 100, 150}, train[3] = {1.91, 1.43, 0.955};
    ts_loss_curves c = {steps, train, 3, NULL, NULL, 0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(ts_render_loss_svg(f, &c, NULL), TS_OK);
    fclose(f);
    for (const char *p = buf; (p = strstr(p, "text-anchor=\"end\">")); p++) {
        double v = strtod(p + 19, NULL);
        cr_assert_float_eq(v * 10, round(v * 10), 1e-9, "y tick %g is not round", v);
    }
    cr_assert_not_null(strstr(buf, ">1.0<"), "%s", buf);
    cr_assert_not_null(strstr(buf, ">150<"), "%s", buf);
    cr_assert_null(strstr(buf, "1.91<"));
    free(buf);
}

// A decoder self-attention grid of a one-word output has panels one cell
// wide: the titles above them are still whole, and every panel starts in
// the same column on the title line and the cell lines.
Test(render, grid_panels_narrower_than_their_titles_keep_the_titles_whole) {
    static const double w1[1] = {1.0}, w2[1] = {0.25};
    const double *panels[2] = {w1, w2};
    static const char *const heads[] = {"head 0", "mean"};
    static const char *const layers[] = {"layer 0"};
    static const char *const word[] = {"he"};
    ts_heatmap_grid g = {.panels = panels, .rows = 1, .cols = 2, .R = 1, .C = 1, .row_titles = layers,
                         .col_titles = heads, .target = word, .source = word};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(ts_render_heatmap_grid_term(f, &g, NULL), TS_OK, "%s", ts_last_error());
    fclose(f);
    // Plain cells are " d" (two columns); the last title is padded to its panel's width. The
    // source word over each panel's cell, and the scale under the grid.
    cr_assert_str_eq(buf, "         he      he\n"
                          "layer 0  head 0  mean  \n"
                          "he        9       2\n"
                          "\n"
                          "scale: weight w as the digit round(9 w), '.' for 0\n", "got:\n%s", buf);
    free(buf);
}
