// tinyseq train: train an attention seq2seq model (default: the toy corpus).
#include "cli/cli.h"
#include "cli/common.h"

#include "train/rundir.h"
#include "train/trainer.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// --dev N or --dev FILE: a whole number is a count of pairs held out, anything
// else a held-out corpus (the last --dev given wins).
typedef struct {
    long *pairs;
    const char **file;
} dev_choice;

static int choose_dev(const char *command, const char *flag, const char *value, void *target) {
    dev_choice *d = target;
    char *end;
    long n = strtol(value, &end, 10);
    if (end != value && *end == '\0') {
        if (ts_parse_int(command, flag, value, 1, 10000000, &n)) return TS_EXIT_USAGE;
        *d->pairs = n;
        *d->file = NULL;
    } else {
        *d->file = value;
        *d->pairs = 0;
    }
    return -1;
}

// ---- --config FILE -------------------------------------------------------------

// The keys of config.txt: each names a flag (NULL: a fact about the run that
// is read back but not applied). A 0 under a key marked zero_unset means the
// option was not given.
static const struct {
    const char *key, *flag;
    int zero_unset;
} config_keys[] = {
    {"corpus", "corpus", 0},          {"toy_pairs", "toy-pairs", 0},       {"max_len", "max-len", 1},
    {"dev", "dev", 0},                {"test", "test", 0},                 {"min_count", "min-count", 0},
    {"skip_bad", "skip-bad", 0},      {"attention", "attn", 0},            {"decoder", "decoder", 0},
    {"bidirectional", "bidirectional", 0}, {"emb", "emb", 0},              {"hidden", "hidden", 0},
    {"optimizer", "optim", 0},        {"lr", "lr", 0},                     {"clip", "clip", 0},
    {"tf", "tf", 0},                  {"dropout", "dropout", 0},           {"label_smoothing", "label-smoothing", 0},
    {"batch", "batch", 0},            {"accumulate", "accumulate", 0},     {"epochs", "epochs", 0},             {"steps", "steps", 1},
    {"lr_decay", "lr-decay", 0},      {"patience", "patience", 0},         {"seed", "seed", 0},
    {"keep", "keep", 0},              {"beam", "beam", 0},                 {"log_every", "log-every", 1},
    {"eval_every", "eval-every", 1},              {"toy_seed", NULL, 0},               {"dev_pairs", NULL, 0},
    {"train_pairs", NULL, 0},         {"source_vocabulary", NULL, 0},      {"target_vocabulary", NULL, 0},
    {"parameters", NULL, 0},          {"resume", NULL, 0},                 {"ranks", NULL, 0},
};

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
        ts_cli_error(spec->command, 0, "--config: cannot read '%s' (a read error, or over 16 MiB)", path);
        return TS_EXIT_FAIL;
    }
    buf[len] = '\0';
    *text = buf;
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
        size_t k = 0, n_keys = sizeof config_keys / sizeof config_keys[0];
        while (k < n_keys && strcmp(config_keys[k].key, key)) k++;
        if (k == n_keys) {
            fprintf(stderr, "%s: unknown key '%s' (the keys are those of a run's config.txt)\n", where, key);
            status = TS_EXIT_USAGE;
            break;
        }
        int is_switch = !strcmp(key, "bidirectional") || !strcmp(key, "skip_bad");
        if (!config_keys[k].flag || !*value || (config_keys[k].zero_unset && !strcmp(value, "0")) ||
            (is_switch && !strcmp(value, "0")) || (!strcmp(key, "corpus") && !strcmp(value, "toy")))
            continue;  // a fact, or the option's default
        if (is_switch && strcmp(value, "1")) {
            fprintf(stderr, "%s: %s is 0 or 1, got '%s'\n", where, key, value);
            status = TS_EXIT_USAGE;
            break;
        }
        snprintf(flag, sizeof flag, "--%s", config_keys[k].flag);
        char *args[3] = {(char *)"train", flag, value};
        ts_cli_spec at_line = *spec;
        at_line.command = where;
        status = ts_cli_parse(&at_line, is_switch ? 2 : 3, args);
    }
    return status;
}

