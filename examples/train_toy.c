// Training with tinyseq as a library: the loop `tinyseq train` runs, cut to
// its bones. Data (the toy corpus, vocabularies, batches), a model (its
// parameters live in a registry), a loss built from ops on a tape, backward,
// clipping and Adam, then a checkpoint that the inference side loads back.
//
// B = batch, S = source length, T = target length.
// Usage: train_toy [CKPT] (default toy.ckpt). Prints the loss as it falls;
// exits 1 when it did not fall or the checkpoint does not load back.
#include "data/batch.h"
#include "data/toy.h"
#include "data/vocab.h"
#include "infer/load.h"
#include "train/optim.h"

#include <stdio.h>
#include <string.h>

enum { PAIRS = 2000, BATCH = 32, STEPS = 120, REPORT = 20 };

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "toy.ckpt";
    ts_gsl_quiet();  // GSL errors come back as status codes, never an abort
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);  // data, initialisation and shuffling
    ts_corpus *corpus = NULL;
    ts_vocab *src = NULL, *tgt = NULL;
    ts_batcher *batcher = NULL;
    ts_seq2seq *model = NULL;
    ts_optim adam = {0};
    ts_arena *arena = ts_arena_new((size_t)32 << 20);  // one step's tensors, reset after each
    ts_ckpt *ck = NULL;
    ts_translator loaded = {0};
    int rc = rng && arena ? TS_OK : TS_ERR_NOMEM;

    // Data: toy pairs ("the cat sees a dog" -> its French-like rendering),
    // a vocabulary per side, and padded (S, B) / (T, B) batches of ids.
    if (!rc) rc = ts_toy_generate(rng, PAIRS, &corpus);
    if (!rc) rc = ts_vocab_build(corpus, TS_SRC, NULL, PAIRS, 1, &src);
    if (!rc) rc = ts_vocab_build(corpus, TS_TGT, NULL, PAIRS, 1, &tgt);
    ts_batcher_opts bo = {.batch_size = BATCH, .bucket_batches = 10};
    if (!rc) rc = ts_batcher_new(corpus, NULL, PAIRS, src, tgt, &bo, &batcher);

    // The model: every weight is registered in model->params by name, which
    // is what the optimizer updates and the checkpoint stores.
    ts_model_config cfg = {.emb = 16, .hidden = 32, .attn = TS_ATTN_DOT, .decoder = TS_DECODER_LUONG};
    if (!rc) {
        cfg.src_vocab = (int)ts_vocab_size(src);
        cfg.tgt_vocab = (int)ts_vocab_size(tgt);
        model = ts_seq2seq_new(&cfg, rng);
        rc = model ? ts_optim_init(&adam, &model->params, TS_OPTIM_ADAM, 0.01) : TS_ERR_NOMEM;
    }
    if (rc) {
        fprintf(stderr, "train_toy: setup failed: %s\n", ts_last_error());
        return 1;
    }
    printf("toy corpus: %d pairs, vocabularies %d / %d; model: %zu parameters\n", PAIRS, cfg.src_vocab,
           cfg.tgt_vocab, ts_params_size(&model->params));

    ts_ctx ctx;
    ts_ctx_init(&ctx, arena);
    double first = 0, last = 0, window = 0;
    size_t next = ts_batcher_count(batcher);  // start with a shuffle
    for (int step = 1; !rc && step <= STEPS; step++) {
        if (next == ts_batcher_count(batcher)) {
            ts_batcher_epoch(batcher, rng);
            next = 0;
        }
        const ts_batch *b = ts_batcher_get(batcher, next++);
        ts_batch_view view = {.B = b->B, .S = b->S, .T = b->T, .src = b->src, .src_len = b->src_len,
                              .tgt_in = b->tgt_in, .tgt_out = b->tgt_out};
        // Forward: the ops record themselves on ctx's tape as they compute.
        ts_tensor *loss = ts_seq2seq_loss(model, &ctx, &view, 1.0, rng, NULL, NULL);
        if (!loss) {
            rc = ctx.status;
            break;
        }
        // Backward: one reverse walk of the tape fills every parameter's grad.
        if ((rc = ts_backward(&ctx, loss))) break;
        // Clip the global gradient norm at 5, then one Adam step (it zeroes the grads).
        double norm = ts_grad_norm(&model->params, 1);
        if ((rc = ts_optim_step(&adam, &model->params, ts_clip_factor(norm, 5.0)))) break;
        ts_ctx_reset(&ctx);  // the step's tensors go; the parameters stay
        window += loss->data[0];
        if (step % REPORT == 0) {
            last = window / REPORT;
            if (step == REPORT) first = last;
            printf("step %3d: mean loss %.4f over the last %d steps\n", step, last, REPORT);
            window = 0;
        }
    }

    // Save: model configuration, vocabularies and parameters in one file,
    // then load it back as the translate command would.
    if (!rc && !(ck = ts_ckpt_new())) rc = TS_ERR_NOMEM;
    if (!rc) rc = ts_model_to_ckpt(ck, &(ts_translator){.model = model, .src_vocab = src, .tgt_vocab = tgt});
    if (!rc) rc = ts_ckpt_save(ck, path);
    if (!rc) rc = ts_translator_load(path, &loaded);
    if (!rc && ts_params_size(&loaded.model->params) != ts_params_size(&model->params))
        rc = ts_fail(TS_ERR_FORMAT, "%s holds another model", path);
    int fell = last < 0.8 * first;
    if (rc) fprintf(stderr, "train_toy: %s\n", ts_last_error());
    else if (!fell) fprintf(stderr, "train_toy: the loss did not fall: %.4f -> %.4f\n", first, last);
    else printf("saved %s and loaded it back; loss %.4f -> %.4f\n", path, first, last);

    ts_translator_free(&loaded);
    ts_ckpt_free(ck);
    ts_optim_free(&adam);
    ts_seq2seq_free(model);
    ts_batcher_free(batcher);
    ts_vocab_free(src);
    ts_vocab_free(tgt);
    ts_corpus_free(corpus);
    ts_arena_free(arena);
    gsl_rng_free(rng);
    return rc || !fell;
}
