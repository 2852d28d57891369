// The BLAS kernels chosen from CPUID (tensor/blas_setup.c): the rule as a
// pure function, with the machine (OpenBLAS picked Prescott on an
// AVX-512 CPU), and the program's one re-run seen through --version.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/blas_setup.h"
#include "testutil.h"

static const ts_cpu_features avx512 = {.avx = true, .fma = true, .avx2 = true, .avx512f = true, .avx512bw = true,
                                       .avx512dq = true, .avx512vl = true, .os_ymm = true, .os_zmm = true};

Test(blas_setup, levels_come_from_features_and_the_os_state) {
    cr_assert_eq(ts_cpu_level_of(&avx512), TS_CPU_AVX512);
    ts_cpu_features f = avx512;
    f.os_zmm = false;  // the OS does not save ZMM: AVX-512 is unusable
    cr_assert_eq(ts_cpu_level_of(&f), TS_CPU_AVX2);
    f = avx512;
    f.avx512bw = false;  // OpenBLAS's SkylakeX kernels need F, BW, DQ and VL
    cr_assert_eq(ts_cpu_level_of(&f), TS_CPU_AVX2);
    f.fma = false;
    cr_assert_eq(ts_cpu_level_of(&f), TS_CPU_AVX);
    f.os_ymm = false;
    cr_assert_eq(ts_cpu_level_of(&f), TS_CPU_SSE);
    cr_assert_eq(ts_cpu_level_of(&(ts_cpu_features){0}), TS_CPU_SSE);
}

Test(blas_setup, a_core_below_the_cpu_is_replaced_and_a_good_one_kept) {
    // The Xeon (family 6 model 207): OpenBLAS 0.3.21 picks Prescott.
    cr_assert_str_eq(ts_blas_core_for(TS_CPU_AVX512, "Prescott"), "SkylakeX");
    cr_assert_str_eq(ts_blas_core_for(TS_CPU_AVX512, "Haswell"), "SkylakeX");
    cr_assert_str_eq(ts_blas_core_for(TS_CPU_AVX2, "Nehalem"), "Haswell");
    cr_assert_str_eq(ts_blas_core_for(TS_CPU_AVX, "Core2"), "Sandybridge");
    cr_assert_str_eq(ts_blas_core_for(TS_CPU_AVX2, "prescott"), "Haswell", "names compare without case");
    // OpenBLAS's own choice at the CPU's level is kept (this EPYC: Cooperlake).
    cr_assert_null(ts_blas_core_for(TS_CPU_AVX512, "Cooperlake"));
    cr_assert_null(ts_blas_core_for(TS_CPU_AVX512, "SkylakeX"));
    cr_assert_null(ts_blas_core_for(TS_CPU_AVX2, "Zen"));
    cr_assert_null(ts_blas_core_for(TS_CPU_AVX2, "SkylakeX"), "never a core above the CPU");
    cr_assert_null(ts_blas_core_for(TS_CPU_SSE, "Prescott"));
    cr_assert_null(ts_blas_core_for(TS_CPU_AVX512, "GraniteRapids"), "an unknown (newer) core is kept");
    cr_assert_null(ts_blas_core_for(TS_CPU_AVX512, NULL));
}

// What this machine's CPU makes of OpenBLAS picking Prescott.
static const char *expected_for_prescott(void) {
    ts_cpu_features f = ts_cpu_features_detect();
    return ts_blas_core_for(ts_cpu_level_of(&f), "Prescott");
}

Test(blas_setup, the_program_runs_again_on_the_cpus_best_kernels) {
    char cmd[1024], *out, want[160];
    snprintf(cmd, sizeof cmd, "env -u OPENBLAS_CORETYPE TS_BLAS_PRETEND_CORE=Prescott %s --version", TS_PROGRAM);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    const char *best = expected_for_prescott();
    if (best) snprintf(want, sizeof want, "kernels: %s, chosen from CPUID (", best);
    else snprintf(want, sizeof want, "OpenBLAS's own choice");  // an SSE-only CPU: nothing better
    cr_assert(strstr(out, want), "expected '%s' in:\n%s", want, out);
    if (best) cr_assert(strstr(out, "; OpenBLAS picked Prescott)"), "%s", out);
    free(out);
}

Test(blas_setup, a_coretype_the_user_set_wins) {
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "OPENBLAS_CORETYPE=Prescott TS_BLAS_PRETEND_CORE=Prescott %s --version", TS_PROGRAM);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "kernels: Prescott, set by OPENBLAS_CORETYPE"), "%s", out);
    free(out);
}

// The number of execve calls of `tinyseq --version` under env settings `vars`
// (1: the shell's own; 2: one re-run), or -1 without strace.
static int execs(const char *vars) {
    if (test_run("command -v strace >/dev/null", NULL) != 0) return -1;
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd,
             "env -u OPENBLAS_CORETYPE -u OPENBLAS_THREAD_TIMEOUT %s strace -f -e trace=execve -o /dev/stdout "
             "%s --version 2>/dev/null | grep -c 'execve('",
             vars, TS_PROGRAM);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    int n = atoi(out);
    free(out);
    return n;
}

Test(blas_setup, one_rerun_at_most_and_none_when_the_user_set_both) {
    if (execs("") < 0) cr_skip_test("strace is not installed");
    cr_assert_eq(execs(""), 2, "the timeout is unset: one re-run, and no more");
    cr_assert_eq(execs("TS_BLAS_PRETEND_CORE=Prescott"), 2, "kernels and timeout in the same re-run");
    cr_assert_eq(execs("OPENBLAS_THREAD_TIMEOUT=20 TS_BLAS_PRETEND_CORE=Prescott"), expected_for_prescott() ? 2 : 1);
    cr_assert_eq(execs("OPENBLAS_THREAD_TIMEOUT=20"), 1, "nothing to change: no re-run");
    cr_assert_eq(execs("OPENBLAS_THREAD_TIMEOUT=20 OPENBLAS_CORETYPE=Haswell TS_BLAS_PRETEND_CORE=Prescott"), 1);
}

Test(blas_setup, idle_threads_sleep_after_a_short_spin_unless_the_user_says) {
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "env -u OPENBLAS_THREAD_TIMEOUT %s --version", TS_PROGRAM);
    int rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "idle BLAS threads sleep after 2^20 cycles"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "OPENBLAS_THREAD_TIMEOUT=12 %s --version", TS_PROGRAM);
    rc = test_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "idle BLAS threads sleep after 2^12 cycles"), "%s", out);
    free(out);
}
