/* cpu_linear.h — the plan shared by the state-slot ops (lightning, gated delta): one work item per
 * (request, state head), costliest first, and one scratch slice per pool participant, so that a run
 * allocates nothing. Internal to the cpu plugin; plugin-owned, freed by cpu_linear_plan_free. */
#ifndef ATTNRT_CPU_LINEAR_H
#define ATTNRT_CPU_LINEAR_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"
#include "plugin_error.h"
#include "plugin_linear.h"
#include "plugin_tensor.h"

#define CPU_LINEAR_ALIGN 64

typedef struct cpu_linear_item {
    int32_t seq;  /* request b                                  */
    int32_t head; /* state head: h (lightning) or value head hv */
} cpu_linear_item_t;

typedef struct cpu_linear_plan {
    cpu_plan_head_t   head;
    const cpu_pool_t *pool;           /* the pool whose participants own the scratch slices        */
    /* shapes the plan was made for; run refuses others */
    int64_t num_tokens, num_seqs, num_heads, num_k_heads, head_dim_k, head_dim_v, num_spec;
    cpu_linear_item_t *items;         /* every (request, head), longest requests first               */
    size_t             num_items;
    char              *scratch;       /* scratch_slices slices of scratch_stride bytes, 64-aligned   */
    size_t             scratch_stride;
    unsigned           scratch_slices;
} cpu_linear_plan_t;

static inline size_t cpu_linear_align(size_t n) { return (n + CPU_LINEAR_ALIGN - 1) / CPU_LINEAR_ALIGN * CPU_LINEAR_ALIGN; }

static inline void cpu_linear_plan_free(cpu_linear_plan_t *p)
{
    if (!p) return;
    p->head.magic = 0;
    free(p->items);
    free(p->scratch);
    free(p);
}

typedef struct cpu_linear_order {
    int64_t len;
    int32_t seq;
} cpu_linear_order_t;

static inline int cpu_linear_by_len_desc(const void *pa, const void *pb)
{
    const cpu_linear_order_t *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq); /* ties keep request order: deterministic plans */
}

/* Builds a plan of `kind` with an item for every (request, head) — also for requests the host batch
 * calls empty or padding, so a run whose device metadata says otherwise still covers every row — and
 * `scratch_bytes` of scratch per participant. `batch` may have num_seqs 0; its query_start_loc only
 * orders the items. */
static inline attnrt_status_t cpu_linear_plan_new(cpu_pool_t *pool, uint32_t kind, const char *op,
                                                  const attnrt_batch_host_t *batch, int64_t num_seqs,
                                                  int64_t num_heads, size_t scratch_bytes, cpu_linear_plan_t **out)
{
    const size_t n_items = plugin_size_mul((size_t)num_seqs, (size_t)num_heads); /* SIZE_MAX: the allocation fails */
    const unsigned slices = cpu_pool_size(pool);
    const size_t stride = cpu_linear_align(scratch_bytes ? scratch_bytes : 1);
    cpu_linear_plan_t *p = calloc(1, sizeof *p);
    cpu_linear_order_t *order = num_seqs ? malloc((size_t)num_seqs * sizeof *order) : NULL;
    if (p && n_items) p->items = malloc(plugin_size_mul(n_items, sizeof *p->items));
    if (p) p->scratch = aligned_alloc(CPU_LINEAR_ALIGN, plugin_size_mul(stride, slices));
    if (!p || !p->scratch || (n_items && !p->items) || (num_seqs && !order)) {
        free(order);
        cpu_linear_plan_free(p);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu %s plan: out of memory for %zu items and %u x %zu bytes of scratch",
                           op, n_items, slices, stride);
    }
    for (int64_t b = 0; b < num_seqs; b++) {
        order[b].seq = (int32_t)b;
        order[b].len = 0;
        if (batch && batch->query_start_loc && b < batch->num_seqs)
            order[b].len = (int64_t)batch->query_start_loc[b + 1] - batch->query_start_loc[b];
    }
    if (num_seqs > 1) qsort(order, (size_t)num_seqs, sizeof *order, cpu_linear_by_len_desc);
    size_t k = 0;
    for (int64_t i = 0; i < num_seqs; i++)
        for (int64_t h = 0; h < num_heads; h++) p->items[k++] = (cpu_linear_item_t){order[i].seq, (int32_t)h};
    free(order);
    p->head.magic = CPU_PLAN_MAGIC;
    p->head.kind = kind;
    p->pool = pool;
    p->num_items = n_items;
    p->scratch_stride = stride;
    p->scratch_slices = slices;
    *out = p;
    return ATTNRT_OK;
}

/* The plan of a decoded call (plugin_linear.h) of `kind`, with `scratch_bytes` of scratch per
 * participant: *plan_out, and no workspace (the scratch lives in the plan). */
static inline attnrt_status_t cpu_linear_plan_make(cpu_pool_t *pool, uint32_t kind, const char *op,
                                                   const attnrt_batch_host_t *batch, const plugin_linear_t *l,
                                                   size_t scratch_bytes, void **plan_out, size_t *workspace_bytes)
{
    cpu_linear_plan_t *p = NULL;
    attnrt_status_t st = cpu_linear_plan_new(pool, kind, op, batch, l->B, l->HV, scratch_bytes, &p);
    if (st != ATTNRT_OK) return st;
    p->num_tokens = l->T;
    p->num_seqs = l->B;
    p->num_heads = l->HV;
    p->num_k_heads = l->H;
    p->head_dim_k = l->Dk;
    p->head_dim_v = l->Dv;
    p->num_spec = l->spec ? l->num_spec : -1;
    *plan_out = p;
    *workspace_bytes = 0;
    return ATTNRT_OK;
}

/* The plan behind a run's `plan` pointer, or NULL (message set) when it is not a live plan of `kind`
 * made on this pool, or the run has no args. */
static inline const cpu_linear_plan_t *cpu_linear_plan_of(const void *plan, uint32_t kind, const cpu_pool_t *pool,
                                                          const char *op, const void *args)
{
    const cpu_linear_plan_t *p = plan;
    if (!p || p->head.magic != CPU_PLAN_MAGIC || p->head.kind != kind || p->pool != pool) {
        plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s run: the plan is NULL, not a %s plan, or made on another device",
                    op, op);
        return NULL;
    }
    if (!args) {
        plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s run: args are required", op);
        return NULL;
    }
    return p;
}

/* A run's decoded call has the shapes its plan was made for. */
static inline attnrt_status_t cpu_linear_check_run(const cpu_linear_plan_t *p, const plugin_linear_t *l, const char *op)
{
    const int64_t num_spec = l->spec ? l->num_spec : -1;
    if (l->T == p->num_tokens && l->HV == p->num_heads && l->H == p->num_k_heads && l->Dk == p->head_dim_k &&
        l->Dv == p->head_dim_v && num_spec == p->num_spec)
        return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                       "cpu %s run: shapes (T %lld, H %lld, HV %lld, Dk %lld, Dv %lld, num_spec %lld) differ from the "
                       "plan's (T %lld, H %lld, HV %lld, Dk %lld, Dv %lld, num_spec %lld); plan this batch again", op,
                       (long long)l->T, (long long)l->H, (long long)l->HV, (long long)l->Dk, (long long)l->Dv,
                       (long long)num_spec, (long long)p->num_tokens, (long long)p->num_k_heads,
                       (long long)p->num_heads, (long long)p->head_dim_k, (long long)p->head_dim_v,
                       (long long)p->num_spec);
}

#endif
