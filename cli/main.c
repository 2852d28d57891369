// tinyseq: train, inspect and check attention seq2seq models.
#include "cli/cli.h"
#include "cli/blas_rerun.h"
#include "tensor/blas_setup.h"
#include "tensor/kernels.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

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

static void usage(FILE *out) {
    fprintf(out, "usage: tinyseq COMMAND [OPTIONS]   (tinyseq COMMAND --help for its options)\n\n"
                 "commands:\n");
    for (int i = 0; subcommands[i].name; i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nLinear algebra: GSL on %s (kernels: %s).\n", TS_CBLAS_NAME, ts_blas_kernels());
}

int main(int argc, char **argv) {
    ts_cli_program = argv[0];
    ts_cli_blas_init(argc, argv);  // may run tinyseq again, once, with better kernels
    // Past `ulimit -f` a write then fails with EFBIG, reported like a full
    // disk (message, old file intact, exit 1), instead of killing us silently.
    signal(SIGXFSZ, SIG_IGN);
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
            printf("threads: %d, idle BLAS threads sleep after 2^%d cycles\n", ts_blas_threads(), ts_blas_thread_timeout());
        return TS_EXIT_OK;
    }
    for (int i = 0; subcommands[i].name; i++)
        if (!strcmp(argv[1], subcommands[i].name)) return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tinyseq: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return TS_EXIT_USAGE;
}
