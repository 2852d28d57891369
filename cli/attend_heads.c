// Which of a model's heads (a Transformer's) tinyseq attend shows (cli/attend.h).
#include "cli/attend.h"
#include "cli/cli.h"
#include "cli/common.h"

#include "infer/head_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *cmd = TS_ATTEND_CMD;

// --self enc|dec.
int attend_choose_self(const char *command, const char *flag, const char *value, void *target) {
    int view = ts_head_view_parse(value);
    if (view != TS_VIEW_ENC && view != TS_VIEW_DEC) {
        ts_cli_error(command, 0, "--%s expects enc (encoder self-attention) or dec (decoder self-attention), got '%s'",
                     flag, value);
        return TS_EXIT_USAGE;
    }
    *(int *)target = view;
    return -1;
}

// -1 when the choice fits the model, else the exit status after a message
// naming the flag and what the model allows.
int attend_check_choice(const head_choice *c, const ts_seq2seq *m, const char *model_path) {
    const char *flag = c->layer_given ? "--layer" : c->head_given ? "--head" : c->self_given ? "--self" : "--heads";
    if (!ts_heads_available(m)) {
        if (!c->layer_given && !c->head_given && !c->self_given && !c->grid) return -1;
        char described[160];
        ts_cli_error(cmd, 0, "%s needs layers of attention heads; %s (%s) has one attention matrix, shown "
                             "without it", flag, model_path, ts_model_describe(&m->cfg, described, sizeof described));
        return TS_EXIT_USAGE;
    }
    int layers, heads = ts_model_cross_heads(&m->cfg, &layers);
    if (c->layer_given && (c->layer < 0 || c->layer >= layers)) {
        ts_cli_error(cmd, 0, "--layer %ld: %s has %d layers, --layer 0..%d", c->layer, model_path, layers, layers - 1);
        return TS_EXIT_USAGE;
    }
    if (c->head_given && (c->head < 0 || c->head >= heads)) {
        ts_cli_error(cmd, 0, "--head %ld: %s has %d heads, --head 0..%d", c->head, model_path, heads, heads - 1);
        return TS_EXIT_USAGE;
    }
    return -1;
}



// The labels of view `view`'s rows (cols 0) or columns (cols 1).
const char *const *attend_view_labels(const ts_attention_doc *d, int view, int cols) {
    const ts_head_view_info *info = &ts_head_views[view];
    if (!(cols ? info->cols_target : info->rows_target)) return d->sentence.labels.source;
    return cols ? d->inputs : d->sentence.labels.target;  // the decoder's rows are its outputs, its columns its inputs
}

// The matrix c chooses among h's (rollout: --rollout's (L, R, R) products).
shown_matrix attend_pick_matrix(const ts_heads *h, const head_choice *c, const ts_attention_doc *d, const double *rollout) {
    int layer = c->layer_given ? (int)c->layer : h->layers - 1, head = c->head_given ? (int)c->head : -1;
    const ts_head_view_info *info = &ts_head_views[c->view];
    size_t cells = (size_t)ts_heads_rows(h, c->view) * ts_heads_cols(h, c->view);
    const double *w = c->rollout ? rollout + (size_t)layer * cells : ts_heads_matrix(h, c->view, layer, head);
    // The decoder's self-attention reads its inputs (<sos> and the outputs before), not the target.
    return (shown_matrix){w, ts_heads_rows(h, c->view), ts_heads_cols(h, c->view),
                          attend_view_labels(d, c->view, 0), attend_view_labels(d, c->view, 1),
                          {info->rows_target ? "target" : "source", info->cols_target ? "decoder input" : "source"}};
}

// "attention: transformer cross-attention, layer 1 (the last of 2), mean of 4 heads, greedy", or for
// --heads "attention: transformer cross-attention, greedy\nevery layer (2) x head (4) and each layer's mean"
void attend_describe_choice(char *out, size_t size, const ts_heads *h, const head_choice *c, const char *search) {
    int layer = c->layer_given ? (int)c->layer : h->layers - 1;
    int n = snprintf(out, size, "attention: %s %s, ", h->arch, ts_head_views[c->view].title);
    if (c->grid) {  // two lines: the grid's line fits a terminal of 80 columns
        snprintf(out + n, size - (size_t)n, "%s\nevery layer (%d) x head (%d) and each layer's mean", search, h->layers,
                 h->heads);
        return;
    }
    n += snprintf(out + n, size - (size_t)n, "layer %d (%s of %d), ", layer,
                       layer == h->layers - 1 ? "the last" : layer == 0 ? "the first" : "one", h->layers);
    if (c->rollout) snprintf(out + n, size - (size_t)n, "rollout of layers 0..%d (0.5 (A + I) of each layer's "
                                                     "mean of %d heads), %s", layer, h->heads, search);
    else if (c->head_given) snprintf(out + n, size - (size_t)n, "head %ld of %d, %s", c->head, h->heads, search);
    else snprintf(out + n, size - (size_t)n, "mean of %d heads, %s", h->heads, search);
}


void attend_grid_free(grid_panels *p) {
    free(p->panels);
    free(p->titles);
    free(p->row_titles);
    free(p->col_titles);
}

int attend_make_grid(grid_panels *p, const ts_heads *h, const head_choice *c, const ts_attention_doc *d,
                     const char *title, int shift) {
    // A head table's layout (infer/head_table.h): each layer's heads, then its mean.
    size_t L = (size_t)h->layers, cols = ts_head_cells(1, h->heads);
    p->panels = malloc(ts_head_cells(h->layers, h->heads) * sizeof *p->panels);
    p->titles = malloc((L + cols) * sizeof *p->titles);
    p->row_titles = malloc(L * sizeof *p->row_titles);
    p->col_titles = malloc(cols * sizeof *p->col_titles);
    if (!p->panels || !p->titles || !p->row_titles || !p->col_titles) {
        ts_cli_error(cmd, 0, "out of memory");
        return TS_EXIT_FAIL;
    }
    for (size_t l = 0; l < L; l++) {
        snprintf(p->titles[l], sizeof p->titles[l], "layer %zu", l);
        p->row_titles[l] = p->titles[l];
        for (int k = -1; k < h->heads; k++)  // k -1: the layer's mean
            p->panels[ts_head_index(h->heads, (int)l, k)] =
                ts_heads_matrix(h, c->view, (int)l, k) + (shift ? ts_heads_cols(h, c->view) : 0);  // --shift-att: from row 1
    }
    for (size_t k = 0; k < cols; k++) {
        if (k + 1 < cols) snprintf(p->titles[L + k], sizeof p->titles[L + k], "head %zu", k);
        else snprintf(p->titles[L + k], sizeof p->titles[L + k], "mean");
        p->col_titles[k] = p->titles[L + k];
    }
    p->g = (ts_heatmap_grid){.panels = p->panels, .rows = L, .cols = cols,
                             .R = (size_t)(ts_heads_rows(h, c->view) - shift), .C = (size_t)ts_heads_cols(h, c->view),
                             .row_titles = p->row_titles, .col_titles = p->col_titles,
                             .target = attend_view_labels(d, c->view, 0), .source = attend_view_labels(d, c->view, 1), .title = title};
    return TS_EXIT_OK;
}
