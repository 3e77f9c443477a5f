/* cpu_attention_plan.h — what attention_plan leaves for attention_run: the work items, the split-KV
 * decision, the workspace the splits need, and the scratch each pool participant uses. Internal to the
 * cpu plugin; plugin-owned, freed by cpu_attention_plan_destroy.
 *
 * Work items (see cpu_attention_plan.c for how they are chosen):
 *   wide   a tile of a request's query tokens x the query heads of one KV head, rows in SIMD lanes
 *          (prefill and long chunks);
 *   narrow the same for few rows (decode: one token x the group), K/V dequantised in registers;
 *          when the batch has too few of those for the threads, a request's keys are split into
 *          ranges (split-KV) whose partial states go to the workspace and are merged afterwards.
 */
#ifndef ATTNRT_CPU_ATTENTION_PLAN_H
#define ATTNRT_CPU_ATTENTION_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "cpu_simd.h"
#include "cpu_threads.h"
#include "plugin_args.h"

/* Query rows (tokens x heads of one KV head) a wide item carries: enough to amortise each dequantised
 * K/V chunk over many rows, few enough that its state (q, o) stays in L2 and items balance. 384 is a
 * multiple of the AVX-512 micro-kernels' row blocks (scores 48, P.V 6), so a full tile runs no narrower
 * block (a higher share of the FMA peak in f32 prefill than 256 rows). */
#define CPU_ATTN_WIDE_ROWS 384
/* Rows (every KV head's group, each padded to 4) a decode item that takes all KV heads may have. */
#define CPU_ATTN_DECODE_ROWS 128
/* Items of at most this many rows take the narrow kernel (it costs ~rows, the wide one ~32 lanes). */
#define CPU_ATTN_NARROW_ROWS CPU_NARROW_MAX_ROWS
/* Split-KV: a request is cut into at most this many key ranges, each of at least MIN_SPLIT_KEYS keys
 * (shorter ones cost more to merge than they save), and only when its query run is at most
 * MAX_SPLIT_QLEN tokens (decode, speculation). */
#define CPU_ATTN_MAX_SPLITS 64
#define CPU_ATTN_MIN_SPLIT_KEYS 256
#define CPU_ATTN_MAX_SPLIT_QLEN 16

/* One work item: query tokens [q_first, q_first + q_count) of request `seq` (indices within the
 * request), query heads kv_head * group + [head_first, head_first + head_count), and split `split` of
 * the request's keys (-1: all of them). kv_head -1: one token and every query head (decode), each KV
 * head's group a narrow tile of its own. */
typedef struct cpu_attn_item {
    int32_t seq;
    int32_t q_first;
    int32_t q_count;
    int32_t kv_head;
    int32_t head_first;
    int32_t head_count;
    int32_t split;
    int32_t wide;
} cpu_attn_item_t;

/* Split-KV of one request: its keys in `nsplit` ranges. The partial state (o[Dv], m, l) of part s of
 * row (token i, head h) is workspace row part_base + (s * qlen + i) * Hq + h. */
typedef struct cpu_attn_split {
    int32_t nsplit;    /* 1: not split */
    int32_t qlen;      /* the request's query length when planned: the rows its parts hold */
    int64_t part_base;
} cpu_attn_split_t;

/* How a plan cuts a batch into items: fixed by the args' shapes and options (and, for a capacity plan,
 * the capacity), so a capacity plan cuts every batch exactly as a per-batch plan of it would. */
typedef struct cpu_attn_policy {
    int64_t  num_q_heads, num_kv_heads, group;
    int64_t  heads_per_item, head_chunks, tile; /* an item's query heads, chunks of a group, tokens */
    int      all_heads;                         /* decode items take every KV head                  */
    int      causal;
    int64_t  window_left, window_right;         /* plugin_window_count: -1 unlimited               */
    unsigned threads;
    int32_t  max_splits;                        /* split-KV's most parts a request                  */
    size_t   max_split_rows;  /* most partial-state rows of a batch (SIZE_MAX: unbounded)         */
    size_t   max_split_items; /* most items splits may add to a batch's unsplit ones (SIZE_MAX)   */
} cpu_attn_policy_t;

/* A work item with its sort key, while a plan orders them. */
typedef struct cpu_attn_costed {
    plugin_cost_key_t key;
    cpu_attn_item_t   item;
} cpu_attn_costed_t;

