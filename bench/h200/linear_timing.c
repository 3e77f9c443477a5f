/* linear_timing.c — lightning / GDN decode timed several ways in one process, next to the device copy
 * ceiling measured in the same run; the differences between the rows say where a single call's fixed
 * cost comes from:
 *   null:       one call on the NULL stream between two events (attnrt-bench --timing single). The ABI
 *               makes the NULL stream synchronous: the plugin waits (cuStreamSynchronize) before it
 *               returns, so the second event is recorded only after the host has woken from that wait;
 *   null_host:  the host clock around that call alone (launch + wait + wake);
 *   idle:       one call on an idle created stream between two events (no wait in the call: the second
 *               event follows the kernel on the device; the host launch is still inside, since the
 *               first event fires at once on an idle device);
 *   idle_wait:  as idle with a stream synchronize between the call and the second event: the NULL
 *               stream's wait reproduced on a created stream (the legacy stream itself vs. the wait);
 *   queued:     on the created stream behind a 128 MiB device copy, between two events (attnrt-bench
 *               --timing queued): the host enqueues while the copy runs, the region is device work only;
 *   stream:     --runs calls back to back on the created stream between two events, per call;
 *   nullop:     a 4-byte attnrt_mem_set on the NULL stream between two events: the fixed cost of any
 *               synchronous NULL-stream call with ~no device work; nullop_queued: the same set queued;
 *   peer_queued: a device copy of the state's bytes (read + written), queued as `queued`: the step's
 *               physical peer (0 when the state is larger than the copy buffers' spare 384 MiB);
 *   launch_us:  the host's time in the run call on the created stream (enqueue only).
 * Each is the median of --iters samples after --warmup calls. The line goes to stderr; --json also
 * prints the figures as one JSON line on stdout. Bytes, as attnrt-bench counts them: the
 * f32 state read + written (2 x 4 B x B x HV x Dk x Dv) plus q, k, v, out (and g, beta).
 *
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -Iruntime/include -Iabi bench/h200/linear_timing.c \
 *       -Lbuild-cuda/runtime -lattnrt -Wl,-rpath,$PWD/build-cuda/runtime -lm -o linear_timing
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TIMING_PROG "linear_timing"
#include "timing_util.h"

typedef struct opts {
    const char    *device;
    int            gdn, iters, warmup, runs, json;
    int64_t        batch, heads, kv_heads, head_dim;
    attnrt_dtype_t dtype;
} opts_t;

/* One decode step of the op on a stream (NULL: the synchronous NULL stream). */
typedef struct step {
    int                       gdn;
    attnrt_plan_t            *plan;
    attnrt_lightning_args_t   la;
    attnrt_gated_delta_args_t ga;
} step_t;

static void step_run(const step_t *s, attnrt_stream_t *stream)
{
    if (s->gdn) TRY(attnrt_gated_delta_run(s->plan, &s->ga, NULL, 0, stream));
    else TRY(attnrt_lightning_run(s->plan, &s->la, NULL, 0, stream));
}

/* ms of `n` steps on `stream` between two events recorded on it. */
static double region_ms(const step_t *s, attnrt_stream_t *stream, int n, attnrt_event_t *e0, attnrt_event_t *e1)
{
    TRY(attnrt_event_record(e0, stream));
    for (int i = 0; i < n; i++) step_run(s, stream);
    TRY(attnrt_event_record(e1, stream));
    float ms = 0.0f;
    TRY(attnrt_event_elapsed_ms(e0, e1, &ms)); /* waits for e1 */
    return (double)ms;
}

