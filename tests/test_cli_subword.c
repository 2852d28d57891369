// train --subword end to end: a run on pieces whose checkpoint carries its
// SentencePiece models; translate, eval and attend take raw text and give
// words; scores are word-level scores of the detokenised outputs; damaged
// models inside a checkpoint, unseen characters, empty lines and invalid
// UTF-8. Every test but the last needs a build with SentencePiece.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "crafted_subword.h"
#include "data/corpus.h"
#include "data/normalize.h"
#include "data/subword.h"
#include "infer/eval_set.h"
#include "infer/evaluate.h"
#include "infer/load.h"
#include "infer/score.h"
#include "infer/translate.h"
#include "interop/model_npz.h"
#include "testutil.h"

// The toy corpus's flags for a small subword run of two epochs (keeping both), in
// float64: merged attention rows are checked to sum to 1 within 1e-12.
#define RUN_FLAGS "--dtype float64 --toy-pairs 600 --subword 400 --emb 16 --hidden 16 --epochs 2 --keep 2 --patience 5 --show 1 --beam 2"

// A trained subword run in a fresh directory; returns the directory.
static char *train_run(void) {
    char *dir = test_tmpdir(), *out = NULL;
    int rc = test_runf(&out, "'%s' train " RUN_FLAGS " --out %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "subword pieces"), "the banner does not say the run is on pieces:\n%s", out);
    free(out);
    return dir;
}

// The run's checkpoint holds both models, and its vocabularies are their pieces.
Test(cli_subword, a_subword_run_stores_its_models_and_translates_raw_text, .timeout = 300) {
    NEEDS_SPM();
    char *dir = train_run(), path[4200], *out = NULL;
    snprintf(path, sizeof path, "%s/run/best.ckpt", dir);
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(path, NULL, &ck), TS_OK, "%s", ts_last_error());
    const void *bytes;
    size_t n;
    cr_assert_eq(ts_ckpt_get_blob(ck, TS_CKPT_SUBWORD_SOURCE, &bytes, &n), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_get_blob(ck, TS_CKPT_SUBWORD_TARGET, &bytes, &n), TS_OK, "%s", ts_last_error());
    const char *kind;
    cr_assert_eq(ts_ckpt_get_string(ck, "data.subword_kind", &kind), TS_OK);
    cr_assert_str_eq(kind, "bpe", "the default kind is BPE (docs/data.md's measurement)");
    ts_ckpt_free(ck);
    ts_translator t;
    cr_assert_eq(ts_translator_load(path, &t), TS_OK, "%s", ts_last_error());
    cr_assert(t.src_sw && t.tgt_sw);
    ts_translator_free(&t);

    // Characters no training sentence has: translated, no <unk>, no
    // "unknown words" note; an empty line stays empty; invalid UTF-8 is
    // refused naming its line and the rest still translates.
    int rc = test_runf(&out, "printf 'the cat sleeps .\\n\\nLe \\342\\230\\203 Ωμέγα zzqx 123 !\\n\\377\\376\\nthe dog .\\n' | "
                             "'%s' translate --model %s", TS_PROGRAM, path);
    cr_assert_eq(rc, 1, "exit %d (invalid UTF-8 on line 4 should make it 1): %s", rc, out);
    cr_assert(strstr(out, "line 4: invalid UTF-8"), "%s", out);
    cr_assert_null(strstr(out, "<unk>"), "%s", out);
    cr_assert_null(strstr(out, "unknown words"), "%s", out);
    free(out);
    rc = test_runf(&out, "printf 'the cat sleeps .\\n\\nLe \\342\\230\\203 Ωμέγα zzqx 123 !\\n' | '%s' translate --model %s 2>&1 | "
                         "awk '{print NR\": \"length($0)}'", TS_PROGRAM, path);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "2: 0\n"), "the empty line did not stay empty: %s", out);
    cr_assert_null(strstr(out, "3: 0\n"), "the unseen characters gave an empty line: %s", out);
    free(out);
    // Beam search and a sentence argument too.
    rc = test_runf(&out, "'%s' translate --model %s --beam 3 'Ωμέγα ☃ sees the cat .'", TS_PROGRAM, path);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "<unk>"), "%s", out);
    free(out);
    // The per-epoch figures are in words: the pieces merged as attend --words merges them.
    snprintf(path, sizeof path, "%s/run/attention-1.svg", dir);
    char *svg = test_read_file(path, NULL), *text = test_svg_text(svg);
    cr_assert(strstr(text, "greedy, in words (subword pieces merged)") && !strstr(svg, "\xe2\x96\x81"), "%.800s", svg);
    free(text);
    free(svg);
    free(dir);
}

