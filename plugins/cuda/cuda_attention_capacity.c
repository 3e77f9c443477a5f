/* cuda_attention_capacity.c — paged attention planned once for a capacity, its batch given by each update, so that a
 * run captured in a CUDA graph replays any later batch within the capacity.
 *
 * What a per-batch plan derives from the batch is fixed here from the capacity instead: the kernels (chosen for a
 * mixed batch of max_seqs requests; never the persistent kernels, whose item counts are launch parameters tied to one
 * batch), the launches' block counts (the most prefill items and decode items any batch within the capacity makes),
 * the split chunk (from max_seqs requests of max_seq_len keys) and the workspace (the most partial states). An update
 * cuts the new batch into items with those kernels and that chunk, fills the rest of each launch's list with empty
 * items (q_first past any request: the kernels return at once) and uploads the list on its stream into the plan's
 * device copy, which the captured kernels read. The kernels read query_start_loc, seq_lens and the block table on the
 * device, as always. */
#include <stdlib.h>
#include <string.h>

#include "cuda_attention_tiles.h"
#include "plugin_error.h"
#include "plugin_softmax.h"
#include "plugin_struct.h"

#define EMPTY_Q_FIRST 0x3fffffff /* past any request's tokens */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Head groups of a tile of `rows` rows over a GQA group of G (build_tiles' cut, for the bounds). */
static int64_t head_groups(int64_t G, int64_t rows, int decode)
{
    const int64_t n = ceil_div(G, rows);
    const int64_t hc = G <= rows ? G : decode && rows > DECODE_ROWS ? ceil_div(G, n) : rows;
    return ceil_div(G, hc);
}

/* The capacity into p->cap: the runtime passes it resolved (no zero defaults) and checked against the tensors; the
 * check here only keeps the launches inside the tensors whatever the caller. */
static attnrt_status_t take_capacity(const attnrt_attention_args_t *a, const attnrt_capacity_t *c, cuda_attn_plan_t *p)
{
    const int64_t bt_rows = a->block_table->shape[0], bt_cols = a->block_table->ndim > 1 ? a->block_table->shape[1] : 0;
    const int64_t bs = a->key_cache->shape[1];
    p->cap.max_seqs = c->max_seqs;
    p->cap.max_blocks = c->max_blocks_per_seq;
    p->cap.max_tokens = c->max_tokens;
    p->cap.max_seq_len = c->max_seq_len;
    if (p->cap.max_seqs <= 0 || p->cap.max_seqs > bt_rows || p->cap.max_blocks < 0 || p->cap.max_blocks > bt_cols ||
        p->cap.max_tokens < 0 || p->cap.max_tokens > a->query->shape[0] || p->cap.max_seq_len < 0 ||
        p->cap.max_seq_len > p->cap.max_blocks * bs)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention capacity plan: capacity (%lld requests, %lld "
                           "tokens, %lld blocks, %lld keys a request) does not fit the tensors' shapes",
                           (long long)p->cap.max_seqs, (long long)p->cap.max_tokens, (long long)p->cap.max_blocks,
                           (long long)p->cap.max_seq_len);
    return ATTNRT_OK;
}

/* The batch the kernels are chosen for: max_seqs requests of one token and max_seq_len keys each (the split model's
 * worst case); the choice itself is told the batch may mix in prefill (all_decode 0). */
static attnrt_status_t worst_batch(const cuda_attn_plan_t *p, int32_t **qsl, int32_t **sl, attnrt_batch_host_t *b)
{
    const int64_t n = p->cap.max_seqs;
    *qsl = malloc((size_t)(n + 1) * sizeof **qsl);
    *sl = malloc((size_t)n * sizeof **sl);
    if (!*qsl || !*sl) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda paged attention capacity plan: out of memory");
    for (int64_t i = 0; i <= n; i++) (*qsl)[i] = (int32_t)(i < p->cap.max_tokens ? i : p->cap.max_tokens);
    for (int64_t i = 0; i < n; i++) (*sl)[i] = (int32_t)(p->cap.max_seq_len > 0x7fffffff ? 0x7fffffff : p->cap.max_seq_len);
    memset(b, 0, sizeof *b);
    b->struct_size = sizeof *b;
    b->num_seqs = (int32_t)n;
    b->query_start_loc = *qsl;
    b->seq_lens = *sl;
    return ATTNRT_OK;
}

