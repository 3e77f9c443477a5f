/* cuda_attention_plan.c — a paged-attention plan: its kernels picked from the kernel table (cuda_kernel_table.c's
 * cuda_kernel_select) and, for the tensor-core path, the batch split into work items: row tiles of (tokens x query
 * heads of one KV head), the decode ones cut into key splits from the batch and the chip's resident blocks, so that
 * small batches of long sequences still fill it. The list is uploaded once into device memory the plan owns;
 * attention_run only points the kernels at it. */
#include <stdlib.h>
#include <string.h>

#include "cuda_attention_plan.h"
#include "cuda_attention_tiles.h"
#include "cuda_prefill_wg_cfg.h"
#include "plugin_error.h"
#include "plugin_query.h"
#include "plugin_softmax.h"
#include "plugin_struct.h"

#define MIN_CHUNK 2      /* key tiles of a split at least */
#define SPLIT_OVERHEAD 2 /* a decode block's fixed cost, in key tiles (see the split model below) */

static void key_range(int64_t pq, int64_t S, int causal, int64_t wl, int64_t wr, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = S - 1;
    if (wl >= 0 && pq - wl > a) a = pq - wl;
    if (causal && pq < b) b = pq;
    if (wr >= 0 && pq + wr < b) b = pq + wr;
    *lo = a;
    *hi = b;
}

int cuda_attn_by_cost_desc(const void *pa, const void *pb)
{
    const row_tile_t *a = pa, *b = pb;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* The prefill items (costliest first) regrouped so that those reading the same keys — one (request, KV head) — run
 * side by side, groups in the order of their costliest item and each group's items still costliest first: the blocks
 * resident at once then read a few heads' K / V from the L2 instead of as many heads as blocks from DRAM (an MHA prefill
 * of 4 x 4096 tokens reads 268 MB of K / V per pass). For the persistent kernel (MHA B4 x 4096 +13.5 %, B1 x 16384
 * +3-6 %, GQA +1-3 %; the two-blocks-a-SM kernel lost 2 % on MHA, so its items keep the plain order). Left as it is when
 * the scratch memory is not there. */
static void group_prefill_items(ck_work_item_t *items, size_t n, int64_t Hkv, int64_t num_seqs)
{
    const size_t ng = (size_t)(num_seqs * Hkv);
    int32_t *rank = ng ? malloc(ng * sizeof *rank) : NULL;
    size_t *start = ng ? calloc(ng + 1, sizeof *start) : NULL;
    ck_work_item_t *tmp = n ? malloc(n * sizeof *tmp) : NULL;
    if (rank && start && tmp) {
        for (size_t g = 0; g < ng; g++) rank[g] = -1;
        int32_t next = 0;
        for (size_t i = 0; i < n; i++) {
            const size_t g = (size_t)items[i].seq * (size_t)Hkv + (size_t)items[i].kv_head;
            if (rank[g] < 0) rank[g] = next++;
            start[rank[g] + 1]++;
        }
        for (int32_t r = 0; r < next; r++) start[r + 1] += start[r];
        for (size_t i = 0; i < n; i++)
            tmp[start[rank[(size_t)items[i].seq * (size_t)Hkv + (size_t)items[i].kv_head]]++] = items[i];
        memcpy(items, tmp, n * sizeof *tmp);
    }
    free(rank);
    free(start);
    free(tmp);
}

