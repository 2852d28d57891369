// The tinyseq program: one file per subcommand (cli/cmd_<name>.c), each an
// `int ts_cmd_<name>(int argc, char **argv)` that returns the process exit
// status: 0 success, 1 failure at run time (bad file, failed save), 2 usage
// error (unknown flag, bad value). main() hands it its own argv + 1: argv[0]
// is the subcommand's name; the program as it was started (which train's
// "continue with:" hint repeats) is ts_cli_program.
#ifndef TS_CLI_H
#define TS_CLI_H

#include <stdio.h>

enum { TS_EXIT_OK = 0, TS_EXIT_FAIL = 1, TS_EXIT_USAGE = 2 };

// The program as the user started it (main's argv[0]); main() sets it before
// running a subcommand, and it stays "tinyseq" for a caller that does not.
extern const char *ts_cli_program;

int ts_cmd_train(int argc, char **argv);
int ts_cmd_translate(int argc, char **argv);
int ts_cmd_attend(int argc, char **argv);
int ts_cmd_eval(int argc, char **argv);
int ts_cmd_gradcheck(int argc, char **argv);
int ts_cmd_corpus(int argc, char **argv);
int ts_cmd_info(int argc, char **argv);
int ts_cmd_export(int argc, char **argv);
int ts_cmd_import(int argc, char **argv);
int ts_cmd_average(int argc, char **argv);
int ts_cmd_report(int argc, char **argv);

// ---- argument parsing shared by the subcommands ------------------------
// Each subcommand describes its flags in one table and hands it, with argv,
// to ts_cli_parse: flags are "--name" (a switch) or "--name VALUE" (also
// "--name=VALUE"); anything not starting with "--" is positional. The
// parser keeps no state of its own between calls.

typedef enum {
    TS_FLAG_SWITCH,  // no value; sets *(int *)target = 1; "--name=VALUE" is a usage error
    TS_FLAG_INT,     // *(long *)target, a whole number in [lo, hi]
    TS_FLAG_DOUBLE,  // *(double *)target, a finite number in [lo, hi]
    TS_FLAG_STRING,  // *(const char **)target = the value (argv outlives the parse)
    TS_FLAG_CHOICE,  // choose(command, flag, value, target): -1 when taken, else an exit status after a message
} ts_flag_kind;

typedef struct {
    const char *name;  // "hidden" for --hidden; a name starting with '-' ("-o") is matched as it is spelled
    ts_flag_kind kind;
    void *target;
    double lo, hi;     // TS_FLAG_INT, TS_FLAG_DOUBLE
    int (*choose)(const char *command, const char *flag, const char *value, void *target);  // TS_FLAG_CHOICE
    int *given;        // optional: set to 1 when the flag is seen (before its value is read)
} ts_flag;

// Rows of a table, one line per flag.
#define TS_SWITCH(name, target) {(name), TS_FLAG_SWITCH, (target), 0, 0, NULL, NULL}
#define TS_INT(name, target, lo, hi) {(name), TS_FLAG_INT, (target), (lo), (hi), NULL, NULL}
#define TS_DOUBLE(name, target, lo, hi) {(name), TS_FLAG_DOUBLE, (target), (lo), (hi), NULL, NULL}
#define TS_STRING(name, target) {(name), TS_FLAG_STRING, (target), 0, 0, NULL, NULL}
#define TS_CHOICE(name, target, choose) {(name), TS_FLAG_CHOICE, (target), 0, 0, (choose), NULL}

typedef struct {
    const char *command;   // for messages: "tinyseq train"
    const char *usage;     // what --help prints on stdout (or help(stdout) when usage is NULL)
    void (*help)(FILE *out);
    const ts_flag *flags;
    size_t n_flags;
    // Each positional argument in turn: -1 when taken, else an exit status
    // after a message. NULL: "unexpected argument 'X' (see CMD --help)".
    int (*positional)(void *context, const char *command, const char *arg);
    void *context;
} ts_cli_spec;

// Parses argv[1..argc) against spec, in order: the first problem is reported
// ("--flag needs a value", "--flag expects a whole number, got 'x'", "--flag
// must be between ...", "--flag is a switch and takes no value, got
// '--flag=x'", "unknown option --flag (see CMD --help)") and ends the parse.
// --help prints the usage. Returns -1 when every argument was taken, else
// the exit status: TS_EXIT_OK after --help, TS_EXIT_USAGE after a usage
// error, or what a choose/positional callback returned.
int ts_cli_parse(const ts_cli_spec *spec, int argc, char **argv);

// Parse a flag's value with full checking (the whole string must be a number
// inside [lo, hi]). On failure they print a message naming the flag and the
// value and return -1; on success 0.
int ts_parse_int(const char *command, const char *flag, const char *text,
                 long lo, long hi, long *out);
int ts_parse_double(const char *command, const char *flag, const char *text,
                    double lo, double hi, double *out);

// The entry a mistyped word[0..n) most likely meant among the names
// name_of(table, 0..count) (NULL names skipped): the only one it is the
// start of (3 letters or more), else the nearest within a few edits (fewer
// for short words; a swap of two neighbours is one); -1 when none is near.
// The "did you mean" of unknown flags and of unknown commands.
int ts_cli_nearest(const char *word, size_t n, const char *(*name_of)(const void *table, size_t i), const void *table,
                   size_t count);

// Prints "tinyseq X: <message>" to stderr, with the library's last error
// appended when `with_lib_error` is set.
void ts_cli_error(const char *command, int with_lib_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
