// The README and docs/ against the program: the synopsis lists every flag of
// every command's --help, every BLEU figure is on the scale tinyseq prints,
// docs/attention.md quotes what the example prints; and scripts/demo.sh never
// deletes a directory that is not a tinyseq run, and replaces one that is.
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

// The whole of a file under the source tree, NUL-terminated (malloc'd).
static char *read_source_file(const char *relative) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", TS_SOURCE_DIR, relative);
    return test_read_file(path, NULL);
}

// The README's synopsis of `command` (section "The program"): the line
// "    tinyseq COMMAND ..." and its continuation lines (indented further).
// Several synopsis lines for one command (corpus) are joined. malloc'd.
static char *synopsis_of(const char *readme, const char *command) {
    char head[64];
    snprintf(head, sizeof head, "\n    tinyseq %s ", command);
    const char *section = strstr(readme, "\n## The program\n");
    cr_assert(section, "README.md has no section 'The program'");
    const char *section_end = strstr(section + 1, "\n## ");
    size_t cap = 4096, len = 0;
    char *out = calloc(cap, 1);
    for (const char *at = strstr(section, head); at && (!section_end || at < section_end); at = strstr(at + 1, head)) {
        const char *line = at + 1;
        do {
            const char *end = strchr(line, '\n');
            size_t n = end ? (size_t)(end - line) : strlen(line);
            cr_assert_lt(len + n + 2, cap, "synopsis of %s too long", command);
            memcpy(out + len, line, n);
            len += n;
            out[len++] = '\n';
            line = end ? end + 1 : line + n;
        } while (!strncmp(line, "                       ", 23));
    }
    cr_assert_gt(len, 0, "README.md has no synopsis line for tinyseq %s", command);
    return out;
}

// 1 when `flag` ("--max-len") occurs in text as a whole flag.
static int has_flag(const char *text, const char *flag) {
    size_t n = strlen(flag);
    for (const char *at = strstr(text, flag); at; at = strstr(at + 1, flag)) {
        char next = at[n];
        if (!(next == '-' || (next >= 'a' && next <= 'z'))) return 1;
    }
    return 0;
}

static const char *const commands[] = {"train", "translate", "attend", "eval", "gradcheck", "corpus", "info"};

Test(docs, readme_synopsis_lists_every_flag_of_every_help) {
    char *readme = read_source_file("README.md");
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
        char cmd[4200], *help;
        snprintf(cmd, sizeof cmd, "'%s' %s --help", TS_PROGRAM, commands[c]);
        cr_assert_eq(test_run(cmd, &help), 0, "%s: %s", cmd, help);
        char *synopsis = synopsis_of(readme, commands[c]);
        // The flags the help defines: those of its usage lines (up to the first
        // blank line) and those that start a line of the option list.
        const char *usage_end = strstr(help, "\n\n");
        for (const char *at = strstr(help, "--"); at; at = strstr(at + 2, "--")) {
            const char *bol = at;
            while (bol > help && bol[-1] == ' ') bol--;
            if (!(usage_end && at < usage_end) && !(bol == help || bol[-1] == '\n')) continue;
            char flag[64];
            size_t n = 2;
            while (n < sizeof flag - 1 && (at[n] == '-' || (at[n] >= 'a' && at[n] <= 'z'))) n++;
            if (n == 2) continue;
            memcpy(flag, at, n);
            flag[n] = '\0';
            if (!strcmp(flag, "--help") || flag[n - 1] == '-') continue;
            cr_expect(has_flag(synopsis, flag), "tinyseq %s --help has %s, the README's synopsis does not:\n%s",
                      commands[c], flag, synopsis);
        }
        free(synopsis);
        free(help);
    }
    free(readme);
}

