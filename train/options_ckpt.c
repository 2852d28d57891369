// The options' rows in a checkpoint (train/options.h): written with it, and
// compared with a resumed run's, which must ask for what the saved run did.
#include "train/options.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

int ts_train_options_save(ts_ckpt *ck, const ts_train_opts *o, double lr_now) {
    int rc = TS_OK;
    for (size_t i = 0; !rc && i < ts_train_options_count; i++) {
        const ts_train_option *r = &ts_train_options[i];
        if (!r->saved_as || (r->use & TS_OPTION_IN_MODEL) || !ts_train_option_applies(o, r)) continue;
        // A newer row only written when given is absent at 0, as in a checkpoint from before it
        // (which OLDER reads as 0): checkpoints of runs that do not use it keep their bytes.
        const unsigned newer = TS_OPTION_IF_GIVEN | TS_OPTION_OLDER;
        if ((r->use & newer) == newer && (r->kind == TS_OPTION_INT || r->kind == TS_OPTION_CHOICE) &&
            ts_train_option_whole(o, r) == 0)
            continue;
        switch (r->kind) {
        case TS_OPTION_INT:
        case TS_OPTION_SWITCH: rc = ts_ckpt_set_int(ck, r->saved_as, ts_train_option_whole(o, r)); break;
        case TS_OPTION_REAL:
            rc = ts_ckpt_set_double(ck, r->saved_as, r->use & TS_OPTION_NOW ? lr_now : ts_train_option_real(o, r));
            break;
        case TS_OPTION_TEXT: rc = ts_ckpt_set(ck, r->saved_as, ts_train_option_text(o, r)); break;
        case TS_OPTION_CHOICE: rc = ts_ckpt_set(ck, r->saved_as, ts_train_option_choice(o, r)); break;
        }
    }
    return rc;
}

// Row r of checkpoint ck against o: TS_OK when they agree.
static int compare_row(const ts_ckpt *ck, const ts_train_opts *o, const ts_train_option *r) {
    char label[64];
    const char *flag = ts_train_option_label(r, label);
    int older = r->use & TS_OPTION_OLDER, rc;
    // An older checkpoint without the row trained with 0 or "".
    const char *present;
    if (older && ts_ckpt_get_string(ck, r->saved_as, &present) != TS_OK) {
        ts_clear_error();
        if (r->kind == TS_OPTION_INT && ts_train_option_whole(o, r) != 0)
            return ts_fail(TS_ERR_ARG, "%s was trained with %s 0; this run asks for %ld (resuming must keep the flags)",
                           o->resume, flag, ts_train_option_whole(o, r));
        if (r->kind == TS_OPTION_REAL && ts_train_option_real(o, r) != 0.0)
            return ts_fail(TS_ERR_ARG, "%s was trained with %s %g; this run asks for %g (resuming must keep the flags)",
                           o->resume, flag, 0.0, ts_train_option_real(o, r));
        if (r->kind == TS_OPTION_TEXT && *ts_train_option_text(o, r))
            return ts_fail(TS_ERR_ARG, "%s was trained with %s ''; this run asks for '%s' (resuming must keep the flags)",
                           o->resume, flag, ts_train_option_text(o, r));
        // An older choice's default is its value 0 (plateau): what the checkpoint trained with.
        if (r->kind == TS_OPTION_CHOICE && ts_train_option_whole(o, r) != 0)
            return ts_fail(TS_ERR_ARG, "%s was trained with %s '%s'; this run asks for '%s' (resuming must keep the flags)",
                           o->resume, flag, r->set->text, ts_train_option_choice(o, r));
        return TS_OK;
    }
    if (r->kind == TS_OPTION_INT || r->kind == TS_OPTION_SWITCH) {
        int64_t saved;
        if ((rc = ts_ckpt_get_int(ck, r->saved_as, INT64_MIN, INT64_MAX, &saved))) return rc;
        if (saved != ts_train_option_whole(o, r))
            return ts_fail(TS_ERR_ARG, "%s was trained with %s %lld; this run asks for %ld (resuming must keep the flags)",
                           o->resume, flag, (long long)saved, ts_train_option_whole(o, r));
        return TS_OK;
    }
    if (r->kind == TS_OPTION_REAL) {
        double saved;
        if ((rc = ts_ckpt_get_double(ck, r->saved_as, -INFINITY, INFINITY, &saved))) return rc;
        if (saved != ts_train_option_real(o, r))
            return ts_fail(TS_ERR_ARG, "%s was trained with %s %g; this run asks for %g (resuming must keep the flags)",
                           o->resume, flag, saved, ts_train_option_real(o, r));
        return TS_OK;
    }
    const char *saved, *now = r->kind == TS_OPTION_CHOICE ? ts_train_option_choice(o, r) : ts_train_option_text(o, r);
    if ((rc = ts_ckpt_get_string(ck, r->saved_as, &saved))) return rc;
    if (strcmp(saved, now))
        return ts_fail(TS_ERR_ARG, "%s was trained with %s '%s'; this run asks for '%s' (resuming must keep the flags)",
                       o->resume, flag, saved, now);
    return TS_OK;
}

// Resuming a checkpoint trained with guided alignment needs it, one without refuses it.
static int compare_guided(const ts_ckpt *ck, const ts_train_opts *o) {
    const ts_train_option *r = ts_train_option_by_flag("guided-alignment");
    const char *saved;
    int saved_on = ts_ckpt_get_string(ck, r->saved_as, &saved) == TS_OK;
    ts_clear_error();
    if (saved_on == ts_guided_on(o)) return TS_OK;
    return saved_on ? ts_fail(TS_ERR_ARG, "%s was trained with --guided-alignment %s; this run asks for none (or "
                                          "--guided-weight 0) (resuming must keep the flags)", o->resume, saved)
                    : ts_fail(TS_ERR_ARG, "%s was trained without guided alignment; this run asks for --guided-alignment %s "
                                          "(resuming must keep the flags)", o->resume, o->guided_alignment);
}

// 0 for a DECAY_ONLY row that ck lacks: it trained with an optimizer that
// does not decay, which the optimizer's row reports. Else 1.
static int decay_saved(const ts_ckpt *ck, const ts_train_option *r) {
    const char *saved;
    if (!(r->use & TS_OPTION_DECAY_ONLY) || ts_ckpt_get_string(ck, r->saved_as, &saved) == TS_OK) return 1;
    ts_clear_error();
    return 0;
}

int ts_train_options_compare(const ts_ckpt *ck, const ts_train_opts *o) {
    static const int pass_of[] = {[TS_OPTION_INT] = 0, [TS_OPTION_SWITCH] = 0, [TS_OPTION_REAL] = 1,
                                  [TS_OPTION_TEXT] = 2, [TS_OPTION_CHOICE] = 2};
    int guided = compare_guided(ck, o);
    if (guided) return guided;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < ts_train_options_count; i++) {
            const ts_train_option *r = &ts_train_options[i];
            if (!(r->use & TS_OPTION_RESUME) || pass_of[r->kind] != pass) continue;
            // --subword's row refuses a subword checkpoint, compare_guided a guided one, and the
            // optimizer's row one trained with another optimizer.
            if (!ts_train_option_applies(o, r) || !decay_saved(ck, r)) continue;
            int rc = compare_row(ck, o, r);
            if (rc) return rc;
        }
    return TS_OK;
}
