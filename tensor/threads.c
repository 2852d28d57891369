// The process's thread count and the policy over it (tensor/threads.h).
#include "tensor/threads.h"

#include "tensor/parallel.h"

#include <math.h>
#include <stdlib.h>

#ifdef TS_HAVE_OPENBLAS
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
#endif

static int asked;          // the n of the last ts_threads_use (0: never called)
static int blas_now;       // OpenBLAS's count as this module last set it
static int available;      // ts_threads_available's answer, fixed at its first call

int ts_threads_from_environment(void) {
    static const char *const names[] = {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v) continue;
        char *end;
        long n = strtol(v, &end, 10);
        if (*end == '\0' && n > 0) return n > 1024 ? 1024 : (int)n;
    }
    return 0;
}

int ts_threads_available(void) {
    if (!available) {
#ifdef TS_HAVE_OPENBLAS
        // Read before this module first sets a count: after that, OpenBLAS's
        // count is whatever the last product needed.
        available = asked ? asked : openblas_get_num_threads();
#endif
        if (available < 1) available = 1;
    }
    return available;
}

void ts_threads_use(int n) {
    if (n < 1) n = 1;
    ts_threads_available();  // fixed now, before the count changes
#ifdef TS_HAVE_OPENBLAS
    openblas_set_num_threads(n);
#endif
    asked = blas_now = n;
    ts_parallel_use(n);
}

int ts_threads_asked(void) { return asked > 1 ? asked : 1; }

void ts_threads_for_decoding(void) {
    int n = ts_threads_available();
    if (asked != n) ts_threads_use(n);
}

int ts_threads_for_training(long asked_count, int local_ranks) {
    if (asked_count > 0) return (int)asked_count;
    int n = ts_threads_available();
    if (local_ranks > 1 && !ts_threads_from_environment()) n = n / local_ranks > 1 ? n / local_ranks : 1;
    return n;
}

int ts_threads_for_model(size_t parameters, long batch, int cores) {
    double wanted = round((double)parameters * (double)(batch > 0 ? batch : 1) / TS_WORK_PER_THREAD);
    if (wanted < 2) wanted = 2;
    if (wanted > cores) wanted = cores;
    return wanted < 1 ? 1 : (int)wanted;
}

void ts_threads_for_product(double mnk) {
#ifdef TS_HAVE_OPENBLAS
    if (asked <= 1 || ts_parallel_in_part()) return;
    int want = mnk < TS_SMALL_GEMM_MNK ? 1 : asked;
    if (want != blas_now) {
        openblas_set_num_threads(want);
        blas_now = want;
    }
#else
    (void)mnk;
#endif
}
