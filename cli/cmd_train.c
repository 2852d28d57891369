// tinyseq train: train an attention seq2seq model (default: the toy corpus).
#include "cli/cli.h"
#include "cli/common.h"

#include "train/options.h"
#include "train/rundir.h"
#include "train/trainer.h"
#include "viz/render.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The flags of the options table (train/options.h) that ts_cli_parse cannot
// store by itself: a choice, an int field, or "--dev N|FILE".
typedef struct {
    ts_train_opts *o;
    const ts_train_option *row;
} option_target;

static int choose_option(const char *command, const char *flag, const char *value, void *target) {
    const option_target *t = target;
    const ts_train_option *r = t->row;
    if (r->kind == TS_OPTION_CHOICE) {
        if (!ts_names_parse(r->set->names, value, (int *)ts_train_option_field(t->o, r))) return -1;
        ts_cli_error(command, 1, "--%s", flag);
        return TS_EXIT_USAGE;
    }
    char *end;
    long n = strtol(value, &end, 10);
    int whole = end != value && *end == '\0';
    if (ts_train_option_takes_file(r) && !whole) {
        *(const char **)ts_train_option_field(t->o, r + 1) = value;
        ts_train_option_set_whole(t->o, r, 0);
        return -1;
    }
    if (ts_parse_int(command, flag, value, (long)r->set->lo, (long)r->set->hi, &n)) return TS_EXIT_USAGE;
    ts_train_option_set_whole(t->o, r, n);
    if (ts_train_option_takes_file(r)) *(const char **)ts_train_option_field(t->o, r + 1) = NULL;
    return -1;
}

// The flag of row r, writing into o; targets[] holds what a choose callback needs.
static ts_flag flag_of(const ts_train_option *r, ts_train_opts *o, option_target *target) {
    void *field = ts_train_option_field(o, r);
    *target = (option_target){o, r};
    switch (r->kind) {
    case TS_OPTION_SWITCH: return (ts_flag)TS_SWITCH(r->set->flag, field);
    case TS_OPTION_REAL: return (ts_flag)TS_DOUBLE(r->set->flag, field, r->set->lo, r->set->hi);
    case TS_OPTION_TEXT: return (ts_flag)TS_STRING(r->set->flag, field);
    case TS_OPTION_INT:
        if (r->size == sizeof(long) && !ts_train_option_takes_file(r)) return (ts_flag)TS_INT(r->set->flag, field, r->set->lo, r->set->hi);
        break;
    case TS_OPTION_CHOICE: break;
    }
    return (ts_flag)TS_CHOICE(r->set->flag, target, choose_option);
}

// ---- --config FILE -------------------------------------------------------------

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

// The --config FILE of argv (also --config=FILE), or NULL.
static const char *config_path(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) path = argv[++i];
        else if (!strncmp(argv[i], "--config=", 9)) path = argv[i] + 9;
    }
    return path;
}

