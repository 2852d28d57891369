// What every front end does with the training options once they are given
// (train/options.h): the preset's flags and --arch's defaults fill the rows
// not given and the run directory is named (ts_train_options_finish); the
// checks of what was given, against the architecture, the optimizer, the
// ranks and --batch's parts; the rows that apply to a run; and config.txt's
// lines, which must read back what the preset and --arch filled in.
#include "train/options.h"

#include "models/fields.h"
#include "models/model.h"  // ts_model_check_flags
#include "models/search.h"  // ts_beam_width

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

// Preset p's flags into o for each row not given[]; given[] marks them (so
// --arch's defaults leave them alone). A bad flag in the table: TS_ERR_ARG.
static int apply_preset(ts_train_opts *o, const ts_train_preset *p, int given[]) {
    char words[512];
    if (snprintf(words, sizeof words, "%s", p->flags) >= (int)sizeof words)
        return ts_fail(TS_ERR_ARG, "preset %s: its flags are too long", p->name);
    char *save = NULL;
    for (char *word = strtok_r(words, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
        const ts_train_option *r = strncmp(word, "--", 2) ? NULL : ts_train_option_by_flag(word + 2);
        if (!r || r->kind == TS_OPTION_TEXT)  // a preset names no file: its texts would not outlive this call
            return ts_fail(TS_ERR_ARG, "preset %s: '%s' is not a flag it can set", p->name, word);
        const char *value = r->kind == TS_OPTION_SWITCH ? "1" : strtok_r(NULL, " ", &save);
        if (!value) return ts_fail(TS_ERR_ARG, "preset %s: %s has no value", p->name, word);
        size_t i = (size_t)(r - ts_train_options);
        if (given[i]) continue;
        int rc = ts_train_option_set(o, r, word, value);
        if (rc) return ts_fail(rc, "preset %s: %s", p->name, ts_last_error());
        given[i] = 1;
    }
    return TS_OK;
}

int ts_guided_on(const ts_train_opts *o) { return o->guided_alignment && o->guided_weight > 0.0; }

int ts_train_option_applies(const ts_train_opts *o, const ts_train_option *r) {
    return !((r->use & TS_OPTION_SUBWORD_ONLY) && !o->data.subword) && !((r->use & TS_OPTION_GUIDED_ONLY) && !ts_guided_on(o)) &&
           !((r->use & TS_OPTION_DECAY_ONLY) && !ts_optim_kind_of(o->optim)->decays);
}

int ts_train_options_refuse(const ts_train_opts *o, const int given[]) {
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!given[i] || !(r->use & TS_OPTION_DECAY_ONLY) || ts_train_option_applies(o, r)) continue;
        char names[64] = "";
        for (int k = 0; k < TS_OPTIM_COUNT; k++)
            if (ts_optim_kind_of((ts_optim_kind)k)->decays)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s--optim %s", *names ? " or " : "",
                         ts_optim_name(k));
        return ts_fail(TS_ERR_ARG, "--%s applies to %s only; this run uses --optim %s", r->set->flag, names,
                       ts_optim_name(o->optim));
    }
    return ts_model_check_flags(o->model.arch, NULL, 0, o->tf);
}

// The directory holding checkpoint `path` into dir: "." for a bare file name,
// "/" for one at the root (the directory train/rundir.c's check then finds
// the checkpoint in, so the run continues there). TS_ERR_ARG when the name
// does not fit.
static int checkpoint_dir(const char *path, char dir[TS_RUN_NAME_SIZE]) {
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= TS_RUN_NAME_SIZE)
        return ts_fail(TS_ERR_ARG, "--resume %.80s...: its directory's name is longer than %d bytes: give --out DIR",
                       path, TS_RUN_NAME_SIZE - 1);
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    return TS_OK;
}

int ts_train_options_finish(ts_train_opts *o, const int given[], char default_out[TS_RUN_NAME_SIZE]) {
    int set[TS_TRAIN_OPTIONS_MAX];  // given, or set by the preset
    memcpy(set, given, sizeof(int) * ts_train_options_count);
    if ((size_t)o->preset >= ts_train_presets_count) return ts_fail(TS_ERR_ARG, "preset %d does not exist", o->preset);
    int rc = apply_preset(o, &ts_train_presets[o->preset], set);
    if (rc) return rc;
    const ts_train_preset *recipe = ts_train_arch_recipe(o->model.arch);
    if (recipe && (rc = apply_preset(o, recipe, set))) return rc;
    o->beam = ts_beam_width((int)o->beam);  // 0 asks for the default, as everywhere
    int given_field[TS_FIELD_COUNT] = {0};  // the model's fields whose flags were given or preset
    for (int f = 0; f < TS_FIELD_COUNT; f++) {
        const ts_train_option *r = ts_model_fields[f].set.flag ? ts_train_option_by_flag(ts_model_fields[f].set.flag) : NULL;
        given_field[f] = r && set[r - ts_train_options];
    }
    ts_model_fields_derive(&o->model, given_field);
    if (!o->out_dir && o->resume) {  // a run continues where its checkpoint is, as --resume's help says
        if ((rc = checkpoint_dir(o->resume, default_out))) return rc;
        o->out_dir = default_out;
    } else if (!o->out_dir) {
        time_t now = time(NULL);
        struct tm tm;
        strftime(default_out, TS_RUN_NAME_SIZE, "runs/%Y%m%d-%H%M%S", localtime_r(&now, &tm));
        o->out_dir = default_out;
    }
    return TS_OK;
}