attnrt_status_t cuda_attn_check_supported(const attnrt_attention_args_t *a)
{
    attnrt_op_query_t q;
    plugin_attention_query(a, &q);
    char reason[256];
    if (cuda_op_check(&q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda paged attention: %s", reason);
    const int qk = cuda_ck_dtype(a->query->dtype), ok = cuda_ck_dtype(a->out->dtype);
    if (ok != qk && ok != CK_F32)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda paged attention: out dtype (code %u, %u bits) is neither the "
                           "query's nor f32", a->out->dtype.code, a->out->dtype.bits);
    if (cuda_ck_dtype(a->value_cache->dtype) != cuda_ck_dtype(a->key_cache->dtype))
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda paged attention: key and value caches differ in dtype");
    return ATTNRT_OK;
}

void cuda_attention_plan_destroy(cuda_dev_t *d, void *plan)
{
    cuda_attn_plan_t *p = plan;
    if (!p) return;
    if (p->list_dev && cuda_enter(d) == ATTNRT_OK) cuda_drv.MemFree(p->list_dev);
    free(p->cap.host);
    free(p);
}

/* Row tiles of every request, heads inner, with their key counts (host metadata). dec_rows: a decode tile's rows,
 * DECODE_ROWS or CK_DEC_WIDE_ROWS (the wide-group kernels: G > DECODE_ROWS, one token a tile). */
attnrt_status_t cuda_attn_build_tiles(const attnrt_attention_args_t *a, const attnrt_batch_host_t *batch, int64_t Hkv,
                                      int64_t G, int64_t prefill_rows, int64_t dec_rows, row_tile_t **out, size_t *count)
{
    size_t n = 0, cap = 0;
    row_tile_t *tiles = NULL;
    const int64_t wl = plugin_window_count(a->sliding_window_left), wr = plugin_window_count(a->sliding_window_right);
    for (int64_t b = 0; b < batch->num_seqs; b++) {
        const int64_t L = (int64_t)batch->query_start_loc[b + 1] - batch->query_start_loc[b];
        const int64_t S = batch->seq_lens[b];
        if (L <= 0) continue;
        /* One token of a group wider than a decode tile (MQA, GQA 16+) is decoded too: in 32-row tiles where the
         * wide-group kernels run (ceil(G / 32) head groups of equal size), else in ceil(G / 16) head groups that read
         * the same keys (the second from the L2: its splits run beside the first's). A prefill tile would read them
         * once, but without key splits (64 requests of MQA filled half the chip at 27 % of the copy ceiling) */
        const int cfg = L * G <= DECODE_ROWS || L == 1 ? CFG_DECODE : CFG_PREFILL;
        const int64_t rows = cfg == CFG_DECODE ? dec_rows : prefill_rows;
        const int64_t n_groups = (G + rows - 1) / rows; /* wide decode tiles: equal groups (48 -> 24 + 24) */
        const int64_t hc_full = G <= rows ? G : cfg == CFG_DECODE && rows > DECODE_ROWS ? (G + n_groups - 1) / n_groups : rows;
        for (int64_t h = 0; h < Hkv; h++)
            for (int64_t hf = 0; hf < G; hf += hc_full) {
                const int64_t hc = G - hf < hc_full ? G - hf : hc_full, tpt = rows / hc;
                for (int64_t i0 = 0; i0 < L; i0 += tpt) {
                    const int64_t nt = L - i0 < tpt ? L - i0 : tpt;
                    int64_t lo, hi, unused;
                    key_range(S - L + i0, S, a->causal, wl, wr, &lo, &unused);
                    key_range(S - L + i0 + nt - 1, S, a->causal, wl, wr, &unused, &hi);
                    if (n == cap) {
                        cap = cap ? 2 * cap : 256;
                        row_tile_t *grown = realloc(tiles, cap * sizeof *tiles);
                        if (!grown) {
                            free(tiles);
                            return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda paged attention plan: out of memory");
                        }
                        tiles = grown;
                    }
                    row_tile_t *t = &tiles[n];
                    memset(t, 0, sizeof *t);
                    t->w = (ck_work_item_t){(int32_t)b, (int32_t)h, (int32_t)i0, (int32_t)hf, (int32_t)hc, 0, 1, -1};
                    t->cfg = cfg;
                    t->keys = hi >= lo ? hi - lo + 1 : 0;
                    t->cost = (t->keys + 1) * nt * hc; /* +1: an empty row still costs its write */
                    t->order = n++;
                }
            }
    }
    *out = tiles;
    *count = n;
    return ATTNRT_OK;
}

/* The split chunk (key tiles a block) of the rounds model (below, in cuda_attention_plan) for the decode tiles of
 * `longest` key tiles at most on a kernel that holds `resident` blocks at once; *blocks: the decode blocks it makes */
int64_t cuda_attn_split_chunk(const row_tile_t *tiles, size_t n_tiles, int64_t longest, int64_t resident, int64_t *blocks_out)
{
    int64_t chunk_tiles = longest > MIN_CHUNK ? longest : MIN_CHUNK, best_cost = -1, prev_c = -1;
    *blocks_out = 0;
    for (int64_t cut = 1; cut <= CK_MAX_SPLITS && longest > 0; cut++) {
        int64_t c = (longest + cut - 1) / cut;
        if (c < MIN_CHUNK) c = MIN_CHUNK;
        if (c == prev_c) continue; /* the same chunk as the last cut: the same cost */
        prev_c = c;
        int64_t blocks = 0;
        for (size_t i = 0; i < n_tiles; i++)
            if (tiles[i].cfg == CFG_DECODE) {
                const int64_t kt = (tiles[i].keys + DECODE_BN - 1) / DECODE_BN;
                int64_t ns = (kt + c - 1) / c;
                blocks += ns < 1 ? 1 : ns > CK_MAX_SPLITS ? CK_MAX_SPLITS : ns;
            }
        const int64_t cost = (blocks + resident - 1) / resident * ((c < longest ? c : longest) + SPLIT_OVERHEAD);
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            chunk_tiles = c;
            *blocks_out = blocks;
        }
        if (c == MIN_CHUNK) break;
    }
    return chunk_tiles;
}