/* Kernels, split chunk, launches and workspace for the capacity (p->cap resolved). */
static attnrt_status_t plan_for_capacity(cuda_dev_t *d, const attnrt_attention_args_t *a, cuda_attn_plan_t *p)
{
    const int64_t Hkv = p->num_kv_heads, G = p->num_q_heads / p->num_kv_heads;
    int32_t *qsl = NULL, *sl = NULL;
    attnrt_batch_host_t worst;
    attnrt_status_t st = worst_batch(p, &qsl, &sl, &worst);
    cuda_select_t s;
    if (st == ATTNRT_OK) {
        cuda_select_init(d, a, &worst, &s);
        s.all_decode = 0; /* any batch within the capacity may hold prefill tokens */
        s.prefill = cuda_kernel_select(d, CK_ROLE_PREFILL, &s);
        p->mma = s.prefill != CK_K_SIMT;
    }
    if (st != ATTNRT_OK || !p->mma) { /* the SIMT kernel reads everything on the device: nothing to plan */
        free(qsl);
        free(sl);
        return st;
    }
    p->fp8 = s.fp8;
    p->f_prefill = cuda_kernel_fn(d, s.prefill, &s);
    p->smem_prefill = cuda_kernel_smem(d, s.prefill, &s);
    p->prefill_threads = cuda_kernel_threads(s.prefill, &s);
    cuda_attn_use_ws(d, p, &s, -1);
    p->cap.prefill_rows = cuda_kernel_table[s.prefill].rows;
    s.decode = cuda_kernel_select(d, CK_ROLE_DECODE, &s);
    if (s.decode < 0 || s.decode == CK_K_DECODE_WS) { /* all_decode 0 rules the persistent decode out; none: SIMT */
        free(qsl);
        free(sl);
        p->mma = 0;
        return ATTNRT_OK;
    }
    cuda_attn_use_decode(d, p, &s, s.decode);

    /* the split model over the worst batch's decode tiles, then the decode kernel's split-dependent form */
    row_tile_t *tiles = NULL;
    size_t n_tiles = 0;
    st = cuda_attn_build_tiles(a, &worst, Hkv, G, p->cap.prefill_rows, cuda_kernel_table[s.decode].rows, &tiles, &n_tiles);
    free(qsl);
    free(sl);
    if (st != ATTNRT_OK) return st;
    const int64_t dec_rows = cuda_kernel_table[s.decode].rows; /* the tiles' rows (a split form keeps them) */
    st = cuda_attn_plan_split(d, p, &s, tiles, n_tiles);
    free(tiles);
    if (st != ATTNRT_OK) return st;
    p->cap.dec_rows = dec_rows;
    p->cap.chunk = s.chunk > 0 ? s.chunk : 1;
    p->part_rows = (int)p->cap.dec_rows;

    /* The launches: the most items a batch within the capacity makes. Decode tiles: one a (request, KV head, head
     * group), each in at most max_splits key splits. Prefill tiles: a request of L tokens makes ceil(L / tokens a
     * tile) a (KV head, head group), so all of them at most max_tokens / tokens a tile + max_seqs. */
    const int64_t max_ns_raw = ceil_div(ceil_div(p->cap.max_seq_len, DECODE_BN), p->cap.chunk);
    const int64_t max_ns = max_ns_raw < 1 ? 1 : max_ns_raw > CK_MAX_SPLITS ? CK_MAX_SPLITS : max_ns_raw;
    const int64_t dec_tile_cap = p->cap.max_seqs * Hkv * head_groups(G, p->cap.dec_rows, 1);
    const int64_t pf_hc = G <= p->cap.prefill_rows ? G : p->cap.prefill_rows, pf_tpt = p->cap.prefill_rows / pf_hc;
    const int64_t pf_cap = Hkv * head_groups(G, p->cap.prefill_rows, 0) * (p->cap.max_tokens / pf_tpt + p->cap.max_seqs);
    const int64_t dec_cap = dec_tile_cap * max_ns;
    if (pf_cap + dec_cap > 0x7fffffff)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda paged attention capacity plan: %lld work items for the capacity are "
                           "too many for one launch", (long long)(pf_cap + dec_cap));
    p->n_prefill = (uint32_t)pf_cap;
    p->n_decode = (uint32_t)dec_cap;
    p->max_splits = (int)max_ns;
    p->cap.max_parts = max_ns > 1 ? dec_cap * (p->part_rows / DECODE_ROWS) : 0;
    p->num_parts = p->cap.max_parts;
    p->list_bytes = (size_t)(pf_cap + dec_cap) * sizeof(ck_work_item_t);
    p->off_part_o = align_up((size_t)p->num_parts * DECODE_ROWS * sizeof(float));
    p->off_count = p->num_parts == 0 ? 0
                   : align_up(p->off_part_o + (size_t)p->num_parts * DECODE_ROWS * (size_t)p->head_dim_v * sizeof(float));
    p->count_bytes = (size_t)p->num_parts * sizeof(uint32_t);
    p->workspace_bytes = p->count_bytes ? p->off_count + p->count_bytes : 0;
    return ATTNRT_OK;
}

