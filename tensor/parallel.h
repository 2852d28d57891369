// The passes between BLAS products, split over threads.
//
// OpenBLAS's threads work only inside a product; the elementwise passes
// around the products (the loss's rows of the (N, V) logits, ...) ran on
// one core while the other idled. ts_parallel_run cuts such a pass into
// parts, one per thread that ts_blas_set_threads asked for (at most the
// caller's max_parts), and runs them at once. Callers cut their work so that
// each item (a row, a column) is computed the same way in any part: the
// results are then bit-identical for every thread count.
#ifndef TS_PARALLEL_H
#define TS_PARALLEL_H

#include <stddef.h>

// A part of a pass: part `part` of `parts`, 0 <= part < parts.
typedef void (*ts_part_fn)(void *arg, int part, int parts);

// Below this many elements a pass runs on one thread: starting a thread
// costs ~35 us here, what a float pass over ~2^17 elements takes.
#define TS_PARALLEL_MIN_ELEMENTS ((size_t)1 << 18)

// The parts a pass of `elements` elements would be cut into: 1 below
// TS_PARALLEL_MIN_ELEMENTS, else the threads asked for with
// ts_blas_set_threads, at most max_parts when max_parts > 0; at least 1.
int ts_parallel_parts(size_t elements, int max_parts);

// Calls fn(arg, part, parts) for part = 0 .. parts - 1 and returns when all
// have returned: part 0 on the calling thread, each other part on a thread
// started for it (or on the calling thread after part 0, when a thread
// cannot be started: the same results, later). Parts must write disjoint
// memory. parts < 1 counts as 1.
void ts_parallel_run(int parts, ts_part_fn fn, void *arg);

// [*begin, *end): part `part` of n items cut into `parts` consecutive runs
// whose lengths differ by at most one.
void ts_part_range(size_t n, int part, int parts, size_t *begin, size_t *end);

#endif