// Applies every line of the config file through spec's flag table, as if
// given on the command line before the real flags: -1 when done, else the
// exit status (messages name FILE:LINE). The values stay in *text (the whole
// file, malloc'd), which the caller frees after the run: string flags point
// into it.
static int apply_config(const char *path, const ts_cli_spec *spec, char **text) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        ts_cli_error(spec->command, 0, "--config: cannot open '%s': %s", path, strerror(errno));
        return TS_EXIT_FAIL;
    }
    size_t len;
    char *buf = ts_cli_read_stream(f, (size_t)1 << 24, &len);  // over 16 MiB is not a config
    fclose(f);
    if (!buf) {
        int why = errno;
        ts_cli_error(spec->command, 0, "--config: cannot read '%s': %s%s", path,
                     why == EFBIG ? "over 16 MiB, too large for a config" : strerror(why),
                     why == EISDIR ? " (a run's options are in DIR/config.txt)" : "");
        return TS_EXIT_FAIL;
    }
    buf[len] = '\0';
    *text = buf;
    const char *nul = memchr(buf, '\0', len);  // the lines are read as strings: what follows would go unread
    if (nul) {
        long number = 1;
        for (const char *p = buf; p < nul; p++) number += *p == '\n';
        fprintf(stderr, "%s: %s:%ld: a NUL byte\n", spec->command, path, number);
        return TS_EXIT_USAGE;
    }
    char where[4200], flag[64];
    int status = -1;
    char *next = buf;
    for (long number = 1; status < 0 && next && *next; number++) {
        char *line = next, *end = strchr(line, '\n');
        if (end) *end = '\0';
        next = end ? end + 1 : NULL;
        snprintf(where, sizeof where, "%s: %s:%ld", spec->command, path, number);
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *content = trim(line), *eq = strchr(content, '=');
        if (!*content) continue;
        if (!eq) {
            fprintf(stderr, "%s: expected key = value, got '%s'\n", where, content);
            status = TS_EXIT_USAGE;
            break;
        }
        *eq = '\0';
        char *key = trim(content), *value = trim(eq + 1);
        const ts_train_option *r = ts_train_option_by_key(key);
        int fact = 0;
        for (int i = 0; i < TS_CONFIG_FACTS; i++) fact |= !strcmp(ts_config_facts[i], key);
        if (!r && !fact) {
            fprintf(stderr, "%s: unknown key '%s' (the keys are those of a run's config.txt)\n", where, key);
            status = TS_EXIT_USAGE;
            break;
        }
        int is_switch = r && r->kind == TS_OPTION_SWITCH;
        // A number option whose default 0 is outside its flag's range: 0 is "not given".
        int unset_zero = r && r->kind == TS_OPTION_INT && r->set->value == 0 && r->set->lo > 0;
        if (fact || !*value || ((unset_zero || is_switch) && !strcmp(value, "0")) ||
            (r->kind == TS_OPTION_TEXT && r->absent && !strcmp(value, r->absent)))
            continue;  // a fact, or the option's default
        if (is_switch && strcmp(value, "1")) {
            fprintf(stderr, "%s: %s is 0 or 1, got '%s'\n", where, key, value);
            status = TS_EXIT_USAGE;
            break;
        }
        snprintf(flag, sizeof flag, "--%s", r->set->flag);
        char *args[3] = {(char *)"train", flag, value};
        ts_cli_spec at_line = *spec;
        at_line.command = where;
        status = ts_cli_parse(&at_line, is_switch ? 2 : 3, args);
    }
    return status;
}

static const char usage_head[] =
    "usage: tinyseq train [--corpus FILE] [--attn NAME] [--decoder bahdanau|luong] [--bidirectional]\n"
    "                     [--emb N] [--hidden N] [--batch N] [--epochs N | --steps N] [--lr X]\n"
    "                     [--optim adam|sgd|adamw] [--clip X] [--tf RATIO] [--max-len N] [--seed N]\n"
    "                     [--accumulate K]\n"
    "                     [--preset NAME] [--out DIR] [--resume CKPT] [--force] [more options below]\n"
    "\n"
    "Without --corpus it trains on the built-in toy English -> French-like corpus\n"
    "(15,000 generated pairs with gold alignments; see tinyseq corpus --toy).\n"
    "On your own data: tinyseq train --preset transformer-small --corpus FILE.tsv\n"
    "\n";

// The cli's own flags, listed after the options of their section.
static const struct {
    const char *section, *lines;
} usage_cli[] = {
    {"training", "  --config FILE     read options from FILE first: key = value lines as DIR/config.txt\n"
                 "                    writes them (# starts a comment); flags on the command line win\n"},
    {"output", "  --check-out       train nothing: exit 0 when --out is new, empty or holds only a run's\n"
               "                    files (what --force replaces), else name what else it holds, exit 2\n"
               "  --verbose         also name the BLAS kernels and threads before the first step (always\n"
               "                    named, with a warning, when they are below the CPU's; tinyseq --version)\n"},
};

