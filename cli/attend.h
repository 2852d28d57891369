// tinyseq attend's rooms (cli/cmd_attend.c): which of a Transformer's
// matrices to show of the attention document (infer/attention_doc.h) that
// attend renders (cli/attend_heads.c: --layer, --head, --self, --heads,
// --rollout).
#ifndef TS_CLI_ATTEND_H
#define TS_CLI_ATTEND_H

#include "infer/attention_doc.h"
#include "viz/heatmap.h"

#define TS_ATTEND_CMD "tinyseq attend"

// What --layer, --head, --self and --heads asked for.
typedef struct {
    long layer, head;
    int layer_given, head_given, self_given;
    int view;     // enum ts_head_view
    int grid;     // --heads
    int rollout;  // --rollout
} head_choice;

// One matrix to draw, with its labels.
typedef struct {
    const double *weights;  // (rows, cols)
    int rows, cols;
    const char *const *row_words, *const *col_words;
    const char *axes[2];    // the rows' and columns' axis names in the SVG
} shown_matrix;

// --heads: a grid of layers x (heads + mean) panels of the chosen view.
typedef struct {
    ts_heatmap_grid g;
    const double **panels;          // (L, H + 1) as a head table's cells (infer/head_table.h)
    char (*titles)[32];             // (L + H + 1): "layer l", then "head k" and "mean"
    const char **row_titles, **col_titles;
} grid_panels;

// --self enc|dec (a ts_flag chooser).
int attend_choose_self(const char *command, const char *flag, const char *value, void *target);
// -1 when the choice fits the model, else the exit status after a message
// naming the flag and what the model allows.
int attend_check_choice(const head_choice *c, const ts_seq2seq *m, const char *model_path);
// The matrix c chooses among h's (rollout: --rollout's (L, R, R) products).
shown_matrix attend_pick_matrix(const ts_heads *h, const head_choice *c, const ts_attention_doc *d, const double *rollout);
// The heading that says which matrix is shown.
void attend_describe_choice(char *out, size_t size, const ts_heads *h, const head_choice *c, const char *search);
// --heads: the grid of c's view (shift: --shift-att's rows); free with attend_grid_free.
int attend_make_grid(grid_panels *p, const ts_heads *h, const head_choice *c, const ts_attention_doc *d, const char *title,
                     int shift);
void attend_grid_free(grid_panels *p);

#endif
