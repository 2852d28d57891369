// What a learner types in the first hour, and what the program makes of it
// (issue 22): a sentence without quotes, -h and -- after --model, a run
// directory given as --model, attend's sentence on standard input, one rule
// for output files (- is standard output; --force to replace), and
// translate at a terminal (a pseudo-terminal drives the real program).
#include <criterion/criterion.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static char *dir, run[4200], model[4300];

// A real run directory from a short run of the real program.
static void setup(void) {
    dir = test_tmpdir();
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(model, sizeof model, "%s/best.ckpt", run);
    char *out;
    int rc = test_runf(&out, "%s train --toy-pairs 300 --emb 4 --hidden 4 --epochs 1 --beam 1 --show 0 --out '%s'",
                       TS_PROGRAM, run);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static void teardown(void) {
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    test_run(cmd, NULL);
    free(dir);
}

TestSuite(cli_usage, .init = setup, .fini = teardown);

static int count_lines(const char *text) {
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

// "translate --model M the small cat ." once printed four one-word translations.
Test(cli_usage, a_sentence_typed_without_quotes_is_refused_with_the_quoted_command) {
    const char *commands[] = {"translate", "attend"};
    for (int i = 0; i < 2; i++) {
        char *out;
        int rc = test_runf(&out, "%s %s --model '%s' the small cat sleeps .", TS_PROGRAM, commands[i], model);
        cr_assert_eq(rc, 2, "%s: exit %d\n%s", commands[i], rc, out);
        cr_assert(strstr(out, "quote the sentence") && strstr(out, "--model CKPT 'the small cat sleeps .'"), "%s", out);
        free(out);
    }
    // Quoted, or one word, or sentences with spaces: translated as given.
    char *out;
    int rc = test_runf(&out, "(%s translate --model '%s' 'the small cat sleeps .' cat 'a dog' 2>/dev/null)", TS_PROGRAM, model);
    cr_assert(rc == 0 && count_lines(out) == 3, "exit %d:\n%s", rc, out);
    free(out);
}

// -h after --model was translated as a sentence; -- ends the options.
Test(cli_usage, dash_h_prints_the_usage_and_double_dash_ends_the_options) {
    const char *commands[] = {"translate", "attend", "eval"};
    for (int i = 0; i < 3; i++) {
        char *out;
        int rc = test_runf(&out, "%s %s --model '%s' -h", TS_PROGRAM, commands[i], model);
        cr_assert(rc == 0 && !strncmp(out, "usage: tinyseq", 14), "%s -h: exit %d\n%s", commands[i], rc, out);
        free(out);
    }
    char *out;
    int rc = test_runf(&out, "(%s translate --model '%s' -- '--beam 2' 2>/dev/null)", TS_PROGRAM, model);
    cr_assert(rc == 0 && count_lines(out) == 1, "one sentence after --: exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s translate --model '%s' -x", TS_PROGRAM, model);
    cr_assert(rc == 2 && strstr(out, "unknown option -x"), "exit %d\n%s", rc, out);
    free(out);
}

Test(cli_usage, a_run_directory_given_as_model_suggests_its_best_checkpoint) {
    const char *commands[] = {"translate --model '%s' cat", "attend --model '%s' cat",
                              "eval --corpus /dev/null --model '%s'"};
    for (int i = 0; i < 3; i++) {
        char args[8600], want[4400], *out;
        snprintf(args, sizeof args, commands[i], run);
        snprintf(want, sizeof want, "did you mean --model %s/best.ckpt?", run);
        int rc = test_runf(&out, "%s %s", TS_PROGRAM, args);
        cr_assert(rc == 1 && strstr(out, "is a directory, not a checkpoint") && strstr(out, want), "%s: exit %d\n%s", args,
                  rc, out);
        free(out);
    }
    char *out, want[4400];  // a directory that is not a run: no suggestion
    int rc = test_runf(&out, "%s info '%s'", TS_PROGRAM, dir);
    cr_assert(rc == 1 && strstr(out, "is a directory, not a checkpoint") && !strstr(out, "did you mean"), "exit %d\n%s",
              rc, out);
    free(out);
    // info and --resume given the run directory name the checkpoint inside.
    rc = test_runf(&out, "%s info '%s'", TS_PROGRAM, run);
    snprintf(want, sizeof want, "did you mean tinyseq info %s/best.ckpt?", run);
    cr_assert(rc == 1 && strstr(out, want), "exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s train --toy-pairs 100 --resume '%s' --out '%s'", TS_PROGRAM, run, run);
    snprintf(want, sizeof want, "did you mean --resume %s/last.ckpt?", run);
    cr_assert(rc != 0 && strstr(out, want), "exit %d\n%s", rc, out);
    free(out);
}

// The checkpoint typed where the sentence goes (--model forgotten): the
// hint is the command with --model, not the path quoted into the sentence.
Test(cli_usage, a_checkpoint_given_without_model_suggests_model) {
    const struct {
        const char *args, *want;
    } cases[] = {
        {"translate '%s/best.ckpt' hello", "translate --model %s/best.ckpt 'hello'"},
        {"translate '%s/best.ckpt' the cat", "translate --model %s/best.ckpt 'the cat'"},
        {"translate '%s' 'the cat' 'a dog'", "translate --model %s/best.ckpt 'the cat' 'a dog'"},
        {"attend '%s/best.ckpt' 'the cat .'", "attend --model %s/best.ckpt 'the cat .'"},
        {"attend '%s'", "attend --model %s/best.ckpt\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[8600], want[8600], *out;
        snprintf(args, sizeof args, cases[i].args, run);
        snprintf(want, sizeof want, cases[i].want, run);
        int rc = test_runf(&out, "%s %s", TS_PROGRAM, args);
        cr_assert(rc == 2 && strstr(out, "not a sentence: the model goes after --model") && strstr(out, want) &&
                      !strstr(out, "--model CKPT"), "%s: exit %d\n%s", args, rc, out);
        free(out);
    }
}

// attend reads its sentence from standard input as translate does.
Test(cli_usage, attend_reads_the_sentence_from_standard_input) {
    char *piped, *given;
    int rc = test_runf(&piped, "(printf '\\nthe small cat .\\n\\n' | %s attend --model '%s' --color never 2>/dev/null)",
                       TS_PROGRAM, model);
    cr_assert_eq(rc, 0, "%s", piped);
    rc = test_runf(&given, "(%s attend --model '%s' --color never 'the small cat .' 2>/dev/null)", TS_PROGRAM, model);
    cr_assert_eq(rc, 0, "%s", given);
    cr_assert_str_eq(piped, given);
    free(piped);
    free(given);
    char *out;
    rc = test_runf(&out, "printf 'the cat .\\na dog .\\n' | %s attend --model '%s'", TS_PROGRAM, model);
    cr_assert(rc == 2 && strstr(out, "standard input holds 2 sentences"), "exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s attend --model '%s' < /dev/null", TS_PROGRAM, model);
    cr_assert(rc == 2 && strstr(out, "no SENTENCE"), "exit %d\n%s", rc, out);
    free(out);
}

// Reads from fd into text[*len..cap) until `want` appears in it or
// `seconds` pass; 1 when it appeared.
static int read_until(int fd, char *text, size_t *len, size_t cap, const char *want, int seconds) {
    time_t end = time(NULL) + seconds;
    while (!strstr(text, want) && time(NULL) < end && *len + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0) continue;
        ssize_t got = read(fd, text + *len, cap - 1 - *len);
        if (got <= 0) break;  // the program closed the terminal
        *len += (size_t)got;
        text[*len] = '\0';
    }
    return strstr(text, want) != NULL;
}

// At a terminal greedy translate once waited for 128 lines, silent: now it
// prompts and answers each line as it is typed, before the input ends.
Test(cli_usage, translate_at_a_terminal_answers_each_line_as_typed, .timeout = 60) {
    char *want;
    cr_assert_eq(test_runf(&want, "(echo 'the small cat .' | %s translate --model '%s' 2>/dev/null)", TS_PROGRAM, model), 0);
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    cr_assert_neq(pid, -1, "forkpty failed");
    if (pid == 0) {
        execl(TS_PROGRAM, TS_PROGRAM, "translate", "--model", model, (char *)NULL);
        _exit(127);
    }
    static char text[1 << 16];
    size_t len = 0;
    text[0] = '\0';
    int prompted = read_until(master, text, &len, sizeof text, "> ", 20);
    cr_assert(write(master, "the small cat .\n", 16) == 16);
    // The pty turns "\n" into "\r\n": look for the words of the line.
    want[strcspn(want, "\n")] = '\0';
    int answered = read_until(master, text, &len, sizeof text, want, 20);
    int prompted_again = answered && read_until(master, text, &len, sizeof text, "\n> ", 5);
    cr_assert(write(master, "\x04", 1) == 1);  // Ctrl-D: the end of the input
    int status = 0;
    for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; i++) {
        char drain[256];
        struct pollfd p = {.fd = master, .events = POLLIN};
        if (poll(&p, 1, 100) > 0 && read(master, drain, sizeof drain) <= 0) {
            waitpid(pid, &status, 0);
            break;
        }
    }
    if (waitpid(pid, &status, WNOHANG) == 0) {  // still running: the test has failed; do not leave it behind
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        cr_assert_fail("translate did not end after Ctrl-D:\n%s", text);
    }
    close(master);
    cr_assert(prompted, "no prompt at a terminal:\n%s", text);
    cr_assert(answered, "the line was not answered while the input stayed open (want '%s'):\n%s", want, text);
    cr_assert(prompted_again, "no prompt for the next line:\n%s", text);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d:\n%s", status, text);
    free(want);
}

// attend --svg once replaced a file silently where export and report -o
// need --force, and --json - wrote a file named '-'.
Test(cli_usage, output_files_follow_one_rule) {
    char *out, *svg = test_write_file(dir, "mine.svg", "mine\n", 5);
    int rc = test_runf(&out, "%s attend --model '%s' --svg '%s' cat", TS_PROGRAM, model, svg);
    cr_assert(rc == 1 && strstr(out, "exists; pass --force to replace it"), "exit %d\n%s", rc, out);
    free(out);
    char *kept = test_read_file(svg, NULL);
    cr_assert_str_eq(kept, "mine\n", "the file was replaced without --force");
    free(kept);
    rc = test_runf(&out, "%s attend --model '%s' --svg '%s' --force cat", TS_PROGRAM, model, svg);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    kept = test_read_file(svg, NULL);
    cr_assert(strstr(kept, "<svg"), "--force did not replace it: %s", kept);
    free(kept);
    free(svg);
    // "-" is standard output, which then holds the document alone.
    rc = test_runf(&out, "cd '%s' && (%s attend --model '%s' --json - cat 2>/dev/null)", dir, TS_PROGRAM, model);
    cr_assert(rc == 0 && out[0] == '{' && strstr(out, "\"weights\"") && !strstr(out, "source: "), "exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "cd '%s' && (%s attend --model '%s' --svg - cat 2>/dev/null)", dir, TS_PROGRAM, model);
    cr_assert(rc == 0 && strstr(out, "<svg") && !strstr(out, "source: "), "exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "cd '%s' && (%s report '%s' -o - 2>/dev/null)", dir, TS_PROGRAM, run);
    cr_assert(rc == 0 && strstr(out, "<html") && !strstr(out, "report: "), "exit %d\n%.300s", rc, out);
    free(out);
    char dash[4300];
    snprintf(dash, sizeof dash, "%s/-", dir);
    cr_assert_neq(access(dash, F_OK), 0, "a file named '-' was written");
    rc = test_runf(&out, "cd '%s' && %s export '%s' -", dir, TS_PROGRAM, model);
    cr_assert(rc == 2 && strstr(out, "cannot go to standard output"), "exit %d\n%s", rc, out);
    free(out);
    // corpus --align too: its corpus is on standard output, and a file stays without --force.
    char *gold = test_write_file(dir, "gold.txt", "mine\n", 5);
    rc = test_runf(&out, "(%s corpus --toy --n 2 --align '%s' > /dev/null)", TS_PROGRAM, gold);
    cr_assert(rc == 1 && strstr(out, "exists; pass --force"), "exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "(%s corpus --toy --n 2 --align '%s' --force > /dev/null)", TS_PROGRAM, gold);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = test_runf(&out, "(%s corpus --toy --n 2 --align - > /dev/null)", TS_PROGRAM);
    cr_assert(rc == 2 && strstr(out, "cannot go to standard output"), "exit %d\n%s", rc, out);
    free(out);
    free(gold);
}

// "1 pairs", "1 checkpoints"; and --length-penalty with greedy decoding once
// did nothing and said nothing.
Test(cli_usage, one_is_singular_and_a_penalty_greedy_ignores_is_named) {
    char *tsv = test_write_file(dir, "one.tsv", "the cat .\tle chat .\n", 20), *out;
    int rc = test_runf(&out, "%s eval --model '%s' --corpus '%s'", TS_PROGRAM, model, tsv);
    cr_assert(rc == 0 && strstr(out, ": 1 pair") && !strstr(out, "1 pairs"), "exit %d\n%s", rc, out);
    free(out);
    rc = test_runf(&out, "%s average '%s' -o %s/mean.ckpt", TS_PROGRAM, model, dir);
    cr_assert(rc == 0 && strstr(out, "1 checkpoint ") && !strstr(out, "1 checkpoints"), "exit %d\n%s", rc, out);
    free(out);
    const char *commands[] = {"translate --model '%s' 'the cat .'", "attend --model '%s' 'the cat .'",
                              "eval --model '%s' --corpus %s"};
    for (int i = 0; i < 3; i++) {
        char args[9000];
        snprintf(args, sizeof args, commands[i], model, tsv);
        rc = test_runf(&out, "%s %s --length-penalty 1 --beam 1", TS_PROGRAM, args);
        cr_assert(rc == 0 && strstr(out, "warning: --length-penalty ranks beam search's outputs"), "%s: exit %d\n%s", args,
                  rc, out);
        free(out);
        rc = test_runf(&out, "%s %s --length-penalty 1", TS_PROGRAM, args);  // beam search by default
        cr_assert(rc == 0 && !strstr(out, "warning"), "%s: exit %d\n%s", args, rc, out);
        free(out);
        rc = test_runf(&out, "%s %s --length-penalty 1 --beam 2", TS_PROGRAM, args);
        cr_assert(rc == 0 && !strstr(out, "warning"), "%s --beam 2: exit %d\n%s", args, rc, out);
        free(out);
    }
    free(tsv);
}
