/* bench_report.c — attnrt-bench's output: a few lines of text, or one JSON document (--json). */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "json_writer.h"

/* The device's "isa" attribute (cpu: the kernels chosen), or "". */
static void device_isa(attnrt_context_t *ctx, char *out, size_t cap)
{
    uint32_t idx;
    out[0] = '\0';
    if (attnrt_device_find(attnrt_context_device_name(ctx), &idx) != ATTNRT_OK) return;
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    if (attnrt_device_get_properties(idx, &p) != ATTNRT_OK) return;
    for (uint32_t i = 0; i < p.attribute_count; i++) {
        attnrt_device_attribute_t a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        if (attnrt_device_get_attribute(idx, i, &a) == ATTNRT_OK && !strcmp(a.key, "isa")) {
            snprintf(out, cap, "%s", a.value);
            return;
        }
    }
}

static double load_average(void)
{
    double l = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1.0;
        fclose(f);
    }
    return l;
}

static void json_num(FILE *f, const char *key, double v, int last)
{
    fprintf(f, "    \"%s\": %.6g%s\n", key, v, last ? "" : ",");
}

static void json_stats(FILE *f, const char *key, const bench_stats_t *s, int last)
{
    fprintf(f, "    \"%s\": {\"median\": %.6g, \"min\": %.6g, \"p10\": %.6g, \"p90\": %.6g, \"max\": %.6g, \"n\": %d}%s\n",
            key, s->median, s->min, s->p10, s->p90, s->max, s->n, last ? "" : ",");
}

static void json_str(FILE *f, const char *key, const char *v)
{
    fprintf(f, "    \"%s\": ", key);
    json_write_escaped(f, v ? v : "");
    fputs(",\n", f);
}

