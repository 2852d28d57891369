// What several subcommands share beyond argument parsing: the session
// (model, arena, context) of the checkpoint named by --model.
#ifndef TS_CLI_COMMON_H
#define TS_CLI_COMMON_H

#include <stdio.h>

#include "autograd/graph.h"
#include "infer/session.h"

// A macro's value as a string literal, for usage texts:
// TS_CLI_QUOTE(TS_BEAM_DEFAULT) is "5".
#define TS_CLI_QUOTE_(x) #x
#define TS_CLI_QUOTE(x) TS_CLI_QUOTE_(x)

// --explain grad|ig (a ts_flag chooser, attend's and eval's): the enum
// ts_explain_method (models/explain.h) into *(int *)target.
int ts_cli_choose_explain(const char *command, const char *flag, const char *value, void *target);

// The session of --model for a command (infer/session.h): when model_path is NULL prints
// "CMD: --model CKPT is required (see CMD --help)" and returns TS_EXIT_USAGE;
// else, when `missing` names another required argument that is absent,
// prints "CMD: <missing> is required (see CMD --help)" likewise. Then loads
// the checkpoint into *s (a failure prints "CMD: cannot load the model: <why>", and
// "did you mean --model DIR/best.ckpt?" for a run directory, and returns
// TS_EXIT_FAIL) with beam search's width *beam (--beam: 0..TS_BEAM_MAX, then
// the width it asks for, ts_beam_width) and length penalty lp. -1 on
// success. A --length-penalty given with greedy decoding (beam 1) would change nothing:
// a warning says so, and the command goes on (a sweep over --beam 1..K with
// one --length-penalty still runs).
int ts_cli_open_session(const char *command, const char *model_path, const char *missing, ts_length_penalty lp,
                        long *beam, ts_session *s);

// When `path` is a directory holding `name` (a run directory: best.ckpt,
// last.ckpt), prints "CMD: did you mean FLAG PATH/NAME?" and returns 1; else 0.
int ts_cli_checkpoint_hint(const char *command, const char *flag, const char *path, const char *name);

// For SENTENCE arguments given without --model: when words[0] names a file or
// directory (the model, --model forgotten), prints "CMD: 'W' is a file, not a
// sentence" and the command with --model W (W/best.ckpt for a run directory)
// and the other words quoted as one sentence; returns 1. Else 0.
int ts_cli_model_hint(const char *command, const char *const *words, int n);

// For SENTENCE arguments that were meant as one (typed unquoted): prints
// "CMD: <why>; quote the sentence to give it whole:" and the command with
// words[0..n) joined and quoted for the shell. Returns TS_EXIT_USAGE.
int ts_cli_quote_hint(const char *command, const char *why, const char *const *words, int n);

// The one rule for a file a command writes: "-" is standard output where
// `stdout_ok` (text; a binary file refuses it: "CMD: <what> cannot go to
// standard output; name a file", TS_EXIT_USAGE), and an existing file is
// replaced only with --force ("CMD: 'PATH' exists; pass --force to replace
// it", TS_EXIT_FAIL). -1 when path may be written.
int ts_cli_check_output(const char *command, const char *what, const char *path, int force, int stdout_ok);

// The rest of f, NUL-terminated and malloc'd, its length in *len; NULL (no
// message: the caller names the file) with errno saying why: the read's
// error (EISDIR for a directory), ENOMEM, or EFBIG past about `limit`
// bytes. f stays open.
char *ts_cli_read_stream(FILE *f, size_t limit, size_t *len);

#endif
