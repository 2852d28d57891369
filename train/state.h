// The trainer's state in one place: the counters, running sums, epoch
// histories and RNGs that a checkpoint saves, and the checks that make a
// resumed run continue the saved one exactly. A checkpoint written here holds
// the model (infer's model <-> checkpoint mapping), the options that shape
// the computation (data.*, train.*), and with `full` the state (state.*,
// rng.*, history.*) and the optimizer's own state (train/optim.h).
#ifndef TS_TRAIN_STATE_H
#define TS_TRAIN_STATE_H

#include <gsl/gsl_rng.h>

#include "data/vocab.h"
#include "ckpt/ckpt.h"
#include "infer/evaluate.h"
#include "infer/load.h"
#include "train/optim.h"
#include "train/options.h"


// The model best.ckpt holds: the dev evaluation that chose it.
typedef struct {
    long step;    // the step the model was trained to
    double loss;  // its dev loss (infinite: no evaluation yet)
    double bleu;  // its dev BLEU (-1: none yet, or unknown: a checkpoint from before --best)
} ts_train_best;

typedef struct {
    long step, epoch, position, stale, skipped;
    double best_dev, epoch_loss_sum;      // best_dev: the lowest dev loss (the plateau schedule's)
    long epoch_tokens;
    long lr_horizon;                      // the schedule's last step (train/schedule.h): --steps, else
                                          // --epochs x an epoch's batches; set by the trainer, not restored
    ts_train_best best;                   // best.ckpt's: of the epochs' and --eval-every's evaluations
    double *history_train, *history_dev;  // (max_epochs + 1) losses of the finished epochs
    gsl_rng *shuffle_rng, *tf_rng;        // seeded seed + 1 and seed + 2
    unsigned char *epoch_start_state;     // (gsl_rng_size) the shuffle RNG before this epoch's shuffle
} ts_train_state;

// Adds n >= 0 to a counter that checkpoints save (*counter), refusing
// (TS_ERR_NUMERIC naming it) to pass TS_COUNT_MAX: only a checkpoint that
// says it is nearly there can bring it close.
int ts_train_state_count_up(long *counter, long n, const char *name);

// A fresh run's state (best_dev infinite, no best epoch, RNGs seeded from `seed`). TS_OK or
// TS_ERR_NOMEM (then free with ts_train_state_free, which takes a zeroed one).
int ts_train_state_init(ts_train_state *s, long seed, long max_epochs);
void ts_train_state_free(ts_train_state *s);

// Whether a dev evaluation (loss, bleu) beats the one that chose *best, by
// criterion `by`: a lower loss, or a higher BLEU (an equal BLEU with a lower
// loss). Any evaluation beats none.
int ts_train_best_is_beaten(const ts_train_best *best, ts_best_by by, double loss, double bleu);

// Every dev evaluation a run prints is offered: the model at `step`, scored
// `dev`, becomes *best when it beats it. Returns 1 then (best.ckpt is to be
// written), else 0.
int ts_train_best_offer(ts_train_best *best, ts_best_by by, long step, const ts_eval_result *dev);

// The end of s's epoch, given its mean train loss and its dev evaluation:
// the history, the next epoch's start (a checkpoint saved now resumes into
// it), the evaluation offered as best.ckpt's by --best, and the plateau by
// dev loss: without a lower one *lr decays by --lr-decay, and *stop is set
// after --patience such epochs. Returns 1 when the epoch's model is the best
// (best.ckpt follows it), else 0.
int ts_train_state_end_epoch(ts_train_state *s, const ts_train_opts *o, double train_loss, const ts_eval_result *dev,
                             double *lr, int *stop);

// Writes out_dir/name: the model with its vocabularies and subword models
// (`trained`), the options, and with `full` the state and the optimizer's.
// Refuses (TS_ERR_NUMERIC) a model with a non-finite parameter: the previous
// file stays as it was.
int ts_train_state_save(const ts_train_state *s, const ts_train_opts *o, const ts_translator *trained,
                        const ts_optim *optim, const char *name, int full);

// Reads the checkpoint to resume from, once. An unreadable file fails with
// "--resume: cannot open 'PATH': reason" (TS_ERR_IO).
int ts_train_state_load(const char *path, ts_ckpt **out);

// The model a run trains, its configuration completed from the data and
// the flags: the checkpoint's (moved out of *resumed) when resuming, checked
// to be the one these data and flags build, else a new one initialised from
// --seed. A model that cannot be allocated leaves *model NULL with TS_OK
// (the caller says so). TS_ERR_ARG for a configuration the flags cannot have.
int ts_train_model(const ts_train_opts *o, const ts_dataset *data, ts_translator *resumed, long max_epochs,
                   ts_seq2seq **model);

// The model, vocabularies and subword models of checkpoint ck (read from
// --resume PATH) into *out, once: the data reuses its subword models, and
// ts_train_state_resume_model takes its model. Errors name the file.
int ts_train_state_resume_translator(const ts_ckpt *ck, const char *path, ts_translator *out);

// The model of the checkpoint loaded into *loaded, checked to be the one
// this run builds: the same vocabularies as the data's (src, tgt, word for
// word) and the same configuration as cfg (TS_ERR_ARG otherwise). On success
// *model is the file's model, moved out of *loaded (owned by the caller).
int ts_train_state_resume_model(ts_translator *loaded, const char *path, const ts_vocab *src, const ts_vocab *tgt,
                                const ts_model_config *cfg, ts_seq2seq **model);

// Restores the state and the optimizer's from ck, whose options the caller
// has compared with the run's (ts_train_options_compare). Each field is bounded here, once, by what a run can have written
// (`batches`: an epoch's): a value outside is a damaged or hostile file
// (TS_ERR_FORMAT), and nothing later needs to doubt it. An --epochs or
// --steps below what the checkpoint has done is TS_ERR_ARG.
int ts_train_state_restore(ts_train_state *s, ts_optim *optim, const ts_params *params, const ts_ckpt *ck,
                           const ts_train_opts *o, long batches, long max_epochs);

// What a run trains must be what the loader reads back: refuses (TS_ERR_ARG,
// naming the flags) a model whose checkpoint would pass the loader's payload
// cap, before anything is allocated. The estimate is an upper bound: the
// parameters and the optimizer's moments (8 bytes a value), the vocabularies
// (a 4-byte length and the bytes of each word), the epoch histories, and 1 MiB
// for the header, names, shapes and RNG states (a few tens of KiB in fact).
int ts_train_state_check_size(const ts_train_opts *o, const ts_model_config *cfg, const ts_vocab *src, const ts_vocab *tgt,
                              long max_epochs);

#endif