void bench_report(const bench_options_t *o, attnrt_context_t *ctx, const bench_ceiling_t *c, const bench_result_t *r)
{
    char isa[200];
    device_isa(ctx, isa, sizeof isa);
    const double secs = r->time.median * 1e-3;
    const double gbs = secs > 0 ? r->bytes / secs * 1e-9 : 0, gflops = secs > 0 ? r->flops / secs * 1e-9 : 0;
    const double mem = r->mem_gbs.median, fma = r->fma_gflops.median;
    const double sum_parts = r->part_decode.median + r->part_prefill.median;
    const double load = load_average();
    /* a simulated device's times come from its cost model: the host's ceilings say nothing about them */
    const int simulated = r->has_op_stats && r->op_stats.simulated;
    if (o->json) {
        FILE *f = stdout;
        fputs("{\n", f);
        json_str(f, "op", bench_op_name(o->op));
        json_str(f, "device", attnrt_context_device_name(ctx));
        json_str(f, "isa", isa);
        fprintf(f, "    \"shape\": {\"batch\": %lld, \"ctx\": %lld, \"new_tokens\": %lld, \"prefill_ctx\": %lld, "
                   "\"heads\": %lld, \"kv_heads\": %lld, \"head_dim\": %lld, \"v_dim\": %lld, \"topk\": %lld, "
                   "\"block_size\": %lld, \"causal\": %s, "
                   "\"layout\": \"%s\", \"blocks\": \"%s\", \"dtype\": \"%s\", \"kv_dtype\": \"%s\"},\n",
                (long long)o->batch, (long long)o->ctx, (long long)o->new_tokens, (long long)o->prefill_ctx,
                (long long)o->heads, (long long)o->kv_heads, (long long)o->head_dim, (long long)o->v_dim,
                (long long)o->topk, (long long)o->block_size, o->causal ? "true" : "false", o->hnd ? "hnd" : "nhd",
                o->shuffled ? "shuffled" : "in-order", attnrt_dtype_name(o->dtype), attnrt_dtype_name(o->kv_dtype));
        fprintf(f, "    \"threads\": %d,\n", o->threads);
        json_num(f, "load_average", load, 0);
        json_str(f, "timer", r->timer);
        json_stats(f, "time_ms", &r->time, 0);
        if (r->has_single) json_stats(f, "single_call_ms", &r->single, 0);
        if (r->has_host) {
            json_stats(f, "host_call_us", &r->host_us, 0);
            json_num(f, "host_late_runs", r->host_late, 0);
        }
        json_num(f, "bytes", r->bytes, 0);
        json_num(f, "flops", r->flops, 0);
        json_num(f, "gb_per_s", gbs, 0);
        json_num(f, "gflop_per_s", gflops, 0);
        if (r->has_parts) {
            json_stats(f, "part_decode_ms", &r->part_decode, 0);
            json_stats(f, "part_prefill_ms", &r->part_prefill, 0);
            json_num(f, "mixed_over_parts", sum_parts > 0 ? r->time.median / sum_parts : 0, 0);
        }
        if (c && c->mem_sample && !simulated) {
            json_str(f, "mem_ceiling", c->mem_what);
            json_stats(f, "mem_gb_per_s", &r->mem_gbs, 0);
            json_num(f, "fraction_of_mem", mem > 0 ? gbs / mem : 0, 0);
            json_num(f, "fraction_of_mem_p90", r->mem_gbs.p90 > 0 ? gbs / r->mem_gbs.p90 : 0, 0);
            if (r->has_single && r->single.median > 0)
                json_num(f, "fraction_of_mem_single_call", mem > 0 ? r->bytes / (r->single.median * 1e-3) * 1e-9 / mem : 0, 0);
        }
        if (r->has_paged && !simulated) {
            json_str(f, "paged_read_ceiling", c->paged_what);
            json_stats(f, "paged_read_gb_per_s", &r->paged_gbs, 0);
            json_num(f, "fraction_of_paged_read", r->paged_gbs.median > 0 ? gbs / r->paged_gbs.median : 0, 0);
            json_num(f, "fraction_of_paged_read_p90", r->paged_gbs.p90 > 0 ? gbs / r->paged_gbs.p90 : 0, 0);
        }
        if (r->has_fma && !simulated) {
            json_str(f, "fma_ceiling", c->fma_what);
            json_stats(f, "fma_gflop_per_s", &r->fma_gflops, 0);
            json_num(f, "fraction_of_fma", fma > 0 ? gflops / fma : 0, 0);
            json_num(f, "fraction_of_fma_p90", r->fma_gflops.p90 > 0 ? gflops / r->fma_gflops.p90 : 0, 0);
        }
        if (r->has_op_stats) {
            const attnrt_op_stats_t *d = &r->op_stats;
            fprintf(f, "    \"device_stats\": {\"simulated\": %s, \"time_us\": %.3f, \"bytes_moved\": %llu, "
                       "\"flops\": %llu, \"partitions\": %llu, \"padded_rows\": %llu, \"padding_tokens\": %llu, "
                       "\"launches\": %llu},\n", d->simulated ? "true" : "false", d->time_us,
                    (unsigned long long)d->bytes_moved, (unsigned long long)d->flops,
                    (unsigned long long)d->partitions, (unsigned long long)d->padded_rows,
                    (unsigned long long)d->padding_tokens, (unsigned long long)d->launches);
        }
        json_num(f, "iters", o->iters, 0);
        json_num(f, "warmup", o->warmup, 1);
        fputs("}\n", f);
        return;
    }
    printf("attnrt-bench: %s on %s (isa %s), %d threads, load average %.2f\n", bench_op_name(o->op),
           attnrt_context_device_name(ctx), isa[0] ? isa : "n/a", o->threads, load);
    if (o->op == BENCH_KV_WRITE || o->op == BENCH_MERGE)
        printf("  shape: %lld tokens (B %lld x %lld)", (long long)(o->batch * o->new_tokens), (long long)o->batch,
               (long long)o->new_tokens);
    else if (o->op == BENCH_MIXED)
        printf("  shape: %lld decodes over %lld keys + a %lld-token prefill chunk over %lld keys", (long long)o->batch,
               (long long)o->ctx, (long long)o->new_tokens, (long long)o->prefill_ctx);
    else if (o->op == BENCH_PREFILL)
        printf("  shape: B %lld x %lld new tokens over %lld keys", (long long)o->batch, (long long)o->new_tokens,
               (long long)o->ctx);
    else if (o->op == BENCH_MLA_DECODE)
        printf("  shape: B %lld x 1 token over %lld keys%s", (long long)o->batch, (long long)o->ctx,
               o->topk ? " (sparse)" : "");
    if (o->op == BENCH_LIGHTNING_DECODE || o->op == BENCH_GDN_DECODE) /* no cache: heads and the state */
        printf("  shape: B %lld x 1 token, value heads %lld, key heads %lld, Dk %lld, Dv %lld, f32 state, q/k/v/out %s\n",
               (long long)o->batch, (long long)o->heads,
               (long long)(o->op == BENCH_GDN_DECODE ? o->kv_heads : o->heads), (long long)o->head_dim,
               (long long)(o->v_dim ? o->v_dim : o->head_dim), attnrt_dtype_name(o->dtype));
    else if (o->op == BENCH_MLA_DECODE)
        printf(", Hq %lld, one latent head of %lld (values %lld), block %lld, top-k %lld, q/out %s, latent %s\n",
               (long long)o->heads, (long long)o->head_dim,
               (long long)(o->v_dim ? o->v_dim : (o->head_dim == 576 ? 512 : o->head_dim)), (long long)o->block_size,
               (long long)o->topk, attnrt_dtype_name(o->dtype), attnrt_dtype_name(o->kv_dtype));
    else {
        if (o->op == BENCH_DECODE) printf("  shape: B %lld x 1 token over %lld keys", (long long)o->batch, (long long)o->ctx);
        printf(", Hq %lld, Hkv %lld, D %lld, block %lld %s %s, q/out %s, kv %s%s\n", (long long)o->heads,
               (long long)o->kv_heads, (long long)o->head_dim, (long long)o->block_size, o->hnd ? "HND" : "NHD",
               o->shuffled ? "shuffled" : "in-order", attnrt_dtype_name(o->dtype), attnrt_dtype_name(o->kv_dtype),
               o->causal && o->op != BENCH_KV_WRITE && o->op != BENCH_MERGE ? ", causal" : "");
    }
    printf("  time: median %.3f ms (min %.3f, p10 %.3f, p90 %.3f) over %d runs after %d warm-up, %s\n", r->time.median,
           r->time.min, r->time.p10, r->time.p90, r->time.n, o->warmup, r->timer);
    if (r->has_host)
        printf("  host: %.1f us in the run call (median; enqueue only)%s\n", r->host_us.median,
               r->host_late ? ", SOME RUNS ENQUEUED AFTER THE COPY IN FRONT ENDED (their regions hold host time)" : "");
    if (r->has_single)
        printf("  single call on the NULL stream: median %.3f ms (min %.3f, p10 %.3f, p90 %.3f): %+.1f us, %.2f GB/s\n",
               r->single.median, r->single.min, r->single.p10, r->single.p90, (r->single.median - r->time.median) * 1e3,
               r->single.median > 0 ? r->bytes / (r->single.median * 1e-3) * 1e-9 : 0);
    printf("  achieved: %.2f GB/s (%.1f MB a run), %.1f GFLOP/s (%.3f GFLOP a run)\n", gbs, r->bytes * 1e-6, gflops,
           r->flops * 1e-9);
    if (r->has_op_stats) {
        const attnrt_op_stats_t *d = &r->op_stats;
        printf("  the device's own account of a run (%s): %.3f ms, %.1f MB moved, %.3f GFLOP, %llu partitions, "
               "%llu padded rows, %llu padding tokens, %llu launches\n", d->simulated ? "cost model" : "measured",
               d->time_us * 1e-3, (double)d->bytes_moved * 1e-6, (double)d->flops * 1e-9,
               (unsigned long long)d->partitions, (unsigned long long)d->padded_rows,
               (unsigned long long)d->padding_tokens, (unsigned long long)d->launches);
    }
    if (r->has_parts)
        printf("  parts alone: decode %.3f ms + prefill %.3f ms = %.3f ms; mixed / sum = %.3f\n", r->part_decode.median,
               r->part_prefill.median, sum_parts, sum_parts > 0 ? r->time.median / sum_parts : 0);
    if (simulated) printf("  (simulated times: the host's ceilings do not apply, so no fractions of them)\n");
    if (c && c->mem_sample && !simulated) {
        printf("  ceiling %s: median %.2f GB/s (p10 %.2f, p90 %.2f)\n    -> %.1f%% of its median, %.1f%% of its p90\n",
               c->mem_what, mem, r->mem_gbs.p10, r->mem_gbs.p90, mem > 0 ? 100.0 * gbs / mem : 0,
               r->mem_gbs.p90 > 0 ? 100.0 * gbs / r->mem_gbs.p90 : 0);
        if (r->has_single && r->single.median > 0 && mem > 0)
            printf("    (single call on the NULL stream: %.1f%% of its median)\n",
                   100.0 * r->bytes / (r->single.median * 1e-3) * 1e-9 / mem);
    }
    if (r->has_paged && !simulated)
        printf("  ceiling %s: median %.2f GB/s (p10 %.2f, p90 %.2f)\n    -> %.1f%% of its median, %.1f%% of its p90\n",
               c->paged_what, r->paged_gbs.median, r->paged_gbs.p10, r->paged_gbs.p90,
               r->paged_gbs.median > 0 ? 100.0 * gbs / r->paged_gbs.median : 0,
               r->paged_gbs.p90 > 0 ? 100.0 * gbs / r->paged_gbs.p90 : 0);
    if (r->has_fma && !simulated)
        printf("  ceiling %s: median %.1f GFLOP/s (p10 %.1f, p90 %.1f)\n    -> %.1f%% of its median, %.1f%% of its p90\n",
               c->fma_what, fma, r->fma_gflops.p10, r->fma_gflops.p90, fma > 0 ? 100.0 * gflops / fma : 0,
               r->fma_gflops.p90 > 0 ? 100.0 * gflops / r->fma_gflops.p90 : 0);
}
