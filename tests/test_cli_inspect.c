// tinyseq translate, eval and attend on a checkpoint of a small random model,
// and the attention_basics example, run as programs: what they print, the
// files they write and their exit codes.
#include <criterion/criterion.h>
#include <errno.h>
#include <gsl/gsl_rng.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "ckpt/ckpt.h"
#include "infer/load.h"
#include "infer/translate.h"

static const char *const source_side[] = {
    "le chat dort .", "oui", "le chien noir mange vite .", "il dort", "la petite souris mange le pain .",
    "le chat mange", "non .",
};
static const char *const target_side[] = {
    "the cat sleeps .", "yes", "the black dog eats fast .", "he is sleeping", "the small mouse eats the bread .",
    "the cat eats", "no .",
};
static const char *const gold_lines[] = {
    "0-0 1-1 2-2 3-3", "0-0", "0-0 1-2 2-1 3-3 4-4 5-5", "0-0 1-2", "0-0 1-1 2-2 3-3 4-4 5-5 6-6", "0-0 1-1 2-2",
    "0-0 1-1",
};
enum { N_PAIRS = sizeof source_side / sizeof source_side[0] };

static char *dir;

// Writes a checkpoint of a random model with attention `attn` (or a
// Transformer of 2 layers and `heads` heads) trained on nothing, with the
// vocabularies of the pairs above; returns its path.
static char *make_checkpoint_heads(ts_attn_type attn, ts_model_arch arch, int heads, const char *name) {
    ts_corpus *c = ts_corpus_new();
    for (int i = 0; i < N_PAIRS; i++) cr_assert_eq(ts_corpus_add(c, source_side[i], target_side[i], NULL, 0), TS_OK);
    ts_vocab *src, *tgt;
    cr_assert_eq(ts_vocab_build(c, TS_SRC, NULL, 0, 1, &src), TS_OK);
    cr_assert_eq(ts_vocab_build(c, TS_TGT, NULL, 0, 1, &tgt), TS_OK);
    ts_model_config cfg = {.src_vocab = (int)ts_vocab_size(src), .tgt_vocab = (int)ts_vocab_size(tgt), .emb = 6,
                           .hidden = 8, .attn = attn, .decoder = TS_DECODER_LUONG};
    if (arch == TS_ARCH_TRANSFORMER)
        cfg = (ts_model_config){.arch = arch, .src_vocab = cfg.src_vocab, .tgt_vocab = cfg.tgt_vocab, .emb = 8,
                                .hidden = 8, .d_model = 8, .heads = heads, .layers = 2, .ff = 16};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    ts_seq2seq *m = ts_seq2seq_new(&cfg, rng);
    cr_assert(m, "%s", ts_last_error());
    ts_ckpt *ck = ts_ckpt_new();
    ts_translator trained = {.model = m, .src_vocab = src, .tgt_vocab = tgt, .max_len = 10};
    cr_assert_eq(ts_model_to_ckpt(ck, &trained), TS_OK, "%s", ts_last_error());
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    cr_assert_eq(ts_ckpt_save(ck, path), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(ck);
    ts_seq2seq_free(m);
    gsl_rng_free(rng);
    ts_vocab_free(src);
    ts_vocab_free(tgt);
    ts_corpus_free(c);
    return path;
}

static char *make_checkpoint(ts_attn_type attn, ts_model_arch arch, const char *name) {
    return make_checkpoint_heads(attn, arch, 2, name);
}

static char *ckpt, *ckpt_none, *ckpt_transformer, *corpus_path, *gold_path;

static void setup(void) {
    dir = test_tmpdir();
    ckpt = make_checkpoint(TS_ATTN_BAHDANAU, TS_ARCH_GRU, "model.ckpt");
    ckpt_none = make_checkpoint(TS_ATTN_NONE, TS_ARCH_GRU, "plain.ckpt");
    ckpt_transformer = make_checkpoint(TS_ATTN_BAHDANAU, TS_ARCH_TRANSFORMER, "transformer.ckpt");
    char tsv[2048] = "", align[1024] = "";
    for (int i = 0; i < N_PAIRS; i++) {
        // Capitals and an unknown word: eval must normalise and cope.
        snprintf(tsv + strlen(tsv), sizeof tsv - strlen(tsv), "%s\t%s\n", i == 0 ? "Le CHAT dort ." : source_side[i],
                 target_side[i]);
        snprintf(align + strlen(align), sizeof align - strlen(align), "%s\n", gold_lines[i]);
    }
    strcat(tsv, "le zorglub dort .\tthe zorglub sleeps .\n");
    strcat(align, "0-0 1-1 2-2 3-3\n");
    corpus_path = test_write_file(dir, "dev.tsv", tsv, strlen(tsv));
    gold_path = test_write_file(dir, "dev.align", align, strlen(align));
}

static void teardown(void) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(ckpt);
    free(ckpt_none);
    free(ckpt_transformer);
    free(corpus_path);
    free(gold_path);
}

TestSuite(cli_inspect, .init = setup, .fini = teardown);


// What the library itself makes of `text`: the reference for the program.
// text translated by the library with beam width `beam`, as a line of words.
static char *translate_in_process(const char *text, int beam) {
    ts_translator t;
    cr_assert_eq(ts_translator_load(ckpt, &t), TS_OK, "%s", ts_last_error());
    ts_arena *arena = ts_arena_new(16 << 20);
    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    ts_hypothesis h;
    cr_assert_eq(ts_translate_text(&t, &ctx, text, beam, &h, NULL, NULL), TS_OK, "%s", ts_last_error());
    char *line = malloc(4096);
    ts_vocab_decode(t.tgt_vocab, h.tokens, (size_t)h.len, line, 4096);
    ts_hypothesis_free(&h);
    ts_arena_free(arena);
    ts_translator_free(&t);
    return line;
}

// The n-th line (0-based) of text in a static buffer, or NULL.
static const char *line_at(const char *text, int n) {
    static char buf[4096];
    for (int i = 0; i < n && text; i++) {
        text = strchr(text, '\n');
        if (text) text++;
    }
    if (!text || !*text) return NULL;
    size_t len = strcspn(text, "\n");
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    return buf;
}

