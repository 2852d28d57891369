// How many threads tinyseq uses, and which work runs on how many: the one
// owner of the process's thread count. Nothing else reads
// OPENBLAS_NUM_THREADS or OMP_NUM_THREADS or calls openblas_set_num_threads.
//
// Why one owner: the bits of a result depend on how its sums were cut, and
// OpenBLAS cuts a product differently on one thread and on two. So every
// entry point (train, the decoding commands, the C API, Python) asks for the
// same policy through ts_threads_use, and a model decoded in Python gives the
// program's bits under the same settings (docs/design.md, "Same answers").
//
// The policy, once ts_threads_use(n) has run: products of fewer than
// TS_SMALL_GEMM_MNK multiply-adds on one thread, larger ones on n;
// matrix-vector products on n only when the matrix has TS_BIG_GEMV entries
// or more; the passes between products (tensor/parallel.h) in up to n parts.
// Before any call, OpenBLAS decides alone and the passes run on one thread.
#ifndef TS_THREADS_H
#define TS_THREADS_H

#include <stddef.h>

// Products of fewer multiply-adds (m n k) than this run on one thread: for
// them waking and joining the other threads costs more than it saves
// (OpenBLAS itself goes single-threaded only below 2.6e5); a GRU 64/128/32
// step's products (1.6e6) gain, 256/256/64's (1.3e7) stay threaded.
// Matrix-vector products over TS_BIG_GEMV entries or more (the output
// projection of one decoded sentence: 1.7 M at H = 256) use every thread:
// streaming the matrix is bound by one core's memory bandwidth. The
// measurements: docs/performance.md, "Measurements behind the code's
// constants".
#define TS_SMALL_GEMM_MNK 4e6
#define TS_BIG_GEMV 1e6

// The count the environment asks for: OPENBLAS_NUM_THREADS, else
// OMP_NUM_THREADS (the order OpenBLAS reads them), when set to a positive
// integer; 0 when neither is.
int ts_threads_from_environment(void);

// The threads this process may use unasked: the environment's count, else
// the cores OpenBLAS found (1 with another CBLAS). The same value on every
// call, whatever ts_threads_use or a product has set since.
int ts_threads_available(void);

// Applies the policy above with n threads (n < 1 counts as 1).
void ts_threads_use(int n);

// The n of the last ts_threads_use, 1 before the first: how many threads
// the passes between products may use.
int ts_threads_asked(void);

// Decoding (translate, attend, eval, the C API, Python): ts_threads_use of
// ts_threads_available(), unless a count was asked for already (a caller's
// --threads, or a trainer in the same process).
void ts_threads_for_decoding(void);

// Training's count before the model is built: `asked` (--threads) when > 0,
// else ts_threads_available() shared among `local_ranks` ranks on one
// machine unless the environment gave the count.
int ts_threads_for_training(long asked, int local_ranks);

// Training's count once the model is built, when neither --threads nor the
// environment gave one: one thread per TS_WORK_PER_THREAD of parameters x
// batch sentences (a step's products grow with both), at least 2 and at most
// `cores` (1 on one core). Chosen from measurements at 1-16 threads on a
// 16-core machine (docs/performance.md, "Many cores").
#define TS_WORK_PER_THREAD 4.2e7
int ts_threads_for_model(size_t parameters, long batch, int cores);

// Called by the products before each BLAS call with its multiply-adds: sets
// OpenBLAS's count to 1 or to the threads asked for, as the policy says.
// Inside a part (tensor/parallel.h) it leaves the count as it is: parts run
// side by side, and the setting is the process's.
void ts_threads_for_product(double mnk);

#endif