static const char usage[] =
    "usage: tinyseq train [--corpus FILE] [--attn NAME] [--decoder bahdanau|luong] [--bidirectional]\n"
    "                     [--emb N] [--hidden N] [--batch N] [--epochs N | --steps N] [--lr X]\n"
    "                     [--optim adam|sgd] [--clip X] [--tf RATIO] [--max-len N] [--seed N]\n"
    "                     [--accumulate K]\n"
    "                     [--out DIR] [--resume CKPT] [--force] [more options below]\n"
    "\n"
    "Without --corpus it trains on the built-in toy English -> French-like corpus\n"
    "(15,000 generated pairs with gold alignments; see tinyseq corpus --toy).\n"
    "\n"
    "data\n"
    "  --corpus FILE     tab-separated pairs: source<TAB>target[<TAB>ignored]\n"
    "  --max-len N       keep pairs with at most N tokens per side (default: no limit)\n"
    "  --dev N|FILE      dev pairs held out (default: 500 or a tenth of the corpus, whichever is\n"
    "                    fewer), or a TSV file to use as the dev set (then nothing is held out)\n"
    "  --test FILE       a TSV file the final model is evaluated on (a \"test:\" line at the end)\n"
    "  --min-count N     vocabulary: words seen at least N times (default 1)\n"
    "  --skip-bad        skip malformed corpus lines (and count them) instead of stopping\n"
    "  --toy-pairs N     size of the toy corpus (default 15000)\n"
    "model\n"
    "  --attn NAME       bahdanau (default), dot, general, concat, scaled-dot, none\n"
    "  --decoder NAME    bahdanau or luong (default: bahdanau for --attn bahdanau, else luong)\n"
    "  --bidirectional   bidirectional encoder\n"
    "  --emb N           embedding size (default 64)\n"
    "  --hidden N        hidden size (default 128)\n"
    "training\n"
    "  --optim NAME      adam (default) or sgd (with momentum 0.9)\n"
    "  --lr X            learning rate (default 0.003)\n"
    "  --clip X          clip the global gradient norm at X (default 5; 0: off)\n"
    "  --tf RATIO        teacher-forcing ratio in [0, 1] (default 1)\n"
    "  --dropout P       dropout on embeddings, encoder outputs and the pre-output layer,\n"
    "                    in [0, 0.99] (default 0; docs/models.md)\n"
    "  --label-smoothing E  PyTorch's label smoothing in [0, 0.99] (default 0.1); the reported\n"
    "                    losses and perplexity stay plain cross-entropy\n"
    "  --batch N         sentences per batch (default 32); under mpirun the batch of all the\n"
    "                    ranks together: the same flags train the same model on any number\n"
    "  --accumulate K    run each batch as K parts one after another, summing their gradients,\n"
    "                    then one update: the same update with about 1/K of the activation\n"
    "                    memory, so a batch K times larger than fits (default 1)\n"
    "  --epochs N        epochs (default 5)\n"
    "  --steps N         stop after N optimizer steps in all, counting those before --resume\n"
    "  --lr-decay X      multiply the learning rate by X when dev loss does not improve (default 0.5)\n"
    "  --patience N      stop after N epochs without a better dev loss (default 3)\n"
    "  --seed N          initialisation, split, shuffling and teacher forcing (default 1)\n"
    "  --threads N       BLAS threads, 1 to 64 (default: OPENBLAS_NUM_THREADS, else the cores;\n"
    "                    under mpirun, the cores shared among the machine's ranks)\n"
    "  --config FILE     read options from FILE first: key = value lines as DIR/config.txt\n"
    "                    writes them (# starts a comment); flags on the command line win\n"
    "output\n"
    "  --out DIR         where everything is written (default runs/<date-time>); it holds one run:\n"
    "                    a new run into a directory holding one is refused without --force\n"
    "  --resume CKPT     continue a run exactly from its last.ckpt (same data and flags); into\n"
    "                    the checkpoint's own directory, metrics.csv continues where it stopped\n"
    "  --force           start over in an --out holding a run: deletes that run's checkpoints,\n"
    "                    metrics.csv, config.txt and figures (nothing else)\n"
    "  --check-out       train nothing: exit 0 when --out is new, empty or holds only a run's\n"
    "                    files (what --force replaces), else name what else it holds, exit 2\n"
    "  --show N          dev examples printed at the end (default 4)\n"
    "  --beam K          the final dev (and --test) evaluation also decodes with beam K,\n"
    "                    as tinyseq eval --beam K would (default 5; 0: greedy only)\n"
    "  --keep N          also keep the last N epochs' models as DIR/epoch-<E>.ckpt (for\n"
    "                    tinyseq average; default 0: none)\n"
    "  --log-every N     the training loss into DIR/steps.csv every N steps (default: about 20\n"
    "                    rows an epoch, a round N), at each epoch's end and where the run stops\n"
    "  --eval-every N    also evaluate dev every N steps inside an epoch, recorded like the\n"
    "                    epochs' evaluations (default: at each epoch's end only; the learning\n"
    "                    rate, early stopping and best.ckpt follow the epochs' alone)\n"
    "\n"
    "Writes DIR/last.ckpt (every epoch and at the end), DIR/best.ckpt (best dev loss; the\n"
    "final model if no epoch has ended), DIR/metrics.csv (each dev evaluation), DIR/steps.csv,\n"
    "DIR/config.txt, DIR/dev-pairs.tsv (the held-out dev pairs, for tinyseq eval), DIR/loss.svg,\n"
    "DIR/attention-<epoch>.svg (attention-step-<step>.svg between epochs) and DIR/attention.jsonl\n"
    "(for tinyseq report). A run that stops inside an epoch records its final evaluation too.\n"
    "Ends with: train: tokens_per_s=T steps=N loss=L\n"
    "Ctrl-C (SIGINT) or SIGTERM stops at the next step, saves DIR/last.ckpt, prints the\n"
    "command that continues the run and exits 130 (143 for SIGTERM); a second Ctrl-C\n"
    "stops at once (the last saved checkpoint stays intact).\n"
    "Data-parallel on several processes or machines (docs/scaling.md):\n"
    "  mpirun -np N tinyseq train ...   (as root: --allow-run-as-root; more ranks than\n"
    "  cores: --oversubscribe). Rank 0 prints and writes DIR; the ranks must share the flags.\n"
    "Exit status: 0 done, 1 failure at run time (unreadable or bad file, failed save,\n"
    "out of memory), 2 usage error (bad flag or value, flags a checkpoint cannot resume).\n";

