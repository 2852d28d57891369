// tinyseq import: weights from a NumPy .npz file (as tinyseq export writes,
// or saved from PyTorch) into the model of a checkpoint, written as a new
// checkpoint (docs/interop.md).
#include "cli/cli.h"
#include "cli/common.h"

#include "interop/model_npz.h"
#include "tensor/status.h"

#include <string.h>

static const char usage[] =
    "usage: tinyseq import IN.npz --like CKPT -o OUT.ckpt [--force]\n"
    "\n"
    "Reads the weights of IN.npz into the model of CKPT (same configuration and\n"
    "vocabularies) and writes it to OUT.ckpt, a checkpoint that translate,\n"
    "attend and eval use like best.ckpt (the model alone: no optimizer state,\n"
    "so train --resume does not take it).\n"
    "\n"
    "Every parameter of the model must be in IN.npz under its PyTorch name\n"
    "(docs/models.md), float64, C order, with its exact shape; any other entry\n"
    "than the parameters and tinyseq.* is an error. tinyseq.vocab.* and\n"
    "tinyseq.config are optional; when present they must match CKPT. A subword\n"
    "model's tinyseq.subword.* (both or neither) must spell CKPT's vocabularies;\n"
    "present, they are the models OUT.ckpt holds, else CKPT's are kept.\n"
    "\n"
    "  --like CKPT        checkpoint giving the model and vocabularies (required)\n"
    "  -o, --out OUT.ckpt the checkpoint to write, atomically (required)\n"
    "  --force            replace OUT.ckpt if it exists (otherwise that is an error)\n"
    "\n"
    "Exit status: 0 ok, 1 unreadable or mismatched file or failed write, 2 usage error.\n";

static const char *cmd = "tinyseq import";

// The one IN.npz argument.
static int take_path(void *context, const char *command, const char *arg) {
    const char **path = context;
    if (*path) {
        ts_cli_error(command, 0, "unexpected argument '%s' (see %s --help)", arg, command);
        return TS_EXIT_USAGE;
    }
    *path = arg;
    return -1;
}

int ts_cmd_import(int argc, char **argv) {
    const char *in_path = NULL, *like_path = NULL, *out_path = NULL;
    int force = 0;
    const ts_flag flags[] = {
        TS_STRING("like", &like_path),
        TS_STRING("out", &out_path),
        TS_STRING("-o", &out_path),
        TS_SWITCH("force", &force),
    };
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = sizeof flags / sizeof flags[0],
                        .positional = take_path, .context = &in_path};
    int parsed = ts_cli_parse(&spec, argc, argv);
    if (parsed >= 0) return parsed;
    if (!in_path || !like_path || !out_path) {
        ts_cli_error(cmd, 0, "%s is required (see %s --help)",
                     !in_path ? "IN.npz" : !like_path ? "--like CKPT" : "-o OUT.ckpt", cmd);
        return TS_EXIT_USAGE;
    }
    if ((parsed = ts_cli_check_output(cmd, "a checkpoint", out_path, force, 0)) >= 0) return parsed;
    ts_translator t;
    if (ts_translator_load(like_path, &t)) {
        ts_cli_error(cmd, 1, "cannot load model '%s'", like_path);
        return TS_EXIT_FAIL;
    }
    int status = TS_EXIT_FAIL;
    ts_npz *z = NULL;
    ts_ckpt *ck = NULL;
    if (ts_npz_load(in_path, NULL, &z)) {
        ts_cli_error(cmd, 1, "cannot read '%s'", in_path);
    } else if (ts_model_from_npz(&t, z, in_path)) {
        ts_cli_error(cmd, 1, "cannot import '%s' into the model of '%s'", in_path, like_path);
    } else if (!(ck = ts_ckpt_new()) || ts_model_to_ckpt(ck, &t) ||
               ts_ckpt_save(ck, out_path)) {
        ts_cli_error(cmd, 1, "cannot write '%s'", out_path);
    } else {
        printf("import: %s (model of %s) -> %s (%d parameters)\n", in_path, like_path, out_path,
               t.model->params.count);
        int converted = ts_model_npz_converted(&t, z);
        if (converted)  // said, not silent: float64 arrays lose bits in a float32 model
            printf("import: %d arrays converted from %s to the model's %s\n", converted,
                   t.model->cfg.dtype == TS_F32 ? "float64 ('<f8')" : "float32 ('<f4')", ts_dtype_name(t.model->cfg.dtype));
        status = TS_EXIT_OK;
    }
    ts_ckpt_free(ck);
    ts_npz_free(z);
    ts_translator_free(&t);
    return status;
}
