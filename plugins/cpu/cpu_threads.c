/* cpu_threads.c — a fixed pool of workers woken per parallel_for by a generation counter, within a
 * process-wide budget of running participants (no oversubscription across pools). */
#include "cpu_threads.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "cpu_device.h"
#include "plugin_error.h"

#define CPU_POOL_MAX 1024

typedef struct cpu_worker {
    cpu_pool_t *pool;
    unsigned    index; /* participant number, 1 .. size - 1 */
    pthread_t   thread;
} cpu_worker_t;

struct cpu_pool {
    pthread_mutex_t call_lock;  /* held by one cpu_parallel_for at a time                   */
    pthread_mutex_t lock;       /* guards everything below except `next`                    */
    pthread_cond_t  wake;       /* workers: a new generation (job) or stop                  */
    pthread_cond_t  done;       /* caller: the last busy worker finished                    */
    unsigned        size;       /* participants, the caller included                        */
    cpu_worker_t   *workers;    /* size - 1 of them                                         */
    uint64_t        generation; /* bumped once per job                                      */
    int             stop;
    unsigned        busy;       /* workers still inside the current job                     */
    cpu_task_fn     fn;         /* the current job                                          */
    void           *ctx;
    size_t          n_items;
    unsigned        helpers;    /* workers that join the current job (index <= helpers)     */
    atomic_size_t   next;       /* next item to hand out                                    */
    const cpu_simd_t *simd;     /* the kernels of this device                               */
};

/* Participants running inside any pool's parallel_for, against the cores the process may use. */
static atomic_uint g_running;

/* Reserves up to `want` helpers besides the caller (who runs anyway) and returns how many it got. */
static unsigned reserve_helpers(unsigned want)
{
    static atomic_uint budget; /* a racy first store writes the same value twice: harmless */
    unsigned cores = atomic_load_explicit(&budget, memory_order_relaxed);
    if (!cores) { /* the cores, or more when ATTNRT_NUM_THREADS asks for more on purpose */
        const unsigned asked = cpu_pool_default_size();
        cores = cpu_usable_cores();
        if (asked > cores) cores = asked;
        atomic_store_explicit(&budget, cores, memory_order_relaxed);
    }
    unsigned cur = atomic_load_explicit(&g_running, memory_order_relaxed);
    for (;;) {
        unsigned free_cores = cores > cur + 1 ? cores - cur - 1 : 0;
        unsigned got = want < free_cores ? want : free_cores;
        if (atomic_compare_exchange_weak_explicit(&g_running, &cur, cur + 1 + got, memory_order_relaxed,
                                                  memory_order_relaxed))
            return got;
    }
}

unsigned cpu_pool_default_size(void)
{
    unsigned n = cpu_usable_cores();
    const char *env = secure_getenv("ATTNRT_NUM_THREADS");
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        long v = strtol(env, &end, 10);
        if (errno == 0 && end && *end == '\0' && v >= 1 && v <= CPU_POOL_MAX) n = (unsigned)v;
    }
    if (n < 1) n = 1;
    return n > CPU_POOL_MAX ? CPU_POOL_MAX : n;
}

/* Hands out items until none is left. */
static void drain(cpu_pool_t *pool, cpu_task_fn fn, void *ctx, size_t n_items, unsigned worker)
{
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&pool->next, 1, memory_order_relaxed);
        if (i >= n_items) break;
        fn(ctx, i, worker);
    }
}

static void *worker_main(void *arg)
{
    cpu_worker_t *self = arg;
    cpu_pool_t *pool = self->pool;
    uint64_t seen = 0;

    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stop && pool->generation == seen) pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stop) break;
        seen = pool->generation;
        cpu_task_fn fn = pool->fn;
        void *ctx = pool->ctx;
        size_t n_items = pool->n_items;
        const int joins = self->index <= pool->helpers;
        pthread_mutex_unlock(&pool->lock);

        if (joins) drain(pool, fn, ctx, n_items, self->index);

        pthread_mutex_lock(&pool->lock);
        if (--pool->busy == 0) pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

attnrt_status_t cpu_pool_create(unsigned size, cpu_pool_t **out)
{
    if (size < 1) size = 1;
    if (size > CPU_POOL_MAX) size = CPU_POOL_MAX;
    const cpu_simd_t *simd = NULL;
    attnrt_status_t st = cpu_simd_select(&simd, NULL);
    if (st != ATTNRT_OK) return st;
    cpu_pool_t *pool = calloc(1, sizeof *pool);
    if (!pool) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu:0: out of memory creating the thread pool");
    pool->simd = simd;
    pool->workers = size > 1 ? calloc(size - 1, sizeof *pool->workers) : NULL;
    if (size > 1 && !pool->workers) size = 1; /* run single-threaded rather than fail */
    pthread_mutex_init(&pool->call_lock, NULL);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->next, 0);

    /* Workers block every signal: the host's handlers keep running on the host's own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    unsigned made = 1;
    for (unsigned i = 1; i < size; i++) {
        cpu_worker_t *w = &pool->workers[made - 1];
        w->pool = pool;
        w->index = made;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) break; /* keep what we have */
        made++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pool->size = made;
    *out = pool;
    return ATTNRT_OK;
}

void cpu_pool_destroy(cpu_pool_t *pool)
{
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned i = 0; i + 1 < pool->size; i++) pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->call_lock);
    free(pool->workers);
    free(pool);
}

unsigned cpu_pool_size(const cpu_pool_t *pool) { return pool->size; }

const cpu_simd_t *cpu_pool_simd(const cpu_pool_t *pool) { return pool->simd; }

void cpu_parallel_for(cpu_pool_t *pool, size_t n_items, cpu_task_fn fn, void *ctx)
{
    if (n_items == 0) return;
    pthread_mutex_lock(&pool->call_lock);
    unsigned want = pool->size - 1;
    if (want > n_items - 1) want = (unsigned)(n_items - 1);
    const unsigned helpers = reserve_helpers(want);
    if (helpers == 0) { /* nothing to share, or no core free: skip the wake-up round trip */
        for (size_t i = 0; i < n_items; i++) fn(ctx, i, 0);
        atomic_fetch_sub_explicit(&g_running, 1, memory_order_relaxed);
        pthread_mutex_unlock(&pool->call_lock);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->n_items = n_items;
    pool->helpers = helpers;
    atomic_store_explicit(&pool->next, 0, memory_order_relaxed); /* published by the unlock below */
    pool->busy = pool->size - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    drain(pool, fn, ctx, n_items, 0);

    /* Wait for every worker, not just for the items: a worker may still be inside its last item,
     * and the next job must not change fn/ctx under a worker that has not read them yet. */
    pthread_mutex_lock(&pool->lock);
    while (pool->busy) pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    atomic_fetch_sub_explicit(&g_running, 1 + helpers, memory_order_relaxed);
    pthread_mutex_unlock(&pool->call_lock);
}