static const char usage_tail[] =
    "\n"
    "Writes DIR/last.ckpt (every epoch and at the end), DIR/best.ckpt (the best dev evaluation\n"
    "by --best, the final one included), DIR/metrics.csv (each dev evaluation), DIR/steps.csv,\n"
    "DIR/config.txt, DIR/dev-pairs.tsv (the held-out dev pairs, for tinyseq eval), DIR/loss.svg,\n"
    "DIR/attention-<epoch>.svg (attention-step-<step>.svg between epochs), DIR/attention.jsonl\n"
    "(for tinyseq report) and, for a Transformer on the toy corpus, DIR/heads.csv (the AER of\n"
    "every cross-attention head at each evaluation). A run that stops inside an epoch records its final evaluation too.\n"
    "Ends with: train: tokens_per_s=T steps=N last_batch_loss=L (the last step's batch alone);\n"
    "a guided run (--guided-alignment) then with the tinyseq eval --align command that measures it.\n"
    "Ctrl-C (SIGINT) or SIGTERM stops at the next step, saves DIR/last.ckpt, prints the\n"
    "command that continues the run and exits 130 (143 for SIGTERM); during the last\n"
    "evaluation it skips the final evaluation and says so. A second Ctrl-C stops at once\n"
    "and says whether a saved checkpoint is there (it stays intact).\n"
    "Data-parallel on several processes or machines (docs/scaling.md):\n"
    "  mpirun -np N tinyseq train ...   (as root: --allow-run-as-root; more ranks than\n"
    "  cores: --oversubscribe). Rank 0 prints and writes DIR; the ranks must share the flags.\n"
    "Exit status: 0 done, 1 failure at run time (unreadable or bad file, failed save,\n"
    "out of memory), 2 usage error (bad flag or value, flags a checkpoint cannot resume).\n";

// One option's lines: "  --flag META" in 18 columns, then its help with
// the default (and a choice's names) filled in and each further line
// indented to the help.
static void print_option_help(FILE *out, const ts_train_option *r, const ts_train_opts *defaults) {
    char head[64];
    snprintf(head, sizeof head, "--%s%s%s", r->set->flag, r->set->meta ? " " : "", r->set->meta ? r->set->meta : "");
    fprintf(out, "  %-16s  ", head);
    ts_train_option_help(out, r, defaults, "\n                    ");
    fputc('\n', out);
}

// The defaults --arch NAME changes (its recipe, train/options.c), after the model options.
static void print_arch_defaults(FILE *out) {
    for (size_t i = 0; i < ts_train_arch_recipes_count; i++) {
        const ts_train_preset *recipe = &ts_train_arch_recipes[i];
        int column = fprintf(out, "  --arch %s changes the defaults to", recipe->name);
        char words[512];
        snprintf(words, sizeof words, "%s", recipe->flags);
        char *save = NULL;
        for (char *flag = strtok_r(words, " ", &save); flag; flag = strtok_r(NULL, " ", &save)) {
            const ts_train_option *r = ts_train_option_by_flag(flag + 2);
            const char *value = r && r->kind == TS_OPTION_SWITCH ? "" : strtok_r(NULL, " ", &save);
            if (column > 76) column = fprintf(out, "\n                   ");
            column += fprintf(out, " %s%s%s", flag, value && *value ? " " : "", value ? value : "");
        }
        fputc('\n', out);
    }
}

// The presets (train/options.c's table) under --preset: a name and its
// help, then the flags it sets, wrapped at 96 columns.
static void print_presets(FILE *out) {
    for (size_t i = 1; i < ts_train_presets_count; i++) {
        const ts_train_preset *p = &ts_train_presets[i];
        fprintf(out, "    %-18s ", p->name);
        for (const char *c = p->help; *c; c++) {
            fputc(*c, out);
            if (*c == '\n') fputs("                       ", out);
        }
        fputs("\n                       =", out);
        int column = 24;
        for (const char *c = p->flags; *c;) {
            size_t word = strcspn(c, " "), value = c[word] ? strcspn(c + word + 1, " ") : 0;
            size_t len = word + (value && c[word + 1] != '-' ? value + 1 : 0);  // a flag with its value
            if (column + 1 + (int)len > 96) column = fprintf(out, "\n                        ");
            column += fprintf(out, " %.*s", (int)len, c);
            c += len;
            while (*c == ' ') c++;
        }
        fputc('\n', out);
    }
}

