// tinyseq export: a checkpoint's weights, vocabularies and configuration as a
// NumPy .npz file (docs/interop.md).
#include "cli/cli.h"
#include "cli/common.h"

#include "interop/model_npz.h"
#include "tensor/status.h"

#include <errno.h>
#include <string.h>

static const char usage[] =
    "usage: tinyseq export CKPT OUT.npz [--stored] [--force]\n"
    "\n"
    "Writes the model of CKPT (an inference or training checkpoint) as a NumPy\n"
    ".npz file: every parameter under its PyTorch name (docs/models.md) as an\n"
    "array in C order of the model's dtype (float32 '<f4', float64 '<f8'; import\n"
    "converts), plus tinyseq.vocab.source, tinyseq.vocab.target\n"
    "(arrays of strings), tinyseq.config (one string) and, for a subword model,\n"
    "tinyseq.subword.source and .target (its SentencePiece models as uint8 bytes).\n"
    "numpy.load reads it without allow_pickle; docs/interop.md has the layout.\n"
    "\n"
    "  --stored   store the arrays uncompressed (as numpy.savez); the default\n"
    "             deflates them (as numpy.savez_compressed)\n"
    "  --force    replace OUT.npz if it exists (otherwise that is an error)\n"
    "\n"
    "The file is written atomically (a temporary file renamed into place).\n"
    "Exit status: 0 ok, 1 unreadable checkpoint or failed write, 2 usage error.\n";

static const char *cmd = "tinyseq export";

// CKPT and OUT.npz, in this order.
typedef struct {
    const char **items;  // (2)
    int n;
} path_list;

static int take_path(void *context, const char *command, const char *arg) {
    path_list *list = context;
    if (list->n == 2) {
        ts_cli_error(command, 0, "unexpected argument '%s' (see %s --help)", arg, command);
        return TS_EXIT_USAGE;
    }
    list->items[list->n++] = arg;
    return -1;
}

int ts_cmd_export(int argc, char **argv) {
    const char *paths[2] = {NULL, NULL};
    int n_paths = 0, stored = 0, force = 0;
    const ts_flag flags[] = {TS_SWITCH("stored", &stored), TS_SWITCH("force", &force)};
    path_list list = {paths, 0};
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = 2, .positional = take_path,
                        .context = &list};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed >= 0) return parsed;
    n_paths = list.n;
    if (n_paths < 2) {
        ts_cli_error(cmd, 0, "%s is required (see %s --help)", n_paths ? "OUT.npz" : "CKPT", cmd);
        return TS_EXIT_USAGE;
    }
    const char *ckpt_path = paths[0], *out_path = paths[1];
    if ((parsed = ts_cli_check_output(cmd, "an .npz file", out_path, force, 0)) >= 0) return parsed;
    ts_translator t;
    if (ts_translator_load(ckpt_path, &t)) {
        ts_cli_error(cmd, 1, "cannot load model '%s'", ckpt_path);
        return TS_EXIT_FAIL;
    }
    ts_npz *z;
    int status = TS_EXIT_OK;
    if (ts_model_to_npz(&t, &z)) {
        ts_cli_error(cmd, 1, "cannot convert '%s'", ckpt_path);
        status = TS_EXIT_FAIL;
    } else {
        if (ts_npz_save(z, out_path, stored ? TS_NPZ_STORE : TS_NPZ_DEFLATE)) {
            ts_cli_error(cmd, 1, "cannot write '%s'", out_path);
            status = TS_EXIT_FAIL;
        } else {
            printf("export: %s -> %s (%d parameters, %zu values, %s)\n", ckpt_path, out_path,
                   t.model->params.count, ts_params_size(&t.model->params), stored ? "stored" : "deflated");
        }
        ts_npz_free(z);
    }
    ts_translator_free(&t);
    return status;
}
