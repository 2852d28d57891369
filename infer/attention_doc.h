// One sentence's attention document: the translation, where the decoder
// looked (the search's weights, a Transformer's every head) or, instead,
// the attributions, labelled, over pieces or merged into words. Built here
// once; tinyseq attend (cli/cmd_attend.c) renders it as a terminal heatmap,
// SVG, a Pharaoh line and JSON, the C API's attend and explain (api/model.c,
// Python's Model.attend and explain) as the same JSON, and tinyseq report
// (cli/report_beside.c) as its attention beside the attributions.
//
// S = source units (words, or a subword model's pieces: no <eos>), T =
// output units + 1 (the <eos> step); with `words` both count words.
#ifndef TS_INFER_ATTENTION_DOC_H
#define TS_INFER_ATTENTION_DOC_H

#include "infer/explain.h"
#include "infer/heads.h"
#include "infer/session.h"
#include "viz/render.h"  // ts_json_heads: the structs only (infer links no viz code)

// What the document holds.
typedef struct {
    int beam;      // the search's width (1: greedy), checked by the caller (ts_session_search)
    int words;     // a subword model's pieces merged into words (a word model's are words already)
    int explain;   // enum ts_explain_method: attributions instead of attention; -1: attention
    int ig_steps;  // explain ig: the path integral's points, 1..TS_IG_STEPS_MAX
    int shift;     // the JSON's rows read shifted (shift-att: row t + 1 as word t's; T - 1 rows)
} ts_attention_doc_opts;

typedef struct {
    ts_attended sentence;        // the translation; its labels are the words' when in_words
    const char **inputs;         // (T) the decoder's inputs: "<sos>", then the output units
    int T, S;                    // the labels' rows (output units, then <eos>) and columns
    const double *weights;       // (T, S) the search's cross-attention (merged when in_words);
                                 // NULL for a model without attention
    ts_heads heads;              // every head (infer/heads.h) of a model that has them, merged when
                                 // in_words; 0 layers otherwise, and with explain
    ts_attribution attribution;  // explain: (T, S) over the labels; else zeroed
    int explain, shift;          // as asked
    int subword;                 // a subword model's: the labels are pieces, or words when in_words
    int in_words;                // the pieces were merged into words (words asked, a subword model)
    const char *attention;       // the JSON's "attention": the architecture for a model with heads,
                                 // else its attention function
    ts_word_attention merged;    // in_words: the decoded words the labels point to, the merged weights
} ts_attention_doc;

// Translates `text` with s's model (beam search of width o->beam, or
// greedy) and fills *d: the labels, the search's weights and a
// Transformer's heads, or with o->explain the attributions (no heads),
// each merged into words with o->words on a subword model. Runs in s's
// context (ts_session_ctx). *d owns what it holds (ts_attention_doc_free).
// TS_OK; else the translator's, the heads' or the attributions' error, or
// a merge's naming it (*d zeroed).
int ts_attention_doc_build(ts_session *s, const char *text, const ts_attention_doc_opts *o, ts_attention_doc *d);
void ts_attention_doc_free(ts_attention_doc *d);

// The document as JSON (viz/render.h: ts_render_attention_json_heads's
// arguments): weights are the attributions' normalised rows with explain,
// else the search's, shifted with shift; more holds the heads, the
// attributions' raw values, the reading and the units, NULL when there are
// none. Points into d and into *j itself (do not copy j).
typedef struct {
    const double *weights;  // (T, S)
    size_t T, S;
    const char *const *target, *const *source;  // (T), (S)
    const char *attention;
    const ts_json_heads *more;  // &all, or NULL
    ts_json_heads all;
    ts_json_head_view views[TS_VIEW_COUNT];
} ts_attention_json;

void ts_attention_doc_json(const ts_attention_doc *d, ts_attention_json *j);

#endif