static int count_lines(const char *text) {
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

Test(cli_inspect, translate_prints_one_line_per_argument) {
    // Beam search of the default width, and greedy with --beam 1, both as
    // the library translates one sentence alone.
    for (int beam = 1; beam <= TS_BEAM_DEFAULT; beam += TS_BEAM_DEFAULT - 1) {
        char *out, *want1 = translate_in_process("le chat dort .", beam), *want2 = translate_in_process("oui", beam);
        int rc = test_runf(&out, "%s translate --model '%s' %s 'Le Chat dort.' oui", TS_PROGRAM, ckpt,
                           beam == 1 ? "--beam 1" : "");
        cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
        cr_assert_eq(count_lines(out), 2, "%s", out);
        cr_assert_str_eq(line_at(out, 0), want1, "beam %d, normalised like training: %s", beam, out);
        cr_assert_str_eq(line_at(out, 1), want2, "beam %d", beam);
        free(out);
        free(want1);
        free(want2);
    }
}

// Beam 0 has one meaning wherever a beam is given: the default width, as
// leaving --beam out (train's --beam 0 once meant greedy, evaluate's beam 0
// greedy, the C API's the default; tests/test_api.c and python's test the
// others). TS_BEAM_MAX bounds every command alike.
Test(cli_inspect, beam_0_is_the_default_width_in_every_command) {
    char *plain, *zero;
    cr_assert_eq(test_runf(&plain, "%s translate --model '%s' 'Le Chat dort.' oui", TS_PROGRAM, ckpt), 0, "%s", plain);
    cr_assert_eq(test_runf(&zero, "%s translate --model '%s' --beam 0 'Le Chat dort.' oui", TS_PROGRAM, ckpt), 0, "%s", zero);
    cr_assert_str_eq(zero, plain, "translate --beam 0");
    free(plain);
    free(zero);
    cr_assert_eq(test_runf(&plain, "%s attend --model '%s' 'le chat dort .'", TS_PROGRAM, ckpt), 0, "%s", plain);
    cr_assert_eq(test_runf(&zero, "%s attend --model '%s' --beam 0 'le chat dort .'", TS_PROGRAM, ckpt), 0, "%s", zero);
    cr_assert_str_eq(zero, plain, "attend --beam 0");
    free(plain);
    free(zero);
    cr_assert_eq(test_runf(&zero, "%s eval --model '%s' --corpus '%s' --beam 0", TS_PROGRAM, ckpt, corpus_path), 0, "%s", zero);
    char want[64];
    snprintf(want, sizeof want, "beam search (width %d)", TS_BEAM_DEFAULT);
    cr_assert(strstr(zero, want), "eval --beam 0:\n%s", zero);
    free(zero);
    const char *commands[] = {"translate", "attend", "eval --corpus x"};
    for (int i = 0; i < 3; i++) {
        char *out;
        int rc = test_runf(&out, "%s %s --model '%s' --beam %d oui", TS_PROGRAM, commands[i], ckpt, TS_BEAM_MAX + 1);
        cr_assert_eq(rc, 2, "%s --beam %d: exit %d\n%s", commands[i], TS_BEAM_MAX + 1, rc, out);
        snprintf(want, sizeof want, "--beam must be between 0 and %d, got %d", TS_BEAM_MAX, TS_BEAM_MAX + 1);
        cr_assert(strstr(out, want), "%s: %s", commands[i], out);
        free(out);
    }
}

Test(cli_inspect, translate_reads_stdin_and_keeps_blank_lines) {
    char *out, *want = translate_in_process("le chat dort .", TS_BEAM_DEFAULT);
    int rc = test_runf(&out, "printf 'le chat dort .\\n\\n  \\r\\nle chat dort .\\r\\n' | %s translate --model '%s'", TS_PROGRAM,
                 ckpt);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert_eq(count_lines(out), 4, "one output line per input line:\n%s", out);
    cr_assert_str_eq(line_at(out, 0), want);
    cr_assert_str_eq(line_at(out, 1), "");
    cr_assert_str_eq(line_at(out, 2), "");
    cr_assert_str_eq(line_at(out, 3), want, "CRLF input");
    free(out);
    // Lone CR line ends (old Mac files): one output line per line.
    rc = test_runf(&out, "printf 'le chat dort .\\roui\\r\\rle chat dort .' | %s translate --model '%s'", TS_PROGRAM, ckpt);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert_eq(count_lines(out), 4, "%s", out);
    cr_assert_str_eq(line_at(out, 0), want);
    cr_assert_str_eq(line_at(out, 2), "");
    cr_assert_str_eq(line_at(out, 3), want);
    free(out);
    free(want);
}

Test(cli_inspect, translate_copes_with_unknown_words) {
    char *out;
    int rc = test_runf(&out, "{ %s translate --model '%s' 'zorglub blorp chat' 'le chat' 2>%s/err; }", TS_PROGRAM, ckpt, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert_eq(count_lines(out), 2, "%s", out);
    free(out);
    // Named on stderr, for the argument that has them only.
    rc = test_runf(&out, "cat %s/err", dir);
    cr_assert(strstr(out, "argument 1: unknown words, read as <unk>: zorglub, blorp\n"), "%s", out);
    cr_assert_null(strstr(out, "argument 2"), "%s", out);
    free(out);
}

// A sentence past the documented maximum is refused by name, quickly, and the
// next line is still translated.
Test(cli_inspect, translate_refuses_an_overlong_line_and_goes_on) {
    char *out;
    int rc = test_runf(&out,
                 "{ { echo oui; yes 'le chat' | head -n 501 | tr '\\n' ' '; echo; echo 'non .'; } | "
                 "%s translate --model '%s' --beam 10 2>%s/err; }",
                 TS_PROGRAM, ckpt, dir);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert_eq(count_lines(out), 3, "%s", out);
    cr_assert_str_eq(line_at(out, 1), "", "%s", out);
    cr_assert(line_at(out, 2)[0] != '\0', "the line after it is translated:\n%s", out);
    free(out);
    rc = test_runf(&out, "cat %s/err", dir);
    cr_assert(strstr(out, "line 2") && strstr(out, "1002 tokens, more than the 1000"), "%s", out);
    free(out);
}

Test(cli_inspect, attend_marks_unknown_words_in_every_figure) {
    char *out;
    int rc = test_runf(&out, "{ %s attend --model '%s' --svg %s/u.svg --json %s/u.json --color always 'le zorglub dort' 2>%s/err; }",
                 TS_PROGRAM, ckpt, dir, dir, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "<unk>:zorglub"), "terminal:\n%s", out);
    free(out);
    rc = test_runf(&out, "cat %s/err", dir);
    cr_assert(strstr(out, "unknown words, read as <unk>: zorglub\n"), "%s", out);
    free(out);
    rc = test_runf(&out, "cat %s/u.svg", dir);
    cr_assert(strstr(out, ">&lt;unk&gt;:zorglub<"), "SVG:\n%s", out);
    free(out);
    rc = test_runf(&out, "/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"source\"])' %s/u.json", dir);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "[\'le\', \'<unk>:zorglub\', \'dort\']"), "JSON: %s", out);
    free(out);
}