// BLEU and chrF of a subword model are the word-level scores of its
// detokenised outputs: recomputed here from the outputs' words and the
// references' words with the metrics alone, they agree exactly; and eval on
// the run's dev-pairs.tsv repeats the run's final dev line.
Test(cli_subword, scores_are_word_level_scores_of_the_detokenised_outputs, .timeout = 300) {
    NEEDS_SPM();
    char *dir = train_run(), path[4200], dev[4200], *out = NULL;
    snprintf(path, sizeof path, "%s/run/last.ckpt", dir);
    snprintf(dev, sizeof dev, "%s/run/dev-pairs.tsv", dir);
    ts_translator t;
    cr_assert_eq(ts_translator_load(path, &t), TS_OK, "%s", ts_last_error());
    ts_corpus *words, *pieces;
    cr_assert_eq(ts_corpus_read(dev, NULL, &words), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_subword_corpus(t.src_sw, t.tgt_sw, words, &pieces), TS_OK, "%s", ts_last_error());
    ts_ctx ctx;
    ts_ctx_init(&ctx, ts_arena_new((size_t)64 << 20));
    ts_eval_result r;
    ts_hypothesis *hyps;
    cr_assert_eq(ts_evaluate(&t, &ctx, pieces, NULL, 0, &(ts_eval_opts){.beam = 1}, &r, &hyps), TS_OK, "%s",
                 ts_last_error());
    // Words to ids through one table of every word seen, by string.
    enum { MAX_WORDS = 1 << 14 };
    static char *table[MAX_WORDS];
    size_t n_table = 0;
    ts_bleu bleu = {0};
    ts_chrf chrf = {0};
    for (size_t i = 0; i < words->n_pairs; i++) {
        char *hyp;
        cr_assert_eq(ts_translator_text(&t, hyps[i].tokens, hyps[i].len, &hyp), TS_OK);
        cr_assert_null(strstr(hyp, "<unk>"));
        const ts_pair *p = &words->pairs[i];
        char ref[4096] = "";
        for (int k = 0; k < p->tgt_len; k++) snprintf(ref + strlen(ref), sizeof ref - strlen(ref), "%s%s", k ? " " : "", p->tgt[k]);
        cr_assert_eq(ts_chrf_add(&chrf, hyp, strlen(hyp), ref, strlen(ref)), TS_OK);
        int32_t ids[2][512];
        size_t len[2] = {0, 0};
        char *texts[2] = {hyp, ref};
        for (int side = 0; side < 2; side++)
            for (char *save = NULL, *w = strtok_r(texts[side], " ", &save); w && len[side] < 512; w = strtok_r(NULL, " ", &save)) {
                size_t id = 0;
                while (id < n_table && strcmp(table[id], w)) id++;
                if (id == n_table) {
                    cr_assert_lt(n_table, MAX_WORDS);
                    table[n_table++] = strdup(w);
                }
                ids[side][len[side]++] = (int32_t)id;
            }
        cr_assert_eq(ts_bleu_add(&bleu, ids[0], len[0], ids[1], len[1]), TS_OK);
        free(hyp);
        ts_hypothesis_free(&hyps[i]);
    }
    cr_assert_eq(ts_bleu_score(&bleu), r.bleu, "BLEU %.17g recomputed from words, %.17g by evaluate", ts_bleu_score(&bleu), r.bleu);
    cr_assert_eq(ts_chrf_score(&chrf), r.chrf, "chrF %.17g recomputed from words, %.17g by evaluate", ts_chrf_score(&chrf), r.chrf);
    for (size_t i = 0; i < n_table; i++) free(table[i]);
    free(hyps);
    ts_arena_free(ctx.arena);
    ts_corpus_free(words);
    ts_corpus_free(pieces);
    ts_translator_free(&t);

    // The run's final dev line, repeated by eval on the words of its dev pairs.
    int rc = test_runf(&out, "'%s' eval --model %s --corpus %s --show 0 --beam 1", TS_PROGRAM, path, dev);
    cr_assert_eq(rc, 0, "%s", out);
    char want[128];
    snprintf(want, sizeof want, "eval: bleu=%.4f chrf=%.4f", r.bleu, r.chrf);
    cr_assert(strstr(out, want), "no '%s' in:\n%s", want, out);
    free(out);
    rc = test_runf(&out, "'%s' eval --model %s --corpus %s --align %s", TS_PROGRAM, path, dev, dev);
    cr_assert(rc == 2 && strstr(out, "subword model"), "exit %d: %s", rc, out);
    free(out);
    free(dir);
}

// A checkpoint whose subword model is truncated, has a flipped byte or is
// crafted (its blob's length and CRC right, the container's CRCs intact: the
// `nmt_nfkc` model of issue 38, which made SentencePiece segfault) is refused
// naming the file and the blob by every command that loads a model, resume
// and average included; so is one whose model is not its vocabulary's.
Test(cli_subword, a_damaged_subword_model_in_a_checkpoint_is_refused_naming_the_file, .timeout = 300) {
    NEEDS_SPM();
    char *dir = train_run(), path[4200], crafted[4200], *out = NULL;
    for (int damage = 0; damage < 4; damage++) {
        snprintf(path, sizeof path, "%s/run/%s", dir, damage == 3 ? "last.ckpt" : "best.ckpt");
        snprintf(crafted, sizeof crafted, "%s/crafted.ckpt", dir);
        ts_ckpt *ck;
        cr_assert_eq(ts_ckpt_load(path, NULL, &ck), TS_OK, "%s", ts_last_error());
        const void *bytes, *other;
        size_t n, n_other;
        cr_assert_eq(ts_ckpt_get_blob(ck, TS_CKPT_SUBWORD_TARGET, &bytes, &n), TS_OK);
        cr_assert_eq(ts_ckpt_get_blob(ck, TS_CKPT_SUBWORD_SOURCE, &other, &n_other), TS_OK);
        unsigned char *copy = malloc(n > n_other ? n : n_other);
        const char *says;
        if (damage == 0) {  // truncated
            memcpy(copy, bytes, n);
            n = n / 2;
            says = "subword.target";
        } else if (damage == 1) {  // a byte of the model flipped
            memcpy(copy, bytes, n);
            copy[n - 7] ^= 0x20;
            says = "subword.target";
        } else if (damage == 2) {  // the source side's model where the target's belongs
            memcpy(copy, other, n_other);
            n = n_other;
            says = "where the vocabulary has";
        } else {  // crafted: the source side's (which encodes) nmt_nfkc with a trie pointing outside its map
            const crafted_case *c = &crafted_subword_cases[CRAFTED_NFKC];
            free(copy);
            copy = crafted_subword(other, n_other, c->field, c->occurrence, c->content, c->len, &n);
            says = "subword.source: subword model: normalizer_spec";
        }
        cr_assert_eq(ts_ckpt_set_blob(ck, damage == 3 ? TS_CKPT_SUBWORD_SOURCE : TS_CKPT_SUBWORD_TARGET, copy, n), TS_OK);
        free(copy);
        cr_assert_eq(ts_ckpt_save(ck, crafted), TS_OK, "%s", ts_last_error());
        ts_ckpt_free(ck);
        // Every command that loads a model refuses it alike.
        const char *commands[] = {"translate --model %s 'the cat .'", "attend --model %s 'the cat .'", "info %s",
                                  "export %s %s.npz", "eval --model %s --corpus /dev/null",
                                  "average %s %s -o %s.avg",
                                  "train " RUN_FLAGS " --epochs 3 --resume %s --out %s.run"};
        size_t n_commands = sizeof commands / sizeof *commands - (damage != 3);  // resume needs last.ckpt
        for (size_t c = 0; c < n_commands; c++) {
            char command[512];
            snprintf(command, sizeof command, "'%%s' %s", commands[c]);
            int rc = test_runf(&out, command, TS_PROGRAM, crafted, crafted, crafted);
            cr_assert_eq(rc, 1, "damage %d, %s: exit %d: %s", damage, commands[c], rc, out);
            cr_assert(strstr(out, crafted) && strstr(out, says), "damage %d, %s: the message names neither %s nor '%s':\n%s",
                      damage, commands[c], crafted, says, out);
            free(out);
        }
    }
    free(dir);
}

