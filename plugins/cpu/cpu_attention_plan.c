/* cpu_attention_plan.c — splits a batch into work items (request, query-token tile, KV head, head
 * chunk), orders them costliest first, and allocates each pool participant's scratch, so that
 * attention_run allocates nothing. */
#include <stdlib.h>
#include <string.h>

#include "cpu_attention_plan.h"
#include "cpu_ops.h"
#include "dtype_convert.h"
#include "plugin_error.h"

#define CACHE_LINE 64

static size_t align_up(size_t n) { return (n + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE; }

cpu_attn_scratch_layout_t cpu_attn_scratch_layout(int64_t head_dim_qk, int64_t head_dim_v)
{
    const size_t R = CPU_ATTN_ROWS_PER_ITEM, K = CPU_ATTN_KEY_CHUNK;
    const size_t dqk = (size_t)head_dim_qk, dv = (size_t)head_dim_v, f = sizeof(float);
    cpu_attn_scratch_layout_t l;
    size_t at = 0;
    l.q = at;   at += align_up(R * dqk * f);   /* the item's query rows, in f32            */
    l.acc = at; at += align_up(R * dv * f);    /* unnormalised outputs                      */
    l.pv = at;  at += align_up(dv * f);        /* one row's sum over the current key chunk  */
    l.k = at;   at += align_up(K * dqk * f);   /* the key chunk, dequantised                */
    l.v = at;   at += align_up(K * dv * f);
    l.s = at;   at += align_up(K * f);         /* one row's scores over the chunk           */
    l.m = at;   at += align_up(R * f);         /* running max per row                       */
    l.l = at;   at += align_up(R * f);         /* running sum per row                       */
    l.pos = at; at += align_up(K * sizeof(int64_t)); /* absolute position of each chunk key */
    l.total = align_up(at);
    return l;
}

typedef struct costed_item {
    int64_t         cost;
    size_t          order; /* ties keep request order: deterministic plans */
    cpu_attn_item_t item;
} costed_item_t;

static int by_cost_desc(const void *pa, const void *pb)
{
    const costed_item_t *a = pa, *b = pb;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* The capability check the runtime could have asked for, built from the args: plan refuses exactly
 * what op_supported refuses. */
static attnrt_status_t check_supported(const attnrt_attention_args_t *a)
{
    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = ATTNRT_OP_PAGED_ATTENTION;
    q.q_dtype = a->query->dtype;
    q.kv_dtype = a->key_cache->dtype;
    q.head_dim_qk = (uint32_t)a->query->shape[2];
    q.head_dim_v = (uint32_t)a->value_cache->shape[3];
    q.block_size = (uint32_t)a->key_cache->shape[1];
    q.num_q_heads = (uint32_t)a->query->shape[1];
    q.num_kv_heads = (uint32_t)a->key_cache->shape[2];
    char reason[256];
    if (cpu_op_check(&q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu paged attention: %s", reason);
    dc_kind_t qk = dc_kind_of(a->query->dtype), ok = dc_kind_of(a->out->dtype);
    if (ok != qk && ok != DC_F32)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu paged attention: out dtype %s is neither the query's (%s) nor f32",
                           dc_kind_name(ok), dc_kind_name(qk));
    if (dc_kind_of(a->value_cache->dtype) != dc_kind_of(a->key_cache->dtype))
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu paged attention: key cache is %s but value cache is %s",
                           dc_kind_name(dc_kind_of(a->key_cache->dtype)), dc_kind_name(dc_kind_of(a->value_cache->dtype)));
    return ATTNRT_OK;
}

attnrt_status_t cpu_attention_plan(cpu_pool_t *pool, const attnrt_attention_args_t *args_in,
                                   const attnrt_batch_host_t *batch_in, void **plan_out, size_t *workspace_bytes)
{
    attnrt_attention_args_t a;
    attnrt_batch_host_t batch;
    if (!args_in || !batch_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention plan: args, batch and both outputs are required");
    memset(&a, 0, sizeof a);
    memset(&batch, 0, sizeof batch);
    memcpy(&a, args_in, args_in->struct_size < sizeof a ? args_in->struct_size : sizeof a);
    memcpy(&batch, batch_in, batch_in->struct_size < sizeof batch ? batch_in->struct_size : sizeof batch);
    if (!a.query || !a.key_cache || !a.value_cache || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention plan: query, both caches and out are required");
    attnrt_status_t st = check_supported(&a);
    if (st != ATTNRT_OK) return st;

    const int64_t T = a.query->shape[0], Hq = a.query->shape[1], Hkv = a.key_cache->shape[2];
    const int64_t B = batch.num_seqs > 0 ? batch.num_seqs : 0;
    if (Hkv <= 0 || Hq % Hkv != 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention plan: %lld query heads over %lld KV heads",
                           (long long)Hq, (long long)Hkv);
    if (B > 0 && (!batch.query_start_loc || !batch.seq_lens))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention plan: the host batch has no query_start_loc or seq_lens");

    /* Rows of one item: a tile of tokens times a chunk of the KV head's query heads. Heads first, so a
     * K/V row serves all of its query heads at once (decode: one token, the whole group). */
    const int64_t group = Hq / Hkv;
    const int64_t heads_per_item = group < CPU_ATTN_ROWS_PER_ITEM ? group : CPU_ATTN_ROWS_PER_ITEM;
    const int64_t head_chunks = (group + heads_per_item - 1) / heads_per_item;
    const int64_t tile = CPU_ATTN_ROWS_PER_ITEM / heads_per_item;

    size_t n_items = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t L = (int64_t)batch.query_start_loc[b + 1] - batch.query_start_loc[b];
        if (L > 0) n_items += (size_t)(((L + tile - 1) / tile) * Hkv * head_chunks);
    }

    cpu_attn_plan_t *p = calloc(1, sizeof *p);
    costed_item_t *tmp = n_items ? malloc(n_items * sizeof *tmp) : NULL;
    if (p && n_items) p->items = malloc(n_items * sizeof *p->items);
    const cpu_attn_scratch_layout_t lay = cpu_attn_scratch_layout(a.query->shape[2], a.value_cache->shape[3]);
    const unsigned slices = cpu_pool_size(pool);
    if (p) p->scratch = aligned_alloc(CACHE_LINE, lay.total * slices);
    if (!p || !p->scratch || (n_items && (!tmp || !p->items))) {
        free(tmp);
        cpu_attention_plan_destroy(p);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu paged attention plan: out of memory for %zu work items", n_items);
    }

    const int64_t wl = a.window_left, wr = a.window_right;
    size_t k = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t L = (int64_t)batch.query_start_loc[b + 1] - batch.query_start_loc[b];
        const int64_t S = batch.seq_lens[b];
        for (int64_t i0 = 0; i0 < L; i0 += tile) {
            const int64_t n = L - i0 < tile ? L - i0 : tile;
            int64_t lo, hi, lo2, hi2;
            cpu_attn_key_range(S - L + i0, S, a.causal, wl, wr, &lo, &hi2);
            cpu_attn_key_range(S - L + i0 + n - 1, S, a.causal, wl, wr, &lo2, &hi);
            const int64_t keys = hi >= lo ? hi - lo + 1 : 0;
            for (int64_t h = 0; h < Hkv; h++)
                for (int64_t c = 0; c < head_chunks; c++) {
                    const int64_t hf = c * heads_per_item;
                    const int64_t hc = group - hf < heads_per_item ? group - hf : heads_per_item;
                    tmp[k].cost = n * hc * (keys + 1); /* +1: an empty row still costs its write */
                    tmp[k].order = k;
                    tmp[k].item = (cpu_attn_item_t){(int32_t)b, (int32_t)i0, (int32_t)n, (int32_t)h, (int32_t)hf, (int32_t)hc};
                    k++;
                }
        }
    }
    if (n_items > 1) qsort(tmp, n_items, sizeof *tmp, by_cost_desc);
    for (size_t i = 0; i < n_items; i++) p->items[i] = tmp[i].item;
    free(tmp);

    p->pool = pool;
    p->num_items = n_items;
    p->num_tokens = T;
    p->num_seqs = B;
    p->num_q_heads = Hq;
    p->num_kv_heads = Hkv;
    p->head_dim_qk = a.query->shape[2];
    p->head_dim_v = a.value_cache->shape[3];
    p->scratch_stride = lay.total;
    p->scratch_slices = slices;
    *plan_out = p;
    *workspace_bytes = 0; /* no split-KV yet: every item owns whole rows, scratch lives in the plan */
    return ATTNRT_OK;
}

void cpu_attention_plan_destroy(void *plan)
{
    cpu_attn_plan_t *p = plan;
    if (!p) return;
    free(p->items);
    free(p->scratch);
    free(p);
}