Test(cli_inspect, translate_names_a_bad_line_and_goes_on) {
    char *out;
    // Braces: test_run adds 2>&1 after the command, which must not reach the program.
    int rc = test_runf(&out, "{ printf 'oui\\n\\377 non\\nnon .\\n' | %s translate --model '%s' 2>%s/err; }", TS_PROGRAM,
                 ckpt, dir);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert_eq(count_lines(out), 3, "the bad line still gets its (blank) output line:\n%s", out);
    cr_assert_str_eq(line_at(out, 1), "");
    cr_assert(line_at(out, 2)[0] != '\0', "the line after it is translated");
    free(out);
    rc = test_runf(&out, "cat %s/err", dir);
    cr_assert(strstr(out, "line 2") && strstr(out, "invalid UTF-8"), "%s", out);
    free(out);
}

// Parses the required last line; fails the test when it does not match.
static void parse_eval_line(const char *out, double *bleu, double *ppl, double *exact, size_t *pairs,
                            const char **rest) {
    const char *last = strstr(out, "\neval: bleu=");
    cr_assert(last, "no final eval line:\n%s", out);
    last++;
    cr_assert_eq(strchr(last, '\n') - last, (long)strlen(last) - 1, "the eval line must be the last:\n%s", out);
    int used = 0;
    double chrf;
    cr_assert_eq(sscanf(last, "eval: bleu=%lf chrf=%lf ppl=%lf exact=%lf pairs=%zu%n", bleu, &chrf, ppl, exact, pairs,
                        &used), 5, "%s", last);
    cr_assert(chrf >= 0.0 && chrf <= 1.0, "chrf %g: %s", chrf, last);
    // Four decimals for BLEU and exact, three for perplexity.
    const char *b = strstr(last, "bleu=") + 5, *p = strstr(last, "ppl=") + 4, *e = strstr(last, "exact=") + 6;
    cr_assert_eq(strcspn(b, " "), 6, "bleu as %%.4f: %s", last);
    cr_assert_eq(strcspn(strchr(p, '.'), " "), 4, "ppl as %%.3f: %s", last);
    cr_assert_eq(strcspn(e, " "), 6, "exact as %%.4f: %s", last);
    *rest = last + used;
}

Test(cli_inspect, eval_ends_with_the_summary_line) {
    char *out;
    int rc = test_runf(&out, "%s eval --model '%s' --corpus '%s'", TS_PROGRAM, ckpt, corpus_path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    double bleu, ppl, exact;
    size_t pairs;
    const char *rest;
    parse_eval_line(out, &bleu, &ppl, &exact, &pairs, &rest);
    cr_assert(bleu >= 0 && bleu <= 1 && exact >= 0 && exact <= 1 && ppl >= 1, "%s", out);
    cr_assert_eq(pairs, N_PAIRS + 1);
    double detok;
    int used = 0;
    cr_assert_eq(sscanf(rest, " bleu_detok=%lf%n", &detok, &used), 1, "no aer without --align, then bleu_detok: %s", rest);
    cr_assert_str_eq(rest + used, "\n");
    cr_assert(detok >= 0 && detok <= 1, "%s", rest);
    cr_assert(strstr(out, "pad_mass=0\n"), "%s", out);
    cr_assert(strstr(out, "reference:") && strstr(out, "1-5"), "examples and buckets:\n%s", out);
    free(out);
}

// Targets of three words have no 4-gram: BLEU-4 is 0 whatever the output.
// eval says why on stderr and chrF still gives a number.
Test(cli_inspect, eval_explains_a_bleu_of_zero_on_short_targets) {
    const char tsv[] = "le chat dort .\tthe cat sleeps\nle chien dort .\tthe dog sleeps\n";
    char *path = test_write_file(dir, "short.tsv", tsv, strlen(tsv)), *out;
    int rc = test_runf(&out, "%s eval --model '%s' --corpus '%s' --show 0", TS_PROGRAM, ckpt, path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    double bleu, ppl, exact;
    size_t pairs;
    const char *rest;
    parse_eval_line(out, &bleu, &ppl, &exact, &pairs, &rest);
    cr_assert_eq(bleu, 0.0);
    cr_assert(strstr(out, "note: BLEU-4 is 0 on this corpus whatever the outputs: none of its 2 references has 4 words"),
              "%s", out);
    free(out);
    free(path);
}

Test(cli_inspect, eval_with_gold_alignments_reports_aer) {
    char *out;
    int rc = test_runf(&out, "%s eval --model '%s' --corpus '%s' --align '%s' --beam 2 --show 0", TS_PROGRAM, ckpt,
                 corpus_path, gold_path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    double bleu, ppl, exact, aer, diag, forced, forced_best;
    size_t pairs;
    const char *rest;
    parse_eval_line(out, &bleu, &ppl, &exact, &pairs, &rest);
    int used = 0;
    cr_assert_eq(sscanf(rest, " aer=%lf aer_diagonal=%lf aer_forced=%lf aer_forced_best=%lf%n", &aer, &diag, &forced,
                        &forced_best, &used), 4, "%s", rest);
    cr_assert(!strncmp(rest + used, " bleu_detok=", 12) && strchr(rest + used, '\n')[1] == '\0', "%s", rest);
    cr_assert(aer >= 0 && aer <= 1 && diag >= 0 && diag <= 1 && forced >= 0 && forced <= 1);
    cr_assert_eq(forced_best, forced, "a GRU has one head: its best is itself");
    cr_assert(!strstr(out, "force-decoded, by layer"), "no table for one head:\n%s", out);
    free(out);
    // --max-len drops pairs and their gold lines together.
    rc = test_runf(&out, "%s eval --model '%s' --corpus '%s' --align '%s' --max-len 3", TS_PROGRAM, ckpt, corpus_path,
             gold_path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "pairs=4 aer="), "%s", out);
    free(out);
}

Test(cli_inspect, eval_refuses_gold_alignments_that_do_not_correspond) {
    const char *two_lines = "0-0\n0-0\n", *bad_link = "0-0\n0-9\n\n\n\n\n\n\n";
    char *out, *short_gold = test_write_file(dir, "short.align", two_lines, strlen(two_lines));
    int rc = test_runf(&out, "%s eval --model '%s' --corpus '%s' --align '%s'", TS_PROGRAM, ckpt, corpus_path, short_gold);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "has 2 lines") && strstr(out, "has 8 sentence pairs"), "%s", out);
    free(out);
    char *bad_gold = test_write_file(dir, "bad.align", bad_link, strlen(bad_link));
    rc = test_runf(&out, "%s eval --model '%s' --corpus '%s' --align '%s'", TS_PROGRAM, ckpt, corpus_path, bad_gold);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "bad.align:2") && strstr(out, "0-9"), "%s", out);
    free(out);
    free(short_gold);
    free(bad_gold);
}

