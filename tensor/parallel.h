// The passes between BLAS products, split over threads.
//
// OpenBLAS's threads work only inside a product; the elementwise passes
// around the products (the loss's rows of the (N, V) logits, layer norm's
// rows, the attention's per-sentence products, the optimizer's halves) ran
// on one core while the other idled. ts_parallel_run cuts such a pass into
// parts, one per thread that ts_threads_use asked for (at most the
// caller's max_parts), and runs them at once. Callers cut their work so that
// each item (a row, a column) is computed the same way in any part: the
// results are then bit-identical for every thread count.
#ifndef TS_PARALLEL_H
#define TS_PARALLEL_H

#include <stddef.h>

// A part of a pass: part `part` of `parts`, 0 <= part < parts. A part must
// not call ts_fail or touch a ts_ctx: it reports through its arg.
typedef void (*ts_part_fn)(void *arg, int part, int parts);

// Below this many elements a pass runs on one thread: waking a helper and
// waiting for it costs what a float pass over ~2^15 elements takes (a
// condition variable; starting a thread costs several times more: the
// figures are in docs/performance.md, "Measurements behind the code's
// constants").
#define TS_PARALLEL_MIN_ELEMENTS ((size_t)1 << 16)

#define TS_PARALLEL_MAX_PARTS 16  // a run's parts at most

// The parts a pass may be cut into: the threads asked for, which
// ts_threads_use (tensor/threads.h, the count's one owner) passes on here;
// 1 until then. threads.c decides and this file only runs the parts, so
// neither includes the other's header both ways.
void ts_parallel_use(int parts);

// The parts a pass of `elements` elements would be cut into: 1 below
// TS_PARALLEL_MIN_ELEMENTS, else the count ts_parallel_use was given, at
// most max_parts when max_parts > 0; at least 1.
int ts_parallel_parts(size_t elements, int max_parts);

// Calls fn(arg, part, parts) for part = 0 .. parts - 1 and returns when all
// have returned: part 0 on the calling thread, each other part on a helper
// thread, started on the first run that needs it and asleep between runs.
// When no helper can be started, when called from inside a part, or while
// another thread's run holds the helpers, every part runs on the calling
// thread in turn: the same results, later. Parts must write disjoint
// memory. parts < 1 counts as 1.
void ts_parallel_run(int parts, ts_part_fn fn, void *arg);

// 1 on a thread while it runs a part: ts_gemm then leaves OpenBLAS's
// thread count (a setting of the whole process) as it is.
int ts_parallel_in_part(void);

// [*begin, *end): part `part` of n items cut into `parts` consecutive runs
// whose lengths differ by at most one.
void ts_part_range(size_t n, int part, int parts, size_t *begin, size_t *end);

#endif
