// The data-parallel group (train/dist.h). The MPI calls are compiled only
// with TS_HAVE_MPI; without it every rank is a group of one.
#include "train/dist.h"

#include "tensor/status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TS_HAVE_MPI
#include <mpi.h>
#endif

int ts_dist_compiled(void) {
#ifdef TS_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

static long env_long(const char *name) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : -1;
}

int ts_dist_launched_size(void) {
    long n = env_long("OMPI_COMM_WORLD_SIZE");
    if (n < 1) n = env_long("PMI_SIZE");
    if (n < 1) n = env_long("PMIX_RANK") > 0 ? 2 : 1;
    return n > 1 ? (int)(n < 1 << 20 ? n : 1 << 20) : 1;
}

static int launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int ts_dist_init(ts_dist *d, int *argc, char ***argv) {
    memset(d, 0, sizeof *d);
    d->size = d->local_size = 1;
    int n = ts_dist_launched_size();
#ifdef TS_HAVE_MPI
    if (!launched()) return TS_OK;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return ts_fail(TS_ERR_IO, "MPI_Init failed");
    d->started = 1;
    // Errors come back as codes (turned into messages here), not as an abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    long local = env_long("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (local < 1) local = env_long("MPI_LOCALNRANKS");
    d->local_size = local >= 1 && local <= d->size ? (int)local : 1;
    (void)n;
    return TS_OK;
#else
    (void)argc, (void)argv, (void)launched;
    long rank = env_long("OMPI_COMM_WORLD_RANK");
    if (rank < 0) rank = env_long("PMI_RANK");
    if (rank < 0) rank = env_long("PMIX_RANK");
    d->quiet = rank > 0;  // one message for the job, from its first rank
    if (n > 1)
        return ts_fail(TS_ERR_ARG,
                       "this build of tinyseq has no MPI, and mpirun started it as one of %d ranks (each would train "
                       "alone, into the same --out); install Open MPI (libopenmpi-dev) and rebuild "
                       "(cmake -DTS_MPI=ON), or run it without mpirun",
                       n);
    return TS_OK;
#endif
}

void ts_dist_finalize(ts_dist *d) {
#ifdef TS_HAVE_MPI
    if (d->started) MPI_Finalize();
#endif
    d->started = 0;
}

void ts_dist_abort(ts_dist *d, int status) {
#ifdef TS_HAVE_MPI
    if (d->started && d->size > 1) MPI_Abort(MPI_COMM_WORLD, status);
#else
    (void)d, (void)status;
#endif
}

#ifdef TS_HAVE_MPI
static int mpi_failed(int code, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", code);
    return ts_fail(TS_ERR_IO, "%s failed: %s", what, text);
}
#endif

int ts_dist_allreduce_sum(ts_dist *d, double *buf, size_t n) {
    if (d->size <= 1) return TS_OK;
#ifdef TS_HAVE_MPI
    if (n > INT32_MAX) return ts_fail(TS_ERR_ARG, "allreduce of %zu values: more than MPI's int count", n);
    double t0 = MPI_Wtime();
    int code = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    d->allreduce_seconds += MPI_Wtime() - t0;
    d->allreduce_calls++;
    d->allreduce_bytes = n * sizeof *buf;
    return code == MPI_SUCCESS ? TS_OK : mpi_failed(code, "MPI_Allreduce of the gradients");
#else
    (void)buf, (void)n;
    return TS_OK;
#endif
}

int ts_dist_broadcast(ts_dist *d, double *buf, int n) {
    if (d->size <= 1) return TS_OK;
#ifdef TS_HAVE_MPI
    int code = MPI_Bcast(buf, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return code == MPI_SUCCESS ? TS_OK : mpi_failed(code, "MPI_Bcast");
#else
    (void)buf, (void)n;
    return TS_OK;
#endif
}

int ts_dist_max(ts_dist *d, long *value) {
    if (d->size <= 1) return TS_OK;
#ifdef TS_HAVE_MPI
    int code = MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    return code == MPI_SUCCESS ? TS_OK : mpi_failed(code, "MPI_Allreduce");
#else
    (void)value;
    return TS_OK;
#endif
}

// ---- the same configuration everywhere ------------------------------------

// FNV-1a, 64 bits.
static uint64_t hash_bytes(uint64_t h, const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#define HASH_START 14695981039346656037ull

// The hash of this program's own bytes (0 when /proc/self/exe cannot be read:
// then only the options are compared).
static uint64_t binary_hash(void) {
    FILE *f = fopen("/proc/self/exe", "rb");
    if (!f) return 0;
    uint64_t h = HASH_START;
    unsigned char chunk[1 << 16];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) h = hash_bytes(h, chunk, got);
    fclose(f);
    return h;
}

#ifdef TS_HAVE_MPI
// 1 when every rank holds the same hashes h[0..n): one allreduce of MAX over
// h and its complement (the max of ~h is ~ the min of h). *first is the
// first index that differs.
static int same_everywhere(const uint64_t *h, int n, int *first, int *rc) {
    uint64_t *both = malloc(2 * (size_t)n * sizeof *both);
    if (!both) {
        *rc = ts_fail(TS_ERR_NOMEM, "no memory for the configuration check");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        both[i] = h[i];
        both[n + i] = ~h[i];
    }
    int code = MPI_Allreduce(MPI_IN_PLACE, both, 2 * n, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    *rc = code == MPI_SUCCESS ? TS_OK : mpi_failed(code, "MPI_Allreduce of the configuration");
    *first = -1;
    for (int i = 0; !*rc && i < n && *first < 0; i++)
        if (both[i] != ~both[n + i]) *first = i;
    free(both);
    return !*rc && *first < 0;
}
#endif

int ts_dist_check_same(ts_dist *d, const char *const *what, const char *const *values, int n) {
    if (d->size <= 1) return TS_OK;
#ifdef TS_HAVE_MPI
    // The binary first: only the same binary builds the same list of options.
    uint64_t exe = binary_hash();
    int first, rc;
    if (!same_everywhere(&exe, 1, &first, &rc)) {
        if (rc) return rc;
        d->agreed_failure = 1;
        d->quiet = d->rank != 0;
        return ts_fail(TS_ERR_ARG, "the %d ranks run different tinyseq binaries (/proc/self/exe differs): every rank "
                                   "needs the same build", d->size);
    }
    uint64_t *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
    if (!h) return ts_fail(TS_ERR_NOMEM, "no memory for the configuration check");
    for (int i = 0; i < n; i++) h[i] = hash_bytes(HASH_START, values[i], strlen(values[i]));
    int same = same_everywhere(h, n, &first, &rc);
    free(h);
    if (same || rc) return rc;
    d->agreed_failure = 1;
    d->quiet = d->rank != 0;
    return ts_fail(TS_ERR_ARG, "the ranks were started with different %s (rank 0: %s): every rank needs the same flags",
                   what[first], values[first]);
#else
    (void)what, (void)values, (void)n, (void)binary_hash;
    return TS_OK;
#endif
}

int ts_dist_agree(ts_dist *d, int rc) {
    if (d->size <= 1) return rc;
    long first = rc ? 2L * (d->size - d->rank) + (rc == TS_ERR_ARG) : 0;  // the lowest failed rank wins
    int mpi = ts_dist_max(d, &first);
    if (mpi) return mpi;
    if (!first) return TS_OK;
    d->agreed_failure = 1;
    int rank = d->size - (int)(first / 2);
    d->quiet = d->rank != rank;
    return rc ? rc : ts_fail(first % 2 ? TS_ERR_ARG : TS_ERR_IO, "rank %d failed to start", rank);
}