// Every column of a README table whose header names BLEU holds fractions in
// [0, 1], the scale tinyseq prints (eval: bleu=0.8663).
Test(docs, readme_bleu_figures_are_fractions) {
    char *readme = read_source_file("README.md");
    int checked = 0;
    for (char *line = readme; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char header[1024];
        snprintf(header, sizeof header, "%.*s", (int)strcspn(line, "\n"), line);
        if (header[0] != '|' || !strstr(header, "BLEU")) continue;
        // A header row: note which cells mention BLEU, then read the body rows.
        int bleu_col[32] = {0}, col = 0;
        for (char *cell = line + 1; *cell && *cell != '\n' && col < 32; col++) {
            char *bar = strchr(cell, '|');
            if (!bar) break;
            char text[256];
            snprintf(text, sizeof text, "%.*s", (int)(bar - cell), cell);
            bleu_col[col] = strstr(text, "BLEU") != NULL;
            cell = bar + 1;
        }
        char *row = strchr(line, '\n') + 1;
        row = strchr(row, '\n') + 1;  // past the |---| line
        for (; row[0] == '|'; row = strchr(row, '\n') + 1) {
            col = 0;
            for (char *cell = row + 1; col < 32; col++) {
                char *bar = strchr(cell, '|'), *end;
                if (!bar || bar > strchr(row, '\n')) break;
                if (bleu_col[col]) {
                    double v = strtod(cell, &end);
                    cr_expect(end != cell && v >= 0 && v <= 1, "README: BLEU cell '%.*s' is not a fraction in [0, 1]",
                              (int)(bar - cell), cell);
                    checked++;
                }
                cell = bar + 1;
            }
        }
        line = row - 1;
    }
    cr_assert_geq(checked, 10, "only %d BLEU cells found in the README's tables", checked);
    free(readme);
}

// The README is a front page (issue 39): the two commands first, then what
// tinyseq is for, a short tour, training on one's own data, one table of
// results for the toy corpus and one for Tatoeba (scripts/results.sh prints
// both headers), and links; history and measurement notes live in docs/.
Test(docs, readme_reads_as_a_front_page) {
    char *readme = read_source_file("README.md"), *script = read_source_file("scripts/results.sh");
    const char *order[] = {"bash scripts/setup.sh && bash scripts/demo.sh", "bash scripts/setup.sh && bash scripts/test.sh",
                           "\n## What it is for\n", "\n## A short tour\n", "\n## Train on your own data\n",
                           "\n## Results\n", "\n## The program\n", "\n## Where to read more\n"};
    // It opens with them: the title and one line lead to the first command.
    const char *first = strstr(readme, "\n    ");
    cr_expect(first && first - readme < 120 && !strncmp(first + 5, order[0], strlen(order[0])),
              "README.md does not open with the demo command");
    const char *at = readme;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const char *next = strstr(at, order[i]);
        cr_expect(next, "README.md: '%s' missing or out of order", order[i]);
        if (next) at = next;
    }
    const char *results = strstr(readme, "\n## Results\n"), *program = strstr(readme, "\n## The program\n");
    cr_assert(results && program);
    int tables = 0;
    for (const char *p = results; p && p < program; p = strchr(p + 1, '\n'))
        tables += !strncmp(p, "\n|---", 5);
    cr_expect_eq(tables, 2, "the Results section has %d tables, not one for the toy corpus and one for Tatoeba", tables);
    cr_expect(strstr(script, "| attention (decoder) | wall time |") && strstr(script, "| preset | model | dev BLEU, seed 1 |"),
              "scripts/results.sh does not print the README's two tables");
    cr_expect(!strstr(readme, "before label smoothing became the default"), "history belongs in docs/results.md");
    // The real-data section says what a corpus is, what ../shared is and where the Tatoeba file comes from.
    const char *own = strstr(readme, "\n## Train on your own data\n");
    cr_assert(own);
    cr_expect(strstr(own, "source<TAB>target") && strstr(own, "manythings.org") && strstr(own, "CC-BY 2.0 FR") &&
              strstr(own, "`../shared`") && strstr(own, "--preset transformer-small"), "the real-data section");
    free(readme);
    free(script);
}

