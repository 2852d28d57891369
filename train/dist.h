// The data-parallel group: the processes that train one model together
// under `mpirun -np N tinyseq train` (docs/scaling.md). Every rank holds the
// whole model and takes the same optimizer step from gradients summed over
// the group. MPI is optional at build time (TS_HAVE_MPI): without it, and
// whenever the program was not started by mpirun, the group is this process
// alone and every call below is a no-op that returns TS_OK.
//
// Only cli/ starts and ends MPI (ts_dist_init, ts_dist_finalize,
// ts_dist_abort); the trainer is handed the group (ts_train_opts.dist).
#ifndef TS_TRAIN_DIST_H
#define TS_TRAIN_DIST_H

#include <stddef.h>

typedef struct {
    int rank, size;            // this process and the group's size (0 of 1: alone)
    int local_size;            // ranks on this machine (BLAS threads are shared among them)
    int started;               // MPI_Init was called (and MPI_Finalize is due)
    // A failure every rank reached at the same point (a refused configuration,
    // a setup that failed somewhere): the ranks may finalize and exit
    // normally. Otherwise a failure is one rank's alone and the cli aborts
    // the job (the others may be waiting in a collective).
    int agreed_failure;
    int quiet;                 // this rank did not fail itself, or another rank says it: print nothing
    // Measurement (never saved): the gradient sums.
    long allreduce_calls;
    double allreduce_seconds;
    size_t allreduce_bytes;    // bytes of one call's buffer
} ts_dist;

// 1 when this build has MPI (TS_MPI=ON), else 0.
int ts_dist_compiled(void);

// How many ranks the environment says mpirun started (Open MPI's
// OMPI_COMM_WORLD_SIZE, MPICH's PMI_SIZE; PMIX_RANK > 0 means at least 2),
// or 1 when it was not started by mpirun.
int ts_dist_launched_size(void);

// Joins the group: MPI_Init when the program was started by mpirun (else a
// group of one, MPI untouched). TS_ERR_ARG when mpirun started several
// ranks and this build has no MPI (each would train alone, over the same
// files): then d->quiet is set on every rank but the first, so the job
// prints one message. TS_ERR_IO when MPI cannot start. Call before any
// thread starts.
int ts_dist_init(ts_dist *d, int *argc, char ***argv);

// Leaves the group (MPI_Finalize if it was started). Every rank must call it.
void ts_dist_finalize(ts_dist *d);

// Ends every rank of the job with exit status `status` (MPI_Abort); alone,
// does nothing and returns.
void ts_dist_abort(ts_dist *d, int status);

// buf[0..n) = its sum over the group, the same bits on every rank (one
// MPI_Allreduce; the time and bytes are counted). TS_ERR_IO on an MPI error.
int ts_dist_allreduce_sum(ts_dist *d, double *buf, size_t n);

// buf[0..n) = rank 0's values, on every rank. TS_ERR_IO on an MPI error.
int ts_dist_broadcast(ts_dist *d, double *buf, int n);

// The largest of every rank's `value` (a few small whole numbers, e.g. a
// status). TS_ERR_IO on an MPI error.
int ts_dist_max(ts_dist *d, long *value);

// Checks that every rank runs the same binary (the bytes of /proc/self/exe)
// with the same options: what[i] names option i ("--lr") and values[i] is its
// text. TS_ERR_ARG naming the binary or the first option that differs (on
// every rank, which then agree to fail).
int ts_dist_check_same(ts_dist *d, const char *const *what, const char *const *values, int n);

// Every rank's setup succeeded (rc = TS_OK everywhere), or every rank fails
// here together, so the ranks enter the loop's collectives all or none: the
// lowest rank that failed keeps its message and the others stay quiet and
// fail with its kind. Returns TS_OK or the failure.
int ts_dist_agree(ts_dist *d, int rc);

#endif
