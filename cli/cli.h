// The tinyseq program: one file per subcommand (cli/cmd_<name>.c), each an
// `int ts_cmd_<name>(int argc, char **argv)` that returns the process exit
// status: 0 success, 1 failure at run time (bad file, failed save), 2 usage
// error (unknown flag, bad value). argv[0] is the subcommand's name.
#ifndef TS_CLI_H
#define TS_CLI_H

#include <stdio.h>

enum { TS_EXIT_OK = 0, TS_EXIT_FAIL = 1, TS_EXIT_USAGE = 2 };

int ts_cmd_train(int argc, char **argv);
int ts_cmd_translate(int argc, char **argv);
int ts_cmd_attend(int argc, char **argv);
int ts_cmd_eval(int argc, char **argv);
int ts_cmd_gradcheck(int argc, char **argv);
int ts_cmd_corpus(int argc, char **argv);
int ts_cmd_info(int argc, char **argv);
int ts_cmd_export(int argc, char **argv);
int ts_cmd_import(int argc, char **argv);

// ---- argument parsing shared by the subcommands ------------------------
// A minimal long-option parser: flags are "--name" or "--name VALUE" (also
// "--name=VALUE"); anything not starting with "--" is positional.

typedef struct {
    int argc;
    char **argv;
    int index;            // next argument to read
    const char *command;  // for messages: "tinyseq train"
} ts_args;

void ts_args_init(ts_args *a, int argc, char **argv, const char *command);

// Advances to the next argument. Returns 1 and sets *flag to the option name
// (without "--") or to NULL for a positional argument (then *value is it);
// returns 0 at the end. An inline "--name=value" is split: its value is kept
// for the next ts_args_value().
int ts_args_next(ts_args *a, const char **flag, const char **value);

// The value of the current flag; prints "tinyseq X: --flag needs a value" and
// returns NULL when there is none.
const char *ts_args_value(ts_args *a, const char *flag);

// For a switch (a flag without a value): 0, or -1 after printing
// "tinyseq X: --flag is a switch and takes no value" when it came as
// "--flag=value".
int ts_args_switch(ts_args *a, const char *flag);

// Parse a flag's value with full checking (the whole string must be a number
// inside [lo, hi]). On failure they print a message naming the flag and the
// value and return -1; on success 0.
int ts_parse_int(const char *command, const char *flag, const char *text,
                 long lo, long hi, long *out);
int ts_parse_double(const char *command, const char *flag, const char *text,
                    double lo, double hi, double *out);

// Prints "tinyseq X: unknown option --flag (see tinyseq X --help)" to stderr
// and returns TS_EXIT_USAGE.
int ts_unknown_flag(const char *command, const char *flag);

// Prints "tinyseq X: <message>" to stderr, with the library's last error
// appended when `with_lib_error` is set.
void ts_cli_error(const char *command, int with_lib_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
