/* cpu_merge.c — n-way merge of partial attention states (o_i, lse_i), docs/semantics.md "Merging
 * partial states": the rows (plugin_merge_row) spread over the pool, at least MIN_ROWS_PER_ITEM
 * (token, head) rows a work item. Each row is built in full before it is written, so out may be one
 * of the states (an in-place merge), and its lse likewise. */
#include "cpu_ops.h"
#include "plugin_args.h"
#include "plugin_softmax.h"

#define MIN_ROWS_PER_ITEM 64 /* (token, head) rows per work item at the least */

typedef struct merge_job {
    const attnrt_merge_args_t *a;
    int64_t T, H, D;
    int64_t rows_per_item;
} merge_job_t;

static void merge_item(void *ctx, size_t item, unsigned worker)
{
    (void)worker;
    const merge_job_t *job = ctx;
    const int64_t rows = job->T * job->H;
    const int64_t r0 = (int64_t)item * job->rows_per_item;
    const int64_t r1 = r0 + job->rows_per_item < rows ? r0 + job->rows_per_item : rows;
    for (int64_t r = r0; r < r1; r++) plugin_merge_row(job->a, r / job->H, r % job->H, job->D);
}

attnrt_status_t cpu_merge_states(cpu_pool_t *pool, const attnrt_merge_args_t *in)
{
    attnrt_merge_args_t a;
    attnrt_status_t st = plugin_merge_open("cpu", in, &a);
    if (st != ATTNRT_OK) return st;

    merge_job_t job = {&a, a.out->shape[0], a.out->shape[1], a.out->shape[2], 0};
    const int64_t rows = job.T * job.H;
    if (rows <= 0) return ATTNRT_OK;
    const int64_t threads = (int64_t)cpu_pool_size(pool);
    int64_t per_item = (rows + 4 * threads - 1) / (4 * threads);
    if (per_item < MIN_ROWS_PER_ITEM) per_item = MIN_ROWS_PER_ITEM;
    job.rows_per_item = per_item;
    cpu_parallel_for(pool, (size_t)((rows + per_item - 1) / per_item), merge_item, &job);
    return ATTNRT_OK;
}
