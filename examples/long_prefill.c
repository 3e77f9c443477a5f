/* long_prefill: one causal prefill of N tokens (default 65536, 1 head, D 128) through the public API,
 * reporting time and the peak memory above the tensors themselves. Attention memory must be
 * O(tokens): a kernel that materialised the N x N score matrix would need N^2 * 4 bytes (16 GiB here).
 *
 *   long_prefill [--tokens N] [--head-dim D] [--block-size B] [--device NAME] [--max-extra-mb M]
 *
 * Exits 1 when the peak resident memory exceeds tensors + M MiB (default 256), or on any error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "attnrt.h"

#define CHECK(call)                                                                                        \
    do {                                                                                                   \
        attnrt_status_t st_ = (call);                                                                      \
        if (st_ != ATTNRT_OK) {                                                                            \
            fprintf(stderr, "long_prefill: %s failed: %s: %s\n", #call, attnrt_status_name(st_), attnrt_last_error()); \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
}

static void *device_buffer(attnrt_context_t *ctx, size_t bytes, const float *host)
{
    void *p;
    CHECK(attnrt_mem_alloc(ctx, bytes, &p));
    if (host) CHECK(attnrt_mem_copy_to_device(ctx, p, host, bytes, NULL));
    return p;
}

int main(int argc, char **argv)
{
    int64_t n = 65536, d = 128, bs = 16;
    double max_extra_mb = 256;
    const char *device = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokens") && i + 1 < argc) n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--head-dim") && i + 1 < argc) d = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--block-size") && i + 1 < argc) bs = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!strcmp(argv[i], "--max-extra-mb") && i + 1 < argc) max_extra_mb = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: long_prefill [--tokens N] [--head-dim D] [--block-size B] [--device NAME] "
                            "[--max-extra-mb M]\n");
            return 2;
        }
    }
    if (n < 1 || d < 1 || bs < 1 || n > INT32_MAX) {
        fprintf(stderr, "long_prefill: tokens, head-dim and block-size must be >= 1\n");
        return 2;
    }
    int64_t blocks = (n + bs - 1) / bs;
    size_t row_bytes = (size_t)n * (size_t)d * sizeof(float);
    size_t cache_bytes = (size_t)blocks * (size_t)bs * (size_t)d * sizeof(float);

    attnrt_context_t *ctx;
    CHECK(attnrt_open(device, &ctx));
    double rss_before = peak_rss_mib();

    /* Host staging: random q/k/v (fresh, never zero). Freed before the run so only tensors remain. */
    float *host = malloc(row_bytes);
    int32_t *table = malloc((size_t)blocks * sizeof *table);
    int64_t *slots = malloc((size_t)n * sizeof *slots);
    if (!host || !table || !slots) return fprintf(stderr, "long_prefill: out of host memory\n"), 1;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < (size_t)n * (size_t)d; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        host[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    for (int64_t b = 0; b < blocks; b++) table[b] = (int32_t)(blocks - 1 - b); /* not the identity */
    for (int64_t t = 0; t < n; t++) slots[t] = (int64_t)table[t / bs] * bs + t % bs;

    void *q = device_buffer(ctx, row_bytes, host), *kv_in = device_buffer(ctx, row_bytes, host);
    void *kc = device_buffer(ctx, cache_bytes, NULL), *vc = device_buffer(ctx, cache_bytes, NULL);
    void *out = device_buffer(ctx, row_bytes, NULL);
    void *bt = device_buffer(ctx, (size_t)blocks * sizeof *table, NULL);
    CHECK(attnrt_mem_copy_to_device(ctx, bt, table, (size_t)blocks * sizeof *table, NULL));
    int32_t qsl_h[2] = {0, (int32_t)n}, seq_h[1] = {(int32_t)n};
    void *qsl = device_buffer(ctx, sizeof qsl_h, NULL), *seq = device_buffer(ctx, sizeof seq_h, NULL);
    void *sm = device_buffer(ctx, (size_t)n * sizeof *slots, NULL);
    CHECK(attnrt_mem_copy_to_device(ctx, qsl, qsl_h, sizeof qsl_h, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, seq, seq_h, sizeof seq_h, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, sm, slots, (size_t)n * sizeof *slots, NULL));

    attnrt_tensor_t tq, tk, tkc, tvc, tout, tbt, tqsl, tseq, tsm;
    const int64_t rows[3] = {n, 1, d}, cache[4] = {blocks, bs, 1, d}, bt_shape[2] = {1, blocks};
    const int64_t qsl_shape[1] = {2}, seq_shape[1] = {1}, sm_shape[1] = {n};
    CHECK(attnrt_tensor_init(&tq, q, ATTNRT_F32, 3, rows));
    CHECK(attnrt_tensor_init(&tk, kv_in, ATTNRT_F32, 3, rows));
    CHECK(attnrt_tensor_init(&tkc, kc, ATTNRT_F32, 4, cache));
    CHECK(attnrt_tensor_init(&tvc, vc, ATTNRT_F32, 4, cache));
    CHECK(attnrt_tensor_init(&tout, out, ATTNRT_F32, 3, rows));
    CHECK(attnrt_tensor_init(&tbt, bt, ATTNRT_I32, 2, bt_shape));
    CHECK(attnrt_tensor_init(&tqsl, qsl, ATTNRT_I32, 1, qsl_shape));
    CHECK(attnrt_tensor_init(&tseq, seq, ATTNRT_I32, 1, seq_shape));
    CHECK(attnrt_tensor_init(&tsm, sm, ATTNRT_I64, 1, sm_shape));

    attnrt_kv_write_args_t kw = {.struct_size = sizeof kw, .key = &tk, .value = &tk, .slot_mapping = &tsm,
                                 .key_cache = &tkc, .value_cache = &tvc, .slot_mapping_host = slots};
    CHECK(attnrt_kv_write(ctx, &kw, NULL));
    free(host);
    free(slots);

    attnrt_attention_args_t a = {.struct_size = sizeof a, .query = &tq, .key_cache = &tkc, .value_cache = &tvc,
                                 .block_table = &tbt, .query_start_loc = &tqsl, .seq_lens = &tseq, .out = &tout,
                                 .causal = 1};
    attnrt_batch_host_t batch = {.struct_size = sizeof batch, .num_seqs = 1, .query_start_loc = qsl_h,
                                 .seq_lens = seq_h, .block_table = table, .block_table_stride = blocks};
    attnrt_plan_t *plan;
    CHECK(attnrt_attention_plan(ctx, &a, &batch, &plan));
    size_t ws_bytes;
    CHECK(attnrt_plan_workspace_size(plan, &ws_bytes));
    void *ws = ws_bytes ? device_buffer(ctx, ws_bytes, NULL) : NULL;
    double t0 = now_s();
    CHECK(attnrt_attention_run(plan, &a, ws, ws_bytes, NULL));
    CHECK(attnrt_stream_synchronize(ctx, NULL));
    double secs = now_s() - t0;

    /* Spot check: the last row of a causal prefill must be finite (full check: attnrt-conform). */
    float last[8];
    CHECK(attnrt_mem_copy_to_host(ctx, last, (char *)out + row_bytes - sizeof last, sizeof last, NULL));
    int finite = 1;
    for (int i = 0; i < 8; i++) finite &= isfinite(last[i]) != 0;

    double tensors_mb = (3.0 * (double)row_bytes + 2.0 * (double)cache_bytes + (double)ws_bytes) / (1 << 20);
    double staging_mb = ((double)row_bytes + (double)n * sizeof(int64_t)) / (1 << 20); /* freed, but counted in the peak */
    double extra_mb = peak_rss_mib() - rss_before - tensors_mb - staging_mb;
    double flops = 4.0 * (double)n * (double)(n + 1) / 2.0 * (double)d;
    printf("long_prefill: %lld tokens, 1 head, D %lld, block %lld on %s: %.2f s, %.1f GFLOP/s\n", (long long)n,
           (long long)d, (long long)bs, attnrt_context_device_name(ctx), secs, flops / secs * 1e-9);
    printf("long_prefill: tensors %.1f MiB, peak memory above them %.1f MiB (limit %.0f MiB); scores matrix "
           "would be %.1f GiB\n", tensors_mb, extra_mb, max_extra_mb,
           (double)n * (double)n * 4 / (1u << 30));

    if (ws) CHECK(attnrt_mem_free(ctx, ws));
    CHECK(attnrt_plan_destroy(plan));
    void *bufs[] = {q, kv_in, kc, vc, out, bt, qsl, seq, sm};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) CHECK(attnrt_mem_free(ctx, bufs[i]));
    free(table);
    CHECK(attnrt_close(ctx));
    CHECK(attnrt_shutdown());
    if (!finite) return fprintf(stderr, "long_prefill: non-finite output\n"), 1;
    return extra_mb > max_extra_mb ? 1 : 0;
}
