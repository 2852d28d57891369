// tinyseq gradcheck from the command line: exit codes and the summary line.
#include <criterion/criterion.h>
#include <string.h>

#include "testutil.h"

Test(cli_gradcheck, every_attention_and_decoder_passes) {
    char *out;
    int rc = test_run(TS_PROGRAM " gradcheck --attn all --decoder all", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "gradcheck: 167 passed, 0 failed"), "%s", out);
    cr_assert(strstr(out, "decoder.attention.v.weight"), "one row per parameter tensor");
    free(out);
    rc = test_run(TS_PROGRAM " gradcheck --bidirectional --tf 0.5", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, " 0 failed"), "%s", out);
    free(out);
}

// `tinyseq gradcheck ARGS` exits 2 with a message holding fragment.
static void expect_usage_error(const char *args, const char *fragment) {
    char *out;
    int rc = test_runf(&out, "%s gradcheck %s", TS_PROGRAM, args);
    cr_assert_eq(rc, 2, "gradcheck %s: exit %d\n%s", args, rc, out);
    cr_assert(strstr(out, fragment), "gradcheck %s: %s", args, out);
    free(out);
}

Test(cli_gradcheck, the_transformer_passes_and_refuses_the_grus_flags) {
    char *out;
    int rc = test_run(TS_PROGRAM " gradcheck --arch transformer", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "gradcheck: 68 passed, 0 failed"), "8 + 30 per layer, 2 layers: %s", out);
    cr_assert(strstr(out, "transformer.decoder.layers.1.multihead_attn.in_proj_weight"), "%s", out);
    free(out);
    expect_usage_error("--arch transformer --attn dot", "--attn does not apply to --arch transformer");
    expect_usage_error("--arch transformer --tf 0.5", "--tf 0.5 must be 1");
    expect_usage_error("--arch lstm", "unknown architecture 'lstm'");
}

Test(cli_gradcheck, a_wrong_gradient_fails_the_command) {
    // With a tolerance no finite difference can meet, every row fails: the
    // exit status must say so.
    char *out;
    int rc = test_run(TS_PROGRAM " gradcheck --attn dot --decoder luong --rtol 1e-15 --atol 1e-15", &out);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "FAILED"), "%s", out);
    cr_assert(strstr(out, " 0 passed") || strstr(out, "failed"), "%s", out);
    free(out);
}

Test(cli_gradcheck, bad_flags_exit_2_with_a_message) {
    expect_usage_error("--attn foo", "unknown attention 'foo'");
    expect_usage_error("--tf 2", "--tf must be between 0 and 1");
    expect_usage_error("--nope", "unknown option --nope");
    expect_usage_error("--seed", "--seed needs a value");
}