// The README says how to open the notebook, and the set-up installs the
// server that command needs (issue 47: `jupyter notebook` was not there).
Test(docs, readme_opens_the_notebook_with_a_server_setup_installs) {
    char *readme = read_source_file("README.md"), *setup = read_source_file("scripts/setup.sh");
    cr_expect(strstr(readme, "\n      jupyter notebook notebooks/attention.ipynb\n"),
              "README.md does not say how to open the notebook");
    cr_expect(strstr(setup, " jupyter-notebook "), "scripts/setup.sh does not install jupyter-notebook");
    free(readme);
    free(setup);
}

// The README's real-data command runs as written (here for two steps: flags
// given last win over the preset's, --out goes to a temporary directory).
Test(docs, readme_real_data_command_runs_as_written, .timeout = 600) {
    char *readme = read_source_file("README.md"), data[4200];
    snprintf(data, sizeof data, "%s/../shared/data/tatoeba-eng-fra.tsv", TS_SOURCE_DIR);
    if (access(data, R_OK) != 0) {
        free(readme);
        cr_skip_test("../shared/data/tatoeba-eng-fra.tsv is absent");
    }
    const char *line = strstr(readme, "\n    tinyseq train --preset ");
    cr_assert(line, "README.md has no indented 'tinyseq train --preset' line");
    char command[1024];
    snprintf(command, sizeof command, "%.*s", (int)strcspn(line + 5, "\n"), line + 5);
    char *dir = test_tmpdir(), *out = NULL;
    int rc = test_runf(&out, "cd '%s' && '%s' %s --steps 2 --beam 1 --show 0 --out '%s/run'", TS_SOURCE_DIR, TS_PROGRAM,
                       command + strlen("tinyseq "), dir);
    cr_assert_eq(rc, 0, "%s: exit %d\n%s", command, rc, out);
    cr_assert(strstr(out, "model: transformer, d_model 256, 4 heads, 2 layers per stack") &&
              strstr(out, "subword pieces (bpe, per side, at most 4000)"), "%s", out);
    free(out);
    free(dir);
    free(readme);
}

// The example's path in this build: beside the program, in examples/.
static char *example_path(void) {
    char *copy = strdup(TS_PROGRAM), *path = malloc(strlen(TS_PROGRAM) + 64);
    sprintf(path, "%s/examples/attention_basics", dirname(copy));
    free(copy);
    return path;
}

Test(docs, attention_md_quotes_what_the_example_prints) {
    char *doc = read_source_file("docs/attention.md"), *path = example_path(), *out, cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s'", path);
    cr_assert_eq(test_run(cmd, &out), 0, "%s: %s", path, out);
    const char *label = "c to full precision:";
    char *quoted = strstr(doc, label);
    cr_assert(quoted, "docs/attention.md does not quote the line '%s'", label);
    *strchr(quoted, '\n') = '\0';
    char *printed = strstr(out, quoted);
    cr_assert(printed && printed[strlen(quoted)] == '\n', "docs/attention.md quotes\n  %s\nthe example prints\n  %.80s",
              quoted, strstr(out, label) ? strstr(out, label) : "(no such line)");
    free(out);
    free(path);
    free(doc);
}

// ---- scripts/demo.sh: the directories it must leave alone ------------------

// Runs demo.sh with `arg` from directory `cwd` with the tinyseq `program`
// (the built one when NULL); returns its exit status.
static int run_demo_with(const char *program, const char *cwd, const char *arg, char **out) {
    char cmd[12600];
    snprintf(cmd, sizeof cmd, "cd '%s' && TINYSEQ='%s' bash '%s/scripts/demo.sh' '%s'", cwd, program ? program : TS_PROGRAM,
             TS_SOURCE_DIR, arg);
    return test_run(cmd, out);
}

static int run_demo(const char *cwd, const char *arg, char **out) { return run_demo_with(NULL, cwd, arg, out); }

static void remove_dir(char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(dir);
}

