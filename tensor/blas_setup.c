// Kernel choice from CPUID, the idle-thread timeout, and the one-time re-run
// that applies them (see blas_setup.h for why a re-run).
#include "tensor/blas_setup.h"

#include "tensor/kernels.h"
#include "tensor/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

// The marker of the re-run: its value is the core OpenBLAS chose first.
#define TS_REEXEC_VAR "TS_BLAS_REEXEC"
#define TS_PRETEND_VAR "TS_BLAS_PRETEND_CORE"

// Idle OpenBLAS workers spin (sched_yield) for 2^N TSC ticks after their
// last task before they sleep; 0.3.21's default N is 28, ~0.1 s, so during
// training they never sleep and take a core the main thread's single-threaded
// passes (Adam, softmax, GRU gates) could share with other programs. 2^20
// ticks is ~0.4 ms at 2.5 GHz: long enough to stay awake between the matrix
// products of one step, short enough to sleep through everything else.
#define TS_THREAD_TIMEOUT "20"

ts_cpu_features ts_cpu_features_detect(void) {
    ts_cpu_features f = {0};
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    f.fma = c >> 12 & 1;
    f.avx = c >> 28 & 1;
    bool osxsave = c >> 27 & 1;
    if (osxsave) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        f.os_ymm = (lo & 0x6) == 0x6;    // SSE and AVX state
        f.os_zmm = (lo & 0xe6) == 0xe6;  // and opmask, ZMM0-15 high, ZMM16-31
    }
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f.avx2 = b >> 5 & 1;
        f.avx512f = b >> 16 & 1;
        f.avx512dq = b >> 17 & 1;
        f.avx512bw = b >> 30 & 1;
        f.avx512vl = b >> 31 & 1;
    }
#endif
    return f;
}

ts_cpu_level ts_cpu_level_of(const ts_cpu_features *f) {
    if (!f->avx || !f->os_ymm) return TS_CPU_SSE;
    if (!f->avx2 || !f->fma) return TS_CPU_AVX;
    if (f->avx512f && f->avx512bw && f->avx512dq && f->avx512vl && f->os_zmm) return TS_CPU_AVX512;
    return TS_CPU_AVX2;
}

const char *ts_cpu_level_name(ts_cpu_level level) {
    static const char *names[] = {"SSE", "AVX", "AVX2", "AVX-512"};
    return level >= TS_CPU_SSE && level <= TS_CPU_AVX512 ? names[level] : "?";
}

// OpenBLAS 0.3.21's x86-64 core names (openblas_get_corename) by the
// instructions their kernels use.
static const struct {
    const char *name;
    ts_cpu_level level;
} known_cores[] = {
    {"Katmai", TS_CPU_SSE},       {"Coppermine", TS_CPU_SSE},    {"Northwood", TS_CPU_SSE},
    {"Prescott", TS_CPU_SSE},     {"Banias", TS_CPU_SSE},        {"Atom", TS_CPU_SSE},
    {"Core2", TS_CPU_SSE},        {"Penryn", TS_CPU_SSE},        {"Dunnington", TS_CPU_SSE},
    {"Nehalem", TS_CPU_SSE},      {"Athlon", TS_CPU_SSE},        {"Opteron", TS_CPU_SSE},
    {"Opteron_SSE3", TS_CPU_SSE}, {"Opteron(SSE3)", TS_CPU_SSE}, {"Barcelona", TS_CPU_SSE},
    {"Nano", TS_CPU_SSE},         {"Bobcat", TS_CPU_SSE},        {"Sandybridge", TS_CPU_AVX},
    {"Bulldozer", TS_CPU_AVX},    {"Piledriver", TS_CPU_AVX},    {"Steamroller", TS_CPU_AVX},
    {"Haswell", TS_CPU_AVX2},     {"Zen", TS_CPU_AVX2},          {"Excavator", TS_CPU_AVX2},
    {"SkylakeX", TS_CPU_AVX512},  {"Cooperlake", TS_CPU_AVX512}, {"SapphireRapids", TS_CPU_AVX512},
};

const char *ts_blas_core_for(ts_cpu_level level, const char *openblas_core) {
    static const char *best[] = {[TS_CPU_AVX] = "Sandybridge", [TS_CPU_AVX2] = "Haswell", [TS_CPU_AVX512] = "SkylakeX"};
    if (!openblas_core || level <= TS_CPU_SSE || level > TS_CPU_AVX512) return NULL;
    for (size_t i = 0; i < sizeof known_cores / sizeof known_cores[0]; i++)
        if (!strcasecmp(openblas_core, known_cores[i].name))
            return known_cores[i].level < level ? best[level] : NULL;
    return NULL;  // a core this table does not know: newer than 0.3.21's list
}

static char kernels[160];