// A small corpus as people write it: capitals, punctuation on the words,
// French no-break spaces before ! and ?.
static char *write_cased_corpus(const char *dir) {
    static const char *const en_subject[] = {"The cat", "The dog", "Tom", "Mary"};
    static const char *const fr_subject[] = {"Le chat", "Le chien", "Tom", "Marie"};
    static const char *const en_verb[] = {"sleeps", "eats", "runs"};
    static const char *const fr_verb[] = {"dort", "mange", "court"};
    static const char *const en_end[] = {".", "!", "?"};
    static const char *const fr_end[] = {".", "\xC2\xA0!", "\xC2\xA0?"};
    char text[32768];
    size_t len = 0;
    for (int i = 0; i < 240; i++) {
        int s = i % 4, v = (i / 4) % 3, e = (i / 12) % 3;
        len += (size_t)snprintf(text + len, sizeof text - len, "%s %s%s\t%s %s%s\n", en_subject[s], en_verb[v], en_end[e],
                                fr_subject[s], fr_verb[v], fr_end[e]);
    }
    return test_write_file(dir, "cased.tsv", text, len);
}

#define NFC_FLAGS "--dtype float64 --subword 300 --normalisation nfc --emb 16 --hidden 16 --epochs 2 --patience 5 --show 1 --beam 1 --dev 30"

