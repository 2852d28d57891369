// tinyseq average: one checkpoint whose weights are the mean of several
// checkpoints of one model (e.g. the epochs `train --keep N` kept).
#include "cli/cli.h"
#include "cli/common.h"

#include "ckpt/ckpt.h"
#include "infer/average.h"
#include "tensor/status.h"

#include <stdlib.h>

static const char usage[] =
    "usage: tinyseq average CKPT CKPT... -o OUT.ckpt [--force]\n"
    "\n"
    "Writes an inference checkpoint (as best.ckpt: configuration, vocabularies,\n"
    "weights) whose every weight is the mean of the given checkpoints' weights.\n"
    "They must hold one model: the same configuration and the same vocabularies\n"
    "(checkpoints of one run, such as the epoch-N.ckpt files `tinyseq train\n"
    "--keep N` keeps). Averaging the last few epochs of a run often translates a\n"
    "little better than any one of them.\n"
    "\n"
    "The mean is summed and divided in float64 whatever the models' dtype, then\n"
    "stored in their dtype: float32 checkpoints give a float32 one (each weight\n"
    "the float64 mean rounded once).\n"
    "\n"
    "  -o, --out FILE   the checkpoint to write (required)\n"
    "  --force          replace FILE if it exists (otherwise that is an error)\n"
    "\n"
    "The file is written atomically (a temporary file renamed into place).\n"
    "Exit status: 0 ok, 1 an unreadable checkpoint, another model, other\n"
    "vocabularies or a failed write, 2 usage error.\n";

static const char *cmd = "tinyseq average";

typedef struct {
    const char **items;  // (argc) the checkpoints, in order
    int n;
} path_list;

static int take_path(void *context, const char *command, const char *arg) {
    (void)command;
    path_list *list = context;
    list->items[list->n++] = arg;
    return -1;
}

int ts_cmd_average(int argc, char **argv) {
    const char *out_path = NULL;
    int force = 0;
    path_list list = {malloc((size_t)argc * sizeof(const char *)), 0};
    if (!list.items) {
        ts_cli_error(cmd, 0, "out of memory");
        return TS_EXIT_FAIL;
    }
    const ts_flag flags[] = {TS_STRING("-o", &out_path), TS_STRING("out", &out_path), TS_SWITCH("force", &force)};
    ts_cli_spec spec = {.command = cmd, .usage = usage, .flags = flags, .n_flags = 3, .positional = take_path,
                        .context = &list};
    int status = ts_cli_parse(&spec, argc, argv);
    if (status < 0 && (list.n == 0 || !out_path)) {
        ts_cli_error(cmd, 0, "%s is required (see %s --help)", list.n ? "-o OUT.ckpt" : "a CKPT", cmd);
        status = TS_EXIT_USAGE;
    }
    if (status < 0) status = ts_cli_check_output(cmd, "a checkpoint", out_path, force, 0);
    ts_translator mean;
    if (status < 0 && ts_average_models(list.items, list.n, &mean)) {
        ts_cli_error(cmd, 1, "cannot average");
        status = TS_EXIT_FAIL;
    }
    if (status < 0) {
        ts_ckpt *ck = ts_ckpt_new();
        if (!ck || ts_model_to_ckpt(ck, &mean) ||
            ts_ckpt_set(ck, "checkpoint.kind", "inference") || ts_ckpt_set_int(ck, "average.count", list.n) ||
            ts_ckpt_save(ck, out_path)) {
            ts_cli_error(cmd, 1, "cannot write '%s'", out_path);
            status = TS_EXIT_FAIL;
        } else {
            printf("average: %d checkpoint%s -> %s (%zu values)\n", list.n, list.n == 1 ? "" : "s", out_path,
                   ts_params_size(&mean.model->params));
            status = TS_EXIT_OK;
        }
        ts_ckpt_free(ck);
        ts_translator_free(&mean);
    }
    free(list.items);
    return status;
}