static int exists(const char *dir, const char *name) {
    char path[8400];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

Test(demo, refuses_the_current_directory_given_as_dot) {
    char *dir = test_tmpdir(), *out;
    free(test_write_file(dir, "thesis.tex", "precious\n", 9));
    int rc = run_demo(dir, ".", &out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "not a tinyseq run directory") && strstr(out, "left alone"), "%s", out);
    cr_assert(exists(dir, "thesis.tex"), "demo.sh deleted the user's file");
    free(out);
    remove_dir(dir);
}

Test(demo, refuses_a_directory_with_anything_but_a_run_in_it) {
    char *dir = test_tmpdir(), *out;
    // A run directory (config.txt, checkpoints) plus one file of the user's.
    free(test_write_file(dir, "config.txt", "hidden=8\n", 9));
    free(test_write_file(dir, "last.ckpt", "x", 1));
    free(test_write_file(dir, "notes.txt", "mine\n", 5));
    int rc = run_demo(dir, dir, &out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "'notes.txt'"), "the message names the foreign entry:\n%s", out);
    cr_assert(exists(dir, "notes.txt") && exists(dir, "last.ckpt"), "demo.sh deleted files");
    free(out);
    remove_dir(dir);
}

// The README's first command, twice, on a real run: the demo asks the trainer
// whether its directory holds only a run (every file train and report write
// there: attention.jsonl, dev-pairs.tsv, epoch-<E>.ckpt, report.html ...),
// and keeps no list of its own. A stand-in for `train` (without
// --check-out) keeps the test short; everything else is the real program.
Test(demo, replaces_a_real_run_directory_any_number_of_times, .timeout = 120) {
    char *dir = test_tmpdir(), *out, run[4200], cmd[8400];
    snprintf(run, sizeof run, "%s/run", dir);
    int rc = test_runf(&out, "%s train --toy-pairs 300 --emb 4 --hidden 4 --epochs 2 --keep 2 --show 0 --out '%s'",
                       TS_PROGRAM, run);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char stub[4300];
    snprintf(stub, sizeof stub, "%s/tinyseq", dir);
    snprintf(cmd, sizeof cmd,
             "#!/bin/sh\n"
             "case \" $* \" in *' train '*' --check-out'*) ;; *' train '*) echo \"trained: $*\"; exit 0 ;; esac\n"
             "exec '%s' \"$@\"\n",
             TS_PROGRAM);
    free(test_write_file(dir, "tinyseq", cmd, strlen(cmd)));
    cr_assert_eq(chmod(stub, 0755), 0);
    for (int time = 1; time <= 2; time++) {
        rc = run_demo_with(stub, dir, "run", &out);
        cr_assert_eq(rc, 0, "demo run %d exited %d:\n%s", time, rc, out);
        cr_assert(strstr(out, "trained: train --out") && strstr(out, "--force"), "run %d:\n%s", time, out);
        free(out);
    }
    cr_assert(exists(run, "report.html") && exists(run, "attention.jsonl") && exists(run, "epoch-2.ckpt"));
    // ... and a file of the user's in it still makes the demo leave it alone.
    free(test_write_file(run, "notes.txt", "mine\n", 5));
    rc = run_demo_with(stub, dir, "run", &out);
    cr_assert(rc == 2 && strstr(out, "'notes.txt'") && strstr(out, "left alone"), "exit %d:\n%s", rc, out);
    free(out);
    remove_dir(dir);
}

Test(demo, refuses_a_file_and_a_symbolic_link) {
    char *dir = test_tmpdir(), *out, cmd[4200];
    free(test_write_file(dir, "data.tsv", "a\tb\n", 4));
    cr_assert_eq(run_demo(dir, "data.tsv", &out), 2, "%s", out);
    cr_assert(exists(dir, "data.tsv"));
    free(out);
    snprintf(cmd, sizeof cmd, "ln -s /tmp '%s/link'", dir);
    cr_assert_eq(test_run(cmd, NULL), 0);
    cr_assert_eq(run_demo(dir, "link", &out), 2, "%s", out);
    cr_assert(strstr(out, "symbolic link"), "%s", out);
    free(out);
    remove_dir(dir);
}