static double host_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void *dev_buffer(attnrt_context_t *ctx, size_t n, attnrt_dtype_t dt, int zero)
{
    const size_t es = attnrt_dtype_size(dt), bytes = n * es;
    void *d = NULL;
    TRY(attnrt_mem_alloc(ctx, bytes ? bytes : 1, &d));
    TRY(attnrt_mem_set(ctx, d, 0, bytes, NULL));
    if (zero || !bytes) return d;
    /* values in [-1, 1): f32 as is, 16-bit formats as the upper half of the f32 (bf16) or a rounded f16 */
    unsigned char *h = malloc(bytes);
    if (!h) exit(1);
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        const float x = (float)((double)(r >> 11) * 0x1p-53 * 2.0 - 1.0);
        uint32_t b;
        memcpy(&b, &x, 4);
        if (es == 4) memcpy(h + 4 * i, &x, 4);
        else {
            uint16_t v = (uint16_t)(b >> 16); /* bf16 */
            if (dt.code != ATTNRT_DTYPE_CODE_BFLOAT) { /* f16 of |x| < 1: exponent rebias, zero when tiny */
                const uint32_t e = (b >> 23) & 0xff;
                v = (uint16_t)(((b >> 16) & 0x8000u) | (e > 112 ? ((e - 112) << 10) | ((b >> 13) & 0x3ff) : 0u));
            }
            memcpy(h + 2 * i, &v, 2);
        }
    }
    TRY(attnrt_mem_copy_to_device(ctx, d, h, bytes, NULL));
    free(h);
    return d;
}

