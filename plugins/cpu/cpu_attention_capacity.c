/* cpu_attention_capacity.c — capacity plans: one plan serves every batch within a capacity. Its storage
 * (work items, split records, the passes' arrays) and its workspace (the split-KV partial states) are
 * sized at plan time for the worst batch the capacity admits; each update cuts the new batch into work
 * items exactly as a per-batch plan of it would (cpu_attention_plan.c), into that storage, allocating
 * nothing. Runs are cpu_attention_run's. */
#include <stdlib.h>
#include <string.h>

#include "cpu_attention_plan.h"
#include "cpu_ops.h"
#include "plugin_error.h"
#include "plugin_struct.h"
#include "plugin_tensor.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The split bounds of a capacity, from the policy (cpu_attn_decide). A request is split into
 * ns = ceil(x) parts, x = max_cost / share, where share > total_cost / (8 x threads) and the max_costs of
 * a batch's requests sum to at most total_cost: so the x of a batch sum to less than 8 x threads. A split
 * request has x > 1, hence fewer than 8 x threads of them, ns - 1 < x parts added each (fewer than
 * 8 x threads in all), ns < 2x parts (fewer than 16 x threads in all) of at most CPU_ATTN_MAX_SPLIT_QLEN
 * rows each; and ns <= ceil(max_seq_len / CPU_ATTN_MIN_SPLIT_KEYS). The bounds below are those, and the
 * policy never reaches them, so a capacity plan cuts every batch as a per-batch plan does (cpu_attn_decide
 * enforces them all the same, against rounding). */
static void capacity_bounds(cpu_attn_policy_t *pol, int64_t max_seqs, int64_t max_tokens, int64_t max_seq_len)
{
    const int64_t t8 = 8 * (int64_t)pol->threads;
    int64_t n = min64(CPU_ATTN_MAX_SPLITS, t8);
    n = min64(n, (max_seq_len + CPU_ATTN_MIN_SPLIT_KEYS - 1) / CPU_ATTN_MIN_SPLIT_KEYS);
    if (pol->threads <= 1 || n < 2) {
        pol->max_splits = 1;
        pol->max_split_rows = pol->max_split_items = 0;
        return;
    }
    pol->max_splits = (int32_t)n;
    const int64_t requests = min64(max_seqs, max_tokens); /* that have tokens */
    /* partial-state rows: sum of ns x L over split requests, each L <= CPU_ATTN_MAX_SPLIT_QLEN */
    const int64_t rows = min64(2 * t8 * CPU_ATTN_MAX_SPLIT_QLEN, n * min64(max_tokens, CPU_ATTN_MAX_SPLIT_QLEN * max_seqs));
    pol->max_split_rows = plugin_size_mul((size_t)rows, (size_t)pol->num_q_heads);
    /* items splits add: (ns - 1) x the items of one split of a request of <= CPU_ATTN_MAX_SPLIT_QLEN tokens */
    const int64_t tiles = (CPU_ATTN_MAX_SPLIT_QLEN + pol->tile - 1) / pol->tile;
    pol->max_split_items = plugin_size_mul(plugin_size_mul((size_t)min64(t8, (n - 1) * requests), (size_t)tiles),
                                           plugin_size_mul((size_t)pol->num_kv_heads, (size_t)pol->head_chunks));
}

