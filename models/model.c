// What every architecture's row answers, asked of the row of a
// configuration (models/model.h); the rows' table is models/architectures.c.
#include "models/model.h"

#include "models/fields.h"

#include <stdio.h>
#include <string.h>

void ts_model_config_default_sizes(ts_model_config *cfg) {
    if (cfg->arch < 0 || (int)cfg->arch >= ts_arch_names.count) return;
    const ts_model_kind *kind = ts_model_kind_of(cfg->arch);
    if (kind->default_sizes) kind->default_sizes(cfg);
}

int ts_model_config_check(const ts_model_config *c) { return ts_model_config_check_as(c, 0); }

int ts_model_config_check_as(const ts_model_config *c, int flags) {
    if (c->arch < 0 || (int)c->arch >= ts_arch_names.count) return ts_fail(TS_ERR_ARG, "architecture %d", (int)c->arch);
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

const char *ts_model_attention_name(const ts_model_config *cfg) {
    const ts_model_kind *kind = ts_model_kind_of(cfg->arch);
    return kind->attention_name ? kind->attention_name(cfg) : kind->name;
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

int ts_model_attends(const ts_model_config *cfg) {
    int layers;
    return ts_model_cross_heads(cfg, &layers) > 0;
}

int ts_model_guided_layer(const ts_model_config *cfg) {
    int layers;
    ts_model_cross_heads(cfg, &layers);
    return layers >= 2 ? layers - 2 : 0;
}

int ts_model_cross_heads(const ts_model_config *cfg, int *layers) {
    return ts_model_kind_of(cfg->arch)->cross_heads(cfg, layers);
}

