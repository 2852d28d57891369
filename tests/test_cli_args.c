// The flag-table parser every subcommand uses (cli/cli.h): values and bounds
// by kind, inline values, switches that refuse one, positionals, the first
// problem ends the parse, and no state survives from one parse to the next.
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "testutil.h"

typedef struct {
    long n;
    double x;
    const char *name;
    int verbose, n_given;
    const char *rest[4];
    int n_rest;
} parsed_args;

static int take_rest(void *context, const char *command, const char *arg) {
    parsed_args *p = context;
    if (p->n_rest == 4) {
        ts_cli_error(command, 0, "too many");
        return TS_EXIT_USAGE;
    }
    p->rest[p->n_rest++] = arg;
    return -1;
}

static int parse(parsed_args *p, int argc, char **argv) {
    memset(p, 0, sizeof *p);
    p->n = 7;
    const ts_flag flags[] = {
        {.name = "n", .kind = TS_FLAG_INT, .target = &p->n, .lo = 1, .hi = 10, .given = &p->n_given},
        TS_DOUBLE("x", &p->x, 0, 1),
        TS_STRING("name", &p->name),
        TS_STRING("-o", &p->name),
        TS_SWITCH("verbose", &p->verbose),
    };
    ts_cli_spec spec = {.command = "tinyseq test", .usage = "usage: test\n", .flags = flags, .n_flags = 5,
                        .positional = take_rest, .context = p};
    return ts_cli_parse(&spec, argc, argv);
}

#define ARGS(...) (sizeof((char *[]){"test", __VA_ARGS__}) / sizeof(char *)), ((char *[]){"test", __VA_ARGS__})

Test(cli_args, takes_every_kind_inline_or_not_and_positionals_in_order) {
    parsed_args p;
    cr_assert_eq(parse(&p, ARGS("a", "--n", "3", "--x=0.5", "b", "--name", "w", "--verbose")), -1);
    cr_assert_eq(p.n, 3);
    cr_assert(p.n_given);
    cr_assert_eq(p.x, 0.5);
    cr_assert_str_eq(p.name, "w");
    cr_assert_eq(p.verbose, 1);
    cr_assert_eq(p.n_rest, 2);
    cr_assert_str_eq(p.rest[0], "a");
    cr_assert_str_eq(p.rest[1], "b");
    cr_assert_eq(parse(&p, ARGS("-o", "out", "--", "-x", "--n", "--")), -1);
    cr_assert_str_eq(p.name, "out");
    cr_assert_eq(p.n_rest, 3, "after '--' every argument is positional");
    cr_assert_str_eq(p.rest[0], "-x");
    cr_assert_str_eq(p.rest[1], "--n");
    cr_assert_str_eq(p.rest[2], "--");
    cr_assert_eq(parse(&p, ARGS("-", "-5", "- a")), -1);
    cr_assert_eq(p.n_rest, 3, "'-', '-5' and '- a' are not options");
    cr_assert_eq(p.n, 7, "a fresh parse starts from the defaults");
    cr_assert_not(p.n_given);
}

static void expect_error(int argc, char **argv, int status, const char *message) {
    fflush(stderr);
    FILE *saved = stderr;
    char *text = NULL;
    size_t len = 0;
    stderr = open_memstream(&text, &len);
    cr_assert_not_null(stderr);
    parsed_args p;
    int rc = parse(&p, argc, argv);
    fclose(stderr);
    stderr = saved;
    cr_assert_eq(rc, status, "%s: exit %d, message %s", argv[1], rc, text);
    cr_assert(strstr(text, message), "said '%s', expected '%s'", text, message);
    free(text);
}

Test(cli_args, the_first_problem_is_reported_and_ends_the_parse) {
    expect_error(ARGS("--n"), TS_EXIT_USAGE, "tinyseq test: --n needs a value");
    expect_error(ARGS("-o"), TS_EXIT_USAGE, "tinyseq test: -o needs a value");
    expect_error(ARGS("--n", "11"), TS_EXIT_USAGE, "--n must be between 1 and 10, got 11");
    expect_error(ARGS("--n=2x"), TS_EXIT_USAGE, "--n expects a whole number, got '2x'");
    expect_error(ARGS("--x", "nan"), TS_EXIT_USAGE, "--x expects a number, got 'nan'");
    expect_error(ARGS("--verbose=1"), TS_EXIT_USAGE, "--verbose is a switch and takes no value, got '--verbose=1'");
    expect_error(ARGS("--nn=3"), TS_EXIT_USAGE, "unknown option --nn (see tinyseq test --help)");
    expect_error(ARGS("--bogus", "--n", "99"), TS_EXIT_USAGE, "unknown option --bogus");
    expect_error(ARGS("1", "2", "3", "4", "5"), TS_EXIT_USAGE, "too many");
    expect_error(ARGS("a", "-q", "b"), TS_EXIT_USAGE, "unknown option -q (see tinyseq test --help)");
    expect_error(ARGS("-x"), TS_EXIT_USAGE, "unknown option -x: did you mean --x?");
}

