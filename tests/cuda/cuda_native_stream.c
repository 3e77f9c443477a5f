/* cuda_native_stream — the engine's own CUstream and CUevent on the cuda plugin (attnrt_stream_wrap,
 * attnrt_event_wrap, attnrt_stream_wait_event, the native handles back), checked against the float64 reference.
 * Not a CI test (it needs a GPU). Built by meson with -Dcuda=enabled (tests/cuda/cuda_native_stream), or on the
 * device from the repository root with a build's libattnrt in $BUILD:
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -Iruntime/include -Iabi -Itests/reference -I/usr/local/cuda/include \
 *       tests/cuda/cuda_native_stream.c tests/reference/ref_*.c -L$BUILD/runtime -Wl,-rpath,$BUILD/runtime \
 *       -lattnrt -ldl -lm -o /tmp/cuda_native_stream
 *
 * The engine's stream is a CUstream this program creates on device 0's primary context (where torch and the CUDA
 * runtime work), wrapped with attnrt_stream_wrap. One batch (bf16, three decode rows and a prefill chunk, GQA,
 * shuffled blocks): kv_write of the step's tokens, then paged attention; its float64 reference once.
 *   1. handles: the wrapper's native handle is the engine's stream, the NULL stream's is the legacy default (0), a
 *      stream of another CUDA context is refused;
 *   2. no host synchronisation: a host function (cuLaunchHostFunc) holds the engine's stream; mem_set, kv_write,
 *      attention_run, event_record and stream_wait_event on the wrapped stream all return while it is held (a
 *      call that waited would sit until the hold times out); released, the result matches the reference;
 *   3. two streams: work on a created stream waits (attnrt_stream_wait_event) for an event recorded after the
 *      kv_write on the held engine stream: it must not start before the hold ends, and it reads the new rows;
 *   4. a native CUevent wrapped: the engine records it, a libattnrt stream waits on it, and the engine's stream
 *      waits on a libattnrt event exported with attnrt_event_native;
 *   5. graph capture on the engine's stream (cuStreamBeginCapture on the native stream, the attnrt calls on the
 *      wrapper), instantiated and launched twice, each against the reference;
 *   6. destroying the wrappers leaves the engine's stream and event alive (the program destroys them itself).
 * Prints a PASSED / FAILED line per check; exit 0 when all pass, 1 otherwise, 77 when there is no CUDA device. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_capture_util.h"
#include "reference.h"

#define B 4
#define HQ 16
#define HKV 4
#define D 128
#define BS 16
#define MAX_BLOCKS 24
#define NUM_BLOCKS (B * MAX_BLOCKS + 5)
#define HOLD_TIMEOUT_S 10.0 /* a call that waited for a held stream returns only after this */

/* The Driver API calls of the engine's side, beside graph_capture_util.h's graph entries. */
static struct {
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDevicePrimaryCtxRetain) retain;
    __typeof__(&cuDevicePrimaryCtxRelease) release;
    __typeof__(&cuCtxSetCurrent) set_current;
    __typeof__(&cuStreamCreate) stream_create;
    __typeof__(&cuStreamDestroy) stream_destroy;
    __typeof__(&cuStreamQuery) stream_query;
    __typeof__(&cuStreamWaitEvent) stream_wait_event;
    __typeof__(&cuEventCreate) event_create;
    __typeof__(&cuEventDestroy) event_destroy;
    __typeof__(&cuEventRecord) event_record;
    __typeof__(&cuEventQuery) event_query;
    __typeof__(&cuLaunchHostFunc) launch_host_func;
    CUresult (*ctx_create)(CUcontext *, unsigned int, CUdevice); /* cuCtxCreate_v2, optional: the foreign context */
    __typeof__(&cuCtxDestroy) ctx_destroy; /* optional */
} eng;