Test(cli_inspect, attend_draws_svg_json_and_pharaoh) {
    char *out;
    int rc = test_runf(&out, "%s attend --model '%s' --svg %s/a.svg --json %s/a.json --pharaoh 'Le chien mange le pain.'",
                 TS_PROGRAM, ckpt, dir, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "attention: bahdanau (luong decoder)"), "%s", out);
    // The last row is the <eos> step, or "<cut>" when a random model runs to the length limit.
    cr_assert(strstr(out, "<eos>") || strstr(out, "<cut>"), "the last step's row is shown:\n%s", out);
    // Pharaoh: the line after the heading holds only i-j pairs.
    const char *ph = strstr(out, "alignment (source-target):\n");
    cr_assert(ph, "%s", out);
    ph = strchr(ph, '\n') + 1;
    for (const char *p = ph; *p && *p != '\n';) {
        int i, j, used = 0;
        cr_assert_eq(sscanf(p, "%d-%d%n", &i, &j, &used), 2, "not an i-j pair at '%s'", p);
        cr_assert(i >= 0 && i < 6 && j >= 0, "%d-%d", i, j);
        p += used;
        if (*p == ' ') p++;
    }
    free(out);

    rc = test_runf(&out, "xmllint --noout %s/a.svg", dir);
    cr_assert_eq(rc, 0, "xmllint: %s", out);
    free(out);
    const char *words[] = {">le<", ">chien<", ">mange<", ">pain<", ">.<"};
    rc = test_runf(&out, "cat %s/a.svg", dir);
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        cr_assert(strstr(out, words[i]), "the SVG lacks source word %s", words[i]);
    free(out);
    rc = test_runf(&out,
             "/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "assert d[\"source\"]==[\"le\",\"chien\",\"mange\",\"le\",\"pain\",\".\"], d[\"source\"]; "
             "assert d[\"target\"][-1]==\"<eos>\" or d[\"target\"][-1]==\"<cut>\"; "
             "assert len(d[\"weights\"])==len(d[\"target\"]); "
             "assert all(abs(sum(r)-1)<1e-9 for r in d[\"weights\"]); print(\"ok\")' %s/a.json",
             dir);
    cr_assert_eq(rc, 0, "python3: %s", out);
    free(out);
}

Test(cli_inspect, attend_plain_table_with_beam_search) {
    char *out;
    int rc = test_runf(&out, "%s attend --model '%s' --beam 4 --svg %s/beam.svg 'le chat dort .'", TS_PROGRAM, ckpt, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "beam 4"), "%s", out);
    free(out);
    // The figure's title names the search too (issue 22 item 9).
    rc = test_runf(&out, "cat %s/beam.svg", dir);
    cr_assert(strstr(out, "decoder), beam 4</text>"), "SVG:\n%s", out);
    free(out);
    rc = test_runf(&out, "%s attend --model '%s' --beam 4 'le chat dort .'", TS_PROGRAM, ckpt);
    cr_assert(strstr(out, "chat") && strstr(out, "dort"), "source words head the columns:\n%s", out);
    cr_assert(!strchr(out, '\033'), "no escape codes when stdout is not a terminal");
    free(out);
    rc = test_runf(&out, "%s attend --model '%s' --color always --values oui", TS_PROGRAM, ckpt);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strchr(out, '\033'), "--color always colours even a pipe");
    free(out);
}

Test(cli_inspect, attend_says_when_there_is_no_attention) {
    char *out;
    int rc = test_runf(&out, "%s attend --model '%s' --svg %s/none.svg 'le chat dort .'", TS_PROGRAM, ckpt_none, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "output: "), "the translation is still printed:\n%s", out);
    cr_assert(strstr(out, "no attention"), "%s", out);
    free(out);
    rc = test_runf(&out, "test -e %s/none.svg", dir);
    cr_assert_neq(rc, 0, "no SVG for a model without attention");
    free(out);
}

Test(cli_inspect, usage_errors_exit_2) {
    const char *commands[] = {"translate", "eval", "attend"};
    for (int i = 0; i < 3; i++) {
        char *out;
        int rc = test_runf(&out, "%s %s --model '%s' --no-such-flag x", TS_PROGRAM, commands[i], ckpt);
        cr_assert_eq(rc, 2, "%s: exit %d\n%s", commands[i], rc, out);
        cr_assert(strstr(out, "unknown option --no-such-flag"), "%s", out);
        free(out);
        rc = test_runf(&out, "%s %s --help", TS_PROGRAM, commands[i]);
        cr_assert_eq(rc, 0, "%s --help", commands[i]);
        cr_assert(strstr(out, "usage: tinyseq"), "%s", out);
        free(out);
        rc = test_runf(&out, "%s %s x", TS_PROGRAM, commands[i]);
        cr_assert_eq(rc, 2, "%s without --model: exit %d\n%s", commands[i], rc, out);
        free(out);
    }
    char *out;
    cr_assert_eq(test_runf(&out, "%s translate --model '%s' --beam 1001 oui", TS_PROGRAM, ckpt), 2, "%s", out);
    free(out);
    cr_assert_eq(test_runf(&out, "%s attend --model '%s' --color sometimes oui", TS_PROGRAM, ckpt), 2, "%s", out);
    free(out);
    cr_assert_eq(test_runf(&out, "%s eval --model '%s' --corpus x --show -1", TS_PROGRAM, ckpt), 2, "%s", out);
    free(out);
}