// --normalisation nfc (the subword presets' own): the models learn the text
// as written, the checkpoint says so, dev-pairs.tsv keeps the text, eval's
// bleu is that of the words (output and reference normalised into words)
// and bleu_detok that of the text by sacreBLEU's 13a; a word vocabulary, a
// resume with another normalisation and guided alignment on a file refuse it.
Test(cli_subword, a_run_on_text_as_written_learns_cased_pieces_and_scores_both_ways, .timeout = 300) {
    NEEDS_SPM();
    char *dir = test_tmpdir(), *corpus = write_cased_corpus(dir), path[4200], *out = NULL;
    int rc = test_runf(&out, "'%s' train " NFC_FLAGS " --corpus %s --out %s/run", TS_PROGRAM, corpus, dir);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "; normalisation nfc (text as written"), "the banner does not say the normalisation:\n%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/run/config.txt", dir);
    char *config = test_read_file(path, NULL);
    cr_assert(strstr(config, "\nnormalisation = nfc\n"), "%s", config);
    free(config);
    snprintf(path, sizeof path, "%s/run/last.ckpt", dir);
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(path, NULL, &ck), TS_OK, "%s", ts_last_error());
    const char *norm;
    cr_assert_eq(ts_ckpt_get_string(ck, "data.normalisation", &norm), TS_OK);
    cr_assert_str_eq(norm, "nfc");
    ts_ckpt_free(ck);
    ts_translator t;
    cr_assert_eq(ts_translator_load(path, &t), TS_OK, "%s", ts_last_error());
    cr_assert_eq(t.normalisation, TS_NORM_NFC);
    int cased = 0;  // the source model has pieces of capitals: it learned the text, not lowercased words
    for (int32_t id = 0; id < (int32_t)ts_vocab_size(t.src_vocab); id++) cased |= strstr(ts_vocab_word(t.src_vocab, id), "T") != NULL;
    cr_assert(cased, "no source piece holds a capital T");
    // dev-pairs.tsv holds the text as written (no-break spaces as spaces), and evaluate reads it as the model does.
    char dev[4200];
    snprintf(dev, sizeof dev, "%s/run/dev-pairs.tsv", dir);
    char *pairs = test_read_file(dev, NULL);
    cr_assert(strstr(pairs, "Tom ") || strstr(pairs, "The "), "%s", pairs);
    cr_assert(strstr(pairs, " !\n") || strstr(pairs, " ?\n") || strstr(pairs, ".\n"), "%s", pairs);
    free(pairs);
    ts_eval_set set;
    cr_assert_eq(ts_eval_set_read(&t, dev, NULL, 0, -1, &set), TS_OK, "%s", ts_last_error());
    ts_ctx ctx;
    ts_ctx_init(&ctx, ts_arena_new((size_t)64 << 20));
    ts_eval_result r;
    ts_hypothesis *hyps;
    cr_assert_eq(ts_evaluate(&t, &ctx, ts_eval_set_input(&set), set.rows, set.n_rows, &(ts_eval_opts){.beam = 1}, &r, &hyps),
                 TS_OK, "%s", ts_last_error());
    // Recomputed from the texts alone: words by ts_normalize, text by 13a.
    ts_bleu words = {0}, text = {0};
    for (size_t k = 0; k < set.n_rows; k++) {
        char *hyp, *ref, *hyp_words, *ref_words, *hyp_13a, *ref_13a;
        cr_assert_eq(ts_translator_text(&t, hyps[k].tokens, hyps[k].len, &hyp), TS_OK);
        cr_assert_eq(ts_pair_text(&set.corpus->pairs[set.rows[k]], TS_TGT, &ref), TS_OK);
        cr_assert_eq(ts_normalize(hyp, strlen(hyp), &hyp_words, NULL), TS_OK);
        cr_assert_eq(ts_normalize(ref, strlen(ref), &ref_words, NULL), TS_OK);
        cr_assert_eq(ts_bleu_add_words(&words, hyp_words, ref_words), TS_OK);
        cr_assert_eq(ts_tokenize_13a(hyp, strlen(hyp), &hyp_13a, NULL), TS_OK);
        cr_assert_eq(ts_tokenize_13a(ref, strlen(ref), &ref_13a, NULL), TS_OK);
        cr_assert_eq(ts_bleu_add_words(&text, hyp_13a, ref_13a), TS_OK);
        free(hyp), free(ref), free(hyp_words), free(ref_words), free(hyp_13a), free(ref_13a);
        ts_hypothesis_free(&hyps[k]);
    }
    free(hyps);
    cr_assert_eq(ts_bleu_score(&words), r.bleu, "BLEU %.17g from the words, %.17g by evaluate", ts_bleu_score(&words), r.bleu);
    cr_assert_eq(ts_bleu_score_sacrebleu(&text), r.bleu_detok, "BLEU %.17g from 13a, %.17g by evaluate",
                 ts_bleu_score_sacrebleu(&text), r.bleu_detok);
    char want[128];
    snprintf(want, sizeof want, "eval: bleu=%.4f chrf=%.4f", r.bleu, r.chrf);
    rc = test_runf(&out, "'%s' eval --model %s --corpus %s --beam 1", TS_PROGRAM, path, dev);
    cr_assert(rc == 0 && strstr(out, want), "exit %d, want '%s':\n%s", rc, want, out);
    snprintf(want, sizeof want, " bleu_detok=%.4f\n", r.bleu_detok);
    cr_assert(strstr(out, want), "want '%s':\n%s", want, out);
    cr_assert(strstr(out, "  source:    Tom ") || strstr(out, "  source:    The ") || strstr(out, "  source:    Mary "),
              "eval shows the text as written:\n%s", out);
    free(out);
    ts_arena_free(ctx.arena);
    ts_eval_set_free(&set);
    ts_translator_free(&t);
    // Refused: a word vocabulary of the text as written, a resume with the words, guided alignment on a file.
    rc = test_runf(&out, "'%s' train --corpus %s --normalisation nfc --epochs 1 --out %s/words", TS_PROGRAM, corpus, dir);
    cr_assert(rc == 2 && strstr(out, "--normalisation nfc") && strstr(out, "--subword"), "exit %d: %s", rc, out);
    free(out);
    rc = test_runf(&out, "'%s' train " NFC_FLAGS " --corpus %s --normalisation nfc-lowercase-punct-split --epochs 3 "
                         "--resume %s/run/last.ckpt --out %s/run", TS_PROGRAM, corpus, dir, dir);
    cr_assert(rc != 0 && strstr(out, "--normalisation 'nfc'"), "exit %d: %s", rc, out);
    free(out);
    rc = test_runf(&out, "'%s' train " NFC_FLAGS " --corpus %s --guided-alignment %s --out %s/guided", TS_PROGRAM, corpus,
                   corpus, dir);
    cr_assert(rc == 2 && strstr(out, "--guided-alignment links the words"), "exit %d: %s", rc, out);
    free(out);
    free(corpus);
    free(dir);
}

// A checkpoint's data.normalisation is read back: a name tinyseq does not
// know, or the text as written without subword models, is refused naming it.
Test(cli_subword, a_checkpoint_names_a_normalisation_it_can_read) {
    char path[4200];
    snprintf(path, sizeof path, "%s/tests/fixtures/format1/toy-best.ckpt", TS_SOURCE_DIR);
    ts_ckpt *ck;
    cr_assert_eq(ts_ckpt_load(path, NULL, &ck), TS_OK, "%s", ts_last_error());
    ts_translator t;
    cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_OK, "%s", ts_last_error());
    cr_assert_eq(t.normalisation, TS_NORM_SPLIT, "a file before nfc reads words");
    ts_translator_free(&t);
    cr_assert_eq(ts_ckpt_set(ck, "data.normalisation", "nfkc-casefold"), TS_OK);
    cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "data.normalisation") && strstr(ts_last_error(), "nfkc-casefold"), "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_set(ck, "data.normalisation", "nfc"), TS_OK);
    cr_assert_eq(ts_translator_from_ckpt(ck, &t), TS_ERR_FORMAT);
    cr_assert(strstr(ts_last_error(), "only a subword model"), "%s", ts_last_error());
    ts_ckpt_free(ck);
}