static void load_engine_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    const struct { const char *name; void *slot; int optional; } syms[] = {
        {"cuDeviceGet", &eng.device_get, 0},           {"cuDevicePrimaryCtxRetain", &eng.retain, 0},
        {"cuDevicePrimaryCtxRelease_v2", &eng.release, 0}, {"cuCtxSetCurrent", &eng.set_current, 0},
        {"cuStreamCreate", &eng.stream_create, 0},     {"cuStreamDestroy_v2", &eng.stream_destroy, 0},
        {"cuStreamQuery", &eng.stream_query, 0},       {"cuStreamWaitEvent", &eng.stream_wait_event, 0},
        {"cuEventCreate", &eng.event_create, 0},       {"cuEventDestroy_v2", &eng.event_destroy, 0},
        {"cuEventRecord", &eng.event_record, 0},       {"cuEventQuery", &eng.event_query, 0},
        {"cuLaunchHostFunc", &eng.launch_host_func, 0}, {"cuCtxCreate_v2", &eng.ctx_create, 1},
        {"cuCtxDestroy_v2", &eng.ctx_destroy, 1},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = lib ? dlsym(lib, syms[i].name) : NULL;
        if (!p && !syms[i].optional) {
            fprintf(stderr, "cuda_native_stream: libcuda.so.1 has no %s\n", syms[i].name);
            exit(1);
        }
        memcpy(syms[i].slot, &p, sizeof p);
    }
}