static void parse(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->device = "cuda:0";
    o->batch = 64, o->heads = 16, o->kv_heads = 0, o->head_dim = 128;
    o->iters = 30, o->warmup = 5, o->runs = 20;
    o->dtype = ATTNRT_BF16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!v) { fprintf(stderr, "linear_timing: %s needs a value\n", a); exit(2); }
        i++;
        if (!strcmp(a, "--op")) {
            if (!strcmp(v, "gdn_decode")) o->gdn = 1;
            else if (strcmp(v, "lightning_decode")) { fprintf(stderr, "linear_timing: --op %s\n", v); exit(2); }
        } else if (!strcmp(a, "--plugin")) setenv("ATTNRT_PLUGIN", v, 1);
        else if (!strcmp(a, "--device")) o->device = v;
        else if (!strcmp(a, "--batch")) o->batch = atoll(v);
        else if (!strcmp(a, "--heads")) o->heads = atoll(v);
        else if (!strcmp(a, "--kv-heads")) o->kv_heads = atoll(v);
        else if (!strcmp(a, "--head-dim")) o->head_dim = atoll(v);
        else if (!strcmp(a, "--dtype")) o->dtype = !strcmp(v, "f32") ? ATTNRT_F32 : !strcmp(v, "f16") ? ATTNRT_F16 : ATTNRT_BF16;
        else if (!strcmp(a, "--iters")) o->iters = atoi(v);
        else if (!strcmp(a, "--warmup")) o->warmup = atoi(v);
        else if (!strcmp(a, "--runs")) o->runs = atoi(v);
        else { fprintf(stderr, "linear_timing: unknown option %s\n", a); exit(2); }
    }
    if (!o->gdn || o->kv_heads < 1) o->kv_heads = o->heads;
    if (o->iters < 1 || o->iters > 1000) o->iters = 30;
    if (o->runs < 1 || o->runs > 1000) o->runs = 20;
    if (o->batch < 1 || o->batch > INT32_MAX || o->heads < 1 || o->heads % o->kv_heads) {
        fprintf(stderr, "linear_timing: --batch %lld --heads %lld --kv-heads %lld\n", (long long)o->batch,
                (long long)o->heads, (long long)o->kv_heads);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    opts_t o;
    parse(argc, argv, &o);
    attnrt_context_t *ctx = NULL;
    TRY(attnrt_open(o.device, &ctx));
    attnrt_stream_t *stream = NULL;
    attnrt_event_t *e0 = NULL, *e1 = NULL;
    TRY(attnrt_stream_create(ctx, &stream));
    TRY(attnrt_event_create(ctx, &e0));
    TRY(attnrt_event_create(ctx, &e1));

    const int64_t B = o.batch, HV = o.heads, H = o.kv_heads, D = o.head_dim;
    const int64_t slot_shape[3] = {HV, D, D};
    attnrt_state_pool_t *pool = NULL;
    TRY(attnrt_state_pool_create(ctx, ATTNRT_F32, 3, slot_shape, (int32_t)B, &pool));
    int32_t *qsl = malloc(sizeof(int32_t) * (size_t)(B + 1)), *idx = malloc(sizeof(int32_t) * (size_t)B);
    uint8_t *init = malloc((size_t)B);
    if (!qsl || !idx || !init) return 1;
    qsl[0] = 0;
    for (int64_t b = 0; b < B; b++) {
        TRY(attnrt_state_slot_alloc(pool, &idx[b]));
        TRY(attnrt_state_slot_zero(pool, idx[b], NULL));
        qsl[b + 1] = (int32_t)(b + 1), init[b] = 1;
    }
    attnrt_tensor_t tq, tk, tv, tout, tg, tbeta, tslopes, tstate, tqsl, tidx, tinit;
    TRY(attnrt_state_pool_tensor(pool, &tstate));
    const int64_t sqk[3] = {B, H, D}, svo[3] = {B, HV, D}, sgb[2] = {B, HV}, ssl[1] = {H}, sqsl[1] = {B + 1}, sb[1] = {B};
    void *bufs[10] = {
        dev_buffer(ctx, (size_t)(B * H * D), o.dtype, 0), dev_buffer(ctx, (size_t)(B * H * D), o.dtype, 0),
        dev_buffer(ctx, (size_t)(B * HV * D), o.dtype, 0), dev_buffer(ctx, (size_t)(B * HV * D), o.dtype, 1),
        /* g = 0 (no decay) and beta = 0 keep the GDN state bounded over many steps; slopes 0 likewise */
        dev_buffer(ctx, (size_t)(B * HV), o.dtype, 1), dev_buffer(ctx, (size_t)(B * HV), o.dtype, 1),
        dev_buffer(ctx, (size_t)H, ATTNRT_F32, 1), NULL, NULL, NULL};
    TRY(attnrt_mem_alloc(ctx, sizeof(int32_t) * (size_t)(B + 1), &bufs[7]));
    TRY(attnrt_mem_alloc(ctx, sizeof(int32_t) * (size_t)B, &bufs[8]));
    TRY(attnrt_mem_alloc(ctx, (size_t)B, &bufs[9]));
    TRY(attnrt_mem_copy_to_device(ctx, bufs[7], qsl, sizeof(int32_t) * (size_t)(B + 1), NULL));
    TRY(attnrt_mem_copy_to_device(ctx, bufs[8], idx, sizeof(int32_t) * (size_t)B, NULL));
    TRY(attnrt_mem_copy_to_device(ctx, bufs[9], init, (size_t)B, NULL));
    TRY(attnrt_tensor_init(&tq, bufs[0], o.dtype, 3, sqk));
    TRY(attnrt_tensor_init(&tk, bufs[1], o.dtype, 3, sqk));
    TRY(attnrt_tensor_init(&tv, bufs[2], o.dtype, 3, svo));
    TRY(attnrt_tensor_init(&tout, bufs[3], o.dtype, 3, svo));
    TRY(attnrt_tensor_init(&tg, bufs[4], o.dtype, 2, sgb));
    TRY(attnrt_tensor_init(&tbeta, bufs[5], o.dtype, 2, sgb));
    TRY(attnrt_tensor_init(&tslopes, bufs[6], ATTNRT_F32, 1, ssl));
    TRY(attnrt_tensor_init(&tqsl, bufs[7], ATTNRT_I32, 1, sqsl));
    TRY(attnrt_tensor_init(&tidx, bufs[8], ATTNRT_I32, 1, sb));
    TRY(attnrt_tensor_init(&tinit, bufs[9], ATTNRT_U8, 1, sb));
    const attnrt_batch_host_t batch = {.struct_size = sizeof batch, .num_seqs = (int32_t)B, .query_start_loc = qsl};
    const attnrt_state_host_t states = {.struct_size = sizeof states, .state_indices = idx, .has_initial_state = init};
    step_t s = {.gdn = o.gdn};
    if (o.gdn) {
        s.ga = (attnrt_gated_delta_args_t){.struct_size = sizeof s.ga, .query = &tq, .key = &tk, .value = &tv, .g = &tg,
                                           .beta = &tbeta, .out = &tout, .state = &tstate, .query_start_loc = &tqsl,
                                           .state_indices = &tidx, .has_initial_state = &tinit, .use_l2norm = 1};
        TRY(attnrt_gated_delta_plan(ctx, &s.ga, &batch, &states, pool, &s.plan));
    } else {
        s.la = (attnrt_lightning_args_t){.struct_size = sizeof s.la, .query = &tq, .key = &tk, .value = &tv,
                                         .out = &tout, .slopes = &tslopes, .state = &tstate, .query_start_loc = &tqsl,
                                         .state_indices = &tidx, .has_initial_state = &tinit};
        TRY(attnrt_lightning_plan(ctx, &s.la, &batch, &states, pool, &s.plan));
    }
    size_t ws = 0;
    TRY(attnrt_plan_workspace_size(s.plan, &ws));
    if (ws) { fprintf(stderr, "linear_timing: the plan asks for %zu workspace bytes (none expected)\n", ws); return 1; }

    const size_t copy_bytes = (size_t)512 << 20;
    void *ca = NULL, *cb = NULL;
    TRY(attnrt_mem_alloc(ctx, copy_bytes, &ca));
    TRY(attnrt_mem_alloc(ctx, copy_bytes, &cb));
    TRY(attnrt_mem_set(ctx, ca, 0x3c, copy_bytes, NULL));

    enum { NULL_EV, NULL_HOST, IDLE, IDLE_WAIT, QUEUED, STREAM, NULLOP, NULLOP_QUEUED, PEER_QUEUED, LAUNCH_US, MEM, NROWS };
    static const char *const names[NROWS] = {"null", "null_host", "idle", "idle_wait", "queued", "stream",
                                             "nullop", "nullop_queued", "peer_queued", "launch_us", "mem_gb_per_s"};
    double *t[NROWS];
    for (int r = 0; r < NROWS; r++)
        if (!(t[r] = malloc(sizeof(double) * (size_t)o.iters))) return 1;
    attnrt_event_t *e2 = NULL;
    TRY(attnrt_event_create(ctx, &e2));
    const size_t queue_bytes = (size_t)128 << 20; /* the device copy in front of a queued call */
    void *tiny = NULL;
    TRY(attnrt_mem_alloc(ctx, 256, &tiny));
    const size_t peer_bytes = (size_t)(4 * B * HV * D * D); /* read + written: the state's bytes */
    const int peer_ok = peer_bytes <= copy_bytes - queue_bytes; /* else the peer row reads 0 */
    for (int i = 0; i < o.warmup; i++) step_run(&s, NULL), step_run(&s, stream);
    TRY(attnrt_stream_synchronize(ctx, stream));
    float ms = 0.0f;
    for (int i = 0; i < o.iters; i++) { /* interleaved: each sample sees the same machine state */
        t[NULL_EV][i] = region_ms(&s, NULL, 1, e0, e1);
        double h = host_ms();
        step_run(&s, NULL);
        t[NULL_HOST][i] = host_ms() - h;
        t[IDLE][i] = region_ms(&s, stream, 1, e0, e1);
        TRY(attnrt_event_record(e0, stream));
        step_run(&s, stream);
        TRY(attnrt_stream_synchronize(ctx, stream));
        TRY(attnrt_event_record(e1, stream));
        TRY(attnrt_event_elapsed_ms(e0, e1, &ms));
        t[IDLE_WAIT][i] = ms;
        TRY(attnrt_mem_copy_on_device(ctx, cb, ca, queue_bytes, stream));
        TRY(attnrt_event_record(e0, stream));
        h = host_ms();
        step_run(&s, stream);
        t[LAUNCH_US][i] = (host_ms() - h) * 1e3;
        TRY(attnrt_event_record(e1, stream));
        TRY(attnrt_event_elapsed_ms(e0, e1, &ms));
        t[QUEUED][i] = ms;
        t[STREAM][i] = region_ms(&s, stream, o.runs, e0, e1) / o.runs;
        TRY(attnrt_event_record(e0, NULL));
        TRY(attnrt_mem_set(ctx, tiny, i & 0xff, 4, NULL));
        TRY(attnrt_event_record(e1, NULL));
        TRY(attnrt_event_elapsed_ms(e0, e1, &ms));
        t[NULLOP][i] = ms;
        TRY(attnrt_mem_copy_on_device(ctx, cb, ca, queue_bytes, stream));
        TRY(attnrt_event_record(e0, stream));
        TRY(attnrt_mem_set(ctx, tiny, i & 0xff, 4, stream));
        TRY(attnrt_event_record(e1, stream));
        TRY(attnrt_event_elapsed_ms(e0, e1, &ms));
        t[NULLOP_QUEUED][i] = ms;
        /* the step's physical peer: a device copy that reads and writes the state's bytes, queued the same way
         * (its own buffers, past the copy in front's) */
        t[PEER_QUEUED][i] = 0.0;
        if (peer_ok) {
            TRY(attnrt_mem_copy_on_device(ctx, cb, ca, queue_bytes, stream));
            TRY(attnrt_event_record(e0, stream));
            TRY(attnrt_mem_copy_on_device(ctx, (char *)cb + queue_bytes, (char *)ca + queue_bytes, peer_bytes, stream));
            TRY(attnrt_event_record(e1, stream));
            TRY(attnrt_event_elapsed_ms(e0, e1, &ms));
            t[PEER_QUEUED][i] = ms;
        }
        t[MEM][i] = timing_copy_gbs(ctx, cb, ca, copy_bytes, stream, e0, e2);
    }
    double med[NROWS];
    for (int r = 0; r < NROWS; r++) med[r] = timing_median(t[r], o.iters);
    const double ceil = med[MEM];
    const double es = (double)attnrt_dtype_size(o.dtype);
    const double bytes = 8.0 * (double)B * (double)HV * (double)D * (double)D +
                         (double)B * (2.0 * (double)H * (double)D + 2.0 * (double)HV * (double)D) * es +
                         (o.gdn ? 2.0 * (double)B * (double)HV * es : 0.0);
    const char *op = o.gdn ? "gdn_decode" : "lightning_decode";
    fprintf(stderr, "linear_timing %s B %lld HV %lld H %lld D %lld (%.1f MB), copy ceiling %.0f GB/s; medians, us "
            "(%% of the ceiling):\n", op, (long long)B, (long long)HV, (long long)H, (long long)D, bytes * 1e-6, ceil);
    for (int r = 0; r < NROWS - 1; r++) {
        const double us = r == LAUNCH_US ? med[r] : med[r] * 1e3;
        if (r == LAUNCH_US || r == NULLOP || r == NULLOP_QUEUED || us <= 0.0) fprintf(stderr, "  %-13s %8.1f\n", names[r], us);
        else fprintf(stderr, "  %-13s %8.1f  (%.1f%%)\n", names[r], us, 100.0 * bytes / (us * 1e-6) * 1e-9 / ceil);
    }
    if (o.json) {
        printf("{\"tool\": \"linear_timing\", \"op\": \"%s\", \"batch\": %lld, \"heads\": %lld, \"kv_heads\": %lld, "
               "\"head_dim\": %lld, \"bytes\": %.6g, \"runs_per_region\": %d, \"iters\": %d, \"mem_gb_per_s\": %.6g",
               op, (long long)B, (long long)HV, (long long)H, (long long)D, bytes, o.runs, o.iters, ceil);
        for (int r = 0; r < NROWS - 1; r++) {
            const double us = r == LAUNCH_US ? med[r] : med[r] * 1e3;
            printf(", \"%s_us\": %.4g", r == LAUNCH_US ? "launch" : names[r], us);
            if (r != LAUNCH_US && r != NULLOP && r != NULLOP_QUEUED && us > 0.0) /* peer_queued 0: not run */
                printf(", \"%s_fraction_of_mem\": %.4f", names[r], bytes / (us * 1e-6) * 1e-9 / ceil);
        }
        printf("}\n");
    }

    for (int r = 0; r < NROWS; r++) free(t[r]);
    TRY(attnrt_mem_free(ctx, tiny));
    attnrt_event_destroy(e2);
    TRY(attnrt_plan_destroy(s.plan));
    for (int i = 0; i < 10; i++) TRY(attnrt_mem_free(ctx, bufs[i]));
    TRY(attnrt_mem_free(ctx, ca));
    TRY(attnrt_mem_free(ctx, cb));
    TRY(attnrt_state_pool_destroy(pool));
    attnrt_event_destroy(e0);
    attnrt_event_destroy(e1);
    attnrt_stream_destroy(stream);
    TRY(attnrt_close(ctx));
    attnrt_shutdown();
    free(qsl), free(idx), free(init);
    return 0;
}