// The architectures row r applies to (a bit each): its model field's flag's
// (ts_model_fields, the model's one table); every one for the others.
static unsigned row_archs(const ts_train_option *r) {
    for (int f = 0; f < ts_model_field_count; f++)
        if (r->set == &ts_model_fields[f].set) return ts_model_field_flag_archs(&ts_model_fields[f]);
    return ~0u;
}

int ts_train_options_check_arch(const ts_train_opts *o, const int given[]) {
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        unsigned archs = row_archs(r);
        if (!given[i] || (archs >> o->model.arch & 1u)) continue;
        char names[64] = "";
        for (int a = 0; a < ts_arch_names.count; a++)
            if (archs >> a & 1u)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s--arch %s", *names ? " or " : "",
                         ts_names_name(&ts_arch_names, a));
        // What to do: add the architecture, or (--arch given) change it.
        const ts_train_option *arch = ts_train_option_by_flag(ts_model_fields[TS_FIELD_ARCH].set.flag);
        return ts_fail(TS_ERR_ARG, "--%s does not apply to --arch %s (only to %s): ignored; %s %s, or leave --%s out",
                       r->set->flag, ts_names_name(&ts_arch_names, o->model.arch), names,
                       arch && given[arch - ts_train_options] ? "use" : "add", names, r->set->flag);
    }
    return TS_OK;
}

void ts_train_options_write_config(FILE *f, const ts_train_opts *o) {
    char buf[32];
    // The rows o's preset sets: --config fills them from it unless they are written.
    int by_preset[TS_TRAIN_OPTIONS_MAX] = {0};
    ts_train_opts scratch = *o;
    if ((size_t)o->preset < ts_train_presets_count) apply_preset(&scratch, &ts_train_presets[o->preset], by_preset);
    // And those its architecture's recipe sets.
    int by_recipe[TS_TRAIN_OPTIONS_MAX] = {0};
    const ts_train_preset *recipe = ts_train_arch_recipe(o->model.arch);
    if (recipe) apply_preset(&scratch, recipe, by_recipe);
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->set->key || ((r->use & TS_OPTION_TOY_ONLY) && o->data.corpus) || !ts_train_option_applies(o, r)) continue;
        if (r->kind == TS_OPTION_TEXT && !*(const char *const *)ts_train_option_field_of(o, r) && !r->absent) continue;
        if (!(row_archs(r) >> o->model.arch & 1u)) continue;  // another architecture's: --heads of a GRU
        // An IF_GIVEN row at 0 is written only where the preset or --arch's defaults would fill it.
        if ((r->use & TS_OPTION_IF_GIVEN) && ts_train_option_whole(o, r) == 0 && !by_preset[i] && !by_recipe[i])
            continue;
        fprintf(f, "%s = %s\n", r->set->key, ts_train_option_format(o, r, buf));
    }
}

int ts_train_options_check_ranks(const ts_train_opts *o, ts_dist *d) {
    enum { N = TS_TRAIN_OPTIONS_MAX };
    char numbers[N][32], labels[N][64];
    const char *what[N], *values[N];
    int n = 0;
    for (size_t i = 0; i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!(r->use & TS_OPTION_SAME_RANKS)) continue;
        what[n] = ts_train_option_label(r, labels[n]);
        values[n] = ts_train_option_format(o, r, numbers[n]);
        n++;
    }
    return ts_dist_check_same(d, what, values, n);
}

int ts_train_options_check_parts(const ts_train_opts *o, int ranks) {
    if (o->threads < 0 || o->threads > TS_MAX_THREADS)
        return ts_fail(TS_ERR_ARG, "--threads must be between 1 and %d, got %ld", TS_MAX_THREADS, o->threads);
    if (o->accumulate < 1 || o->accumulate > o->batch || ranks * o->accumulate > o->batch)
        return ts_fail(TS_ERR_ARG, "--batch %ld cannot be cut into %ld parts (%d rank%s x --accumulate %ld): each needs a "
                       "sentence; give --batch %ld or more", o->batch, ranks * o->accumulate, ranks,
                       ranks > 1 ? "s" : "", o->accumulate, ranks * o->accumulate);
    return TS_OK;
}

// The 1-2-5 number nearest to x (at least 1): --log-every's default, so the
// rows fall on round steps (20, 50, 100).
static long round_count(double x) {
    long best = 1;
    for (long mag = 1; mag <= TS_COUNT_MAX / 10; mag *= 10)
        for (int k = 0; k < 3; k++) {
            long v = mag * (k == 0 ? 1 : k == 1 ? 2 : 5);
            if (fabs((double)v - x) < fabs((double)best - x)) best = v;
        }
    return best;
}

long ts_train_log_every(const ts_train_opts *o, size_t batches_per_epoch) {
    return o->log_every > 0 ? o->log_every : round_count((double)batches_per_epoch / 20);
}