static int failures;
static void report(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASSED" : "FAILED", what);
    failures += !ok;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A hold on a stream: a host function that blocks the stream until released (or HOLD_TIMEOUT_S passed). */
typedef struct hold {
    atomic_int open, entered, timed_out;
} hold_t;

static void CUDA_CB hold_fn(void *p)
{
    hold_t *h = p;
    atomic_store(&h->entered, 1);
    const double t0 = now_s();
    const struct timespec nap = {0, 200000};
    while (!atomic_load(&h->open)) {
        if (now_s() - t0 > HOLD_TIMEOUT_S) {
            atomic_store(&h->timed_out, 1);
            return;
        }
        nanosleep(&nap, NULL);
    }
}

static void hold_start(hold_t *h, CUstream s)
{
    atomic_store(&h->open, 0);
    atomic_store(&h->entered, 0);
    atomic_store(&h->timed_out, 0);
    CHECK_CU(eng.launch_host_func(s, hold_fn, h), "cuLaunchHostFunc");
}

/* After a call on a held stream: it returned promptly and the stream is still held. */
static int still_held(const hold_t *h, CUstream s, double t0, const char *call)
{
    const double took = now_s() - t0;
    const CUresult q = eng.stream_query(s);
    if (atomic_load(&h->timed_out) || q != CUDA_ERROR_NOT_READY || took > HOLD_TIMEOUT_S / 4) {
        printf("  %s returned after %.3f s; stream %s, hold %s\n", call, took,
               q == CUDA_ERROR_NOT_READY ? "still held" : "drained", atomic_load(&h->timed_out) ? "timed out" : "on");
        return 0;
    }
    return 1;
}

/* The batch on the host and on the device. */
typedef struct problem {
    int32_t  qsl[B + 1], seq[B], table[B * MAX_BLOCKS];
    int64_t *slots;
    int      T;
    uint16_t *h_kc, *h_vc, *h_q, *h_k, *h_v; /* bf16 host copies: initial caches, query, the step's k and v */
    size_t   cache_elems, q_elems, kv_elems;
    double  *ref_out;                       /* [T, HQ, D] */
    void    *d_kc, *d_vc, *d_q, *d_k, *d_v, *d_out, *d_table, *d_qsl, *d_seq, *d_slots, *ws;
    size_t   ws_bytes;
    attnrt_tensor_t tq, tk, tv, tkc, tvc, tbt, tqsl, tseq, tout, tslots;
    attnrt_kv_write_args_t  kw;
    attnrt_attention_args_t aa;
    attnrt_plan_t          *plan;
} problem_t;

static double *bf16_to_doubles(const uint16_t *h, size_t n)
{
    double *d = malloc(n * sizeof *d);
    if (!d) exit(1);
    for (size_t i = 0; i < n; i++) d[i] = ref_bf16_to_double(h[i]);
    return d;
}

static void build(attnrt_context_t *ctx, problem_t *p)
{
    const int32_t q_len[B] = {1, 1, 1, 29}, kv_len[B] = {333, 17, 201, 64};
    p->qsl[0] = 0;
    for (int b = 0; b < B; b++) p->qsl[b + 1] = p->qsl[b] + q_len[b], p->seq[b] = kv_len[b];
    p->T = p->qsl[B];
    int perm[NUM_BLOCKS];
    for (int i = 0; i < NUM_BLOCKS; i++) perm[i] = i;
    for (int i = NUM_BLOCKS - 1; i > 0; i--) {
        int j = (int)((0.5 * (frand() + 1.0)) * (i + 1)) % (i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int i = 0; i < B * MAX_BLOCKS; i++) p->table[i] = perm[i];
    p->slots = malloc(sizeof(int64_t) * (size_t)p->T);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < q_len[b]; i++) {
            int pos = kv_len[b] - q_len[b] + i;
            p->slots[p->qsl[b] + i] = (int64_t)p->table[b * MAX_BLOCKS + pos / BS] * BS + pos % BS;
        }
    p->cache_elems = (size_t)NUM_BLOCKS * BS * HKV * D, p->q_elems = (size_t)p->T * HQ * D;
    p->kv_elems = (size_t)p->T * HKV * D;
    p->h_kc = malloc(p->cache_elems * 2), p->h_vc = malloc(p->cache_elems * 2), p->h_q = malloc(p->q_elems * 2);
    p->h_k = malloc(p->kv_elems * 2), p->h_v = malloc(p->kv_elems * 2);
    p->ref_out = malloc(p->q_elems * sizeof(double));
    if (!p->slots || !p->h_kc || !p->h_vc || !p->h_q || !p->h_k || !p->h_v || !p->ref_out) exit(1);
    fill_bf16(p->h_kc, p->cache_elems), fill_bf16(p->h_vc, p->cache_elems), fill_bf16(p->h_q, p->q_elems);
    fill_bf16(p->h_k, p->kv_elems), fill_bf16(p->h_v, p->kv_elems);

    /* the reference: kv_write into the initial caches, then attention over them */
    double *kc = bf16_to_doubles(p->h_kc, p->cache_elems), *vc = bf16_to_doubles(p->h_vc, p->cache_elems);
    double *q = bf16_to_doubles(p->h_q, p->q_elems), *k = bf16_to_doubles(p->h_k, p->kv_elems);
    double *v = bf16_to_doubles(p->h_v, p->kv_elems);
    ref_kv_write(p->T, HKV, D, D, k, v, p->slots, BS, kc, vc);
    ref_attention_problem r;
    memset(&r, 0, sizeof r);
    r.num_seqs = B, r.query_start_loc = p->qsl, r.seq_lens = p->seq, r.num_q_heads = HQ, r.num_kv_heads = HKV;
    r.head_dim_qk = D, r.head_dim_v = D, r.q = q, r.k_cache = kc, r.v_cache = vc, r.num_blocks = NUM_BLOCKS;
    r.block_size = BS, r.block_table = p->table, r.max_blocks_per_seq = MAX_BLOCKS, r.scale = 1.0 / sqrt((double)D);
    r.causal = 1, r.window_left = -1, r.window_right = -1, r.out = p->ref_out;
    ref_paged_attention(&r);
    free(kc), free(vc), free(q), free(k), free(v);

    p->d_kc = dev_alloc(ctx, p->cache_elems * 2), p->d_vc = dev_alloc(ctx, p->cache_elems * 2);
    p->d_q = dev_alloc(ctx, p->q_elems * 2), p->d_out = dev_alloc(ctx, p->q_elems * 2);
    p->d_k = dev_alloc(ctx, p->kv_elems * 2), p->d_v = dev_alloc(ctx, p->kv_elems * 2);
    p->d_table = dev_alloc(ctx, sizeof p->table), p->d_qsl = dev_alloc(ctx, sizeof p->qsl);
    p->d_seq = dev_alloc(ctx, sizeof p->seq), p->d_slots = dev_alloc(ctx, sizeof(int64_t) * (size_t)p->T);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_q, p->h_q, p->q_elems * 2, NULL), "upload q");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_k, p->h_k, p->kv_elems * 2, NULL), "upload k");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_v, p->h_v, p->kv_elems * 2, NULL), "upload v");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_table, p->table, sizeof p->table, NULL), "upload table");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_qsl, p->qsl, sizeof p->qsl, NULL), "upload qsl");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_seq, p->seq, sizeof p->seq, NULL), "upload seq_lens");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_slots, p->slots, sizeof(int64_t) * (size_t)p->T, NULL), "upload slots");

    const int64_t s_q[3] = {p->T, HQ, D}, s_kv[3] = {p->T, HKV, D}, s_cache[4] = {NUM_BLOCKS, BS, HKV, D};
    const int64_t s_bt[2] = {B, MAX_BLOCKS}, s_qsl[1] = {B + 1}, s_b[1] = {B}, s_t[1] = {p->T};
    tensor(&p->tq, p->d_q, ATTNRT_BF16, 3, s_q), tensor(&p->tout, p->d_out, ATTNRT_BF16, 3, s_q);
    tensor(&p->tk, p->d_k, ATTNRT_BF16, 3, s_kv), tensor(&p->tv, p->d_v, ATTNRT_BF16, 3, s_kv);
    tensor(&p->tkc, p->d_kc, ATTNRT_BF16, 4, s_cache), tensor(&p->tvc, p->d_vc, ATTNRT_BF16, 4, s_cache);
    tensor(&p->tbt, p->d_table, ATTNRT_I32, 2, s_bt), tensor(&p->tqsl, p->d_qsl, ATTNRT_I32, 1, s_qsl);
    tensor(&p->tseq, p->d_seq, ATTNRT_I32, 1, s_b), tensor(&p->tslots, p->d_slots, ATTNRT_I64, 1, s_t);
    memset(&p->kw, 0, sizeof p->kw);
    p->kw.struct_size = sizeof p->kw, p->kw.key = &p->tk, p->kw.value = &p->tv, p->kw.slot_mapping = &p->tslots;
    p->kw.key_cache = &p->tkc, p->kw.value_cache = &p->tvc;
    memset(&p->aa, 0, sizeof p->aa);
    p->aa.struct_size = sizeof p->aa, p->aa.query = &p->tq, p->aa.key_cache = &p->tkc, p->aa.value_cache = &p->tvc;
    p->aa.block_table = &p->tbt, p->aa.query_start_loc = &p->tqsl, p->aa.seq_lens = &p->tseq, p->aa.out = &p->tout;
    p->aa.causal = 1;
    attnrt_batch_host_t bh = {.struct_size = sizeof bh, .num_seqs = B, .query_start_loc = p->qsl,
                              .seq_lens = p->seq, .block_table = p->table, .block_table_stride = MAX_BLOCKS};
    CHECK_AT(attnrt_attention_plan(ctx, &p->aa, &bh, &p->plan), "attnrt_attention_plan");
    CHECK_AT(attnrt_plan_workspace_size(p->plan, &p->ws_bytes), "attnrt_plan_workspace_size");
    p->ws = p->ws_bytes ? dev_alloc(ctx, p->ws_bytes) : NULL;
}

