/* cuda_attention_plan.c — picks the kernels for a batch and, for the tensor-core path, splits it into
 * work items: row tiles of (tokens x query heads of one KV head), the decode ones cut into key splits
 * from the batch and the SM count, so that small batches of long sequences still fill the chip. The
 * list is uploaded once into device memory the plan owns; attention_run only points the kernels at it. */
#include <stdlib.h>
#include <string.h>

#include "cuda_attention_plan.h"
#include "cuda_prefill.h"
#include "cuda_prefill_wg_cfg.h"
#include "plugin_error.h"
#include "plugin_query.h"
#include "plugin_struct.h"

#define WS_ALIGN 256
#define DECODE_ROWS CK_SPLIT_ROWS
#define PREFILL_ROWS 64
#define DECODE_BN 64
#define MIN_CHUNK 2      /* key tiles of a split at least */
#define W8_MAX_KEYS 2048 /* 4-warp decode blocks of at most this many keys give way to 8-warp ones (below) */
#define FP8K_MIN_MEAN_KEYS 1024 /* fp8 prefill items of at least this many keys on average read K by e4m3 products */
#define LONG_MIN_MEAN_KEYS 2048 /* D 64 prefill items of at least this many keys on average take 192-key tiles */
#define SPLIT_OVERHEAD 2 /* a decode block's fixed cost, in key tiles (see the split model below) */
#define WS_DEC_MIN_TILES 8 /* row tiles of a pure decode batch of wide groups for the warp-specialized kernel (below) */