attnrt_status_t cpu_attention_plan_capacity(cpu_pool_t *pool, const attnrt_attention_args_t *args_in,
                                            const attnrt_capacity_t *capacity_in, void **plan_out,
                                            size_t *workspace_bytes)
{
    if (!args_in || !capacity_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention capacity plan: args, capacity, plan and "
                           "workspace_bytes are required");
    attnrt_attention_args_t a;
    attnrt_capacity_t cap;
    PLUGIN_COPY_IN(a, args_in);
    PLUGIN_COPY_IN(cap, capacity_in);
    cpu_attn_policy_t pol;
    attnrt_status_t st = cpu_attn_policy_make(pool, &a, "paged attention capacity plan", &pol);
    if (st != ATTNRT_OK) return st;
    if (!a.seq_lens || a.seq_lens->ndim != 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention capacity plan: seq_lens [max_seqs] is required");
    const int64_t T = a.query->shape[0], B = a.seq_lens->shape[0];
    /* The runtime passes the capacity resolved (no zero defaults) and checked against the tensors. */
    if (cap.max_seqs < 0 || cap.max_seqs > B || cap.max_tokens < 0 || cap.max_tokens > T || cap.max_seq_len < 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention capacity plan: capacity (max_seqs %d, "
                           "max_tokens %lld, max_seq_len %lld) outside the tensors (%lld requests, %lld tokens)",
                           cap.max_seqs, (long long)cap.max_tokens, (long long)cap.max_seq_len, (long long)B,
                           (long long)T);
    const int64_t max_seqs = cap.max_seqs, max_tokens = cap.max_tokens;
    capacity_bounds(&pol, max_seqs, max_tokens, cap.max_seq_len);

    /* The worst batch: a request of L tokens makes ceil(L / tile) token tiles, so a batch has at most
     * min(max_seqs, max_tokens) + max_tokens / tile of them, each Hkv x head_chunks items unsplit; splits
     * add at most max_split_items, and need at most max_split_rows partial states. */
    const size_t part_rows = pol.max_split_rows;
    const size_t tiles = (size_t)(min64(max_seqs, max_tokens) + max_tokens / pol.tile);
    const size_t items_cap = plugin_size_add(
        plugin_size_mul(tiles, plugin_size_mul((size_t)pol.num_kv_heads, (size_t)pol.head_chunks)), pol.max_split_items);
    const size_t ws_bytes = plugin_size_mul(plugin_size_mul(part_rows, (size_t)a.value_cache->shape[3] + 2), sizeof(float));
    if (ws_bytes == SIZE_MAX || items_cap == SIZE_MAX || part_rows > INT64_MAX)
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu paged attention capacity plan: %zu work items and %zu split-KV "
                           "partial rows for the capacity do not fit in memory", items_cap, part_rows);

    cpu_attn_plan_t *p = cpu_attn_plan_alloc(pool, &pol, &a);
    if (p) {
        if (items_cap) {
            p->items = malloc(plugin_size_mul(items_cap, sizeof *p->items));
            p->cap_sort = malloc(plugin_size_mul(items_cap, sizeof *p->cap_sort));
        }
        if (max_seqs) {
            p->cap_nsplit = calloc((size_t)max_seqs, sizeof *p->cap_nsplit);
            p->cap_max_cost = calloc((size_t)max_seqs, sizeof *p->cap_max_cost);
            if (pol.max_splits > 1) {
                p->splits = calloc((size_t)max_seqs, sizeof *p->splits);
                p->merge_seqs = calloc((size_t)max_seqs, sizeof *p->merge_seqs);
            }
        }
    }
    if (!p || (items_cap && (!p->items || !p->cap_sort)) || (max_seqs && (!p->cap_nsplit || !p->cap_max_cost)) ||
        (max_seqs && pol.max_splits > 1 && (!p->splits || !p->merge_seqs))) {
        cpu_attention_plan_destroy(p);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu paged attention capacity plan: out of memory for %zu work "
                           "items", items_cap);
    }
    p->is_capacity = 1;
    p->max_seqs = max_seqs;
    p->items_cap = items_cap;
    p->num_seqs = B; /* runs take the capacity's tensors */
    p->part_rows = (int64_t)part_rows;
    p->workspace_bytes = ws_bytes;
    *plan_out = p;
    *workspace_bytes = ws_bytes;
    return ATTNRT_OK;
}

attnrt_status_t cpu_attention_plan_update(cpu_pool_t *pool, void *plan, const attnrt_batch_host_t *batch_in)
{
    cpu_attn_plan_t *p = plan;
    if (!p || p->pool != pool || !p->is_capacity)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention update: the plan is NULL, of another "
                           "device, or not a capacity plan");
    if (!batch_in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention update: batch is NULL");
    attnrt_batch_host_t batch;
    PLUGIN_COPY_IN(batch, batch_in);
    const int64_t B = batch.num_seqs;
    if (B < 0 || B > p->max_seqs)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention update: num_seqs = %lld outside the "
                           "capacity's [0, %lld]", (long long)B, (long long)p->max_seqs);
    if (B > 0 && (!batch.query_start_loc || !batch.seq_lens))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention update: the host batch has no "
                           "query_start_loc or seq_lens");
    /* Pass 1 into the plan's own arrays (runs never read them), then the checks, then pass 2: a refused
     * batch leaves the plan's items as they were. */
    size_t n_items, n_split, part_rows;
    cpu_attn_decide(&p->policy, &batch, B, p->num_tokens, p->cap_nsplit, p->cap_max_cost, &n_items, &n_split,
                    &part_rows);
    if (n_items > p->items_cap || part_rows > (size_t)p->part_rows || (n_split && !p->splits))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention update: the batch needs %zu work items "
                           "and %zu split-KV partial rows, the capacity plan holds %zu and %lld: the batch exceeds "
                           "the capacity", n_items, part_rows, p->items_cap, (long long)p->part_rows);
    cpu_attn_fill(p, &batch, B, p->num_tokens, p->cap_nsplit, p->cap_sort, n_items);
    return ATTNRT_OK;
}
