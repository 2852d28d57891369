// tinyseq_gradcheck (api/tinyseq.h): `tinyseq gradcheck` for one attention,
// decoder and cell of the GRU architecture, or for the Transformer, the
// results as JSON.
#include "api/tinyseq.h"

#include "api/json.h"
#include "models/gradcheck.h"
#include "viz/render.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

int tinyseq_arch_has(const char *architecture, const char *flag) {
    ts_model_arch arch;
    int rc = ts_arch_parse(architecture ? architecture : "", &arch);
    return rc ? rc : ts_model_flag_applies(arch, flag ? flag : "");
}

int tinyseq_gradcheck(const char *architecture, const char *attention, const char *decoder, int bidirectional,
                      const char *cell, double tf, long seed, double rtol, double atol, char **json) {
    *json = NULL;
    ts_model_arch arch;
    ts_attn_type attn = TS_ATTN_BAHDANAU;
    ts_decoder_type dec = TS_DECODER_BAHDANAU;
    int cell_type = TS_CELL_GRU;
    int rc = ts_arch_parse(architecture ? architecture : "", &arch);
    const char *given[4] = {attention ? "attn" : NULL, decoder ? "decoder" : NULL, bidirectional ? "bidirectional" : NULL,
                            cell ? "cell" : NULL};
    if (!rc) rc = ts_model_check_flags(arch, given, 4, tf);
    if (!rc && cell) rc = ts_names_parse(&ts_cell_names, cell, &cell_type);
    if (!rc && ts_model_flag_applies(arch, "attn")) rc = ts_attn_parse(attention ? attention : "", &attn);
    if (!rc && ts_model_flag_applies(arch, "decoder")) rc = ts_decoder_parse(decoder ? decoder : "", &dec);
    if (rc) return rc;
    // The CLI's bounds on its flags.
    if (!(tf >= 0 && tf <= 1)) return ts_fail(TS_ERR_ARG, "tf %g is outside 0..1", tf);
    if (!(rtol >= 1e-15 && rtol <= 1) || !(atol >= 1e-15 && atol <= 1))
        return ts_fail(TS_ERR_ARG, "rtol and atol must be in [1e-15, 1], got %g and %g", rtol, atol);
    if (seed < 0 || seed > 2147483647L) return ts_fail(TS_ERR_ARG, "seed %ld is outside 0..2147483647", seed);
    ts_gradcheck_opts opts = ts_gradcheck_defaults();
    opts.rtol = rtol;
    opts.atol = atol;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    ts_arena *arena = ts_arena_new(16 << 20);
    ts_model_config cfg = ts_gradcheck_config(arch, attn, dec, bidirectional != 0, (ts_cell_type)cell_type);
    ts_seq2seq *model = NULL;
    if (!rng || !arena) rc = ts_fail(TS_ERR_NOMEM, "cannot allocate");
    if (!rc) {
        gsl_rng_set(rng, (unsigned long)seed);
        if (!(model = ts_seq2seq_new(&cfg, rng))) rc = ts_fail(TS_ERR_NOMEM, "cannot build the model");
    }
    ts_gradcheck_result *results = model ? calloc((size_t)model->params.count, sizeof *results) : NULL;
    ts_ctx ctx;
    if (!rc && !results) rc = ts_fail(TS_ERR_NOMEM, "out of memory");
    if (!rc) {
        ts_ctx_init(&ctx, arena);
        rc = ts_seq2seq_gradcheck(model, &ctx, tf, rng, &opts, results);
    }
    api_text text;
    if (!rc && !(rc = api_text_open(&text))) {
        fputc('[', text.f);
        for (int i = 0; i < model->params.count; i++) {
            const ts_gradcheck_result *r = &results[i];
            fprintf(text.f, "%s{\"parameter\": ", i ? ", " : "");
            ts_render_json_string(text.f, r->name);
            fprintf(text.f, ", \"checked\": %zu, \"max_abs_err\": ", r->checked);
            api_json_number(text.f, r->max_abs_err);
            fputs(", \"max_rel_err\": ", text.f);
            api_json_number(text.f, r->max_rel_err);
            fprintf(text.f, ", \"passed\": %s}", r->passed ? "true" : "false");
        }
        fputc(']', text.f);
        rc = api_text_close(&text, TS_OK, json);
    }
    free(results);
    ts_seq2seq_free(model);
    ts_arena_free(arena);
    gsl_rng_free(rng);
    return rc;
}
