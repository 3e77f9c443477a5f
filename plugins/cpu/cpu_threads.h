/* cpu_threads.h — the persistent worker pool of one opened cpu device.
 *
 * A pool has `size` participants: size - 1 worker threads created with the pool, plus the thread that
 * calls cpu_parallel_for, which joins the work as participant 0. Items are handed out one at a time
 * from a shared counter, so uneven items balance themselves.
 *
 * Threads: cpu_parallel_for holds the pool's mutex for the whole call, so calls on one pool (one
 * device) from several threads run one after another, each with every core; pools of different
 * devices are independent. Because of that lock, per-participant scratch indexed by `worker` is
 * private to the call for its whole duration.
 *
 * No oversubscription: every pool of the process draws its helpers from one budget of as many running
 * participants as this process has cores (its affinity mask), so two devices opened by an engine's two
 * threads share the cores instead of running twice as many threads as there are; a call that finds the
 * budget spent runs on fewer participants (the caller always takes part).
 *
 * The pool is also the device's execution context: it holds the SIMD kernel table chosen when it was
 * created (cpu_simd_select: cpuid, or ATTNRT_CPU_ISA).
 */
#ifndef ATTNRT_CPU_THREADS_H
#define ATTNRT_CPU_THREADS_H

#include <stddef.h>

#include "attnrt_plugin.h"
#include "cpu_simd.h"

typedef struct cpu_pool cpu_pool_t;

/* Runs item `item` of a parallel_for on participant `worker` (< cpu_pool_size). */
typedef void (*cpu_task_fn)(void *ctx, size_t item, unsigned worker);

/* Participants a new pool gets: ATTNRT_NUM_THREADS (1..1024) when set and valid, else the cores this
 * process may run on. */
unsigned cpu_pool_default_size(void);
/* Creates a pool of `size` participants (>= 1) and chooses its kernels. When a thread cannot be created
 * the pool keeps the ones it has (size shrinks); failing to allocate the pool, and ATTNRT_CPU_ISA
 * naming an ISA the CPU lacks, are errors. *pool owned by the caller until cpu_pool_destroy. */
attnrt_status_t cpu_pool_create(unsigned size, cpu_pool_t **pool);
/* Stops and joins the workers and frees the pool; NULL is a no-op. No call may be in flight. */
void cpu_pool_destroy(cpu_pool_t *pool);
/* Number of participants, fixed for the pool's life. */
unsigned cpu_pool_size(const cpu_pool_t *pool);
/* The kernel table chosen for this pool's device; never NULL. */
const cpu_simd_t *cpu_pool_simd(const cpu_pool_t *pool);
/* Calls fn(ctx, i, worker) once for every i < n_items across the participants, returns when all are
 * done. `ctx` is borrowed for the call. */
void cpu_parallel_for(cpu_pool_t *pool, size_t n_items, cpu_task_fn fn, void *ctx);

#endif