/* cuda_select_t.split_for: the plan's split model over its tiles */
int64_t cuda_attn_split_for(const cuda_select_t *s, int64_t resident, int64_t *blocks)
{
    return cuda_attn_split_chunk(s->plan_tiles, s->n_tiles, s->longest, resident, blocks);
}

/* Row r as the plan's decode kernel; a tensor-copy row keeps its fallback row for runs whose maps the driver will not
 * encode (the boxes: the caches' block size's largest power-of-two factor, at most a warp's tile) */
void cuda_attn_use_decode(const cuda_dev_t *d, cuda_attn_plan_t *p, const cuda_select_t *s, int r)
{
    p->f_decode = cuda_kernel_fn(d, r, s);
    p->smem_decode = cuda_kernel_smem(d, r, s);
    p->dec_threads = cuda_kernel_threads(r, s);
    const int fb = cuda_kernel_table[r].fallback;
    p->tma_rows = fb >= 0 ? cuda_kernel_box_rows(r, s) : 0;
    p->f_decode_plain = fb >= 0 ? cuda_kernel_fn(d, fb, s) : NULL;
    p->smem_decode_plain = fb >= 0 ? cuda_kernel_smem(d, fb, s) : 0;
    p->dec_threads_plain = fb >= 0 ? cuda_kernel_threads(fb, s) : 0;
}

/* Row r as the plan's persistent kernel (NULL where r < 0) */
void cuda_attn_use_ws(const cuda_dev_t *d, cuda_attn_plan_t *p, const cuda_select_t *s, int r)
{
    p->f_prefill_ws = r >= 0 ? cuda_kernel_fn(d, r, s) : NULL;
    p->smem_prefill_ws = r >= 0 ? cuda_kernel_smem(d, r, s) : 0;
    p->prefill_ws_threads = r >= 0 ? cuda_kernel_threads(r, s) : 0;
}

/* The split model over the plan's decode tiles into s (resident blocks, longest tile, chunk), then the decode kernel's
 * forms that depend on the split (the table's rules: 8-warp and 2-warp blocks, fp8 tiles, 256-byte fetches), which
 * may lengthen it. Returns cuda_enter's status (the residency query needs the context). */