Test(cli_inspect, missing_or_corrupt_checkpoints_exit_1_naming_the_file) {
    const char *commands[] = {"translate --model %s/missing.ckpt oui", "attend --model %s/missing.ckpt oui",
                              "eval --corpus /dev/null --model %s/missing.ckpt"};
    for (int i = 0; i < 3; i++) {
        char args[4096], *out;
        snprintf(args, sizeof args, commands[i], dir);
        int rc = test_runf(&out, "%s %s", TS_PROGRAM, args);
        cr_assert_eq(rc, 1, "%s: exit %d\n%s", args, rc, out);
        cr_assert(strstr(out, "missing.ckpt"), "the message names the file:\n%s", out);
        free(out);
    }
    // A text file, and a real checkpoint cut in half.
    char *text = test_write_file(dir, "notes.ckpt", "this is not a checkpoint\n", 25);
    char *out;
    for (int i = 0; i < 3; i++) {
        const char *cmd = i == 0 ? "translate" : i == 1 ? "attend" : "eval --corpus /dev/null";
        int rc = test_runf(&out, "%s %s --model '%s'%s", TS_PROGRAM, cmd, text, i < 2 ? " oui" : "");
        cr_assert_eq(rc, 1, "%s: exit %d (a signal is 128+)\n%s", cmd, rc, out);
        cr_assert(strstr(out, "notes.ckpt"), "%s", out);
        free(out);
    }
    int rc = test_runf(&out, "head -c 300 '%s' > %s/half.ckpt && %s translate --model %s/half.ckpt oui", ckpt, dir,
                 TS_PROGRAM, dir);
    cr_assert_eq(rc, 1, "truncated checkpoint: exit %d\n%s", rc, out);
    cr_assert(strstr(out, "half.ckpt"), "%s", out);
    free(out);
    free(text);
}

// A pair past the documented maximum is left out and counted, even with
// --max-len 0, instead of sizing the evaluation for it.
Test(cli_inspect, eval_leaves_out_pairs_past_the_maximum_length) {
    char *out;
    int rc = test_runf(&out,
                 "{ echo 'le chat dort .\tthe cat sleeps .'; yes chat | head -n 1001 | tr '\\n' ' '; "
                 "printf '\tthe cat\\n'; } > %s/long.tsv && %s eval --model '%s' --corpus %s/long.tsv --max-len 0",
                 dir, TS_PROGRAM, ckpt, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "2 pairs, 1 with a side longer than 1000 tokens left out"), "%s", out);
    double bleu, ppl, exact;
    size_t pairs;
    const char *rest;
    parse_eval_line(out, &bleu, &ppl, &exact, &pairs, &rest);
    cr_assert_eq(pairs, 1);
    free(out);
}

// Figures are written atomically and say why they could not be: a missing
// directory, and a write past the file size limit (ulimit -f), which must not
// kill the program with SIGXFSZ but fail like a full disk: message, exit 1,
// the old figure intact, no temporary file left.
Test(cli_inspect, attend_figure_write_failures_say_why_and_keep_the_old_file) {
    char *out;
    int rc = test_runf(&out, "%s attend --model '%s' --svg %s/missing/a.svg oui", TS_PROGRAM, ckpt, dir);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "missing/a.svg") && strstr(out, strerror(ENOENT)), "%s", out);
    free(out);
    const char *flags[] = {"--svg", "--json"};
    for (int i = 0; i < 2; i++) {
        char *old = test_write_file(dir, "old.fig", "old figure\n", 11), cmd[8192];
        snprintf(cmd, sizeof cmd, "exec %s attend --model '%s' --force %s '%s' 'le chat dort .' >/dev/null", TS_PROGRAM, ckpt,
                 flags[i], old);
        int err[2];  // the child's stderr: a pipe, which the file size limit does not cut
        cr_assert_eq(pipe(err), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            struct rlimit lim = {.rlim_cur = 64, .rlim_max = RLIM_INFINITY};
            if (setrlimit(RLIMIT_FSIZE, &lim) != 0 || dup2(err[1], 2) < 0) _exit(99);
            close(err[0]);
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(98);
        }
        close(err[1]);
        char message[4096] = "";
        size_t got = 0;
        ssize_t n;
        while ((n = read(err[0], message + got, sizeof message - 1 - got)) > 0) got += (size_t)n;
        close(err[0]);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status), "%s: killed by signal %d", flags[i], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        cr_assert_eq(WEXITSTATUS(status), 1, "%s: %s", flags[i], message);
        cr_assert(strstr(message, strerror(EFBIG)), "%s: says why: %s", flags[i], message);
        rc = test_runf(&out, "cat '%s'; ls '%s'", old, dir);
        cr_assert(!strncmp(out, "old figure\n", 11), "%s: the old file is intact:\n%s", flags[i], out);
        cr_assert_null(strstr(out, ".tmp"), "%s: no temporary file left:\n%s", flags[i], out);
        free(out);
        free(old);
    }
}

Test(cli_inspect, eval_reports_an_unreadable_corpus) {
    char *out;
    int rc = test_runf(&out, "%s eval --model '%s' --corpus %s/nope.tsv", TS_PROGRAM, ckpt, dir);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "nope.tsv"), "%s", out);
    free(out);
}

// ---- the attention_basics example ----------------------------------------

// The example sits in the build tree next to the program: <build>/examples/.
static char *example_path(void) {
    char *copy = strdup(TS_PROGRAM), *path = malloc(strlen(TS_PROGRAM) + 64);
    sprintf(path, "%s/examples/attention_basics", dirname(copy));
    free(copy);
    return path;
}

// The three numbers after `label` in out.
static void numbers_after(const char *out, const char *label, double v[3]) {
    const char *at = strstr(out, label);
    cr_assert(at, "no '%s' in the output", label);
    cr_assert_eq(sscanf(at + strlen(label), "%lf %lf %lf", &v[0], &v[1], &v[2]), 3, "%s", at);
}

Test(attention_basics, prints_the_reference_numbers) {
    char *path = example_path(), *out;
    int rc = test_runf(&out, "'%s'", path);
    cr_assert_eq(rc, 0, "%s: exit %d\n%s", path, rc, out);
    cr_assert(strstr(out, "927") && strstr(out, "397") && strstr(out, "148") && strstr(out, "929"), "scores");
    cr_assert(strstr(out, "exp(929) = inf"), "the overflow is shown:\n%s", out);
    cr_assert(strstr(out, "exactly 0\n"), "the weight of 148 underflows to 0");
    cr_assert(strstr(out, "7.94715e-232"), "the tiny weight is printed, not rounded away");
    cr_assert(strstr(out, "3.88080") && strstr(out, "45.26424"), "context vector");
    cr_assert(strstr(out, "0.98522") && strstr(out, "1.74174") && strstr(out, "0.75652"), "out row 1");
    cr_assert(strstr(out, "0.90965") && strstr(out, "0.99851") && strstr(out, "1.90407"), "out rows 2-4");
    // The full-precision lines agree with docs/attention.md to 1e-12.
    double got[3];
    const double context[3] = {3.8807970779778826, 4.0728262981990575, 45.26423912339337};
    const double row1[3] = {0.9852202489021356, 1.741740509995756, 0.7565202610936204};
    numbers_after(out, "c to full precision:", got);
    assert_allclose(got, context, 3, 0, 1e-12);
    numbers_after(out, "word 1's output to full precision:", got);
    assert_allclose(got, row1, 3, 0, 1e-12);
    free(out);
    free(path);
}

