/* cuda_attention_tiles.h — the paged-attention planner's pieces that both plan kinds use: a per-batch plan
 * (cuda_attention_plan.c) and a capacity plan, whose batch arrives later by update (cuda_attention_capacity.c).
 * Internal to the cuda plugin. */
#ifndef CK_CUDA_ATTENTION_TILES_H
#define CK_CUDA_ATTENTION_TILES_H

#include "cuda_attention_plan.h"
#include "cuda_kernel_table.h"

#define WS_ALIGN 256
#define DECODE_ROWS CK_SPLIT_ROWS
#define DECODE_BN 64

enum { CFG_PREFILL, CFG_DECODE }; /* a row tile's kind */

static inline size_t align_up(size_t n) { return (n + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN; }

/* One row tile of the batch: its work item (split 0), kind, keys read, cost, and build order (the sort's tie-break). */
typedef struct row_tile {
    ck_work_item_t w;
    int     cfg;
    int64_t keys, cost;
    size_t  order;
} row_tile_t;

/* qsort order: costliest first, then build order. */
int cuda_attn_by_cost_desc(const void *pa, const void *pb);
/* The combination against the plugin's capability data and the dtypes the kernels take. */
attnrt_status_t cuda_attn_check_supported(const attnrt_attention_args_t *a);
/* Row tiles of every request of `batch`, heads inner (a: causal and windows only); *out is malloc'd. */
attnrt_status_t cuda_attn_build_tiles(const attnrt_attention_args_t *a, const attnrt_batch_host_t *batch, int64_t Hkv,
                                      int64_t G, int64_t prefill_rows, int64_t dec_rows, row_tile_t **out, size_t *count);
/* The split model: key tiles a split for decode tiles of at most `longest` key tiles on `resident` blocks. */
int64_t cuda_attn_split_chunk(const row_tile_t *tiles, size_t n_tiles, int64_t longest, int64_t resident, int64_t *blocks_out);
/* cuda_select_t.split_for over the tiles in s. */
int64_t cuda_attn_split_for(const cuda_select_t *s, int64_t resident, int64_t *blocks);
/* The split model over the decode tiles into *sel, then the decode kernel's split-dependent form; cuda_enter's status. */
attnrt_status_t cuda_attn_plan_split(cuda_dev_t *d, cuda_attn_plan_t *p, cuda_select_t *sel, const row_tile_t *tiles,
                                     size_t n_tiles);
/* Kernel-table row r as the plan's decode kernel / persistent prefill kernel (r < 0: none). */
void cuda_attn_use_decode(const cuda_dev_t *d, cuda_attn_plan_t *p, const cuda_select_t *s, int r);
void cuda_attn_use_ws(const cuda_dev_t *d, cuda_attn_plan_t *p, const cuda_select_t *s, int r);

#endif /* CK_CUDA_ATTENTION_TILES_H */