static void empty_items(ck_work_item_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++) w[i] = (ck_work_item_t){0, 0, EMPTY_Q_FIRST, 0, 1, 0, 1, -1};
}

attnrt_status_t cuda_attention_plan_capacity(cuda_dev_t *d, const attnrt_attention_args_t *args_in,
                                             const attnrt_capacity_t *cap_in, void **plan_out, size_t *workspace_bytes)
{
    attnrt_attention_args_t a;
    attnrt_capacity_t cap;
    if (!args_in || !cap_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention capacity plan: args, capacity and both outputs "
                           "are required");
    PLUGIN_COPY_IN(a, args_in);
    PLUGIN_COPY_IN(cap, cap_in);
    if (!a.query || !a.key_cache || !a.value_cache || !a.out || !a.block_table || !a.seq_lens || !a.query_start_loc)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention capacity plan: a required tensor is NULL");
    attnrt_status_t st = cuda_attn_check_supported(&a);
    if (st != ATTNRT_OK) return st;
    const int64_t Hq = a.query->shape[1], Hkv = a.key_cache->shape[2];
    if (Hkv <= 0 || Hq % Hkv != 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention capacity plan: %lld query heads over %lld KV heads",
                           (long long)Hq, (long long)Hkv);
    cuda_attn_plan_t *p = calloc(1, sizeof *p);
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda paged attention capacity plan: out of memory");
    p->dev = d;
    p->cap.on = 1;
    p->num_tokens = a.query->shape[0];
    p->num_seqs = a.seq_lens->shape[0];
    p->num_q_heads = Hq;
    p->num_kv_heads = Hkv;
    p->head_dim_qk = a.query->shape[2];
    p->head_dim_v = a.value_cache->shape[3];
    p->cap.causal = a.causal;
    p->cap.window_left = a.sliding_window_left;
    p->cap.window_right = a.sliding_window_right;
    st = take_capacity(&a, &cap, p);
    if (st == ATTNRT_OK) st = plan_for_capacity(d, &a, p);
    if (st == ATTNRT_OK && p->mma) { /* every item empty until the first update */
        const size_t n = p->list_bytes / sizeof(ck_work_item_t);
        p->cap.host = malloc(p->list_bytes ? p->list_bytes : 1);
        if (!p->cap.host) st = plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda paged attention capacity plan: out of memory");
        else {
            empty_items(p->cap.host, n);
            st = cuda_upload(&p->list_dev, p->cap.host, p->list_bytes, "cuda paged attention capacity plan: the work list");
        }
    }
    if (st != ATTNRT_OK) {
        cuda_attention_plan_destroy(d, p);
        return st;
    }
    *plan_out = p;
    *workspace_bytes = p->workspace_bytes;
    return ATTNRT_OK;
}

/* The batch's items with the capacity's kernels and chunk into p->cap.host: prefill items from the start, decode items
 * from n_prefill, each part padded with empty items. */