// The first SIGINT or SIGTERM only sets this flag (the trainer stops at the
// next step boundary); SA_RESETHAND restores the default action, so a second
// one ends the process at once.
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

static void catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

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

// Where an interrupted run stopped, and the command that continues it: this
// one's arguments without --out, --resume and --force, then --out DIR
// --resume DIR/last.ckpt. `program` is how tinyseq was started; `ranks` > 1
// puts "mpirun -np RANKS" before it.
static void print_resume_command(const char *program, int argc, char **argv, const ts_train_opts *o,
                                 const ts_train_report *r, int ranks) {
    fprintf(stderr, "tinyseq train: stopped by %s at step %ld (epoch %ld, %ld of %ld batches done); saved %s/last.ckpt\n",
            r->stopped == SIGTERM ? "SIGTERM" : "SIGINT", r->steps, r->epoch + 1, r->position, r->epoch_batches, o->out_dir);
    fputs("continue with: ", stderr);
    if (ranks > 1) fprintf(stderr, "mpirun -np %d ", ranks);
    print_shell_word(stderr, program);
    fputs(" train", stderr);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes_value = !strcmp(a, "--out") || !strcmp(a, "--resume");
        if (takes_value) {
            i++;  // and its value
            continue;
        }
        if (!strncmp(a, "--out=", 6) || !strncmp(a, "--resume=", 9) || !strcmp(a, "--force")) continue;
        fputc(' ', stderr);
        print_shell_word(stderr, a);
    }
    fputs(" --out ", stderr);
    print_shell_word(stderr, o->out_dir);
    fputs(" --resume ", stderr);
    char last[4200];
    snprintf(last, sizeof last, "%s/last.ckpt", o->out_dir);
    print_shell_word(stderr, last);
    fputc('\n', stderr);
}