// ---- a Transformer's heads (issue 24 item 4) ----

Test(cli_inspect, attend_on_a_transformer_says_which_matrix_it_shows_and_picks_one) {
    char *out;
    int rc = test_runf(&out, "%s attend --model '%s' 'le chat dort .'", TS_PROGRAM, ckpt_transformer);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "attention: transformer cross-attention, layer 1 (the last of 2), mean of 2 heads, beam 5"),
              "the default names its layer and says it is a mean of heads:\n%s", out);
    free(out);
    rc = test_runf(&out, "%s attend --model '%s' --layer 0 --head 1 'le chat dort .'", TS_PROGRAM, ckpt_transformer);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "cross-attention, layer 0 (the first of 2), head 1 of 2"), "%s", out);
    free(out);
    // Encoder self-attention: source words on both sides.
    rc = test_runf(&out, "%s attend --model '%s' --self enc 'le chat dort .'", TS_PROGRAM, ckpt_transformer);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "encoder self-attention, layer 1"), "%s", out);
    cr_assert(strstr(out, "\nchat "), "source words label the rows:\n%s", out);
    free(out);
    rc = test_runf(&out, "%s attend --model '%s' --self dec --heads --svg %s/dec.svg 'le chat dort .'", TS_PROGRAM,
                   ckpt_transformer, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "decoder self-attention, beam 5\nevery layer (2) x head (2)"), "%s", out);
    cr_assert(strstr(out, "layer 0  ") && strstr(out, "layer 1  ") && strstr(out, "head 1") && strstr(out, "mean"),
              "the terminal grid titles its panels:\n%s", out);
    free(out);
    rc = test_runf(&out, "xmllint --noout %s/dec.svg && grep -c '<text' %s/dec.svg && grep -q '>&lt;sos&gt;<' %s/dec.svg",
                   dir, dir, dir);
    cr_assert_eq(rc, 0, "the grid SVG is well-formed and labels the decoder's <sos> input: %s", out);
    free(out);
    // One view's figure names its axes as that view reads them.
    const char *views[][3] = {{"dec", "decoder input", "target"}, {"enc", "source", "source"}, {"cross", "source", "target"}};
    for (int k = 0; k < 3; k++) {
        rc = test_runf(&out, "%s attend --model '%s' %s%s --svg %s/one.svg --force 'le chat dort .'", TS_PROGRAM,
                       ckpt_transformer, strcmp(views[k][0], "cross") ? "--self " : "",
                       strcmp(views[k][0], "cross") ? views[k][0] : "", dir);
        cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
        free(out);
        char path[1024], axis[64];
        snprintf(path, sizeof path, "%s/one.svg", dir);
        char *svg = test_read_file(path, NULL);
        cr_assert_not_null(svg);
        for (int a = 1; a <= 2; a++) {
            snprintf(axis, sizeof axis, "font-style=\"italic\" fill=\"#444444\"");
            const char *at = strstr(svg, axis);
            if (a == 2 && at) at = strstr(at + 1, axis);
            cr_assert(at && strstr(at, views[k][a]) && strchr(at, '>') &&
                          !strncmp(strchr(at, '>') + 1, views[k][a], strlen(views[k][a])),
                      "--self %s: the %s axis is \"%s\"", views[k][0], a == 1 ? "column" : "row", views[k][a]);
        }
        free(svg);
    }
}

// --heads fits the terminal's width (here $COLUMNS, the output a pipe):
// fewer heads a line, the source words over the panels, and the scale.
Test(cli_inspect, attend_heads_fits_the_width_with_word_labels_and_a_scale) {
    const char *sentence = "le chat noir ne mange pas le pain blanc de la petite fille .";
    const int widths[] = {80, 60, 200};
    for (int w = 0; w < 3; w++) {
        char *out;
        int rc = test_runf(&out, "COLUMNS=%d %s attend --model '%s' --heads '%s'", widths[w], TS_PROGRAM,
                           ckpt_transformer, sentence);
        cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
        int widest = 0, heads_lines = 0;
        for (char *line = out, *end; *line; line = end + 1) {
            end = strchr(line, '\n');
            if (!end) end = line + strlen(line);
            char *text = strndup(line, (size_t)(end - line));
            int cols = test_widest_line(text);
            free(text);
            if (strncmp(line, "source: ", 8) && strncmp(line, "output: ", 8) && strncmp(line, "tinyseq attend: ", 16))
                widest = cols > widest ? cols : widest;
            heads_lines += !strncmp(line, "layer 0  head 0", 15);
            if (!*end) break;
        }
        cr_assert(widest <= widths[w], "COLUMNS=%d: a line of %d columns:\n%s", widths[w], widest, out);
        cr_assert_eq(heads_lines, 1, "%s", out);
        // At 60 columns one panel a line: "head 1" starts a line of its own; at 200 all three share one.
        cr_assert(widths[w] == 60 ? strstr(out, "\n         head 1") != NULL : strstr(out, "head 0  ") != NULL, "%s", out);
        cr_assert(strstr(out, "chat") && strstr(out, "mange") && strstr(out, "peti"), "the source words:\n%s", out);
        cr_assert(strstr(out, "\nscale: weight w as the digit round(9 w)"), "%s", out);
        free(out);
    }
}

