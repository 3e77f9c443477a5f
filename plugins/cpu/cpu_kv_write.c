/* cpu_kv_write.c — scatters new K/V rows into the paged caches, converting (and quantising) on the way
 * (plugin_kv_write_token), tokens spread over the pool. The cache's layout (NHD or HND) is only its
 * strides; slots outside the cache are skipped, never written, whatever the slot mapping holds. */
#include "cpu_ops.h"
#include "plugin_args.h"

#define KV_MIN_ELEMS_PER_ITEM 16384 /* below this, waking another thread costs more than it saves */

typedef struct kv_job {
    plugin_kv_write_t kw;
    int64_t           tokens_per_item;
} kv_job_t;

static void kv_item(void *ctx, size_t item, unsigned worker)
{
    (void)worker;
    const kv_job_t *job = ctx;
    const int64_t t0 = (int64_t)item * job->tokens_per_item;
    const int64_t t1 = t0 + job->tokens_per_item < job->kw.num_tokens ? t0 + job->tokens_per_item : job->kw.num_tokens;
    for (int64_t t = t0; t < t1; t++) plugin_kv_write_token(&job->kw, t);
}

attnrt_status_t cpu_kv_write(cpu_pool_t *pool, const attnrt_kv_write_args_t *in)
{
    attnrt_kv_write_args_t a;
    kv_job_t job;
    attnrt_status_t st = plugin_kv_write_open("cpu", in, &a);
    if (st == ATTNRT_OK) st = plugin_kv_write_decode("cpu", &a, &job.kw);
    if (st != ATTNRT_OK) return st;
    const plugin_kv_write_t *kw = &job.kw;
    if (kw->num_tokens <= 0 || kw->num_heads <= 0 || kw->block_size <= 0) return ATTNRT_OK;

    const int64_t per_token = kw->num_heads * (kw->side[0].dim + kw->side[1].dim);
    int64_t per_item = per_token > 0 ? (KV_MIN_ELEMS_PER_ITEM + per_token - 1) / per_token : kw->num_tokens;
    const int64_t threads = (int64_t)cpu_pool_size(pool);
    const int64_t balanced = (kw->num_tokens + 4 * threads - 1) / (4 * threads);
    if (balanced > per_item) per_item = balanced; /* about four items per thread, never tiny ones */
    job.tokens_per_item = per_item;
    cpu_parallel_for(pool, (size_t)((kw->num_tokens + per_item - 1) / per_item), kv_item, &job);
    return ATTNRT_OK;
}