/* The caches as before the step's kv_write, out poisoned (NaN): every check starts from here. */
static void reset(attnrt_context_t *ctx, problem_t *p)
{
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_kc, p->h_kc, p->cache_elems * 2, NULL), "reset K cache");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, p->d_vc, p->h_vc, p->cache_elems * 2, NULL), "reset V cache");
    CHECK_AT(attnrt_mem_set(ctx, p->d_out, 0xff, p->q_elems * 2, NULL), "poison out");
}

/* out (after the work is complete) against the float64 reference: bf16 output, f32 accumulation. */
static int matches_reference(attnrt_context_t *ctx, const problem_t *p, const char *what)
{
    uint16_t *out = malloc(p->q_elems * 2);
    if (!out) exit(1);
    CHECK_AT(attnrt_mem_copy_to_host(ctx, out, p->d_out, p->q_elems * 2, NULL), "download out");
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < p->q_elems; i++) {
        const double got = ref_bf16_to_double(out[i]), want = p->ref_out[i], err = fabs(got - want);
        if (!(err <= 1e-2 + 1e-2 * fabs(want))) bad++;
        if (err > worst || err != err) worst = err;
    }
    free(out);
    printf("  %s: max |out - reference| = %.3g, %zu of %zu outside 1e-2 + 1e-2 |ref|\n", what, worst, bad, p->q_elems);
    return bad == 0;
}

static attnrt_status_t step(problem_t *p, attnrt_context_t *ctx, attnrt_stream_t *s)
{
    attnrt_status_t st = attnrt_kv_write(ctx, &p->kw, s);
    return st == ATTNRT_OK ? attnrt_attention_run(p->plan, &p->aa, p->ws, p->ws_bytes, s) : st;
}