// A subword run resumes from its last.ckpt, refuses other --subword flags
// naming them, and its kept epochs average into a model that translates.
Test(cli_subword, resume_checks_the_subword_flags_and_average_keeps_the_models, .timeout = 300) {
    NEEDS_SPM();
    char *dir = train_run(), *out = NULL;
    int rc = test_runf(&out, "'%s' train " RUN_FLAGS " --subword 500 --epochs 3 --resume %s/run/last.ckpt --out %s/run",
                       TS_PROGRAM, dir, dir);
    cr_assert(rc != 0 && strstr(out, "--subword"), "exit %d: %s", rc, out);
    free(out);
    rc = test_runf(&out, "'%s' train " RUN_FLAGS " --subword-joint --epochs 3 --resume %s/run/last.ckpt --out %s/run",
                   TS_PROGRAM, dir, dir);
    cr_assert(rc != 0 && strstr(out, "--subword-joint"), "exit %d: %s", rc, out);
    free(out);
    rc = test_runf(&out, "'%s' train " RUN_FLAGS " --epochs 3 --resume %s/run/last.ckpt --out %s/run", TS_PROGRAM, dir, dir);
    cr_assert(rc == 0 && strstr(out, "epoch 3:"), "exit %d: %s", rc, out);
    free(out);
    rc = test_runf(&out, "'%s' average %s/run/epoch-2.ckpt %s/run/epoch-3.ckpt -o %s/avg.ckpt && '%s' translate --model %s/avg.ckpt "
                         "'Ωμέγα the cat .'", TS_PROGRAM, dir, dir, dir, TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "<unk>"), "%s", out);
    free(out);
    // A word-level checkpoint and a subword one do not average.
    rc = test_runf(&out, "'%s' train --toy-pairs 600 --emb 16 --hidden 16 --epochs 1 --show 0 --beam 1 --out %s/words && "
                         "'%s' average %s/words/last.ckpt %s/run/epoch-3.ckpt -o %s/mixed.ckpt", TS_PROGRAM, dir, TS_PROGRAM,
                   dir, dir, dir);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    free(out);
    free(dir);
}

// The smallest size, --subword 300, trains on the toy corpus (its ~30
// characters leave room for a few dozen merges after the 260 fixed ids); a
// corpus of more characters than that leaves room for is a usage error naming the
// flag, the side and both counts, before any training.
Test(cli_subword, subword_300_trains_on_the_toy_corpus_and_too_many_characters_are_refused, .timeout = 300) {
    NEEDS_SPM();
    char *dir = test_tmpdir(), *out = NULL;
    int rc = test_runf(&out, "'%s' train --toy-pairs 200 --subword 300 --emb 8 --hidden 8 --epochs 1 --show 0 --beam 1 --out %s/run",
                       TS_PROGRAM, dir);
    cr_assert(rc == 0 && strstr(out, "vocabularies 300 / 300 subword pieces"), "exit %d: %s", rc, out);
    free(out);
    // 48 Greek and Cyrillic letters on each side: 48 + the word mark + 260 > 300.
    char line[1024] = "", tsv[4 * 1024] = "";
    for (int c = 0; c < 48; c++) {
        int cp = c < 24 ? 0x3b1 + c : 0x430 + c - 24;
        char ch[4] = {(char)(0xc0 | cp >> 6), (char)(0x80 | (cp & 0x3f)), c % 6 == 5 ? ' ' : 0, 0};
        strcat(line, ch);
    }
    for (int k = 0; k < 4; k++) snprintf(tsv + strlen(tsv), sizeof tsv - strlen(tsv), "%s\t%s\n", line, line);
    char *corpus = test_write_file(dir, "wide.tsv", tsv, strlen(tsv));
    rc = test_runf(&out, "'%s' train --corpus %s --subword 300 --epochs 1 --out %s/wide", TS_PROGRAM, corpus, dir);
    cr_assert(rc == 2 && strstr(out, "--subword 300 (the source side)") && strstr(out, "49 characters") &&
                  strstr(out, "at least 309"), "exit %d: %s", rc, out);
    free(out);
    free(corpus);
    free(dir);
}

// z's entries with `name` left out, or given `bytes` instead when not NULL.
static ts_npz *npz_with(const ts_npz *z, const char *name, const uint8_t *bytes, size_t n) {
    ts_npz *out = ts_npz_new();
    for (size_t i = 0; i < ts_npz_count(z); i++) {
        const ts_npz_array *a = ts_npz_at(z, i);
        int rc = TS_OK;
        if (!strcmp(a->name, name)) {
            if (bytes) rc = ts_npz_add_u1(out, a->name, 1, &n, bytes);
        } else if (a->dtype == TS_NPZ_U1) {
            rc = ts_npz_add_u1(out, a->name, a->ndim, a->shape, a->bytes);
        } else if (a->dtype == TS_NPZ_STR) {
            rc = ts_npz_add_strings(out, a->name, a->ndim, a->shape, a->strings);
        } else {
            rc = ts_npz_add_f8(out, a->name, a->ndim, a->shape, a->values);
        }
        cr_assert_eq(rc, TS_OK, "%s", ts_last_error());
    }
    return out;
}