static int train_command(int argc, char **argv, char **config_text) {
    const char *cmd = "tinyseq train";
    ts_train_opts o = ts_train_defaults();
    int decoder_given = 0;
    char default_out[64];
    time_t now = time(NULL);
    struct tm tm;
    strftime(default_out, sizeof default_out, "runs/%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    o.out_dir = default_out;
    long emb = o.model.emb, hidden = o.model.hidden;
    dev_choice dev = {&o.dev_pairs, &o.dev_file};
    const char *config = NULL;
    int check_out = 0;
    const ts_flag flags[] = {
        TS_STRING("corpus", &o.corpus),
        TS_INT("max-len", &o.max_len, 1, 100000),
        TS_CHOICE("dev", &dev, choose_dev),
        TS_STRING("test", &o.test_file),
        TS_STRING("config", &config),
        TS_INT("min-count", &o.min_count, 1, 1000000),
        TS_SWITCH("skip-bad", &o.skip_bad),
        TS_INT("toy-pairs", &o.toy_pairs, 10, 10000000),
        TS_CHOICE("attn", &o.model.attn, ts_choose_attn),
        {.name = "decoder", .kind = TS_FLAG_CHOICE, .target = &o.model.decoder, .choose = ts_choose_decoder,
         .given = &decoder_given},
        TS_SWITCH("bidirectional", &o.model.bidirectional),
        TS_INT("emb", &emb, 1, TS_MODEL_MAX_EMB),
        TS_INT("hidden", &hidden, 1, TS_MODEL_MAX_HIDDEN),
        TS_CHOICE("optim", &o.optim, ts_choose_optim),
        TS_DOUBLE("lr", &o.lr, 1e-12, 100),
        TS_DOUBLE("clip", &o.clip, 0, 1e12),
        TS_DOUBLE("tf", &o.tf, 0, 1),
        TS_DOUBLE("dropout", &o.dropout, 0, 0.99),
        TS_DOUBLE("label-smoothing", &o.label_smoothing, 0, 0.99),
        TS_INT("batch", &o.batch, 1, 100000),
        TS_INT("accumulate", &o.accumulate, 1, 100000),
        TS_INT("epochs", &o.epochs, 1, TS_MAX_EPOCHS),
        TS_INT("steps", &o.steps, 1, 1000000000),
        TS_DOUBLE("lr-decay", &o.lr_decay, 1e-6, 1),
        TS_INT("patience", &o.patience, 1, 100000),
        TS_INT("seed", &o.seed, 0, 2147483647L),
        TS_INT("threads", &o.threads, 1, TS_MAX_THREADS),
        TS_STRING("out", &o.out_dir),
        TS_STRING("resume", &o.resume),
        TS_SWITCH("force", &o.force),
        TS_SWITCH("check-out", &check_out),
        TS_INT("show", &o.show, 0, 1000),
        TS_INT("beam", &o.beam, 0, 1000),
        TS_INT("keep", &o.keep, 0, 1000),
        TS_INT("log-every", &o.log_every, 1, 1000000000),
        TS_INT("eval-every", &o.eval_every, 1, 1000000000),
    };
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = sizeof flags / sizeof flags[0]};
    const char *config_file = config_path(argc, argv);
    int parsed = config_file ? apply_config(config_file, &spec, config_text) : -1;
    if (parsed >= 0) return parsed;
    parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed >= 0) return parsed;
    o.model.emb = (int)emb;
    o.model.hidden = (int)hidden;
    if (check_out) {  // what scripts/demo.sh asks before it replaces an earlier run
        int rc = ts_rundir_holds_only_a_run(o.out_dir);
        if (rc) ts_cli_error(cmd, 0, "%s", ts_last_error());
        return !rc ? TS_EXIT_OK : rc == TS_ERR_ARG ? TS_EXIT_USAGE : TS_EXIT_FAIL;
    }
    // The corpus is checked up front, before any work: one that cannot be
    // read is a failure at run time (exit 1). The trainer reads --resume's
    // checkpoint first thing, once.
    FILE *corpus = o.corpus ? fopen(o.corpus, "rb") : NULL;
    if (o.corpus && !corpus) {
        ts_cli_error(cmd, 0, "--corpus: cannot open '%s': %s", o.corpus, strerror(errno));
        return TS_EXIT_FAIL;
    }
    if (corpus) fclose(corpus);
    // --attn bahdanau goes with the Bahdanau decoder, the others with Luong's.
    if (!decoder_given) o.model.decoder = o.model.attn == TS_ATTN_BAHDANAU ? TS_DECODER_BAHDANAU : TS_DECODER_LUONG;
    ts_train_report report;
    catch_stop_signals();
    o.stop = &stop_signal;
    // Under mpirun: the ranks train together; rank 0 alone prints.
    ts_dist dist;
    int mpi_argc = argc;  // MPI may edit what it is given; argv[-1] is read below
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
        }
        fflush(stdout);
        fflush(stderr);
        // A failure of this rank alone: the others may wait in a collective,
        // so the whole job ends here.
        if (!dist.agreed_failure) ts_dist_abort(&dist, status);
        ts_dist_finalize(&dist);
        return status;
    }
    ts_dist_finalize(&dist);
    if (report.stopped) {
        fflush(stdout);
        if (dist.rank != 0) return 128 + report.stopped;
        // main() hands a subcommand argv + 1: argv[-1] is the program as it was started.
        print_resume_command(argv[-1], argc, argv, &o, &report, dist.size);
        return 128 + report.stopped;
    }
    return TS_EXIT_OK;
}

int ts_cmd_train(int argc, char **argv) {
    char *config_text = NULL;  // --config's values live here until the run ends
    int status = train_command(argc, argv, &config_text);
    free(config_text);
    return status;
}