int main(void)
{
    attnrt_stream_t *side = NULL; /* a stream libattnrt created */
    attnrt_context_t *ctx = open_cuda_or_skip("cuda_native_stream", &side);
    load_engine_driver();

    /* the engine: device 0's primary context, its own non-blocking stream and event */
    CUdevice dev;
    CUcontext primary = NULL;
    CHECK_CU(eng.device_get(&dev, 0), "cuDeviceGet");
    CHECK_CU(eng.retain(&primary, dev), "cuDevicePrimaryCtxRetain");
    CHECK_CU(eng.set_current(primary), "cuCtxSetCurrent");
    CUstream engine = NULL;
    CUevent engine_event = NULL;
    CHECK_CU(eng.stream_create(&engine, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    CHECK_CU(eng.event_create(&engine_event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");

    const char *seed_env = getenv("ATTNRT_TEST_SEED"); /* fresh inputs each run; the seed repeats one */
    const uint64_t seed = seed_env && seed_env[0] ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    rng = seed ? seed : 1;
    printf("cuda_native_stream: seed %llu (ATTNRT_TEST_SEED repeats a run)\n", (unsigned long long)seed);
    problem_t p;
    memset(&p, 0, sizeof p);
    build(ctx, &p);
    printf("cuda_native_stream: T=%d B=%d Hq=%d Hkv=%d D=%d block %d, bf16, workspace %zu bytes\n", p.T, B, HQ, HKV, D,
           BS, p.ws_bytes);

    /* 1. handles */
    attnrt_stream_t *wrapped = NULL;
    CHECK_AT(attnrt_stream_wrap(ctx, engine, &wrapped), "attnrt_stream_wrap");
    void *native = NULL;
    CHECK_AT(attnrt_stream_native(ctx, wrapped, &native), "attnrt_stream_native");
    int ok = native == (void *)engine;
    CHECK_AT(attnrt_stream_native(ctx, NULL, &native), "attnrt_stream_native(NULL)");
    ok &= native == NULL;
    attnrt_stream_t *legacy = NULL; /* torch's default stream reports 0: the legacy default stream */
    CHECK_AT(attnrt_stream_wrap(ctx, NULL, &legacy), "attnrt_stream_wrap(NULL)");
    native = (void *)1;
    CHECK_AT(attnrt_stream_native(ctx, legacy, &native), "attnrt_stream_native(legacy)");
    ok &= native == NULL;
    CHECK_AT(attnrt_stream_destroy(legacy), "attnrt_stream_destroy(legacy)");
    report(ok, "1. handles: the wrapper's native stream is the engine's; the NULL stream's and a wrapped 0 are 0");
    if (eng.ctx_create && eng.ctx_destroy) {
        CUcontext other = NULL;
        CUstream foreign = NULL;
        CHECK_CU(eng.ctx_create(&other, 0, dev), "cuCtxCreate");
        CHECK_CU(eng.stream_create(&foreign, CU_STREAM_NON_BLOCKING), "cuStreamCreate (other context)");
        attnrt_stream_t *refused = NULL;
        attnrt_status_t st = attnrt_stream_wrap(ctx, foreign, &refused);
        printf("  a stream of another CUDA context: %s: %s\n", attnrt_status_name(st), attnrt_last_error());
        report(st == ATTNRT_ERR_INVALID_ARGUMENT && strstr(attnrt_last_error(), "primary context") && !refused,
               "1. a stream of another CUDA context is refused, naming the primary context");
        eng.stream_destroy(foreign);
        eng.ctx_destroy(other);
        CHECK_CU(eng.set_current(primary), "cuCtxSetCurrent");
    }

    /* 2. no host synchronisation on the wrapped stream */
    reset(ctx, &p);
    attnrt_event_t *done = NULL, *side_mark = NULL;
    CHECK_AT(attnrt_event_create(ctx, &done), "attnrt_event_create");
    CHECK_AT(attnrt_event_create(ctx, &side_mark), "attnrt_event_create");
    CHECK_AT(attnrt_event_record(side_mark, side), "attnrt_event_record(side)");
    hold_t hold;
    memset(&hold, 0, sizeof hold);
    hold_start(&hold, engine);
    double t0 = now_s();
    ok = 1;
    CHECK_AT(attnrt_mem_set(ctx, p.d_out, 0xff, p.q_elems * 2, wrapped), "attnrt_mem_set (held)");
    ok &= still_held(&hold, engine, t0, "attnrt_mem_set");
    CHECK_AT(attnrt_stream_wait_event(wrapped, side_mark), "attnrt_stream_wait_event (held)");
    ok &= still_held(&hold, engine, t0, "attnrt_stream_wait_event");
    CHECK_AT(attnrt_kv_write(ctx, &p.kw, wrapped), "attnrt_kv_write (held)");
    ok &= still_held(&hold, engine, t0, "attnrt_kv_write");
    CHECK_AT(attnrt_attention_run(p.plan, &p.aa, p.ws, p.ws_bytes, wrapped), "attnrt_attention_run (held)");
    ok &= still_held(&hold, engine, t0, "attnrt_attention_run");
    CHECK_AT(attnrt_event_record(done, wrapped), "attnrt_event_record (held)");
    ok &= still_held(&hold, engine, t0, "attnrt_event_record");
    const double queued = now_s() - t0;
    atomic_store(&hold.open, 1);
    CHECK_AT(attnrt_event_synchronize(done), "attnrt_event_synchronize");
    ok &= !atomic_load(&hold.timed_out) && eng.stream_query(engine) == CUDA_SUCCESS;
    printf("  five calls queued on the held stream in %.3f ms\n", 1e3 * queued);
    report(ok, "2. no host synchronisation: every call on the wrapped stream returned while it was held");
    report(matches_reference(ctx, &p, "wrapped stream"), "2. kv_write + attention on the wrapped stream == reference");

    /* 3. two streams ordered by an event: the side stream's attention waits for the engine stream's kv_write */
    reset(ctx, &p);
    const CUstream side_native = native_stream(ctx, side);
    hold_start(&hold, engine);
    CHECK_AT(attnrt_kv_write(ctx, &p.kw, wrapped), "attnrt_kv_write (engine stream)");
    CHECK_AT(attnrt_event_record(done, wrapped), "attnrt_event_record (engine stream)");
    CHECK_AT(attnrt_stream_wait_event(side, done), "attnrt_stream_wait_event (side waits for engine)");
    CHECK_AT(attnrt_attention_run(p.plan, &p.aa, p.ws, p.ws_bytes, side), "attnrt_attention_run (side)");
    const struct timespec settle = {0, 50 * 1000 * 1000};
    nanosleep(&settle, NULL);
    ok = eng.stream_query(side_native) == CUDA_ERROR_NOT_READY; /* the side stream waits for the held one */
    atomic_store(&hold.open, 1);
    CHECK_AT(attnrt_stream_synchronize(ctx, side), "attnrt_stream_synchronize(side)");
    ok &= !atomic_load(&hold.timed_out);
    report(ok, "3. the side stream waited for an event recorded on the held engine stream");
    report(matches_reference(ctx, &p, "engine kv_write -> side attention"), "3. the side stream read the new rows");

    /* 4. the engine's CUevent wrapped; the engine waits on libattnrt's event through its native handle */
    reset(ctx, &p);
    attnrt_event_t *wrapped_event = NULL;
    CHECK_AT(attnrt_event_wrap(ctx, engine_event, &wrapped_event), "attnrt_event_wrap");
    CHECK_AT(attnrt_event_native(wrapped_event, &native), "attnrt_event_native");
    ok = native == (void *)engine_event;
    hold_start(&hold, engine);
    CHECK_AT(attnrt_kv_write(ctx, &p.kw, wrapped), "attnrt_kv_write (engine stream)");
    CHECK_CU(eng.event_record(engine_event, engine), "cuEventRecord (engine)");
    CHECK_AT(attnrt_stream_wait_event(side, wrapped_event), "attnrt_stream_wait_event (wrapped CUevent)");
    CHECK_AT(attnrt_attention_run(p.plan, &p.aa, p.ws, p.ws_bytes, side), "attnrt_attention_run (side)");
    CHECK_AT(attnrt_event_record(done, side), "attnrt_event_record (side)");
    CHECK_AT(attnrt_event_native(done, &native), "attnrt_event_native (created)");
    CHECK_CU(eng.stream_wait_event(engine, (CUevent)native, 0), "cuStreamWaitEvent (engine waits for libattnrt)");
    nanosleep(&settle, NULL);
    ok &= eng.stream_query(side_native) == CUDA_ERROR_NOT_READY;
    atomic_store(&hold.open, 1);
    CHECK_AT(attnrt_event_synchronize(wrapped_event), "attnrt_event_synchronize (wrapped)");
    CHECK_AT(attnrt_stream_synchronize(ctx, wrapped), "attnrt_stream_synchronize (engine, after libattnrt's event)");
    ok &= !atomic_load(&hold.timed_out) && eng.stream_query(side_native) == CUDA_SUCCESS;
    report(ok, "4. a wrapped CUevent orders libattnrt after the engine; the engine waits on attnrt_event_native");
    report(matches_reference(ctx, &p, "wrapped CUevent"), "4. the side stream read the new rows");

    /* 5. graph capture on the wrapped stream: capture once, launch twice */
    reset(ctx, &p);
    CHECK_CU(cu.begin(engine, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture (engine stream)");
    attnrt_status_t st = step(&p, ctx, wrapped);
    CUgraph graph = NULL;
    CUresult end = cu.end(engine, &graph);
    CHECK_AT(st, "kv_write + attention_run while capturing on the wrapped stream");
    CHECK_CU(end, "cuStreamEndCapture");
    size_t nodes = 0;
    CHECK_CU(cu.nodes(graph, NULL, &nodes), "cuGraphGetNodes");
    CUgraphExec exec = NULL;
    CHECK_CU(cu.instantiate(&exec, graph, 0), "cuGraphInstantiate");
    printf("  captured on the wrapped stream: %zu nodes\n", nodes);
    reset(ctx, &p); /* nothing ran during capture: still, start the launches from the initial caches */
    CHECK_CU(cu.launch(exec, engine), "cuGraphLaunch (1)");
    CHECK_CU(cu.sync(engine), "cuStreamSynchronize");
    report(matches_reference(ctx, &p, "graph launch 1"), "5. graph captured on the wrapped stream, launch 1 == reference");
    CHECK_AT(attnrt_mem_set(ctx, p.d_out, 0xff, p.q_elems * 2, NULL), "poison out");
    CHECK_CU(cu.launch(exec, engine), "cuGraphLaunch (2)");
    CHECK_CU(cu.sync(engine), "cuStreamSynchronize");
    report(matches_reference(ctx, &p, "graph launch 2"), "5. launch 2 == reference");
    cu.exec_destroy(exec);
    cu.destroy(graph);

    /* 6. the wrappers go; the engine's stream and event stay alive and usable */
    CHECK_AT(attnrt_event_destroy(wrapped_event), "attnrt_event_destroy (wrapped)");
    CHECK_AT(attnrt_stream_destroy(wrapped), "attnrt_stream_destroy (wrapped)");
    CUresult r1 = eng.event_record(engine_event, engine), r2 = cu.sync(engine), r3 = eng.event_query(engine_event);
    report(r1 == CUDA_SUCCESS && r2 == CUDA_SUCCESS && r3 == CUDA_SUCCESS,
           "6. after the wrappers are destroyed the engine's stream and event still work");
    report(eng.event_destroy(engine_event) == CUDA_SUCCESS && eng.stream_destroy(engine) == CUDA_SUCCESS,
           "6. the engine destroys its own stream and event");

    attnrt_event_destroy(done);
    attnrt_event_destroy(side_mark);
    attnrt_plan_destroy(p.plan);
    void *bufs[] = {p.ws, p.d_kc, p.d_vc, p.d_q, p.d_k, p.d_v, p.d_out, p.d_table, p.d_qsl, p.d_seq, p.d_slots};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) attnrt_mem_free(ctx, bufs[i]);
    attnrt_stream_destroy(side);
    CHECK_AT(attnrt_close(ctx), "attnrt_close");
    attnrt_shutdown();
    eng.release(dev);
    free(p.slots), free(p.h_kc), free(p.h_vc), free(p.h_q), free(p.h_k), free(p.h_v), free(p.ref_out);
    printf("cuda_native_stream: %s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