// export carries the SentencePiece models ('|u1' arrays, the checkpoint's
// blobs byte for byte, which numpy reads as uint8); import restores them
// into the checkpoint it writes, which translates every line as the
// original does. A damaged model or one side alone is refused naming the
// file and the entry, leaving the model as it was.
Test(cli_subword, export_import_round_trips_the_subword_models_and_translations, .timeout = 300) {
    NEEDS_SPM();
    char *dir = train_run(), *out = NULL, *again = NULL, path[4200], npz[4200], back[4200];
    snprintf(path, sizeof path, "%s/run/last.ckpt", dir);
    snprintf(npz, sizeof npz, "%s/model.npz", dir);
    snprintf(back, sizeof back, "%s/back.ckpt", dir);
    int rc = test_runf(&out, "'%s' export %s %s && '%s' import %s --like %s -o %s", TS_PROGRAM, path, npz, TS_PROGRAM, npz,
                       path, back);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    ts_ckpt *a, *b;
    ts_npz *z;
    cr_assert_eq(ts_ckpt_load(path, NULL, &a), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_load(back, NULL, &b), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_npz_load(npz, NULL, &z), TS_OK, "%s", ts_last_error());
    const char *blobs[2] = {TS_CKPT_SUBWORD_SOURCE, TS_CKPT_SUBWORD_TARGET};
    const char *entries[2] = {TS_NPZ_SUBWORD_SOURCE, TS_NPZ_SUBWORD_TARGET};
    for (int k = 0; k < 2; k++) {
        const void *x, *y;
        size_t nx, ny;
        const ts_npz_array *e = ts_npz_find(z, entries[k]);
        cr_assert(e && e->dtype == TS_NPZ_U1 && e->ndim == 1, "no '|u1' entry %s", entries[k]);
        cr_assert_eq(ts_ckpt_get_blob(a, blobs[k], &x, &nx), TS_OK);
        cr_assert_eq(ts_ckpt_get_blob(b, blobs[k], &y, &ny), TS_OK);
        cr_assert(e->size == nx && !memcmp(e->bytes, x, nx), "%s is not the blob %s", entries[k], blobs[k]);
        cr_assert(ny == nx && !memcmp(y, x, nx), "the imported %s differs", blobs[k]);
    }
    ts_ckpt_free(a);
    ts_ckpt_free(b);
    // Every line translates alike, unseen characters and an empty line included.
    const char *lines = "printf 'the cat sleeps .\\n\\nLe ☃ Ωμέγα chat zzqx !\\nmy small dog sees the big house .\\n'";
    rc = test_runf(&out, "%s | '%s' translate --model %s --beam 3", lines, TS_PROGRAM, path);
    cr_assert_eq(rc, 0, "%s", out);
    rc = test_runf(&again, "%s | '%s' translate --model %s --beam 3", lines, TS_PROGRAM, back);
    cr_assert_eq(rc, 0, "%s", again);
    cr_assert_str_eq(again, out, "the imported model translates otherwise");
    free(out);
    free(again);
    if (test_run("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1", NULL) == 0) {
        rc = test_runf(&out, "/usr/bin/python3 -c \"import numpy as np; z = np.load('%s'); "
                             "a = z['tinyseq.subword.source']; assert a.dtype == np.uint8 and a.ndim == 1, a.dtype; "
                             "assert a.tobytes()[:4] == b'TSSP', a.tobytes()[:4]; print('numpy ok')\"", npz);
        cr_assert(rc == 0 && strstr(out, "numpy ok"), "%s", out);
        free(out);
    }
    // Damaged, or one side alone: refused naming the entry; the model keeps its own.
    ts_translator t;
    cr_assert_eq(ts_translator_load(path, &t), TS_OK, "%s", ts_last_error());
    const ts_subword *before = t.tgt_sw;
    const ts_npz_array *target = ts_npz_find(z, TS_NPZ_SUBWORD_TARGET);
    uint8_t *flipped = malloc(target->size);
    memcpy(flipped, target->bytes, target->size);
    flipped[target->size - 9] ^= 0x04;
    const crafted_case *nfkc = &crafted_subword_cases[CRAFTED_NFKC];
    size_t n_crafted;
    uint8_t *crafted = crafted_subword(target->bytes, target->size, nfkc->field, nfkc->occurrence, nfkc->content,
                                       nfkc->len, &n_crafted);
    ts_npz *cases[4] = {npz_with(z, TS_NPZ_SUBWORD_TARGET, flipped, target->size),
                        npz_with(z, TS_NPZ_SUBWORD_TARGET, target->bytes, target->size / 2),
                        npz_with(z, TS_NPZ_SUBWORD_TARGET, NULL, 0),
                        npz_with(z, TS_NPZ_SUBWORD_TARGET, crafted, n_crafted)};
    const char *says[4] = {"corrupt", "truncated", "without", "normalizer_spec"};
    // import of the crafted one refuses, writing nothing.
    char crafted_npz[4200];
    snprintf(crafted_npz, sizeof crafted_npz, "%s/crafted.npz", dir);
    cr_assert_eq(ts_npz_save(cases[3], crafted_npz, TS_NPZ_STORE), TS_OK, "%s", ts_last_error());
    rc = test_runf(&out, "'%s' import %s --like %s -o %s/crafted.ckpt 2>&1; test ! -e %s/crafted.ckpt", TS_PROGRAM,
                   crafted_npz, path, dir, dir);
    cr_assert(rc == 0 && strstr(out, "crafted.npz") && strstr(out, "normalizer_spec"), "exit %d: %s", rc, out);
    free(out);
    free(crafted);
    for (int c = 0; c < 4; c++) {
        cr_assert_eq(ts_model_from_npz(&t, cases[c], "edited.npz"), TS_ERR_FORMAT, "case %d", c);
        cr_assert(strstr(ts_last_error(), "edited.npz") && strstr(ts_last_error(), TS_NPZ_SUBWORD_TARGET) &&
                      strstr(ts_last_error(), says[c]), "case %d: %s", c, ts_last_error());
        cr_assert_eq(t.tgt_sw, before, "case %d changed the model", c);
        ts_npz_free(cases[c]);
    }
    free(flipped);
    // An .npz with no subword entries (saved from PyTorch) keeps the model's own.
    ts_npz *bare = npz_with(z, TS_NPZ_SUBWORD_TARGET, NULL, 0), *none = npz_with(bare, TS_NPZ_SUBWORD_SOURCE, NULL, 0);
    cr_assert_eq(ts_model_from_npz(&t, none, "bare.npz"), TS_OK, "%s", ts_last_error());
    cr_assert_eq(t.tgt_sw, before);
    ts_npz_free(bare);
    ts_npz_free(none);
    ts_translator_free(&t);
    ts_npz_free(z);
    free(dir);
}