// The marker's value: "PICKED" (only the timeout was set) or "PICKED>FORCED",
// then ";timeout" when we set OPENBLAS_THREAD_TIMEOUT.
static void after_rerun(const char *core, const char *marker) {
    char picked[64];
    snprintf(picked, sizeof picked, "%.*s", (int)strcspn(marker, ">;"), marker);
    int forced = strchr(marker, '>') != NULL;
    ts_cpu_features f = ts_cpu_features_detect();
    if (forced)
        snprintf(kernels, sizeof kernels, "%s, chosen from CPUID (%s; OpenBLAS picked %s)", core,
                 ts_cpu_level_name(ts_cpu_level_of(&f)), picked);
    else if (getenv("OPENBLAS_CORETYPE")) snprintf(kernels, sizeof kernels, "%s, set by OPENBLAS_CORETYPE", core);
    else snprintf(kernels, sizeof kernels, "%s, OpenBLAS's own choice", core);
    // Give the user's environment back: a child sees what the user set.
    if (forced) unsetenv("OPENBLAS_CORETYPE");
    if (strstr(marker, ";timeout")) unsetenv("OPENBLAS_THREAD_TIMEOUT");
    unsetenv(TS_REEXEC_VAR);
}

int ts_blas_rerun_plan(ts_blas_rerun *plan) {
    memset(plan, 0, sizeof *plan);
#ifdef TS_HAVE_OPENBLAS
    const char *core = ts_blas_core_name();
    const char *marker = getenv(TS_REEXEC_VAR);
    if (marker) {  // the re-run
        after_rerun(core, marker);
        return 0;
    }
    const char *user_core = getenv("OPENBLAS_CORETYPE"), *user_timeout = getenv("OPENBLAS_THREAD_TIMEOUT");
    const char *picked = core;
    if (user_core && *user_core) {
        snprintf(kernels, sizeof kernels, "%s, set by OPENBLAS_CORETYPE", core);
    } else {
        const char *pretend = getenv(TS_PRETEND_VAR);
        if (pretend && *pretend) picked = pretend;
        ts_cpu_features f = ts_cpu_features_detect();
        plan->core = ts_blas_core_for(ts_cpu_level_of(&f), picked);
        snprintf(kernels, sizeof kernels, "%s, OpenBLAS's own choice", core);
    }
    plan->timeout = !user_timeout || !*user_timeout ? TS_THREAD_TIMEOUT : NULL;
    if (!plan->core && !plan->timeout) return 0;
    plan->marker_name = TS_REEXEC_VAR;
    snprintf(plan->marker, sizeof plan->marker, "%s%s%s%s", picked, plan->core ? ">" : "", plan->core ? plan->core : "",
             plan->timeout ? ";timeout" : "");
    return 1;
#else
    snprintf(kernels, sizeof kernels, "%s", ts_blas_name());
    return 0;
#endif
}

void ts_blas_rerun_failed(const ts_blas_rerun *plan, int err) {
    if (plan->core) unsetenv("OPENBLAS_CORETYPE");
    if (plan->timeout) unsetenv("OPENBLAS_THREAD_TIMEOUT");
    if (plan->marker_name) unsetenv(plan->marker_name);
    size_t used = strlen(kernels);
    snprintf(kernels + used, sizeof kernels - used, " (running again failed: %s)", strerror(err));
}

#ifdef TS_HAVE_OPENBLAS
int openblas_thread_timeout(void);  // exported by OpenBLAS, no header
#endif

int ts_blas_thread_timeout(void) {
#ifdef TS_HAVE_OPENBLAS
    int n = openblas_thread_timeout();  // 0 when unset
    return n <= 0 ? 28 : n < 4 ? 4 : n > 30 ? 30 : n;
#else
    return 0;
#endif
}

const char *ts_blas_kernels_caveat(void) {
#ifdef TS_HAVE_OPENBLAS
    static char caveat[256];
    ts_cpu_features f = ts_cpu_features_detect();
    ts_cpu_level level = ts_cpu_level_of(&f);
    const char *core = ts_blas_core_name(), *better = ts_blas_core_for(level, core);
    if (!better) return NULL;
    int prescott = !strcasecmp(core, "Prescott");  // the one measured (docs/performance.md)
    snprintf(caveat, sizeof caveat, "%s's kernels are below this CPU's %s: training runs %s; OPENBLAS_CORETYPE=%s uses the CPU's",
             core, ts_cpu_level_name(level),
             prescott ? "2.5-3.1x slower (docs/performance.md)" : "slower (Prescott's: 2.5-3.1x, docs/performance.md)",
             better);
    return caveat;
#else
    return NULL;
#endif
}

const char *ts_blas_kernels(void) {
    if (!kernels[0]) {  // ts_blas_rerun_plan was not called
#ifdef TS_HAVE_OPENBLAS
        snprintf(kernels, sizeof kernels, "%s, %s", ts_blas_core_name(),
                 getenv("OPENBLAS_CORETYPE") ? "set by OPENBLAS_CORETYPE" : "OpenBLAS's own choice");
#else
        snprintf(kernels, sizeof kernels, "%s", ts_blas_name());
#endif
    }
    return kernels;
}