// Nothing attend prints passes 80 columns (issue 47 point 4: a 25-token
// sentence wrapped every row): the source, output and title lines wrapped,
// the heatmap's columns in blocks, with and without values, in colour, in
// shades and as the plain table, a GRU's and a Transformer's; every source
// word is on the page whole.
Test(cli_inspect, attend_fits_80_columns_in_every_view) {
    const char *sentence = "le chat noir mange le pain de la petite souris et le chien dort vite , oui non il "
                           "mange le pain blanc aujourdhui .";
    const char *views[] = {"", "--values", "--color always", "--color always --values", "--color never --values",
                           "--heads", "--heads --color always", "--self enc --color always --values", "--pharaoh"};
    const char *models[] = {ckpt, ckpt_transformer};
    for (size_t m = 0; m < 2; m++)
        for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
            if (m == 0 && (strstr(views[v], "--heads") || strstr(views[v], "--self"))) continue;  // a GRU has no heads
            char *out;
            int rc = test_runf(&out, "(COLUMNS=80 %s attend --model '%s' %s '%s' 2>/dev/null)", TS_PROGRAM, models[m],
                               views[v], sentence);
            cr_assert_eq(rc, 0, "%s: exit %d:\n%s", views[v], rc, out);
            cr_assert_leq(test_widest_line(out), 80, "%s %s: %d columns:\n%s", models[m], views[v],
                          test_widest_line(out), out);
            cr_assert(strstr(out, "aujourdhui") && strstr(out, "souris"), "%s: the words in full:\n%s", views[v], out);
            if (!strstr(views[v], "--heads"))
                cr_assert(strstr(out, "\ncolumns 1-"), "%s: the columns in blocks:\n%s", views[v], out);
            free(out);
        }
}