typedef struct cpu_attn_plan {
    const cpu_pool_t  *pool;      /* the pool whose participants own the scratch slices          */
    const cpu_simd_t  *simd;      /* the kernels, chosen when the device was opened              */
    /* shapes the items and the scratch were made for; run refuses args of other shapes */
    int64_t num_tokens, num_seqs, num_q_heads, num_kv_heads, head_dim_qk, head_dim_v;
    cpu_attn_item_t  *items;      /* costliest first, so the long ones start early               */
    size_t            num_items;
    /* split-KV: per request (NULL when nothing is split), the merge items, and the workspace */
    cpu_attn_split_t *splits;
    int32_t          *merge_seqs; /* split requests; merged after the items, one item per KV head */
    size_t            num_merges;
    int64_t           part_rows;  /* workspace rows of all parts: o [part_rows][Dv], m, l [part_rows] */
    size_t            workspace_bytes; /* the caller's, per run: runs of one plan may race        */
    /* scratch: one slice of scratch_stride bytes per participant, 64-byte aligned sub-buffers; private
     * to one cpu_parallel_for at a time (the pool runs them one after another), so a run keeps nothing
     * there from one parallel_for to the next: another run's may come in between */
    char    *scratch;
    size_t   scratch_stride;
    unsigned scratch_slices;
    cpu_attn_policy_t policy;
    /* capacity plans (cpu_attention_capacity.c): every array above sized at plan time for any batch
     * within the capacity (items_cap items, max_seqs requests, part_rows partial rows), and the passes'
     * own arrays, so that an update allocates nothing and never needs more workspace */
    int                is_capacity;
    int64_t            max_seqs;
    size_t             items_cap;
    int32_t           *cap_nsplit;   /* [max_seqs] */
    double            *cap_max_cost; /* [max_seqs] */
    cpu_attn_costed_t *cap_sort;     /* [items_cap] */
} cpu_attn_plan_t;

/* The opening both plan entries share: *a (the caller's args, copied) holds the required tensors of
 * sizes in [0, 2^31), the device supports it, and *pol is how its batches are cut (max_splits
 * CPU_ATTN_MAX_SPLITS). `what` names the entry in messages ("paged attention plan"). */
attnrt_status_t cpu_attn_policy_make(cpu_pool_t *pool, const attnrt_attention_args_t *a, const char *what,
                                     cpu_attn_policy_t *pol);
/* Pass 1 over a batch of B requests (T query rows): each request's split count into nsplit [B] (max_cost
 * [B] is scratch), and the items, split requests and partial-state rows the batch needs (SIZE_MAX once
 * they overflow); splits stay within the policy's max_split_rows and max_split_items. */
void cpu_attn_decide(const cpu_attn_policy_t *pol, const attnrt_batch_host_t *batch, int64_t B, int64_t T,
                     int32_t *nsplit, double *max_cost, size_t *n_items, size_t *n_split, size_t *part_rows);
/* Pass 2: the n_items items into p->items, costliest first (tmp [n_items] is scratch), p->splits
 * (when allocated) and p->merge_seqs; sets num_items and num_merges. */
void cpu_attn_fill(cpu_attn_plan_t *p, const attnrt_batch_host_t *batch, int64_t B, int64_t T, const int32_t *nsplit,
                   cpu_attn_costed_t *tmp, size_t n_items);
/* The plan object with the scratch of every pool participant (and nothing else); NULL when out of memory. */
cpu_attn_plan_t *cpu_attn_plan_alloc(cpu_pool_t *pool, const cpu_attn_policy_t *pol, const attnrt_attention_args_t *a);

/* Byte offsets of the sub-buffers inside one participant's slice. */
typedef struct cpu_attn_scratch_layout {
    size_t q, o, s, m, l, alpha, kc, vc, qb, lo, hi, total;
    int    rows;     /* rows the buffers hold (the wide tile, padded)                     */
    int    dqk_pad, dv_pad;
} cpu_attn_scratch_layout_t;

/* Computes the layout for the given head dims (shared by plan and run). */
cpu_attn_scratch_layout_t cpu_attn_scratch_layout(int64_t head_dim_qk, int64_t head_dim_v);

/* Split s of nsplit of the key range [lo, hi]: chunk-aligned pieces, the last one may be short or
 * empty. */
static inline void cpu_attn_split_range(int64_t lo, int64_t hi, int32_t s, int32_t nsplit, int64_t *a, int64_t *b)
{
    const int64_t len = hi >= lo ? hi - lo + 1 : 0;
    int64_t piece = (len + nsplit - 1) / nsplit;
    piece = (piece + CPU_ATTN_CHUNK - 1) / CPU_ATTN_CHUNK * CPU_ATTN_CHUNK;
    *a = lo + (int64_t)s * piece;
    *b = *a + piece - 1 < hi ? *a + piece - 1 : hi;
}

#endif