static attnrt_status_t build_list(cuda_attn_plan_t *p, const attnrt_batch_host_t *batch)
{
    attnrt_attention_args_t opts;
    memset(&opts, 0, sizeof opts);
    opts.causal = p->cap.causal;
    opts.sliding_window_left = p->cap.window_left;
    opts.sliding_window_right = p->cap.window_right;
    const int64_t Hkv = p->num_kv_heads, G = p->num_q_heads / p->num_kv_heads;
    row_tile_t *tiles = NULL;
    size_t n_tiles = 0;
    attnrt_status_t st = cuda_attn_build_tiles(&opts, batch, Hkv, G, p->cap.prefill_rows, p->cap.dec_rows, &tiles, &n_tiles);
    if (st != ATTNRT_OK) return st;
    size_t n_pre = 0, n_dec = 0;
    int64_t parts = 0;
    for (size_t i = 0; i < n_tiles; i++) {
        row_tile_t *rt = &tiles[i];
        if (rt->cfg == CFG_PREFILL) {
            n_pre++;
            continue;
        }
        int64_t ns = ceil_div(ceil_div(rt->keys, DECODE_BN), p->cap.chunk);
        ns = ns < 1 ? 1 : ns > p->max_splits ? p->max_splits : ns;
        rt->w.num_splits = (int32_t)ns;
        if (ns > 1) {
            rt->w.part_index = (int32_t)parts;
            parts += ns * (p->part_rows / DECODE_ROWS);
            rt->cost = rt->cost / ns + 1;
        }
        n_dec += (size_t)ns;
    }
    if (n_pre > p->n_prefill || n_dec > p->n_decode || parts > p->cap.max_parts) {
        free(tiles);
        return plugin_fail(ATTNRT_ERR_INTERNAL, "cuda paged attention update: the batch makes %zu prefill / %zu decode items "
                           "and %lld partial states, past the capacity plan's %u / %u / %lld",
                           n_pre, n_dec, (long long)parts, p->n_prefill, p->n_decode, (long long)p->cap.max_parts);
    }
    if (n_tiles > 1) qsort(tiles, n_tiles, sizeof *tiles, cuda_attn_by_cost_desc);
    ck_work_item_t *pre = p->cap.host, *dec = p->cap.host + p->n_prefill;
    for (size_t i = 0; i < n_tiles; i++) {
        const row_tile_t *rt = &tiles[i];
        if (rt->cfg == CFG_PREFILL) {
            *pre++ = rt->w;
            continue;
        }
        for (int32_t sp = 0; sp < rt->w.num_splits; sp++) {
            *dec = rt->w;
            dec->split = sp;
            dec++;
        }
    }
    free(tiles);
    empty_items(pre, (size_t)(p->cap.host + p->n_prefill - pre));
    empty_items(dec, (size_t)(p->cap.host + p->n_prefill + p->n_decode - dec));
    return ATTNRT_OK;
}

attnrt_status_t cuda_attention_plan_update(cuda_dev_t *d, void *plan, const attnrt_batch_host_t *batch_in, void *stream)
{
    cuda_attn_plan_t *p = plan;
    attnrt_batch_host_t batch;
    if (!p || p->dev != d || !p->cap.on)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention update: not a capacity plan of this device");
    if (!batch_in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention update: batch is NULL");
    PLUGIN_COPY_IN(batch, batch_in);
    if (batch.num_seqs < 0 || batch.num_seqs > p->cap.max_seqs ||
        (batch.num_seqs > 0 && (!batch.query_start_loc || !batch.seq_lens)))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention update: %d requests (capacity %lld) or no "
                           "query_start_loc / seq_lens", batch.num_seqs, (long long)p->cap.max_seqs);
    if (!p->mma) return ATTNRT_OK; /* the SIMT kernel reads the batch on the device */
    attnrt_status_t st = cuda_enter(d);
    if (st == ATTNRT_OK) st = build_list(p, &batch);
    if (st != ATTNRT_OK) return st;
    /* from pageable memory: the driver has taken the bytes when the call returns, so the next update may rewrite them */
    const CUresult r = cuda_drv.MemcpyHtoDAsync(p->list_dev, p->cap.host, p->list_bytes, cuda_stream_of(stream));
    if (r != CUDA_SUCCESS)
        return cuda_fail(r, "cuda paged attention update: cuMemcpyHtoDAsync (%zu bytes of work list)", p->list_bytes);
    return cuda_finish(stream, "cuda paged attention update");
}