// The usage: its head, the options table's rows section by section, its tail.
static void print_usage(FILE *out) {
    static const char *const sections[] = {"data", "model", "training", "output"};
    ts_train_opts defaults = ts_train_defaults();
    fputs(usage_head, out);
    for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
        fprintf(out, "%s\n", sections[s]);
        for (size_t i = 0; i < ts_train_options_count; i++) {
            const ts_train_option *r = &ts_train_options[i];
            if (!r->set->flag || !r->set->help || strcmp(r->section, sections[s])) continue;
            print_option_help(out, r, &defaults);
            if (!strcmp(r->set->flag, "preset")) print_presets(out);
        }
        for (size_t i = 0; i < sizeof usage_cli / sizeof usage_cli[0]; i++)
            if (!strcmp(usage_cli[i].section, sections[s])) fputs(usage_cli[i].lines, out);
        if (!strcmp(sections[s], "model")) print_arch_defaults(out);
    }
    fputs(usage_tail, out);
}

// The first SIGINT or SIGTERM only sets this flag (the trainer stops at the
// next step boundary); a second one says what is left and ends the process
// at once, as the signal's default action does.
static volatile sig_atomic_t stop_signal;
static char last_ckpt[4200];  // DIR/last.ckpt, for the handler's message

static void say(const char *text) {
    if (write(STDERR_FILENO, text, strlen(text)) < 0) return;  // nothing more to do in a handler
}