Test(cli_inspect, attend_json_of_a_transformer_holds_every_layer_head_and_mean) {
    char *out;
    int rc = test_runf(&out, "%s attend --model '%s' --json %s/t.json 'le chien mange le pain .'", TS_PROGRAM,
                       ckpt_transformer, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    free(out);
    // Shapes, means, the causal mask, rows summing to 1, and "weights" as the
    // last layer's cross-attention mean (what the search used).
    rc = test_runf(&out,
                   "/usr/bin/python3 -c 'import json,sys\n"
                   "d=json.load(open(sys.argv[1])); L,H=d[\"layers\"],d[\"heads\"]; S,T=len(d[\"source\"]),len(d[\"target\"])\n"
                   "assert (L,H)==(2,2) and d[\"attention\"]==\"transformer\", (L,H,d[\"attention\"])\n"
                   "side={\"source\":S,\"target\":T,\"target_in\":T}\n"
                   "for name in (\"cross\",\"enc\",\"dec\"):\n"
                   "  v=d[name]; R,C=side[v[\"rows\"]],side[v[\"cols\"]]\n"
                   "  assert len(v[\"heads\"])==L and len(v[\"mean\"])==L, name\n"
                   "  for l in range(L):\n"
                   "    assert len(v[\"heads\"][l])==H, name\n"
                   "    for h in v[\"heads\"][l]:\n"
                   "      assert len(h)==R and all(len(r)==C and abs(sum(r)-1)<1e-12 for r in h), name\n"
                   "    for i in range(R):\n"
                   "      for j in range(C):\n"
                   "        m=sum(v[\"heads\"][l][k][i][j] for k in range(H))/H\n"
                   "        assert abs(m-v[\"mean\"][l][i][j])<1e-15, (name,l,i,j)\n"
                   "        assert name!=\"dec\" or j<=i or all(v[\"heads\"][l][k][i][j]==0 for k in range(H)), (l,i,j)\n"
                   "assert (d[\"cross\"][\"rows\"],d[\"cross\"][\"cols\"],d[\"dec\"][\"cols\"])==(\"target\",\"source\",\"target_in\")\n"
                   "assert len(d[\"weights\"])==T and all(len(r)==S for r in d[\"weights\"])\n"
                   "assert all(abs(a-b)<1e-12 for r,m in zip(d[\"weights\"],d[\"cross\"][\"mean\"][L-1]) for a,b in zip(r,m))\n"
                   "print(\"ok\")' %s/t.json",
                   dir);
    cr_assert_eq(rc, 0, "python3: %s", out);
    free(out);
}

// --pharaoh with --layer and --head aligns with that head: each output word's
// link is the argmax of that head's row in the JSON.
Test(cli_inspect, attend_pharaoh_follows_the_chosen_head) {
    char *out;
    int rc = test_runf(&out, "%s attend --model '%s' --beam 1 --layer 0 --head 1 --pharaoh --json %s/p.json "
                             "'le chien mange le pain .' | sed -n '/^alignment/{n;p}'", TS_PROGRAM, ckpt_transformer, dir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    out[strcspn(out, "\n")] = '\0';
    char *want;
    rc = test_runf(&want,
                   "/usr/bin/python3 -c 'import json,sys\n"
                   "d=json.load(open(sys.argv[1])); m=d[\"cross\"][\"heads\"][0][1]\n"
                   "print(\" \".join(f\"{max(range(len(r)),key=lambda i:r[i])}-{j}\" for j,r in enumerate(m[:-1])))' %s/p.json",
                   dir);
    cr_assert_eq(rc, 0, "%s", want);
    want[strcspn(want, "\n")] = '\0';
    cr_assert_str_eq(out, want, "--pharaoh did not align with layer 0 head 1");
    free(out);
    free(want);
}

Test(cli_inspect, attend_refuses_head_flags_it_cannot_honour) {
    struct {
        const char *model, *flags, *says;
    } cases[] = {
        {ckpt_transformer, "--layer 2", "--layer 2: "},
        {ckpt_transformer, "--layer -1", "--layer 0..1"},
        {ckpt_transformer, "--head 2", "--head 0..1"},
        {ckpt_transformer, "--self cross", "--self expects enc"},
        {ckpt_transformer, "--heads --layer 0", "--heads draws every layer and head"},
        {ckpt_transformer, "--self enc --pharaoh", "cannot go with --self"},
        {ckpt, "--heads", "--heads needs layers of attention heads"},
        {ckpt, "--layer 0", "has one attention matrix, shown without it"},
        {ckpt, "--self dec", "--self needs layers of attention heads"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int rc = test_runf(&out, "%s attend --model '%s' %s 'le chat dort .'", TS_PROGRAM, cases[i].model, cases[i].flags);
        cr_assert_eq(rc, 2, "%s: exit %d:\n%s", cases[i].flags, rc, out);
        cr_assert(strstr(out, cases[i].says), "%s: the message lacks '%s':\n%s", cases[i].flags, cases[i].says, out);
        cr_assert(!strstr(out, "output:"), "%s: refused before translating:\n%s", cases[i].flags, out);
        free(out);
    }
}

// The number after `key` in text.
static double number_after(const char *text, const char *key) {
    const char *at = strstr(text, key);
    cr_assert(at, "no '%s' in:\n%s", key, text);
    return strtod(at + strlen(key), NULL);
}

// eval --align's tables fit 80 columns (issue 47's targets), a Transformer
// of 8 heads' too: the heads that do not fit go on in blocks, each layer's
// row in each; the titles are lines of text under 80 columns.
Test(cli_inspect, eval_tables_fit_80_columns) {
    char *wide = make_checkpoint_heads(TS_ATTN_BAHDANAU, TS_ARCH_TRANSFORMER, 8, "eight.ckpt");
    char *out;
    int rc = test_runf(&out, "(COLUMNS=80 %s eval --model '%s' --corpus '%s' --align '%s' --shift-att --explain grad "
                             "--show 0 2>/dev/null)", TS_PROGRAM, wide, corpus_path, gold_path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    char *summary = strstr(out, "\neval: ");  // the summary line is for scripts: one line, whatever its width
    cr_assert(summary, "%s", out);
    *summary = '\0';
    cr_assert_leq(test_widest_line(out), 80, "%d columns:\n%s", test_widest_line(out), out);
    // Eight heads and the mean, 10 columns each, are 100 columns: two blocks of the AER tables,
    // three of the agreement's 18-column cells.
    cr_assert(strstr(out, "\nheads 0-4 of 8:\n") && strstr(out, "\nheads 5-7 of 8, and the mean:\n"), "%s", out);
    cr_assert(strstr(out, "\nheads 0-2 of 8:\n") && strstr(out, "\nheads 6-7 of 8, and the mean:\n"), "%s", out);
    cr_assert(strstr(out, "    head 7      mean\n  layer 0 "), "%s", out);
    free(out);
    free(wide);
}

// eval's examples wrap to the terminal under their text (issue 47: they
// were printed whole and wrapped at the terminal's edge);
// to a pipe without $COLUMNS each stays one line, and the words are the same.
Test(cli_inspect, eval_examples_wrap_to_the_terminal_under_their_text) {
    char *narrow, *whole;
    int rc = test_runf(&narrow, "(COLUMNS=40 %s eval --model '%s' --corpus '%s' --show 3 2>/dev/null)", TS_PROGRAM,
                       ckpt, corpus_path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, narrow);
    rc = test_runf(&whole, "(unset COLUMNS; %s eval --model '%s' --corpus '%s' --show 3 2>/dev/null)", TS_PROGRAM,
                   ckpt, corpus_path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, whole);
    char *from = strstr(narrow, "\nexamples:\n"), *to = from ? strstr(from, "\nBLEU by source length") : NULL;
    cr_assert(from && to, "%s", narrow);
    *to = '\0';
    cr_assert_leq(test_widest_line(from), 40, "%d columns:\n%s", test_widest_line(from), from);
    cr_assert(strstr(from, "\n             "), "no line continues under its text:\n%s", from);
    // The same words in the same order: the wrapped lines joined are the whole ones.
    const char *a = from, *b = strstr(whole, "\nexamples:\n");
    cr_assert(b);
    while (*a) {
        while (*a == ' ' || *a == '\n') a++;
        while (*b == ' ' || *b == '\n') b++;
        if (!*a) break;
        cr_assert_eq(*a, *b, "the wrapped examples read otherwise at '%.30s' / '%.30s'", a, b);
        a++, b++;
    }
    free(narrow);
    free(whole);
}

Test(cli_inspect, eval_align_on_a_transformer_scores_every_head_and_names_the_best) {
    char *out;
    int rc = test_runf(&out, "%s eval --model '%s' --corpus '%s' --align '%s'", TS_PROGRAM, ckpt_transformer, corpus_path,
                       gold_path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    const char *table = strstr(out, "AER by layer and head");
    cr_assert(table, "%s", out);
    cr_assert(strstr(table, "head 0    head 1      mean\n"), "%s", table);
    double aer[2][3], best = 2;
    for (int l = 0; l < 2; l++) {
        char key[16];
        snprintf(key, sizeof key, "layer %d ", l);
        const char *row = strstr(table, key);
        cr_assert(row, "%s", table);
        char *end = (char *)row + strlen(key);
        for (int k = 0; k < 3; k++) {
            aer[l][k] = strtod(end, &end);
            cr_assert(aer[l][k] >= 0 && aer[l][k] <= 1, "layer %d column %d: %g", l, k, aer[l][k]);
            if (k < 2 && aer[l][k] < best) best = aer[l][k];
        }
    }
    // The last layer's mean is what the search attends with: eval's aer=.
    const char *summary = strstr(out, "\neval: ");
    cr_assert(summary, "%s", out);
    cr_assert(fabs(aer[1][2] - number_after(summary, " aer=")) < 1e-4, "%s", out);
    const char *named = strstr(out, "best-aligned head: layer ");
    int bl, bk;
    double baer;
    cr_assert_eq(sscanf(named, "best-aligned head: layer %d head %d (aer %lf", &bl, &bk, &baer), 3, "%s", named);
    cr_assert(fabs(baer - best) < 1e-4 && fabs(aer[bl][bk] - best) < 1e-4, "the best head is the lowest AER:\n%s", out);
    // The reference force-decoded, head by head: its last layer's mean is
    // aer_forced=, its lowest head aer_forced_best=.
    const char *forced = strstr(out, "AER of the reference force-decoded, by layer and head");
    cr_assert(forced, "%s", out);
    double forced_best = 2, forced_mean = -1;
    for (int l = 0; l < 2; l++) {
        char key[16];
        snprintf(key, sizeof key, "layer %d ", l);
        char *end = strstr(forced, key);
        cr_assert(end, "%s", forced);
        end += strlen(key);
        for (int k = 0; k < 3; k++) {
            double v = strtod(end, &end);
            cr_assert(v >= 0 && v <= 1, "layer %d column %d: %g", l, k, v);
            if (k < 2 && v < forced_best) forced_best = v;
            if (k == 2) forced_mean = v;
        }
    }
    cr_assert(fabs(forced_mean - number_after(summary, " aer_forced=")) < 1e-4, "%s", out);
    cr_assert(fabs(forced_best - number_after(summary, " aer_forced_best=")) < 1e-4, "%s", out);
    free(out);
    // Without --align there is nothing to score.
    rc = test_runf(&out, "%s eval --model '%s' --corpus '%s'", TS_PROGRAM, ckpt_transformer, corpus_path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(!strstr(out, "AER by layer"), "%s", out);
    free(out);
}
