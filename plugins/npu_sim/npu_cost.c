/* npu_cost.c — simulated time and counters of each op. Every constant lives in the profile
 * (npu_profile.c) and is documented in docs/backends/npu_sim.md with its source. Sizes are products of
 * shapes up to 2^31 each, so they are computed in double and saturate when stored as counters. */
#include "npu_cost.h"

#include <math.h>
#include <string.h>

static double pad_dim(int64_t d) { return ceil((double)d / NPU_HEAD_DIM_ALIGN) * NPU_HEAD_DIM_ALIGN; }

/* A counter's value: x rounded down, saturated to [0, UINT64_MAX] (a double at or above 2^64 has no
 * uint64 value to convert to). */
static uint64_t counter(double x)
{
    if (!(x > 0.0)) return 0;
    return x >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)x;
}

static void add_counter(uint64_t *c, double x)
{
    const uint64_t v = counter(x);
    *c = *c > UINT64_MAX - v ? UINT64_MAX : *c + v;
}

static double max2(double a, double b) { return a > b ? a : b; }

void npu_cost_begin(attnrt_op_stats_t *s, uint32_t op)
{
    memset(s, 0, sizeof *s);
    s->struct_size = sizeof *s;
    s->op = op;
    s->simulated = 1;
}

static void launch(const npu_profile_t *p, attnrt_op_stats_t *s)
{
    s->launches++;
    s->time_us += p->launch_overhead_us;
}

/* K and V bytes of one token over all KV heads, head dims padded as the kernel pads them; an MLA
 * latent row is read once for both (V is its first head_dim_v columns). */
static double kv_token_bytes(const npu_cost_shape_t *sh)
{
    const double dims = sh->latent ? pad_dim(sh->head_dim_qk) : pad_dim(sh->head_dim_qk) + pad_dim(sh->head_dim_v);
    return (double)sh->num_kv_heads * dims * (double)sh->kv_bytes;
}

/* One unit of KV work: `rows` query rows (of every query head) against `tokens` keys read whole. */
static void unit(const npu_profile_t *p, const npu_cost_shape_t *sh, int64_t rows, int64_t tokens, attnrt_op_stats_t *s)
{
    const double bytes = (double)tokens * kv_token_bytes(sh);
    const double flops = 2.0 * (double)sh->num_q_heads * (double)rows * (double)tokens *
                         (pad_dim(sh->head_dim_qk) + pad_dim(sh->head_dim_v));
    add_counter(&s->bytes_moved, bytes);
    add_counter(&s->flops, flops);
    s->partitions++;
    s->time_us += max2(bytes / p->dram_bw_eff, flops / p->peak_flops_fp16) * 1e6 + p->partition_overhead_us;
}

/* Query in, output out: rows x heads, streamed once per row whatever the kernel. */
static void rows_io(const npu_profile_t *p, const npu_cost_shape_t *sh, int64_t rows, attnrt_op_stats_t *s)
{
    const double bytes = (double)rows * (double)sh->num_q_heads *
                         ((double)sh->head_dim_qk * (double)sh->q_bytes + (double)sh->head_dim_v * (double)sh->out_bytes);
    add_counter(&s->bytes_moved, bytes);
    s->time_us += bytes / p->dram_bw_eff * 1e6;
}