static void on_stop_signal(int sig) {
    if (!stop_signal) {
        stop_signal = sig;
        return;
    }
    // Only async-signal-safe calls from here: write, access, signal, raise.
    say("\ntinyseq train: a second signal stops at once; ");
    if (access(last_ckpt, F_OK) == 0) {
        say("the last save stays intact: ");
        say(last_ckpt);
        say(" (continue with --resume)\n");
    } else {
        say("no checkpoint was saved yet: nothing to continue from\n");
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_stop_signals(const char *out_dir) {
    snprintf(last_ckpt, sizeof last_ckpt, "%s/last.ckpt", out_dir);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

// Tests only: TINYSEQ_TEST_KILL=RANK:STEP[:SIGNAL] raises SIGNAL (SIGKILL)
// in rank RANK after step STEP, as a kill or Ctrl-C at that moment would.
static long kill_rank = -1, kill_step = -1;
static int kill_signal = SIGKILL;

static void kill_after_step(long step, int rank) {
    if (step == kill_step && rank == kill_rank) raise(kill_signal);
}

static void read_test_kill(ts_train_opts *o) {
    const char *kill = getenv("TINYSEQ_TEST_KILL");
    if (kill && sscanf(kill, "%ld:%ld:%d", &kill_rank, &kill_step, &kill_signal) >= 2) o->after_step = kill_after_step;
}

// At a terminal, the columns a message on stderr wraps to; elsewhere 0:
// one line, as scripts read it.
static int stderr_width(void) { return isatty(STDERR_FILENO) ? ts_term_width(stderr) : 0; }

// Writes `arg` for a POSIX shell: as it is when it is made of safe
// characters only, else in single quotes.
static void print_shell_word(FILE *out, const char *arg) {
    if (*arg && strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./=:,+@%") == strlen(arg)) {
        fputs(arg, out);
        return;
    }
    fputc('\'', out);
    for (; *arg; arg++)
        if (*arg == '\'') fputs("'\\''", out);
        else fputc(*arg, out);
    fputc('\'', out);
}

// `arg` as print_shell_word writes it, malloc'd (NULL when out of memory).
static char *shell_word(const char *arg) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    print_shell_word(f, arg);
    fclose(f);
    return text;
}

// Where an interrupted run stopped, and the command that continues it: this
// one's arguments without --out, --resume and --force, then --out DIR
// --resume DIR/last.ckpt. `program` is how tinyseq was started; `ranks` > 1
// puts "mpirun -np RANKS" before it. At a terminal the command goes on over
// lines ended by " \" between its words, so that it still pastes whole.
static void print_resume_command(const char *program, int argc, char **argv, const ts_train_opts *o,
                                 const ts_train_report *r, int ranks) {
    char line[4600];
    snprintf(line, sizeof line, "tinyseq train: stopped by %s at step %ld (epoch %ld, %ld of %ld batches done); saved %s/last.ckpt",
             r->stopped == SIGTERM ? "SIGTERM" : "SIGINT", r->steps, r->epoch + 1, r->position, r->epoch_batches, o->out_dir);
    ts_term_put_wrapped(stderr, line, stderr_width(), 2);
    char np[32], last[4200];
    snprintf(np, sizeof np, "%d", ranks);
    snprintf(last, sizeof last, "%s/last.ckpt", o->out_dir);
    const char **args = malloc(((size_t)argc + 8) * sizeof *args);
    if (!args) return;
    int n = 0;
    if (ranks > 1) args[n++] = "mpirun", args[n++] = "-np", args[n++] = np;
    args[n++] = program;
    args[n++] = "train";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes_value = !strcmp(a, "--out") || !strcmp(a, "--resume");
        if (takes_value) {
            i++;  // and its value
            continue;
        }
        if (!strncmp(a, "--out=", 6) || !strncmp(a, "--resume=", 9) || !strcmp(a, "--force")) continue;
        args[n++] = a;
    }
    args[n++] = "--out";
    args[n++] = o->out_dir;
    args[n++] = "--resume";
    args[n++] = last;
    char **words = calloc((size_t)n, sizeof *words);
    for (int i = 0; words && i < n; i++) words[i] = shell_word(args[i]);
    int width = stderr_width(), column = fprintf(stderr, "continue with:");
    for (int i = 0; words && i < n && words[i]; i++) {
        // A flag and its value stay on one line.
        int value = args[i][0] == '-' && args[i][1] == '-' && i + 1 < n && args[i + 1][0] != '-' && words[i + 1];
        int cols = (int)strlen(words[i]) + (value ? 1 + (int)strlen(words[i + 1]) : 0);
        if (width > 0 && i > 0 && column + 1 + cols + 2 > width) {  // room for " \"
            fputs(" \\\n ", stderr);
            column = 1;
        }
        column += fprintf(stderr, " %s", words[i]);
        if (value) column += fprintf(stderr, " %s", words[++i]);
    }
    fputc('\n', stderr);
    for (int i = 0; words && i < n; i++) free(words[i]);
    free(words);
    free(args);
}

static int train_command(int argc, char **argv, char **config_text) {
    const char *cmd = "tinyseq train";
    ts_train_opts o = ts_train_defaults();
    int given[TS_TRAIN_OPTIONS_MAX] = {0};  // by row: the flags given (here or in --config)
    char default_out[TS_RUN_NAME_SIZE];
    const char *config = NULL;
    int check_out = 0;
    // One flag a row of the options table, and --config.
    ts_flag flags[TS_TRAIN_OPTIONS_MAX + 3];
    option_target targets[TS_TRAIN_OPTIONS_MAX];
    size_t n_flags = 0;
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->set->flag || (i > 0 && ts_train_option_takes_file(r - 1))) continue;
        flags[n_flags] = flag_of(r, &o, &targets[n_flags]);
        flags[n_flags].given = &given[i];
        n_flags++;
    }
    flags[n_flags++] = (ts_flag)TS_STRING("config", &config);
    flags[n_flags++] = (ts_flag)TS_SWITCH("check-out", &check_out);
    flags[n_flags++] = (ts_flag)TS_SWITCH("verbose", &o.verbose);
    ts_cli_spec spec = {.command = cmd, .help = print_usage, .flags = flags, .n_flags = n_flags};
    const char *config_file = config_path(argc, argv);
    int parsed = config_file ? apply_config(config_file, &spec, config_text) : -1;
    if (parsed >= 0) return parsed;
    // What the command line gives apart (an older run's config.txt has every model row, whatever the architecture).
    int config_given[TS_TRAIN_OPTIONS_MAX];
    memcpy(config_given, given, sizeof config_given);
    memset(given, 0, sizeof given);
    parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed >= 0) return parsed;
    int line_given[TS_TRAIN_OPTIONS_MAX];
    memcpy(line_given, given, sizeof line_given);
    for (size_t i = 0; i < TS_TRAIN_OPTIONS_MAX; i++) given[i] |= config_given[i];
    if (check_out) {  // what scripts/demo.sh asks before it replaces an earlier run
        int rc = ts_rundir_holds_only_a_run(o.out_dir);
        if (rc) ts_cli_error(cmd, 0, "%s", ts_last_error());
        return !rc ? TS_EXIT_OK : rc == TS_ERR_ARG ? TS_EXIT_USAGE : TS_EXIT_FAIL;
    }
    // The corpus is checked up front, before any work: one that cannot be
    // read is a failure at run time (exit 1). The trainer reads --resume's
    // checkpoint first thing, once.
    FILE *corpus = o.data.corpus ? fopen(o.data.corpus, "rb") : NULL;
    if (o.data.corpus && !corpus) {
        ts_cli_error(cmd, 0, "--corpus: cannot open '%s': %s", o.data.corpus, strerror(errno));
        return TS_EXIT_FAIL;
    }
    if (corpus) fclose(corpus);
    if (ts_train_options_finish(&o, given, default_out)) {  // the table's own values: a bad one is the program's bug
        ts_cli_error(cmd, 0, "%s", ts_last_error());
        return TS_EXIT_FAIL;
    }
    if (ts_train_options_refuse(&o, given)) {
        ts_cli_error(cmd, 0, "%s", ts_last_error());
        return TS_EXIT_USAGE;
    }
    if (ts_train_options_check_arch(&o, line_given)) ts_cli_error(cmd, 0, "warning: %s", ts_last_error());
    ts_train_report report;
    catch_stop_signals(o.out_dir);
    o.stop = &stop_signal;
    read_test_kill(&o);
    // Under mpirun: the ranks train together; rank 0 alone prints.
    ts_dist dist;
    int mpi_argc = argc;  // MPI may edit what it is given; argv is read below
    char **mpi_argv = argv;
    int rc = ts_dist_init(&dist, &mpi_argc, &mpi_argv);
    if (rc) {
        if (!dist.quiet) ts_cli_error(cmd, 0, "%s", ts_last_error());
        return rc == TS_ERR_ARG ? TS_EXIT_USAGE : TS_EXIT_FAIL;
    }
    o.dist = &dist;
    if (dist.rank != 0) o.out = o.log = NULL;
    rc = ts_train(&o, &report);
    if (rc) {
        int status = rc == TS_ERR_ARG ? TS_EXIT_USAGE : TS_EXIT_FAIL;
        if (dist.size > 1 && !dist.quiet) {
            char rank[64];
            snprintf(rank, sizeof rank, "%s (rank %d of %d)", cmd, dist.rank, dist.size);
            ts_cli_error(rank, 0, "%s", ts_last_error());
        } else if (!dist.quiet) {
            ts_cli_error(cmd, 0, "%s", ts_last_error());
            if (o.resume) ts_cli_checkpoint_hint(cmd, "--resume", o.resume, "last.ckpt");
        }
        fflush(stdout);
        fflush(stderr);
        // A failure of this rank alone: the others may wait in a collective,
        // so the whole job ends here.
        if (!dist.agreed_failure) ts_dist_abort(&dist, status);
        ts_dist_finalize(&dist);
        return status;
    }
    // Rank 0 says how the run stopped before the ranks finish together: a
    // rank that exits non-zero first makes mpirun end the others.
    if (report.stopped && dist.rank == 0) {
        fflush(stdout);
        if (report.finished) {  // the signal came during the last evaluation: nothing to continue
            char line[16800];
            snprintf(line, sizeof line,
                     "tinyseq train: stopped by %s after the training had ended (step %ld); %s/last.ckpt holds its "
                     "final model, and only the final evaluation was skipped: tinyseq eval --model %s/last.ckpt "
                     "--corpus %s%s runs it",
                     report.stopped == SIGTERM ? "SIGTERM" : "SIGINT", report.steps, o.out_dir, o.out_dir,
                     o.data.dev_file ? o.data.dev_file : o.out_dir, o.data.dev_file ? "" : "/dev-pairs.tsv");
            ts_term_put_wrapped(stderr, line, stderr_width(), 2);
        } else {
            print_resume_command(ts_cli_program, argc, argv, &o, &report, dist.size);
        }
    }
    fflush(stdout);
    ts_dist_finalize(&dist);
    return report.stopped ? 128 + report.stopped : TS_EXIT_OK;
}

int ts_cmd_train(int argc, char **argv) {
    char *config_text = NULL;  // --config's values live here until the run ends
    int status = train_command(argc, argv, &config_text);
    free(config_text);
    return status;
}