static size_t align_up(size_t n) { return (n + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN; }

static void key_range(int64_t pq, int64_t S, int causal, int64_t wl, int64_t wr, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = S - 1;
    if (wl >= 0 && pq - wl > a) a = pq - wl;
    if (causal && pq < b) b = pq;
    if (wr >= 0 && pq + wr < b) b = pq + wr;
    *lo = a;
    *hi = b;
}

typedef struct row_tile {
    ck_work_item_t w;
    int     cfg;
    int64_t keys, cost;
    size_t  order;
} row_tile_t;

static int by_cost_desc(const void *pa, const void *pb)
{
    const row_tile_t *a = pa, *b = pb;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* The prefill items (costliest first) regrouped so that those reading the same keys — one (request, KV head) — run
 * side by side, groups in the order of their costliest item and each group's items still costliest first: the blocks
 * resident at once then read a few heads' K / V from the L2 instead of as many heads as blocks from DRAM (an MHA prefill
 * of 4 x 4096 tokens reads 268 MB of K / V per pass). For the warp-specialized kernel (docs/dev/cuda-prefill.md, session
 * 15: MHA B4 x 4096 +13.5 %, B1 x 16384 +3-6 %, GQA +1-3 %; the two-blocks-a-SM kernel lost 2 % on MHA, so its items keep
 * the plain order). Left as it is when the scratch memory is not there. */
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

static attnrt_status_t check_supported(const attnrt_attention_args_t *a)
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

/* Whether the tensor-core kernels take this layout; the run re-checks pointer alignment. */
static int mma_eligible(const cuda_dev_t *d, const attnrt_attention_args_t *a, int *fp8, int *t, int *di)
{
    const int qk = cuda_ck_dtype(a->query->dtype), kvk = cuda_ck_dtype(a->key_cache->dtype);
    const int64_t dqk = a->query->shape[2], dv = a->value_cache->shape[3];
    *fp8 = kvk == CK_E4M3 || kvk == CK_E5M2;
    *t = qk == CK_BF16;
    *di = cuda_mma_dim_index(dqk, dv);
    const int64_t gran = *fp8 ? 16 : 8; /* elements per 16-byte copy */
    if (!d->k.mma_ok || d->force_simt || (qk != CK_F16 && qk != CK_BF16) || (kvk != qk && !*fp8) || *di < 0 ||
        dqk % gran || dv % gran)
        return 0;
    return d->k.mma[CUDA_CFG_PREFILL][*t][*fp8][*di] && d->k.mma[CUDA_CFG_DECODE][*t][*fp8][*di];
}

void cuda_attention_plan_destroy(cuda_dev_t *d, void *plan)
{
    cuda_attn_plan_t *p = plan;
    if (!p) return;
    if (p->list_dev && cuda_enter(d) == ATTNRT_OK) cuda_drv.MemFree(p->list_dev);
    free(p);
}

/* Row tiles of every request, heads inner, with their key counts (host metadata). dec_rows: a decode tile's rows,
 * DECODE_ROWS or CK_DEC_WIDE_ROWS (the wide-group kernels: G > DECODE_ROWS, one token a tile). */
static attnrt_status_t build_tiles(const attnrt_attention_args_t *a, const attnrt_batch_host_t *batch, int64_t Hkv,
                                   int64_t G, int64_t prefill_rows, int64_t dec_rows, row_tile_t **out, size_t *count)
{
    size_t n = 0, cap = 0;
    row_tile_t *tiles = NULL;
    for (int64_t b = 0; b < batch->num_seqs; b++) {
        const int64_t L = (int64_t)batch->query_start_loc[b + 1] - batch->query_start_loc[b];
        const int64_t S = batch->seq_lens[b];
        if (L <= 0) continue;
        /* One token of a group wider than a decode tile (MQA, GQA 16+) is decoded too: in 32-row tiles where the
         * wide-group kernels run (ceil(G / 32) head groups of equal size), else in ceil(G / 16) head groups that read
         * the same keys (the second from the L2: its splits run beside the first's). A prefill tile would read them
         * once, but without key splits (64 requests of MQA filled half the chip at 27 % of the copy ceiling) */
        const int cfg = L * G <= DECODE_ROWS || L == 1 ? CUDA_CFG_DECODE : CUDA_CFG_PREFILL;
        const int64_t rows = cfg == CUDA_CFG_DECODE ? dec_rows : prefill_rows;
        const int64_t n_groups = (G + rows - 1) / rows; /* wide decode tiles: equal groups (48 -> 24 + 24) */
        const int64_t hc_full = G <= rows ? G : cfg == CUDA_CFG_DECODE && rows > DECODE_ROWS ? (G + n_groups - 1) / n_groups : rows;
        for (int64_t h = 0; h < Hkv; h++)
            for (int64_t hf = 0; hf < G; hf += hc_full) {
                const int64_t hc = G - hf < hc_full ? G - hf : hc_full, tpt = rows / hc;
                for (int64_t i0 = 0; i0 < L; i0 += tpt) {
                    const int64_t nt = L - i0 < tpt ? L - i0 : tpt;
                    int64_t lo, hi, unused;
                    key_range(S - L + i0, S, a->causal, a->window_left, a->window_right, &lo, &unused);
                    key_range(S - L + i0 + nt - 1, S, a->causal, a->window_left, a->window_right, &unused, &hi);
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

/* Blocks of kernel f (threads a block, dynamic shared memory) the device holds at once: SM count x the driver's
 * occupancy; 0 where the driver cannot say */
static int64_t resident_blocks(const cuda_dev_t *d, CUfunction f, uint32_t threads, uint32_t smem)
{
    int occ = 0;
    if (cuda_drv.OccupancyMaxActiveBlocksPerMultiprocessor(&occ, f, (int)threads, smem) != CUDA_SUCCESS || occ < 0) occ = 0;
    return (int64_t)(d->sm_count > 0 ? d->sm_count : 1) * occ;
}

/* The split chunk (key tiles a block) of the rounds model (below, in cuda_attention_plan) for the decode tiles of
 * `longest` key tiles at most on a kernel that holds `resident` blocks at once; *blocks: the decode blocks it makes */
static int64_t split_chunk(const row_tile_t *tiles, size_t n_tiles, int64_t longest, int64_t resident, int max_splits,
                           int64_t *blocks_out)
{
    int64_t chunk_tiles = longest > MIN_CHUNK ? longest : MIN_CHUNK, best_cost = -1, prev_c = -1;
    *blocks_out = 0;
    for (int64_t cut = 1; cut <= max_splits && longest > 0; cut++) {
        int64_t c = (longest + cut - 1) / cut;
        if (c < MIN_CHUNK) c = MIN_CHUNK;
        if (c == prev_c) continue; /* the same chunk as the last cut: the same cost */
        prev_c = c;
        int64_t blocks = 0;
        for (size_t i = 0; i < n_tiles; i++)
            if (tiles[i].cfg == CUDA_CFG_DECODE) {
                const int64_t kt = (tiles[i].keys + DECODE_BN - 1) / DECODE_BN;
                int64_t ns = (kt + c - 1) / c;
                blocks += ns < 1 ? 1 : ns > max_splits ? max_splits : ns;
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

/* Makes tensor-copy variant tv (d->k.dec_tma's index; -1: none) the plan's decode kernel where it can read this
 * cache: the device has it, both caches' blocks are the same multiple of 8 rows. A box takes the block size's
 * largest power-of-two factor of rows, at most a warp's tile, so that no box crosses a block; the kernel before
 * stays as the run's fallback (a map the driver will not encode). */
static void use_tma_kernel(const cuda_dev_t *d, cuda_attn_plan_t *p, const attnrt_attention_args_t *a, int t, int tv)
{
    const int64_t bs = a->key_cache->shape[1], low = bs & -bs;
    if (tv < 0 || !d->k.dec_tma[t][tv] || low < 8 || a->value_cache->shape[1] != bs) return;
    const int64_t tile = d->k.dec_tma_kpw[tv];
    p->f_decode_plain = p->f_decode;
    p->smem_decode_plain = p->smem_decode;
    p->dec_threads_plain = p->dec_threads;
    p->f_decode = d->k.dec_tma[t][tv];
    p->smem_decode = d->k.dec_tma_smem[tv];
    p->dec_threads = 32u * CK_DEC_WARPS;
    p->tma_rows = (int)(low < tile ? low : tile);
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
    attnrt_status_t st = check_supported(&a);
    if (st != ATTNRT_OK) return st;
    const int64_t Hq = a.query->shape[1], Hkv = a.key_cache->shape[2];
    if (Hkv <= 0 || Hq % Hkv != 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention plan: %lld query heads over %lld KV heads",
                           (long long)Hq, (long long)Hkv);
    if (batch.num_seqs > 0 && (!batch.query_start_loc || !batch.seq_lens))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention plan: the host batch has no query_start_loc or seq_lens");
    if (batch.num_seqs < 0) batch.num_seqs = 0;
    if (a.window_left < 0) a.window_left = -1;
    if (a.window_right < 0) a.window_right = -1;

    cuda_attn_plan_t *p = calloc(1, sizeof *p);
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda paged attention plan: out of memory");
    p->dev = d;
    p->num_tokens = a.query->shape[0];
    p->num_seqs = batch.num_seqs;
    p->num_q_heads = Hq;
    p->num_kv_heads = Hkv;
    p->head_dim_qk = a.query->shape[2];
    p->head_dim_v = a.value_cache->shape[3];
    int t, di;
    p->mma = mma_eligible(d, &a, &p->fp8, &t, &di);
    if (!p->mma) { /* the SIMT kernel: one warp per row, nothing to plan */
        *plan_out = p;
        *workspace_bytes = 0;
        return ATTNRT_OK;
    }
    p->f_prefill = d->k.mma[CUDA_CFG_PREFILL][t][p->fp8][di];
    p->f_decode = d->k.mma[CUDA_CFG_DECODE][t][p->fp8][di];
    p->smem_prefill = d->k.mma_smem[CUDA_CFG_PREFILL][p->fp8][di];
    p->smem_decode = d->k.mma_smem[CUDA_CFG_DECODE][p->fp8][di];
    p->dec_threads = 32u * CK_DEC_WARPS;
    p->prefill_threads = 128;
    int64_t prefill_rows = PREFILL_ROWS;
    CUfunction fast = cuda_prefill_kernel(d, &a, t, di, &p->smem_prefill, &p->prefill_threads);
    if (fast) {
        p->f_prefill = fast;
        prefill_rows = CK_PF_ROWS;
        p->f_prefill_ws = cuda_prefill_ws_kernel(d, &a, t, di, &p->smem_prefill_ws, &p->prefill_ws_threads, &p->pf_tma_rows);
    } else if (p->fp8) { /* the warp-specialized kernel's fp8-cache form: 4-5x the general kernel's rate (session 20) */
        p->f_prefill_ws = cuda_prefill_ws_fp8_kernel(d, &a, t, di, &p->smem_prefill_ws, &p->prefill_ws_threads, &p->pf_tma_rows);
        if (p->f_prefill_ws) {
            prefill_rows = CK_PF_ROWS;
            p->ws_fp8 = 1;
        }
    }

    /* Decode by tensor copies (sm_90; attn_decode.cuh's TMAQ) at D 64 (fp8: 64-byte rows; 16-bit: 128) and
     * 16-bit D 128 / 256 (128-byte column blocks a row); fp8 D 128 below, once the split is known. */
    const int tv = p->head_dim_qk != p->head_dim_v ? -1
                   : p->head_dim_qk == 64          ? (p->fp8 ? CUDA_DEC_TMA_FP8_D64 : CUDA_DEC_TMA_D64)
                   : p->fp8                        ? -1
                   : p->head_dim_qk == 128         ? CUDA_DEC_TMA_D128
                   : p->head_dim_qk == 256         ? CUDA_DEC_TMA_D256
                                                   : -1;
    use_tma_kernel(d, p, &a, t, tv);

    /* GQA groups wider than a 16-row tile (MQA and its tensor-parallel shards), 16-bit caches at D 64 / 128: the
     * wide-group kernels' 32-row tiles of one token's heads, each key read once for all of them, where the 16-row
     * tiles of the batch's one-token requests are more than the chip holds at once (docs/dev/cuda-decode.md, session
     * 17: MQA B256 x 2048 -9 %, Hq 128 / Hkv 4 B64 x 4096 -13 %; where the 16-row tiles fit in one round, in key
     * splits, a warp's 32 rows double its serial work a key and the wide form lost 4-50 %). ATTNRT_CUDA_DEC_WIDE=0
     * never, =1 always (d->k.dec_wide_mode). */
    int64_t dec_rows = DECODE_ROWS;
    const int64_t G = Hq / Hkv;
    /* A pure decode batch of GQA groups wider than a 16-row tile on the warp-specialized prefill kernel: each token's
     * heads are rows of its wgmma tiles (S = Q K^T, m64 x 128 keys: each key read once for the whole group, a few
     * instructions a key where the decode kernels' warps pay ~30 a key and 16 rows), its items cut into key splits that
     * fill the chip and merged by the consumers of the last split. Where the batch has at least WS_DEC_MIN_TILES row
     * tiles: MQA -5..-40 % from 8 requests up, GQA 32 -9..-16 %; at 1-2 requests the 8-warp decode blocks stay 8-13 %
     * ahead, at 4 they tie (docs/dev/cuda-decode.md, session 19). Its Q boxes take every item's heads (G <= CK_PF_ROWS,
     * or whole groups of them) and the merge's weights fit the Q slot (G <= D). ATTNRT_CUDA_DEC_WS=0 never, =1 every
     * pure decode batch it can take, any group (d->k.dec_ws_mode). */
    if (p->f_prefill_ws && !p->fp8 && d->k.prefill_ws_dec[t][di] && d->k.dec_ws_mode != 0 && (G <= CK_PF_ROWS || G % CK_PF_ROWS == 0) &&
        (G < CK_PF_ROWS ? G : CK_PF_ROWS) <= p->head_dim_qk && (d->k.dec_ws_mode == 1 || G > DECODE_ROWS)) {
        int64_t one_token = 0, all_decode = batch.num_seqs > 0;
        for (int64_t b = 0; b < batch.num_seqs && all_decode; b++) {
            const int64_t L = (int64_t)batch.query_start_loc[b + 1] - batch.query_start_loc[b];
            all_decode = L <= 1;
            one_token += L == 1;
        }
        const int64_t ws_tiles = one_token * Hkv * ((G + CK_PF_ROWS - 1) / CK_PF_ROWS);
        p->ws_decode = all_decode && ws_tiles > 0 && (d->k.dec_ws_mode == 1 || ws_tiles >= WS_DEC_MIN_TILES);
    }
    if (p->ws_decode) {
        p->f_prefill_ws = d->k.prefill_ws_dec[t][di]; /* its decode form: the same shared memory and threads */
        dec_rows = CK_PF_ROWS;
        p->tma_rows = 0; /* no decode kernel: the run encodes the maps in the prefill kernel's boxes */
    } else if (G > DECODE_ROWS && !p->fp8 && di <= 1 && d->k.dec_wide[t][di] && d->k.dec_wide_mode != 0) {
        int64_t one_token = 0;
        for (int64_t b = 0; b < batch.num_seqs; b++) one_token += (int64_t)batch.query_start_loc[b + 1] - batch.query_start_loc[b] == 1;
        const int64_t tiles16 = one_token * Hkv * ((G + DECODE_ROWS - 1) / DECODE_ROWS);
        const int64_t res16 = cuda_enter(d) == ATTNRT_OK ? resident_blocks(d, p->f_decode, p->dec_threads, p->smem_decode) : 0;
        if (d->k.dec_wide_mode == 1 || (res16 > 0 && tiles16 > res16)) {
            dec_rows = CK_DEC_WIDE_ROWS;
            p->f_decode = d->k.dec_wide[t][di];
            p->smem_decode = d->k.dec_wide_smem[di];
            p->dec_threads = 32u * CK_DEC_WARPS;
            p->tma_rows = 0;
            const int64_t dqk = p->head_dim_qk; /* tensor copies: whole 64- / 128-element rows */
            use_tma_kernel(d, p, &a, t, dqk != p->head_dim_v ? -1 : dqk == 64 ? CUDA_DEC_TMA_D64_R32 : dqk == 128 ? CUDA_DEC_TMA_D128_R32 : -1);
        }
    }

    row_tile_t *tiles = NULL;
    size_t n_tiles = 0;
    st = build_tiles(&a, &batch, Hkv, Hq / Hkv, prefill_rows, dec_rows, &tiles, &n_tiles);
    if (st != ATTNRT_OK) {
        free(p);
        return st;
    }
    /* The warp-specialized prefill kernel wherever it can run: persistent, with the next item's Q and tiles copied
     * under this one's work, it is ahead of the two-blocks-a-SM kernel at every prompt length and head size measured
     * (docs/dev/cuda-prefill.md, session 16: B32 x 512 +8 %, B16 x 1024 +13 %, B4 x 4096 +23 %, D 64 +5-8 %). Its Q
     * boxes take every item's heads, so all items must have the same count (a group of more than CK_PF_ROWS heads
     * that is not a multiple of it ends in a smaller one). */
    p->pf_hc = (int)(G < CK_PF_ROWS ? G : CK_PF_ROWS);
    if (G > CK_PF_ROWS && G % CK_PF_ROWS) p->f_prefill_ws = NULL;

    /* Split-KV for the decode tiles: every decode tile of more than `chunk` key tiles is cut into
     * ceil(tiles / chunk) blocks. The chunk is chosen by a rounds model: blocks run in rounds of
     * `resident` (what the chip holds at once), a block costs its key tiles plus SPLIT_OVERHEAD (pipeline
     * fill, Q load, the partial write and its merge), so cost(chunk) = ceil(blocks / resident) x
     * (min(chunk, longest) + SPLIT_OVERHEAD); the candidates are the chunks that cut the longest tile
     * into 1 .. max_splits pieces (at least MIN_CHUNK tiles each). This keeps the last round full
     * instead of leaving a partial one (2048 blocks over 396 slots was 5.2 rounds: a sixth, 17% full). */
    st = cuda_enter(d);
    /* the warp-specialized kernel: its persistent grid (cuda_attention_run: one block a SM, or ATTNRT_CUDA_PREFILL_BLOCKS) */
    const int ws_grid = d->k.prefill_ws_blocks > 0 && d->k.prefill_ws_blocks < d->sm_count ? d->k.prefill_ws_blocks : d->sm_count;
    int64_t resident = p->ws_decode      ? ws_grid
                       : st == ATTNRT_OK ? resident_blocks(d, p->f_decode, p->dec_threads, p->smem_decode)
                                         : 0;
    if (resident <= 0) resident = d->sm_count > 0 ? d->sm_count : 1; /* one block an SM */
    int64_t longest = 0, dec_tiles = 0;
    for (size_t i = 0; i < n_tiles; i++)
        if (tiles[i].cfg == CUDA_CFG_DECODE) {
            const int64_t kt = (tiles[i].keys + DECODE_BN - 1) / DECODE_BN;
            if (kt > longest) longest = kt;
            dec_tiles++;
        }
    int64_t dec_blocks = 0;
    int64_t chunk_tiles = split_chunk(tiles, n_tiles, longest, resident, d->max_splits, &dec_blocks);
    /* 16-bit D 128 decode in 8-warp blocks (one an SM) where the 4-warp blocks fit in one round: where they are no
     * more than the SMs (few row tiles in their most splits: one long request, MQA, a tensor-parallel shard of one KV
     * head), the same blocks with twice the warps an SM; where they are short (<= W8_MAX_KEYS, so their fixed costs
     * and the merge weigh), one round of 8-warp blocks in longer splits in place of two blocks an SM (half the
     * partials). Longer 4-warp blocks stream at the copy rate already, and one 8-warp block an SM streams 1-3 % slower
     * than two of 4 (docs/dev/cuda-decode.md, session 18). ATTNRT_CUDA_DEC_W8 (d->k.dec_w8_mode): 0 never, 1 always
     * (the 4-warp plan's splits). */
    if (!p->ws_decode && p->f_decode == d->k.dec_tma[t][CUDA_DEC_TMA_D128] && d->k.dec_w8[t] && d->k.dec_w8_mode != 0 &&
        longest > 0) {
        int w8 = 0;
        if (d->k.dec_w8_mode == 1 || dec_blocks <= d->sm_count)
            w8 = 1;
        else if (dec_blocks <= resident && (chunk_tiles < longest ? chunk_tiles : longest) * DECODE_BN <= W8_MAX_KEYS) {
            int64_t blocks8 = 0, res8 = st == ATTNRT_OK ? resident_blocks(d, d->k.dec_w8[t], 256, d->k.dec_w8_smem) : 0;
            if (res8 <= 0) res8 = d->sm_count > 0 ? d->sm_count : 1;
            const int64_t chunk8 = split_chunk(tiles, n_tiles, longest, res8, d->max_splits, &blocks8);
            if (blocks8 <= res8) {
                w8 = 1;
                chunk_tiles = chunk8;
            }
        }
        if (w8) { /* the same tensor maps and boxes as the 4-warp kernel (f_decode_plain stays its fallback) */
            p->f_decode = d->k.dec_w8[t];
            p->smem_decode = d->k.dec_w8_smem;
            p->dec_threads = 8u * 32u;
        }
    }
    /* fp8 at D 64 in an NHD cache (a key's heads side by side, so a head's 64-byte row is a quarter of a
     * 256-byte L2 fetch whose rest the neighbour heads' blocks read at about the same time): the kernel whose
     * copies ask for 256-byte fetches, when a block reads at most 4096 keys (longer blocks drift apart from
     * their neighbours and fetch twice). Session 10, docs/dev/cuda-decode.md: B64 x 4096 D 64 0.111 ->
     * 0.102 ms; at D 128 +-1.3 % (B16 x 32768, 16384 keys a block: +9.5 %), so not there. */
    const int64_t *kst = a.key_cache->strides;
    if (p->fp8 && di == 0 && !p->tma_rows && d->k.dec_fp8_d64_l2w[t] && kst[2] < kst[1] &&
        (chunk_tiles < longest ? chunk_tiles : longest) * DECODE_BN <= 4096)
        p->f_decode = d->k.dec_fp8_d64_l2w[t];
    /* fp8 D 128 by tensor copies by the keys a block reads: 32-key tiles for blocks of at most 2048 keys, 16-key
     * tiles (more, smaller stages) from 8192; between them `_c4` stays (docs/dev/cuda-decode.md, session 12:
     * B256 x 2048 -1.4..-2.8 %, B16 x 32768 (16384 a block) -2.3..-4.3 %, 8192 a block -2.5..+0.7 %; 4096 tied
     * or slower at cache block 16, but -1.6 % at block 64 in session 12 and -2.3 % in 2-warp blocks in session 14, where
     * a box is 32 rows: so 32-key tiles to 4096 keys where the cache's blocks are a multiple of 32 rows).
     * Unsplit batches of more row tiles than one round holds take 32-key tiles where their blocks read at least 8192
     * keys, or where they are more than one round of the 2-warp twin (session 26: B64 / B128 / B96 x 8192, B64 x 16384,
     * B40 x 12288 -1..-3 % against 16-key tiles; B128 / B256 x 4096 -1.3 / -2.3 % against `_c4`; B64 x 4096, one round
     * of 2-warp blocks, +1 %: `_c4` stays there).
     * ATTNRT_CUDA_DEC_FP8_TILE=32 / 16 / c4 (d->k.dec_fp8_force, read at load) forces one (A/B, conformance). */
    const int64_t block_keys = (chunk_tiles < longest ? chunk_tiles : longest) * DECODE_BN;
    const int box32 = a.key_cache->shape[1] % 32 == 0;
    const CUfunction t32_w2 = d->k.dec_w2[t][CUDA_DEC_W2_FP8_D128_T32];
    int t32_rounds = 0; /* unsplit, more than one round: 32-key tiles whatever the block length (above) */
    if (p->fp8 && p->head_dim_qk == 128 && p->head_dim_v == 128 && chunk_tiles >= longest && dec_tiles > resident &&
        t32_w2) {
        const uint32_t smem2 = d->k.dec_w2_smem[CUDA_DEC_W2_FP8_D128_T32];
        const int64_t res2 = st == ATTNRT_OK ? resident_blocks(d, t32_w2, 64, smem2) : 0;
        t32_rounds = block_keys >= 8192 || (res2 > 0 && dec_tiles > res2);
    }
    const int fp8_tv = d->k.dec_fp8_force  ? d->k.dec_fp8_force
                       : block_keys <= (box32 ? 4096 : 2048) || t32_rounds ? CUDA_DEC_TMA_FP8_D128_T32
                       : block_keys >= 8192 ? CUDA_DEC_TMA_FP8_D128_T16
                                            : -1;
    if (p->fp8 && p->head_dim_qk == 128 && p->head_dim_v == 128 && longest > 0) use_tma_kernel(d, p, &a, t, fp8_tv);
    /* fp8 D 128 and 64 in 2-warp blocks (twice the blocks resident, each streaming its keys in twice the time) where
     * the batch is not split and their rounds take no longer than the 4-warp blocks': the same warps an SM stream the
     * same keys with half the lockstep block starts and ends (docs/dev/cuda-decode.md, session 14: D 128 B64 x 4096
     * -2.5 %, B256 x 2048 -1.1..-1.4 %, B128 x 1024 -5.5 %, Hq 128 / Hkv 8 -7.6 %; D 64 -5..-11 %; B96 x 2048, 1.45
     * rounds against 2.9, +6 %; one round, split or not, 1-6 % slower; MQA's head groups (GQA > 16) +28 %).
     * ATTNRT_CUDA_DEC_W2 (d->k.dec_w2_mode): 0 never, 1 always. */
    int w2v = -1;
    for (int v = 0; v < CUDA_DEC_W2_KINDS && longest > 0 && (Hq / Hkv <= DECODE_ROWS || d->k.dec_w2_mode == 1); v++)
        if (p->f_decode == cuda_dec_w2_base(d, t, v) && d->k.dec_w2[t][v]) w2v = v;
    int w2_fits = 0;
    if (w2v >= 0 && d->k.dec_w2_mode < 0 && chunk_tiles >= longest && dec_tiles > resident) {
        const int64_t resident2 = st == ATTNRT_OK ? resident_blocks(d, d->k.dec_w2[t][w2v], 64, d->k.dec_w2_smem[w2v]) : 0;
        w2_fits = resident2 > 0 && (dec_tiles + resident2 - 1) / resident2 * 2 <= (dec_tiles + resident - 1) / resident;
    }
    if (w2v >= 0 && d->k.dec_w2_mode != 0 && (d->k.dec_w2_mode == 1 || w2_fits)) {
        p->f_decode = d->k.dec_w2[t][w2v];
        p->smem_decode = d->k.dec_w2_smem[w2v];
        p->dec_threads = 2u * 32u;
    }
    /* partial states of dec_rows rows in slots of DECODE_ROWS (ck_work_item_t); the warp-specialized kernel's in as many
     * rows as its items' heads (one token each) */
    p->part_rows = p->ws_decode ? (int)((p->pf_hc + DECODE_ROWS - 1) / DECODE_ROWS * DECODE_ROWS) : (int)dec_rows;
    size_t n_prefill = 0, n_decode = 0;
    int64_t prefill_keys = 0; /* the keys the prefill items read, all together */
    for (size_t i = 0; i < n_tiles; i++) {
        row_tile_t *rt = &tiles[i];
        if (rt->cfg == CUDA_CFG_PREFILL) {
            n_prefill++;
            prefill_keys += rt->keys;
            continue;
        }
        int64_t ns = ((rt->keys + DECODE_BN - 1) / DECODE_BN + chunk_tiles - 1) / chunk_tiles;
        ns = ns < 1 ? 1 : ns > d->max_splits ? d->max_splits : ns;
        rt->w.num_splits = (int32_t)ns;
        if (ns > 1) {
            rt->w.part_index = (int32_t)p->num_parts;
            p->num_parts += ns * (p->part_rows / DECODE_ROWS);
            rt->cost = rt->cost / ns + 1;
        }
        n_decode += (size_t)ns;
        if ((int)ns > p->max_splits) p->max_splits = (int)ns;
    }
    if (n_tiles > 1) qsort(tiles, n_tiles, sizeof *tiles, by_cost_desc);

    /* A pure decode batch whose requests are each one row tile of all G heads, all with the same split
     * count, needs no list: the kernel derives item (seq, kv head, split) from blockIdx.x (nothing to
     * copy per run). Requests without query tokens get blocks that return at once. */
    int uniform = n_prefill == 0 && n_tiles > 0 && Hq / Hkv <= DECODE_ROWS && !p->ws_decode;
    for (size_t i = 0; i < n_tiles && uniform; i++)
        uniform = tiles[i].w.num_splits == tiles[0].w.num_splits;
    if (uniform && (int64_t)batch.num_seqs * Hkv * tiles[0].w.num_splits <= 0x7fffffff) {
        p->dec_splits = tiles[0].w.num_splits;
        n_decode = (size_t)batch.num_seqs * (size_t)Hkv * (size_t)p->dec_splits;
        p->num_parts = p->dec_splits > 1 ? (int64_t)n_decode : 0;
    }

    /* fp8 prefill with a bf16 Q at D 128 / 256: the form that reads K by e4m3 products where the items read at least
     * FP8K_MIN_MEAN_KEYS keys on average (its tiles cost less, its Q split more an item: docs/dev/cuda-prefill.md,
     * session 22) */
    CUfunction kd = p->ws_fp8 && n_prefill ? cuda_prefill_ws_fp8_kd_kernel(d, &a, di) : NULL;
    if (kd && (d->k.prefill_fp8k_mode == 1 || prefill_keys >= FP8K_MIN_MEAN_KEYS * (int64_t)n_prefill)) p->f_prefill_ws = kd;
    /* D 64: the long-item form (192-key tiles) where the items read at least LONG_MIN_MEAN_KEYS keys on average (a tile's
     * fixed work over more keys; short items lose more to their masked last tile: docs/dev/cuda-prefill.md, session 23) */
    uint32_t long_smem = 0;
    const int long_ok = p->f_prefill_ws && !p->ws_fp8 && !p->ws_decode && n_prefill;
    CUfunction lf = long_ok ? cuda_prefill_ws_long_kernel(d, &a, t, &long_smem) : NULL;
    if (lf && (d->k.prefill_tile_mode == 192 || prefill_keys >= LONG_MIN_MEAN_KEYS * (int64_t)n_prefill)) {
        p->f_prefill_ws = lf;
        p->smem_prefill_ws = long_smem;
    }
    p->n_prefill = (uint32_t)(p->ws_decode ? n_decode : n_prefill); /* the warp-specialized kernel's items */
    p->n_decode = p->ws_decode ? 0u : (uint32_t)n_decode;
    p->list_bytes = p->dec_splits ? 0 : (n_prefill + n_decode) * sizeof(ck_work_item_t);
    p->pf_next = p->f_prefill_ws && p->n_prefill > 1 && !d->k.prefill_ws_static;
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
        if (rt->cfg == CUDA_CFG_PREFILL) {
            *pre++ = rt->w;
            continue;
        }
        while (j < n_tiles && tiles[j].cfg == CUDA_CFG_DECODE && tiles[j].w.seq == rt->w.seq &&
               tiles[j].w.kv_head == rt->w.kv_head && tiles[j].w.q_first == rt->w.q_first &&
               tiles[j].w.num_splits == rt->w.num_splits)
            j++;
        for (int32_t s = 0; s < rt->w.num_splits; s++)
            for (size_t g = i; g < j; g++) {
                *dec = tiles[g].w;
                dec->split = s;
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
    /* one arrival count per split row tile (indexed by its first partial), then the warp-specialized kernel's item
     * counters: in the workspace, not the plan, since runs write them (each run zeroes its own) */
    p->off_count = p->num_parts == 0 ? 0
                   : align_up(p->off_part_o + (size_t)p->num_parts * DECODE_ROWS * (size_t)p->head_dim_v * sizeof(float));
    p->count_bytes = (size_t)(p->num_parts + 2 * p->pf_next) * sizeof(uint32_t);
    p->workspace_bytes = p->count_bytes ? p->off_count + p->count_bytes : 0;
    *plan_out = p;
    *workspace_bytes = p->workspace_bytes;
    return ATTNRT_OK;
}