attnrt_status_t cuda_attn_plan_split(cuda_dev_t *d, cuda_attn_plan_t *p, cuda_select_t *sel, const row_tile_t *tiles,
                                     size_t n_tiles)
{
    const attnrt_status_t st = cuda_enter(d);
    int64_t resident = p->ws_decode ? d->sm_count : st == ATTNRT_OK ? cuda_kernel_resident(d, sel->decode, sel) : 0;
    if (resident <= 0) resident = d->sm_count > 0 ? d->sm_count : 1; /* one block an SM */
    int64_t longest = 0, dec_tiles = 0;
    for (size_t i = 0; i < n_tiles; i++)
        if (tiles[i].cfg == CFG_DECODE) {
            const int64_t kt = (tiles[i].keys + DECODE_BN - 1) / DECODE_BN;
            if (kt > longest) longest = kt;
            dec_tiles++;
        }
    sel->split = 1;
    sel->resident = resident;
    sel->longest = longest;
    sel->dec_tiles = dec_tiles;
    sel->split_for = cuda_attn_split_for;
    sel->plan_tiles = tiles;
    sel->n_tiles = n_tiles;
    sel->chunk = cuda_attn_split_chunk(tiles, n_tiles, longest, resident, &sel->blocks);
    if (!p->ws_decode && st == ATTNRT_OK) {
        const int r = cuda_kernel_select(d, CK_ROLE_DECODE, sel);
        if (r != sel->decode) cuda_attn_use_decode(d, p, sel, r);
    }
    return st;
}

