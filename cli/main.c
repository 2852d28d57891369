// tinyseq: train, inspect and check attention seq2seq models.
#include "cli/cli.h"
#include "cli/blas_rerun.h"
#include "tensor/blas_setup.h"
#include "tensor/kernels.h"
#include "tensor/threads.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

// One row per subcommand, in the order `tinyseq --help` lists them.
static const subcommand subcommands[] = {
    {"train", ts_cmd_train, "train a model (default: the built-in toy corpus)"},
    {"translate", ts_cmd_translate, "translate sentences (arguments or stdin) with a checkpoint"},
    {"attend", ts_cmd_attend, "translate one sentence and show its attention (terminal, SVG, JSON)"},
    {"eval", ts_cmd_eval, "BLEU, perplexity, exact match and AER of a checkpoint on a corpus"},
    {"gradcheck", ts_cmd_gradcheck, "check every gradient against finite differences"},
    {"corpus", ts_cmd_corpus, "write the toy corpus, or check and normalise a TSV corpus"},
    {"info", ts_cmd_info, "what a checkpoint holds: model, vocabularies, parameters, training state"},
    {"export", ts_cmd_export, "write a checkpoint's weights as a NumPy .npz (for NumPy and PyTorch)"},
    {"import", ts_cmd_import, "read weights from an .npz into the model of a checkpoint"},
    {"average", ts_cmd_average, "the mean of several checkpoints of one model (e.g. the last epochs of a run)"},
    {"report", ts_cmd_report, "a run directory as one HTML page: curves and an attention explorer"},
    {NULL, NULL, NULL},
};

static const size_t n_subcommands = sizeof subcommands / sizeof subcommands[0] - 1;

static const char *command_name(const void *table, size_t i) { return ((const subcommand *)table)[i].name; }

static void usage(FILE *out) {
    fprintf(out, "usage: tinyseq COMMAND [OPTIONS]   (tinyseq COMMAND --help for its options)\n\n"
                 "commands:\n");
    for (int i = 0; subcommands[i].name; i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nLinear algebra: GSL on %s (kernels: %s).\n", TS_CBLAS_NAME, ts_blas_kernels());
}

// ---- a mapped file that changed (SIGBUS) ----------------------------------
// Checkpoints are mapped (ckpt/read.c, docs/checkpoint.md). A file cut
// short while mapped (`cp other.ckpt best.ckpt` as translate waits for
// input) takes its pages away: the next read of one raises SIGBUS. The
// handler names the file whose mapping holds the faulting address (from
// /proc/self/maps, read with async-signal-safe calls only) and exits 1,
// instead of dying with status 135 and no word.

static void say(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

// Parses hex digits at *p into *v; returns 1 when there was at least one.
static int hex_at(const char **p, uintptr_t *v) {
    const char *start = *p;
    for (*v = 0;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return *p > start;
        *v = *v * 16 + (uintptr_t)d;
    }
}

// The path of the mapping of /proc/self/maps that holds addr, into path
// (empty when none does or the file cannot be read).
static void mapped_file_of(uintptr_t addr, char *path, size_t cap) {
    path[0] = '\0';
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    static char buf[1 << 16], line[4352];  // a handler's buffers: static, the stack may be small
    size_t len = 0;
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] != '\n') {
                if (len + 1 < sizeof line) line[len++] = buf[i];
                continue;
            }
            line[len] = '\0';
            len = 0;
            const char *p = line;
            uintptr_t lo, hi;
            if (!hex_at(&p, &lo) || *p++ != '-' || !hex_at(&p, &hi) || addr < lo || addr >= hi) continue;
            const char *slash = strchr(p, '/');  // "lo-hi perms offset dev inode   /path"
            if (slash) {
                strncpy(path, slash, cap - 1);
                path[cap - 1] = '\0';
            }
            close(fd);
            return;
        }
    close(fd);
}

static void on_bus_error(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)context;
    static char path[4096];
    mapped_file_of((uintptr_t)info->si_addr, path, sizeof path);
    say("tinyseq: ");
    if (path[0]) {
        say("'");
        say(path);
        say("' changed while in use: it was cut short or rewritten in place (cp onto it) while this command "
            "read it through a mapping; stopped. Replace a checkpoint with mv, or let the command end first\n");
    } else {
        say("bus error (SIGBUS): a mapped file changed while in use; stopped\n");
    }
    _exit(TS_EXIT_FAIL);
}

int main(int argc, char **argv) {
    ts_cli_program = argv[0];
    ts_cli_blas_init(argc, argv);  // may run tinyseq again, once, with better kernels
    // Past `ulimit -f` a write then fails with EFBIG, reported like a full
    // disk (message, old file intact, exit 1), instead of killing us silently.
    signal(SIGXFSZ, SIG_IGN);
    struct sigaction bus = {.sa_sigaction = on_bus_error, .sa_flags = SA_SIGINFO | SA_RESETHAND};
    sigemptyset(&bus.sa_mask);
    sigaction(SIGBUS, &bus, NULL);
    if (argc < 2) {
        usage(stderr);
        return TS_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return TS_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tinyseq 0.1.0 (GSL on %s)\nkernels: %s\n", TS_CBLAS_NAME, ts_blas_kernels());
        if (ts_blas_thread_timeout())
            printf("threads: %d, idle BLAS threads sleep after 2^%d cycles\n", ts_threads_available(), ts_blas_thread_timeout());
        return TS_EXIT_OK;
    }
    for (int i = 0; subcommands[i].name; i++)
        if (!strcmp(argv[1], subcommands[i].name)) return subcommands[i].run(argc - 1, argv + 1);
    int near = ts_cli_nearest(argv[1], strlen(argv[1]), command_name, subcommands, n_subcommands);
    if (near >= 0) {
        fprintf(stderr, "tinyseq: unknown command '%s': did you mean %s? (tinyseq --help lists the commands)\n", argv[1],
                subcommands[near].name);
        return TS_EXIT_USAGE;
    }
    fprintf(stderr, "tinyseq: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return TS_EXIT_USAGE;
}