// --resume takes the pieces from the checkpoint, not from learning again:
// with lines of new characters appended to the training file (which models
// learned again would make pieces of, so the vocabularies would differ and
// the resume be refused), the run continues, and its checkpoint holds the
// very models it started with.
Test(cli_subword, resume_uses_the_stored_models_even_when_the_training_file_changed, .timeout = 300) {
    NEEDS_SPM();
    char *dir = test_tmpdir(), *out = NULL;
    const char *flags = "--subword 400 --emb 8 --hidden 8 --show 0 --beam 1";
    int rc = test_runf(&out, "'%s' corpus --toy --n 400 > %s/corpus.tsv && '%s' train --corpus %s/corpus.tsv %s --epochs 1 "
                             "--out %s/run && cp %s/run/last.ckpt %s/first.ckpt",
                       TS_PROGRAM, dir, TS_PROGRAM, dir, flags, dir, dir, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = test_runf(&out, "for i in 1 2 3 4 5 6 7 8; do printf 'Ωμέγα ψυχή ζωή $i .\tЖизнь душа $i .\n'; done >> %s/corpus.tsv && "
                         "'%s' train --corpus %s/corpus.tsv %s --epochs 2 --resume %s/run/last.ckpt --out %s/run",
                   dir, TS_PROGRAM, dir, flags, dir, dir);
    cr_assert(rc == 0 && strstr(out, "epoch 2:") && strstr(out, "the checkpoint's models"), "exit %d: %s", rc, out);
    free(out);
    char first[4200], last[4200];
    snprintf(first, sizeof first, "%s/first.ckpt", dir);
    snprintf(last, sizeof last, "%s/run/last.ckpt", dir);
    ts_ckpt *a, *b;
    cr_assert_eq(ts_ckpt_load(first, NULL, &a), TS_OK, "%s", ts_last_error());
    cr_assert_eq(ts_ckpt_load(last, NULL, &b), TS_OK, "%s", ts_last_error());
    const char *blobs[2] = {TS_CKPT_SUBWORD_SOURCE, TS_CKPT_SUBWORD_TARGET};
    for (int k = 0; k < 2; k++) {
        const void *x, *y;
        size_t nx, ny;
        cr_assert_eq(ts_ckpt_get_blob(a, blobs[k], &x, &nx), TS_OK);
        cr_assert_eq(ts_ckpt_get_blob(b, blobs[k], &y, &ny), TS_OK);
        cr_assert(nx == ny && !memcmp(x, y, nx), "%s: %zu bytes before the resume, %zu after, or other bytes", blobs[k], nx, ny);
    }
    ts_ckpt_free(a);
    ts_ckpt_free(b);
    // A resume checkpoint whose model blob is damaged is refused naming the file and the blob.
    cr_assert_eq(ts_ckpt_load(first, NULL, &a), TS_OK, "%s", ts_last_error());
    const void *bytes;
    size_t n;
    cr_assert_eq(ts_ckpt_get_blob(a, TS_CKPT_SUBWORD_SOURCE, &bytes, &n), TS_OK);
    cr_assert_eq(ts_ckpt_set_blob(a, TS_CKPT_SUBWORD_SOURCE, bytes, n / 2), TS_OK);
    char damaged[4200];
    snprintf(damaged, sizeof damaged, "%s/damaged.ckpt", dir);
    cr_assert_eq(ts_ckpt_save(a, damaged), TS_OK, "%s", ts_last_error());
    ts_ckpt_free(a);
    rc = test_runf(&out, "'%s' train --corpus %s/corpus.tsv %s --epochs 2 --resume %s --out %s/run2", TS_PROGRAM, dir, flags,
                   damaged, dir);
    cr_assert(rc == 1 && strstr(out, damaged) && strstr(out, TS_CKPT_SUBWORD_SOURCE), "exit %d: %s", rc, out);
    free(out);
    free(dir);
}

// The merge of attend --words, recomputed in Python from the pieces' JSON
// (argv 1) and compared with the words' JSON (argv 2): every view, layer,
// head and mean, and the search's weights; every row of the words' sums to 1.
static const char merge_check[] =
    "import json, sys\n"
    "p, w = (json.load(open(f)) for f in sys.argv[1:3])\n"
    "def groups(labels, keep):\n"
    "    g, n = [], -1\n"
    "    for i, x in enumerate(labels):\n"
    "        n += 1 if i >= len(labels) - keep or n < 0 or x.startswith('\\u2581') else 0\n"
    "        g.append(n)\n"
    "    return g, n + 1\n"
    "src, tgt = groups(p['source'], 0), groups(p['target'], 1)\n"
    "axes = {'source': src, 'target': tgt, 'target_in': ([0] + [k + 1 for k in tgt[0][:-1]], tgt[1])}\n"
    "def merge(m, rows, cols):\n"
    "    (rg, nr), (cg, nc) = rows, cols\n"
    "    out, count = [[0.0] * nc for _ in range(nr)], [0] * nr\n"
    "    for j, row in enumerate(m):\n"
    "        count[rg[j]] += 1\n"
    "        for i, x in enumerate(row): out[rg[j]][cg[i]] += x\n"
    "    return [[x / count[r] for x in out[r]] for r in range(nr)]\n"
    "def same(a, b, what):\n"
    "    assert len(a) == len(b) and all(len(x) == len(y) for x, y in zip(a, b)), what\n"
    "    assert all(abs(x - y) <= 1e-12 for r, s in zip(a, b) for x, y in zip(r, s)), what\n"
    "    assert all(abs(sum(r) - 1) <= 1e-12 for r in b), what + ': a row does not sum to 1'\n"
    "same(merge(p['weights'], tgt, src), w['weights'], 'weights')\n"
    "n = 0\n"
    "for v in ('cross', 'enc', 'dec'):\n"
    "    rows, cols = axes[p[v]['rows']], axes[p[v]['cols']]\n"
    "    for l in range(p['layers']):\n"
    "        same(merge(p[v]['mean'][l], rows, cols), w[v]['mean'][l], '%s layer %d mean' % (v, l))\n"
    "        for h in range(p['heads']):\n"
    "            same(merge(p[v]['heads'][l][h], rows, cols), w[v]['heads'][l][h], '%s layer %d head %d' % (v, l, h))\n"
    "            n += 1\n"
    "print('merged', n, 'heads of', len(p['source']), 'x', len(p['target']), 'pieces into', len(w['source']), 'x', len(w['target']), 'words')\n";

// A Transformer subword model's heads in words: --words goes with --heads,
// --layer/--head and --self, labels every view with words, and its JSON is
// the pieces' JSON merged by the documented rule, view by view.
Test(cli_subword, attend_words_merges_every_head_of_a_transformer, .timeout = 300) {
    NEEDS_SPM();
    if (test_run("/usr/bin/python3 -c 'import json' >/dev/null 2>&1", NULL)) cr_skip_test("no /usr/bin/python3");
    char *dir = test_tmpdir(), *out = NULL, path[4200];
    int rc = test_runf(&out, "'%s' train --arch transformer --dtype float64 --d-model 16 --heads 2 --layers 2 "
                             "--ff 32 --toy-pairs 600 --subword 400 --epochs 1 --show 0 --beam 1 --out %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/run/best.ckpt", dir);
    const char *sentence = "'The little cat sees ☃ .'";
    const char *views[] = {"--heads", "--layer 0 --head 1", "--self enc", "--self dec --heads", "--layer 0 --pharaoh"};
    for (size_t k = 0; k < sizeof views / sizeof *views; k++) {
        rc = test_runf(&out, "'%s' attend --model %s --color never --words %s %s", TS_PROGRAM, path, views[k], sentence);
        cr_assert(rc == 0 && strstr(out, "source: the little cat sees ☃ .\n") && !strstr(out, "<0xE2>"), "%s: exit %d:\n%s",
                  views[k], rc, out);
        free(out);
    }
    char *check = test_write_file(dir, "merge_check.py", merge_check, strlen(merge_check));
    rc = test_runf(&out, "'%s' attend --model %s --json %s/pieces.json %s && '%s' attend --model %s --words --json %s/words.json %s && "
                         "/usr/bin/python3 %s %s/pieces.json %s/words.json",
                   TS_PROGRAM, path, dir, sentence, TS_PROGRAM, path, dir, sentence, check, dir, dir);
    cr_assert(rc == 0 && strstr(out, "merged 12 heads of ") && strstr(out, "into 6 x "), "exit %d:\n%s", rc, out);
    free(out);
    free(check);
    free(dir);
}

// Without SentencePiece, --subword is refused saying so (skipped in builds with it).
Test(cli_subword, a_build_without_sentencepiece_refuses_subword_runs) {
    if (ts_subword_compiled()) cr_skip_test("this build has SentencePiece");
    char *dir = test_tmpdir(), *out = NULL;
    int rc = test_runf(&out, "'%s' train --toy-pairs 100 --subword 400 --epochs 1 --out %s/run", TS_PROGRAM, dir);
    cr_assert(rc == 2 && strstr(out, "--subword 400") && strstr(out, "without SentencePiece"), "exit %d: %s", rc, out);
    free(out);
    free(dir);
}

// attend shows a subword model's pieces; --words merges them: the source
// line is the normalised words, the JSON's rows still sum to 1, and the
// alignment links words.
Test(cli_subword, attend_words_merges_pieces_into_words, .timeout = 300) {
    NEEDS_SPM();
    char *dir = train_run(), *out = NULL, path[4200], json[4200];
    snprintf(path, sizeof path, "%s/run/best.ckpt", dir);
    snprintf(json, sizeof json, "%s/words.json", dir);
    int rc = test_runf(&out, "'%s' attend --model %s --color never 'The little cat sees ☃ .'", TS_PROGRAM, path);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "source: ▁the ") && strstr(out, "<0xE2>"), "the pieces are not shown:\n%s", out);
    free(out);
    rc = test_runf(&out, "'%s' attend --model %s --color never --words --pharaoh --json %s 'The little cat sees ☃ .'",
                   TS_PROGRAM, path, json);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "source: the little cat sees ☃ .\n"), "the words are not shown:\n%s", out);
    // Every link's source index is one of the 6 words.
    const char *links = strstr(out, "alignment (source-target):\n");
    cr_assert_not_null(links, "%s", out);
    for (const char *p = links + strlen("alignment (source-target):\n"); *p && *p != '\n';) {
        int i, j, used;
        cr_assert_eq(sscanf(p, "%d-%d%n", &i, &j, &used), 2, "%s", p);
        cr_assert(i >= 0 && i < 6, "link %d-%d names no word", i, j);
        p += used;
        while (*p == ' ') p++;
    }
    free(out);
    rc = test_runf(&out, "python3 -c \"import json; d = json.load(open('%s')); "
                         "assert d['source'] == ['the', 'little', 'cat', 'sees', '☃', '.'], d['source']; "
                         "assert all(abs(sum(r) - 1) < 1e-12 for r in d['weights']), d['weights']; "
                         "assert d['units'] == 'words', d.get('units')\"", json);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    // The figures say which they show (issue 47 point 7): the SVG's title and the JSON's "units".
    const char *says[2] = {"over subword pieces", "in words (subword pieces merged)"};
    for (int words = 0; words < 2; words++) {
        rc = test_runf(&out, "('%s' attend --model %s %s --svg - 'The little cat sees ☃ .' 2>/dev/null)", TS_PROGRAM, path,
                       words ? "--words" : "");
        cr_assert_eq(rc, 0, "%s", out);
        char *text = test_svg_text(out);
        cr_assert(strstr(text, says[words]) && !strstr(text, says[!words]), "%s", text);
        free(text);
        free(out);
    }
    rc = test_runf(&out, "('%s' attend --model %s --json - 'The little cat sees ☃ .' 2>/dev/null)", TS_PROGRAM, path);
    cr_assert(rc == 0 && strstr(out, "\"units\": \"pieces\""), "%s", out);
    free(out);
    free(dir);
}