attnrt_status_t cuda_attention_plan(cuda_dev_t *d, const attnrt_attention_args_t *args_in,
                                    const attnrt_batch_host_t *batch_in, void **plan_out, size_t *workspace_bytes)
{
    attnrt_attention_args_t a;
    attnrt_batch_host_t batch;
    if (!args_in || !batch_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention plan: args, batch and both outputs are required");
    PLUGIN_COPY_IN(a, args_in);
    PLUGIN_COPY_IN(batch, batch_in);
    if (!a.query || !a.key_cache || !a.value_cache || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention plan: query, both caches and out are required");
    attnrt_status_t st = cuda_attn_check_supported(&a);
    if (st != ATTNRT_OK) return st;
    const int64_t Hq = a.query->shape[1], Hkv = a.key_cache->shape[2];
    if (Hkv <= 0 || Hq % Hkv != 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention plan: %lld query heads over %lld KV heads",
                           (long long)Hq, (long long)Hkv);
    if (batch.num_seqs > 0 && (!batch.query_start_loc || !batch.seq_lens))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention plan: the host batch has no query_start_loc or seq_lens");
    if (batch.num_seqs < 0) batch.num_seqs = 0;

    cuda_attn_plan_t *p = calloc(1, sizeof *p);
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda paged attention plan: out of memory");
    p->dev = d;
    p->num_tokens = a.query->shape[0];
    p->num_seqs = batch.num_seqs;
    p->num_q_heads = Hq;
    p->num_kv_heads = Hkv;
    p->head_dim_qk = a.query->shape[2];
    p->head_dim_v = a.value_cache->shape[3];
    const int64_t G = Hq / Hkv;

    /* the prefill tiles' kernel, which is also the choice between the tensor-core kernels and the SIMT one */
    cuda_select_t s;
    cuda_select_init(d, &a, &batch, &s);
    s.prefill = cuda_kernel_select(d, CK_ROLE_PREFILL, &s);
    p->mma = s.prefill != CK_K_SIMT;
    if (!p->mma) { /* the SIMT kernel: one warp per row, nothing to plan */
        *plan_out = p;
        *workspace_bytes = 0;
        return ATTNRT_OK;
    }
    p->fp8 = s.fp8;
    p->f_prefill = cuda_kernel_fn(d, s.prefill, &s);
    p->smem_prefill = cuda_kernel_smem(d, s.prefill, &s);
    p->prefill_threads = cuda_kernel_threads(s.prefill, &s);
    /* the persistent kernel over the prefill items, where it can run (f_prefill stays the run's fallback) */
    s.prefill_ws = cuda_kernel_select(d, CK_ROLE_PREFILL_WS, &s);
    cuda_attn_use_ws(d, p, &s, s.prefill_ws);
    p->ws_fp8 = s.prefill_ws == CK_K_PREFILL_WS_FP8;
    p->pf_tma_rows = s.prefill_ws >= 0 ? cuda_kernel_box_rows(s.prefill_ws, &s) : 0;
    p->pf_hc = (int)(G < CK_PF_ROWS ? G : CK_PF_ROWS);
    const int64_t prefill_rows = cuda_kernel_table[s.prefill_ws >= 0 ? s.prefill_ws : s.prefill].rows;
    /* the decode tiles' kernel: its rows fix the tiles, its residency the split (below) */
    s.decode = cuda_kernel_select(d, CK_ROLE_DECODE, &s);
    p->ws_decode = s.decode == CK_K_DECODE_WS;
    int64_t dec_rows = DECODE_ROWS;
    if (p->ws_decode) {
        cuda_attn_use_ws(d, p, &s, s.decode);
        dec_rows = CK_PF_ROWS;
    } else {
        cuda_attn_use_decode(d, p, &s, s.decode);
        dec_rows = cuda_kernel_table[s.decode].rows;
    }

    row_tile_t *tiles = NULL;
    size_t n_tiles = 0;
    st = cuda_attn_build_tiles(&a, &batch, Hkv, G, prefill_rows, dec_rows, &tiles, &n_tiles);
    if (st != ATTNRT_OK) {
        free(p);
        return st;
    }

    /* Split-KV for the decode tiles: every decode tile of more than `chunk` key tiles is cut into
     * ceil(tiles / chunk) blocks. The chunk is chosen by a rounds model: blocks run in rounds of
     * `resident` (what the chip holds at once), a block costs its key tiles plus SPLIT_OVERHEAD (pipeline
     * fill, Q load, the partial write and its merge), so cost(chunk) = ceil(blocks / resident) x
     * (min(chunk, longest) + SPLIT_OVERHEAD); the candidates are the chunks that cut the longest tile
     * into 1 .. CK_MAX_SPLITS pieces (at least MIN_CHUNK tiles each). This keeps the last round full
     * instead of leaving a partial one (2048 blocks over 396 slots was 5.2 rounds: a sixth, 17% full).
     * The persistent kernel's grid is one block an SM. */
    st = cuda_attn_plan_split(d, p, &s, tiles, n_tiles);
    const int64_t chunk_tiles = s.chunk;
    /* partial states of dec_rows rows in slots of DECODE_ROWS (ck_work_item_t); the persistent kernel's in as many
     * rows as its items' heads (one token each) */
    p->part_rows = p->ws_decode ? (int)((p->pf_hc + DECODE_ROWS - 1) / DECODE_ROWS * DECODE_ROWS) : (int)dec_rows;
    size_t n_prefill = 0, n_decode = 0;
    int64_t prefill_keys = 0; /* the keys the prefill items read, all together */
    for (size_t i = 0; i < n_tiles; i++) {
        row_tile_t *rt = &tiles[i];
        if (rt->cfg == CFG_PREFILL) {
            n_prefill++;
            prefill_keys += rt->keys;
            continue;
        }
        int64_t ns = ((rt->keys + DECODE_BN - 1) / DECODE_BN + chunk_tiles - 1) / chunk_tiles;
        ns = ns < 1 ? 1 : ns > CK_MAX_SPLITS ? CK_MAX_SPLITS : ns;
        rt->w.num_splits = (int32_t)ns;
        if (ns > 1) {
            rt->w.part_index = (int32_t)p->num_parts;
            p->num_parts += ns * (p->part_rows / DECODE_ROWS);
            rt->cost = rt->cost / ns + 1;
        }
        n_decode += (size_t)ns;
        if ((int)ns > p->max_splits) p->max_splits = (int)ns;
    }
    if (n_tiles > 1) qsort(tiles, n_tiles, sizeof *tiles, cuda_attn_by_cost_desc);

    /* A pure decode batch whose requests are each one row tile of all G heads, all with the same split
     * count, needs no list: the kernel derives item (seq, kv head, split) from blockIdx.x (nothing to
     * copy per run). Requests without query tokens get blocks that return at once. */
    int uniform = n_prefill == 0 && n_tiles > 0 && G <= DECODE_ROWS && !p->ws_decode;
    for (size_t i = 0; i < n_tiles && uniform; i++)
        uniform = tiles[i].w.num_splits == tiles[0].w.num_splits;
    if (uniform && (int64_t)batch.num_seqs * Hkv * tiles[0].w.num_splits <= 0x7fffffff) {
        p->dec_splits = tiles[0].w.num_splits;
        n_decode = (size_t)batch.num_seqs * (size_t)Hkv * (size_t)p->dec_splits;
        p->num_parts = p->dec_splits > 1 ? (int64_t)n_decode : 0;
    }

    /* the persistent kernel's forms that depend on the keys its items read (the table's rules) */
    s.n_prefill = (int64_t)n_prefill;
    s.prefill_keys = prefill_keys;
    if (p->f_prefill_ws && !p->ws_decode) {
        const int r = cuda_kernel_select(d, CK_ROLE_PREFILL_WS, &s);
        if (r != s.prefill_ws) cuda_attn_use_ws(d, p, &s, r);
    }
    p->n_prefill = (uint32_t)(p->ws_decode ? n_decode : n_prefill); /* the persistent kernel's items */
    p->n_decode = p->ws_decode ? 0u : (uint32_t)n_decode;
    p->list_bytes = p->dec_splits ? 0 : (n_prefill + n_decode) * sizeof(ck_work_item_t);
    p->pf_next = p->f_prefill_ws && p->n_prefill > 1;
    ck_work_item_t *list = NULL; /* built here, then uploaded into the plan's device copy */
    if (st == ATTNRT_OK && p->list_bytes && !(list = malloc(p->list_bytes)))
        st = plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda paged attention plan: out of memory");
    if (st != ATTNRT_OK) {
        free(tiles);
        cuda_attention_plan_destroy(d, p);
        return st;
    }
    /* prefill items, then every split of the decode tiles; costliest first. The head groups of one token
     * and KV head (equal costs: adjacent after the sort) take turns split by split, so that the blocks
     * reading the same keys run side by side and the later ones find them in the L2. */
    ck_work_item_t *pre = list, *dec = list ? list + n_prefill : NULL; /* ws_decode: no prefill tiles */
    for (size_t i = 0, j; i < n_tiles && list; i = j) {
        const row_tile_t *rt = &tiles[i];
        j = i + 1;
        if (rt->cfg == CFG_PREFILL) {
            *pre++ = rt->w;
            continue;
        }
        while (j < n_tiles && tiles[j].cfg == CFG_DECODE && tiles[j].w.seq == rt->w.seq &&
               tiles[j].w.kv_head == rt->w.kv_head && tiles[j].w.q_first == rt->w.q_first &&
               tiles[j].w.num_splits == rt->w.num_splits)
            j++;
        for (int32_t sp = 0; sp < rt->w.num_splits; sp++)
            for (size_t g = i; g < j; g++) {
                *dec = tiles[g].w;
                dec->split = sp;
                dec++;
            }
    }
    free(tiles);
    if (list && n_prefill > 1 && p->f_prefill_ws) group_prefill_items(list, n_prefill, Hkv, batch.num_seqs);
    if (list) { /* once, here: a run copied it into the workspace every time, ~8-10 us before its first kernel */
        st = cuda_upload(&p->list_dev, list, p->list_bytes, "cuda paged attention plan: the work list");
        free(list);
        if (st != ATTNRT_OK) {
            cuda_attention_plan_destroy(d, p);
            return st;
        }
    }

    p->off_part_o = align_up((size_t)p->num_parts * DECODE_ROWS * sizeof(float));
    /* one arrival count per split row tile (indexed by its first partial), then the persistent kernel's item
     * counters: in the workspace, not the plan, since runs write them (each run zeroes its own) */
    p->off_count = p->num_parts == 0 ? 0
                   : align_up(p->off_part_o + (size_t)p->num_parts * DECODE_ROWS * (size_t)p->head_dim_v * sizeof(float));
    p->count_bytes = (size_t)(p->num_parts + 2 * p->pf_next) * sizeof(uint32_t);
    p->workspace_bytes = p->count_bytes ? p->off_count + p->count_bytes : 0;
    *plan_out = p;
    *workspace_bytes = p->workspace_bytes;
    return ATTNRT_OK;
}