// A near miss names the flag it most likely meant, in every command at once.
Test(cli_args, a_near_miss_suggests_the_flag) {
    expect_error(ARGS("--verbos"), TS_EXIT_USAGE, "unknown option --verbos: did you mean --verbose?");
    expect_error(ARGS("--nmae=w"), TS_EXIT_USAGE, "unknown option --nmae: did you mean --name?");
    expect_error(ARGS("--verb"), TS_EXIT_USAGE, "did you mean --verbose?");
    expect_error(ARGS("-verbose"), TS_EXIT_USAGE, "unknown option -verbose: did you mean --verbose?");
    expect_error(ARGS("--zebra"), TS_EXIT_USAGE, "unknown option --zebra (see tinyseq test --help)");
    static const char *const cases[][3] = {
        {"train", "--epoch 2", "did you mean --epochs?"},
        {"train", "--hiden 8", "did you mean --hidden?"},
        {"eval", "--lenght-penalty 1", "did you mean --length-penalty?"},
        {"attend", "--value", "did you mean --values?"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int rc = test_runf(&out, "%s %s %s", TS_PROGRAM, cases[i][0], cases[i][1]);
        cr_assert(rc == 2 && strstr(out, cases[i][2]), "%s %s: exit %d\n%s", cases[i][0], cases[i][1], rc, out);
        free(out);
    }
}

// A misspelled command names the one it most likely meant (issue 47); a
// word near none lists the commands.
Test(cli_args, a_misspelled_command_suggests_the_command) {
    static const char *const cases[][2] = {
        {"tranlsate", "unknown command 'tranlsate': did you mean translate?"},
        {"trian", "did you mean train?"},
        {"evl", "did you mean eval?"},
        {"repor", "did you mean report?"},
        {"grad", "did you mean gradcheck?"},  // the start of one command only
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int rc = test_runf(&out, "%s %s --model x.ckpt", TS_PROGRAM, cases[i][0]);
        cr_assert(rc == 2 && strstr(out, cases[i][1]), "%s: exit %d\n%s", cases[i][0], rc, out);
        free(out);
    }
    char *out;
    int rc = test_runf(&out, "%s zebra", TS_PROGRAM);
    cr_assert(rc == 2 && strstr(out, "unknown command 'zebra'\n") && !strstr(out, "did you mean") &&
              strstr(out, "commands:"), "exit %d\n%s", rc, out);
    free(out);
}

Test(cli_args, help_prints_the_usage_and_exits_0, .init = cr_redirect_stdout) {
    parsed_args p;
    cr_assert_eq(parse(&p, ARGS("--n", "2", "--help", "--bogus")), TS_EXIT_OK);
    fflush(stdout);
    cr_assert_stdout_eq_str("usage: test\n");
}

Test(cli_args, dash_h_prints_the_usage_too, .init = cr_redirect_stdout) {
    parsed_args p;
    cr_assert_eq(parse(&p, ARGS("a", "-h")), TS_EXIT_OK);
    fflush(stdout);
    cr_assert_stdout_eq_str("usage: test\n");
}

// Every subcommand's switches refuse a value (they once took "--pharaoh=1").
Test(cli_args, every_commands_switches_refuse_a_value) {
    static const char *const cases[][2] = {
        {"train", "--bidirectional=1"}, {"attend", "--pharaoh=1"}, {"attend", "--values=yes"},
        {"eval", "--skip-bad=1"},       {"gradcheck", "--bidirectional=0"}, {"corpus", "--toy=1"},
        {"info", "--json=1"},           {"export", "--stored=1"},           {"import", "--force=1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[512], *out;
        snprintf(cmd, sizeof cmd, "%s %s %s", TS_PROGRAM, cases[i][0], cases[i][1]);
        int rc = test_run(cmd, &out);
        cr_assert_eq(rc, 2, "'%s' exited %d:\n%s", cmd, rc, out);
        cr_assert(strstr(out, "is a switch and takes no value"), "'%s' said:\n%s", cmd, out);
        free(out);
    }
}
