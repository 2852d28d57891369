// A checkpoint cut short while a command reads it through its mapping
// (issue 38: `cp other.ckpt best.ckpt` as translate waited for input killed
// it with SIGBUS, status 135, no word): the command says which file changed
// and exits 1. A checkpoint replaced by rename (as tinyseq saves, and as mv
// does) leaves the mapped file whole: the command goes on.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *dir;

static void setup(void) {
    dir = test_tmpdir();
    char *out;
    int rc = test_runf(&out, "'%s' train --toy-pairs 300 --emb 8 --hidden 8 --epochs 1 --show 0 --beam 1 --threads 1 "
                             "--out %s/run", TS_PROGRAM, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static void teardown(void) {
    test_runf(NULL, "rm -rf '%s'", dir);
    free(dir);
}

TestSuite(cli_mapped, .init = setup, .fini = teardown);

// Starts translate on m.ckpt reading a fifo, waits until the file is mapped,
// runs `change` (a shell command in the directory), then gives translate a
// line; prints translate's status and output. Returns the script's output.
static char *translate_while(const char *change) {
    char *out;
    int rc = test_runf(&out,
                       "cd %s && cp run/best.ckpt m.ckpt && cp run/last.ckpt other.ckpt && mkfifo in && "
                       "{ '%s' translate --model m.ckpt < in > out.txt 2> err.txt & pid=$!; exec 3> in; "
                       "for i in $(seq 1200); do grep -q m.ckpt /proc/$pid/maps 2>/dev/null && break; sleep 0.1; done; "
                       "grep -q m.ckpt /proc/$pid/maps || echo 'never mapped'; %s; echo 'the cat .' >&3; exec 3>&-; "
                       "wait $pid; echo \"exit $?\"; cat out.txt err.txt; }",
                       dir, TS_PROGRAM, change);
    cr_assert_eq(rc, 0, "%s", out);
    return out;
}

Test(cli_mapped, a_checkpoint_cut_short_while_mapped_is_named_and_exits_1, .timeout = 180) {
    char *out = translate_while(": > m.ckpt");
    cr_assert_null(strstr(out, "never mapped"), "%s", out);
    cr_assert(strstr(out, "exit 1\n"), "not exit 1: %s", out);
    char says[4200];
    snprintf(says, sizeof says, "'%s/m.ckpt' changed while in use", dir);
    cr_assert(strstr(out, says), "the message does not name the file: %s", out);
    free(out);
}

Test(cli_mapped, a_checkpoint_replaced_by_rename_leaves_the_command_running, .timeout = 180) {
    char *out = translate_while("mv other.ckpt m.ckpt");
    cr_assert(strstr(out, "exit 0\n"), "not exit 0: %s", out);
    free(out);
}
