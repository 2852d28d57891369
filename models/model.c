// What every architecture's row answers, asked of the row of a
// configuration (models/model.h); the rows' table is models/architectures.c.
#include "models/model.h"

#include <stdio.h>
#include <string.h>

void ts_model_config_default_sizes(ts_model_config *cfg) {
    if (cfg->arch < 0 || cfg->arch >= TS_ARCH_COUNT) return;
    const ts_model_kind *kind = ts_model_kind_of(cfg->arch);
    if (kind->default_sizes) kind->default_sizes(cfg);
}

int ts_model_config_check(const ts_model_config *c) { return ts_model_config_check_as(c, 0); }

int ts_model_config_check_as(const ts_model_config *c, int flags) {
    if (c->arch < 0 || c->arch >= TS_ARCH_COUNT) return ts_fail(TS_ERR_ARG, "architecture %d", (int)c->arch);
    for (int i = 0; i < TS_FIELD_COUNT; i++) {
        const ts_model_field *f = &ts_model_fields[i];
        if (!ts_model_field_applies(f, c->arch)) continue;
        int v = ts_model_field_get(c, f);
        if (f->set.names ? v < 0 || v >= f->set.names->count : v < f->set.lo || v > f->set.hi)
            return f->set.names ? ts_fail(TS_ERR_ARG, "%s %d (not one of its %d kinds)", f->label, v, f->set.names->count)
                                : ts_fail(TS_ERR_ARG, "%s %d (%.0f to %.0f)", f->label, v, f->set.lo, f->set.hi);
    }
    const ts_model_kind *kind = ts_model_kind_of(c->arch);
    return kind->check ? kind->check(c, flags) : TS_OK;
}

char *ts_model_attention_title(const ts_model_config *cfg, char *buf, size_t n) {
    ts_model_kind_of(cfg->arch)->attention_title(cfg, buf, n);
    return buf;
}

char *ts_model_describe(const ts_model_config *cfg, char *buf, size_t n) {
    ts_model_kind_of(cfg->arch)->describe(cfg, buf, n);
    return buf;
}

int ts_model_flag_applies(ts_model_arch arch, const char *flag) {
    for (int i = 0; i < TS_FIELD_COUNT; i++)
        if (ts_model_fields[i].set.flag && !strcmp(ts_model_fields[i].set.flag, flag))
            return ts_model_field_flag_archs(&ts_model_fields[i]) >> arch & 1u;
    return 1;
}

int ts_model_check_flags(ts_model_arch arch, const char *const *given, int n, double tf) {
    const ts_model_kind *kind = ts_model_kind_of(arch);
    for (int i = 0; i < n; i++)
        if (given[i] && !ts_model_flag_applies(arch, given[i]))
            return ts_fail(TS_ERR_ARG, "--%s does not apply to --arch %s", given[i], kind->name);
    if (kind->teacher_forced && tf < 1.0)
        return ts_fail(TS_ERR_ARG, "--arch %s trains in one teacher-forced pass: --tf %g must be 1", kind->name, tf);
    return TS_OK;
}

int ts_model_attends(const ts_model_config *cfg) { return ts_model_kind_of(cfg->arch)->attends(cfg); }

int ts_model_cross_heads(const ts_model_config *cfg, int *layers) {
    return ts_model_kind_of(cfg->arch)->cross_heads(cfg, layers);
}

const char *ts_arch_name(int arch) { return arch >= 0 && arch < TS_ARCH_COUNT ? ts_model_kind_of(arch)->name : "?"; }

const ts_names ts_arch_names = {.what = "architecture", .count = TS_ARCH_COUNT, .name = ts_arch_name};

int ts_arch_parse(const char *name, ts_model_arch *arch) {
    int v, rc = ts_names_parse(&ts_arch_names, name, &v);
    if (!rc) *arch = (ts_model_arch)v;
    return rc;
}

int *ts_reorder_sources(ts_ctx *ctx, const int *rows, int n, int group, int per_source) {
    if (ctx->status) return NULL;
    if (group < 1 || n < 1 || n % group) {
        ts_ctx_fail(ctx, TS_ERR_ARG, "reorder: %d rows in runs of %d", n, group);
        return NULL;
    }
    int runs = n / group, *sources = ts_arena_alloc(ctx->arena, (size_t)runs * sizeof(int));  // (runs)
    if (!sources) {
        ts_ctx_fail(ctx, TS_ERR_ARENA, "%s", ts_last_error());
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        int source = rows[k] / per_source;
        if (k % group == 0) sources[k / group] = source;
        else if (source != sources[k / group]) {
            ts_ctx_fail(ctx, TS_ERR_ARG, "reorder: rows %d and %d of one run read sources %d and %d", k - k % group, k,
                        sources[k / group], source);
            return NULL;
        }
    }
    return sources;
}

ts_tensor *ts_rows_select(ts_ctx *ctx, const ts_tensor *t, const int *rows, int n) {
    if (!t) return NULL;
    int shape[TS_MAX_DIMS];
    memcpy(shape, t->shape, (size_t)t->ndim * sizeof(int));
    shape[0] = n;  // greedy keeps fewer rows than it had
    ts_tensor *copy = ts_node(ctx, TS_OP_LEAF, t->ndim, shape, 0, NULL);
    if (!copy) return NULL;
    if (copy->dtype != t->dtype) return ts_ctx_fail(ctx, TS_ERR_ARG, "rows_select: a %s tensor in a %s step",
                                                    ts_dtype_name(t->dtype), ts_dtype_name(copy->dtype));
    size_t row = t->size / (size_t)t->shape[0] * ts_dtype_size(t->dtype);  // bytes
    for (int k = 0; k < n; k++) memcpy((char *)copy->raw + k * row, (const char *)t->raw + (size_t)rows[k] * row, row);
    return copy;
}
