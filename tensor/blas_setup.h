// The BLAS kernels and threads tinyseq runs on, chosen once at start-up.
//
// OpenBLAS picks its kernels from the CPU's family and model, in its library
// constructor, before main() runs. 0.3.21 does not know newer CPUs (Intel
// family 6 model 207, Emerald Rapids) and falls back to its generic SSE3
// "Prescott" kernels there, far slower than the AVX-512 ones the CPU
// supports (docs/performance.md). It reads OPENBLAS_CORETYPE (to force a kernel family) and
// OPENBLAS_THREAD_TIMEOUT (how long an idle worker spins before it sleeps)
// in that constructor only, so the only clean way to set them from the
// program is to set them and run the program again: ts_blas_rerun_plan says
// what to set, and the program's main() (cli/'s ts_cli_blas_init) sets it
// and runs itself again, once, when the CPU's feature bits (CPUID)
// say OpenBLAS chose worse kernels than the CPU supports, or when
// OPENBLAS_THREAD_TIMEOUT is unset. A variable the user set always wins:
// with both set, nothing runs again. A C program linking tinyseq gets the
// same speed by calling ts_cli_blas_init(argc, argv) first thing in main()
// (before it reads stdin or starts a thread).
#ifndef TS_BLAS_SETUP_H
#define TS_BLAS_SETUP_H

#include <stdbool.h>

// What the CPU and the OS support (CPUID leaves 1 and 7, XGETBV).
typedef struct {
    bool avx, fma, avx2;
    bool avx512f, avx512bw, avx512dq, avx512vl;
    bool os_ymm, os_zmm;  // XCR0: the OS saves the YMM / ZMM registers
} ts_cpu_features;

// Kernel levels, lowest first.
typedef enum { TS_CPU_SSE = 0, TS_CPU_AVX, TS_CPU_AVX2, TS_CPU_AVX512 } ts_cpu_level;

// This CPU's features (all false off x86-64).
ts_cpu_features ts_cpu_features_detect(void);

// The best level the features allow: AVX-512 needs F, BW, DQ and VL and the
// OS's ZMM state; AVX2 needs FMA and the YMM state.
ts_cpu_level ts_cpu_level_of(const ts_cpu_features *f);

// "AVX-512", "AVX2", "AVX" or "SSE".
const char *ts_cpu_level_name(ts_cpu_level level);

// The OpenBLAS core to force on a CPU of `level` when OpenBLAS chose
// `openblas_core` on its own ("SkylakeX" for AVX-512, "Haswell" for AVX2,
// "Sandybridge" for AVX), or NULL to keep its choice: it is at the CPU's
// level already, or a name this table does not know (a newer core).
const char *ts_blas_core_for(ts_cpu_level level, const char *openblas_core);

// What running the program again would set: OPENBLAS_CORETYPE to core when
// the user did not set it and ts_blas_core_for names a better core than
// OpenBLAS's, OPENBLAS_THREAD_TIMEOUT to timeout ("20": idle workers sleep
// after 2^20 TSC ticks, ~0.4 ms, instead of 2^28) when the user did not, and
// the marker variable that stops a second run.
typedef struct {
    const char *core;         // or NULL
    const char *timeout;      // or NULL
    const char *marker_name;  // NULL when there is nothing to set
    char marker[160];
} ts_blas_rerun;

// Decides the kernels and the idle-thread timeout from CPUID and the
// environment (the library never runs the program again itself: main does,
// cli/main.c's ts_cli_blas_init): 1 when *plan names variables to set and
// the program should run again with them, 0 when it carries on as it is. In
// the re-run (the marker set) it notes what was set for ts_blas_kernels and
// removes it from the environment, so a child sees what the user set.
//
// Test-only: TS_BLAS_PRETEND_CORE=NAME makes it act as if OpenBLAS had
// chosen NAME (say Prescott), so a test sees the re-run on any machine.
int ts_blas_rerun_plan(ts_blas_rerun *plan);

// After running again failed with errno err: the variables plan set removed,
// and the reason noted in ts_blas_kernels; the program carries on with
// OpenBLAS's kernels.
void ts_blas_rerun_failed(const ts_blas_rerun *plan, int err);

// The kernels in use and why, for --version and the first line of train:
// "SkylakeX, chosen from CPUID (AVX-512; OpenBLAS picked Prescott)",
// "Haswell, set by OPENBLAS_CORETYPE", "Cooperlake, OpenBLAS's own choice",
// or "gslcblas" with another CBLAS. Valid for the life of the program.
const char *ts_blas_kernels(void);

// Why the kernels in use matter, for train's banner: NULL when they are at
// the CPU's level (or a core the table does not know, or another CBLAS),
// else what is wrong and what fixes it: "Prescott's kernels are below this
// CPU's AVX2: training runs 2.5-3.1x slower (docs/performance.md);
// OPENBLAS_CORETYPE=Haswell uses the CPU's". The CLI re-runs itself onto
// the CPU's kernels, so it sees one only when the user forced a lower core
// or the re-run failed; a library inside Python sees OpenBLAS's own choice.
// Valid for the life of the program.
const char *ts_blas_kernels_caveat(void);

// The spin OpenBLAS's idle threads do before they sleep, as log2 of TSC
// ticks (OpenBLAS's reading of OPENBLAS_THREAD_TIMEOUT, clamped to 4-30;
// 28 when unset), or 0 with another CBLAS.
int ts_blas_thread_timeout(void);

#endif