/* The KV work of `rows` query rows that see keys [lo, hi). */
static void kv_work(const npu_profile_t *p, const npu_cost_shape_t *sh, int64_t rows, int64_t lo, int64_t hi,
                    attnrt_op_stats_t *s)
{
    switch (sh->kernel) {
    case NPU_KERNEL_NAIVE: /* the one block of the compiled length, whatever the position */
        unit(p, sh, rows, sh->partition, s);
        break;
    case NPU_KERNEL_SLIDING: /* the window block plus the new rows, as vllm-rbln concatenates them */
        unit(p, sh, rows, sh->window + rows, s);
        break;
    case NPU_KERNEL_FLASH:
        if (hi <= lo) { /* no partition holds a key: the row is only visited */
            s->time_us += p->partition_overhead_us;
            break;
        }
        for (int64_t part = lo / sh->partition; part <= (hi - 1) / sh->partition; part++)
            unit(p, sh, rows, sh->partition, s);
        break;
    case NPU_KERNEL_SPARSE: /* each row gathers min(topk, keys) latent rows; every non-empty partition is visited */
        if (hi <= lo) {
            s->time_us += p->partition_overhead_us;
            break;
        }
        unit(p, sh, 1, rows * (sh->topk < hi - lo ? sh->topk : hi - lo), s);
        for (int64_t part = lo / sh->partition + 1; part <= (hi - 1) / sh->partition; part++) {
            s->partitions++;
            s->time_us += p->partition_overhead_us;
        }
        break;
    }
}

int64_t npu_cost_bucket(int64_t rows)
{
    int64_t b = 1;
    while (b < rows && b < NPU_DECODE_BUCKET_MAX) b *= 2;
    return b;
}

void npu_cost_decode(const npu_profile_t *p, const npu_cost_shape_t *sh, const int64_t *lo, const int64_t *hi,
                     int64_t rows, attnrt_op_stats_t *s)
{
    for (int64_t first = 0; first < rows; first += NPU_DECODE_BUCKET_MAX) {
        const int64_t n = rows - first < NPU_DECODE_BUCKET_MAX ? rows - first : NPU_DECODE_BUCKET_MAX;
        const int64_t bucket = npu_cost_bucket(n);
        launch(p, s);
        for (int64_t i = 0; i < n; i++) kv_work(p, sh, 1, lo[first + i], hi[first + i], s);
        /* padding rows: seq_len 0, so flash visits no partition; naive and sliding still read their block */
        for (int64_t i = n; i < bucket; i++) kv_work(p, sh, 1, 0, 0, s);
        rows_io(p, sh, bucket, s);
        add_counter(&s->padded_rows, (double)(bucket - n));
        add_counter(&s->padding_tokens, (double)(bucket - n));
    }
}

void npu_cost_prefill_chunk(const npu_profile_t *p, const npu_cost_shape_t *sh, int64_t rows, int64_t chunk,
                            int64_t lo, int64_t hi, attnrt_op_stats_t *s)
{
    launch(p, s);
    kv_work(p, sh, chunk, lo, hi, s); /* the compiled chunk is computed whole, padding included */
    rows_io(p, sh, chunk, s);
    add_counter(&s->padding_tokens, (double)(chunk - rows));
}

void npu_cost_kv_write(const npu_profile_t *p, int64_t tokens, int64_t num_kv_heads, int64_t head_dim_k,
                       int64_t head_dim_v, int64_t src_bytes, int64_t cache_bytes, attnrt_op_stats_t *s)
{
    launch(p, s);
    const double bytes = (double)tokens * (double)num_kv_heads * ((double)head_dim_k + (double)head_dim_v) *
                         ((double)src_bytes + (double)cache_bytes);
    add_counter(&s->bytes_moved, bytes);
    s->time_us += bytes / p->dram_bw_eff * 1e6;
}

void npu_cost_merge(const npu_profile_t *p, int64_t n, int64_t tokens, int64_t heads, int64_t head_dim,
                    int64_t state_bytes, int64_t out_bytes, attnrt_op_stats_t *s)
{
    launch(p, s);
    const double rows = (double)tokens * (double)heads;
    const double bytes = rows * ((double)n * ((double)head_dim * (double)state_bytes + 4.0) +
                                 (double)head_dim * (double)out_bytes + 4.0);
    const double flops = rows * (double)n * (2.0 * (double)head_dim + 4.0);
    add_counter(&s->bytes_moved, bytes);
    add_counter(&s->flops, flops);
    s->time_us += max2(bytes / p->dram_bw_eff, flops / p->peak_flops_fp16) * 1e6;
}
