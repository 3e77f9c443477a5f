/* cuda_graph_replay — proves that a decode step captured ONCE in a CUDA graph replays correctly for different
 * batches within a capacity plan's bounds, as vLLM replays its captured graphs step after step:
 *
 *   1. a native CUstream made with the Driver API, wrapped with attnrt_stream_wrap (the engine's stream);
 *   2. attnrt_attention_plan_capacity for max 16 requests, 64 tokens, 4112 keys a request (bf16, Hq 32 / Hkv 8,
 *      D 128, block 16, caches in shuffled blocks), a workspace of the size it asks;
 *   3. capture kv_write + attention_run (capacity-shaped tensors) on the wrapped stream, instantiate;
 *   4. three batches, each written into the SAME device tensors (new queries, K/V rows, slots, block tables,
 *      query_start_loc padded with its last value, seq_lens padded with 0), attnrt_plan_update on the stream,
 *      the output poisoned, the graph replayed: (a) 16 decode requests of long contexts (key splits and their
 *      merge), (b) a mixed batch (decode rows and two prefill chunks), (c) 3 requests (the rest padding);
 *   5. every output row of the batch against a float64 reference over the caches as the batch's kv_write left
 *      them; rows past the batch's tokens must keep their poison.
 * Exit 0 when every batch is within tolerance, 1 otherwise, 77 when there is no CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_capture_util.h"

#define MAX_SEQS 16
#define MAX_TOKENS 64
#define HQ 32
#define HKV 8
#define D 128
#define BS 16
#define MAX_BLOCKS 257 /* 4112 keys a request */
#define NUM_BLOCKS (MAX_SEQS * MAX_BLOCKS + 5)
#define TOL 2e-2       /* bf16 output of O(1) values */

typedef struct batch {
    const char *name;
    int         num_seqs;
    int32_t     q_len[MAX_SEQS], kv_len[MAX_SEQS];
} batch_t;

static float bf16_to_f(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* out[t][h][:] in float64 for every token of the batch: causal, bottom-right, over the host caches. */
static double check_batch(const batch_t *bt, const int32_t *qsl, const int32_t *table, const uint16_t *kc,
                          const uint16_t *vc, const uint16_t *q, const uint16_t *out, size_t *poison_lost)
{
    const double scale = 1.0 / sqrt((double)D);
    double worst = 0.0;
    double *p = malloc(sizeof(double) * MAX_BLOCKS * BS), acc[D];
    for (int b = 0; b < bt->num_seqs; b++)
        for (int i = 0; i < bt->q_len[b]; i++) {
            const int t = qsl[b] + i, S = bt->kv_len[b], pq = S - bt->q_len[b] + i;
            for (int h = 0; h < HQ; h++) {
                const int kvh = h / (HQ / HKV);
                double m = -INFINITY, l = 0.0;
                for (int k = 0; k <= pq; k++) {
                    const size_t row = ((size_t)table[b * MAX_BLOCKS + k / BS] * BS + k % BS) * HKV + kvh;
                    double s = 0.0;
                    for (int d = 0; d < D; d++)
                        s += (double)bf16_to_f(q[((size_t)t * HQ + h) * D + d]) * bf16_to_f(kc[row * D + d]);
                    p[k] = s * scale;
                    if (p[k] > m) m = p[k];
                }
                memset(acc, 0, sizeof acc);
                for (int k = 0; k <= pq; k++) {
                    const size_t row = ((size_t)table[b * MAX_BLOCKS + k / BS] * BS + k % BS) * HKV + kvh;
                    const double w = exp(p[k] - m);
                    l += w;
                    for (int d = 0; d < D; d++) acc[d] += w * bf16_to_f(vc[row * D + d]);
                }
                for (int d = 0; d < D; d++) {
                    const double got = bf16_to_f(out[((size_t)t * HQ + h) * D + d]), want = acc[d] / l;
                    const double err = isfinite(got) ? fabs(got - want) : INFINITY;
                    if (err > worst) worst = err;
                }
            }
        }
    const int T = qsl[bt->num_seqs];
    for (size_t i = (size_t)T * HQ * D; i < (size_t)MAX_TOKENS * HQ * D; i++) *poison_lost += out[i] != 0xffffu;
    free(p);
    return worst;
}

int main(void)
{
    attnrt_stream_t *own = NULL;
    attnrt_context_t *ctx = open_cuda_or_skip("cuda_graph_replay", &own);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *sym_create = lib ? dlsym(lib, "cuStreamCreate") : NULL;
    void *sym_destroy = lib ? dlsym(lib, "cuStreamDestroy_v2") : NULL;
    __typeof__(&cuStreamCreate) stream_create = NULL;
    __typeof__(&cuStreamDestroy) stream_destroy = NULL;
    memcpy(&stream_create, &sym_create, sizeof sym_create); /* object to function pointer, as dlsym requires */
    memcpy(&stream_destroy, &sym_destroy, sizeof sym_destroy);
    if (!stream_create || !stream_destroy) {
        fprintf(stderr, "FAIL libcuda.so.1 has no cuStreamCreate / cuStreamDestroy_v2\n");
        return 1;
    }
    /* 1. the engine's stream (the primary context is current: libattnrt made it so) */
    CUstream cs = NULL;
    CHECK_CU(stream_create(&cs, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    attnrt_stream_t *stream = NULL;
    CHECK_AT(attnrt_stream_wrap(ctx, (void *)cs, &stream), "attnrt_stream_wrap");
    void *native = NULL;
    CHECK_AT(attnrt_stream_native(ctx, stream, &native), "attnrt_stream_native");
    if (native != (void *)cs) {
        fprintf(stderr, "FAIL attnrt_stream_native gave %p, not the wrapped %p\n", native, (void *)cs);
        return 1;
    }

    /* device buffers of the capacity shapes */
    const size_t cache_elems = (size_t)NUM_BLOCKS * BS * HKV * D, q_elems = (size_t)MAX_TOKENS * HQ * D;
    const size_t kv_elems = (size_t)MAX_TOKENS * HKV * D;
    uint16_t *h_kc = malloc(cache_elems * 2), *h_vc = malloc(cache_elems * 2), *h_q = malloc(q_elems * 2);
    uint16_t *h_k = malloc(kv_elems * 2), *h_v = malloc(kv_elems * 2), *h_out = malloc(q_elems * 2);
    int32_t *table = malloc(sizeof(int32_t) * MAX_SEQS * MAX_BLOCKS), *perm = malloc(sizeof(int32_t) * NUM_BLOCKS);
    int32_t qsl[MAX_SEQS + 1], sl[MAX_SEQS];
    int64_t slots[MAX_TOKENS];
    void *d_kc = dev_alloc(ctx, cache_elems * 2), *d_vc = dev_alloc(ctx, cache_elems * 2);
    void *d_q = dev_alloc(ctx, q_elems * 2), *d_out = dev_alloc(ctx, q_elems * 2);
    void *d_k = dev_alloc(ctx, kv_elems * 2), *d_v = dev_alloc(ctx, kv_elems * 2);
    void *d_table = dev_alloc(ctx, sizeof(int32_t) * MAX_SEQS * MAX_BLOCKS), *d_qsl = dev_alloc(ctx, sizeof qsl);
    void *d_sl = dev_alloc(ctx, sizeof sl), *d_slots = dev_alloc(ctx, sizeof slots);
    fill_bf16(h_kc, cache_elems);
    fill_bf16(h_vc, cache_elems);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_kc, h_kc, cache_elems * 2, NULL), "upload K cache");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_vc, h_vc, cache_elems * 2, NULL), "upload V cache");

    attnrt_tensor_t tq, tk, tv, tkc, tvc, tbt, tqsl, tsl, tout, tslots;
    const int64_t s_q[3] = {MAX_TOKENS, HQ, D}, s_kv[3] = {MAX_TOKENS, HKV, D}, s_cache[4] = {NUM_BLOCKS, BS, HKV, D};
    const int64_t s_bt[2] = {MAX_SEQS, MAX_BLOCKS}, s_qsl[1] = {MAX_SEQS + 1}, s_b[1] = {MAX_SEQS}, s_t[1] = {MAX_TOKENS};
    tensor(&tq, d_q, ATTNRT_BF16, 3, s_q);
    tensor(&tk, d_k, ATTNRT_BF16, 3, s_kv);
    tensor(&tv, d_v, ATTNRT_BF16, 3, s_kv);
    tensor(&tkc, d_kc, ATTNRT_BF16, 4, s_cache);
    tensor(&tvc, d_vc, ATTNRT_BF16, 4, s_cache);
    tensor(&tbt, d_table, ATTNRT_I32, 2, s_bt);
    tensor(&tqsl, d_qsl, ATTNRT_I32, 1, s_qsl);
    tensor(&tsl, d_sl, ATTNRT_I32, 1, s_b);
    tensor(&tout, d_out, ATTNRT_BF16, 3, s_q);
    tensor(&tslots, d_slots, ATTNRT_I64, 1, s_t);
    attnrt_kv_write_args_t kw = ATTNRT_KV_WRITE_ARGS_INIT;
    kw.key = &tk, kw.value = &tv, kw.slot_mapping = &tslots, kw.key_cache = &tkc, kw.value_cache = &tvc;
    attnrt_attention_args_t aa = ATTNRT_ATTENTION_ARGS_INIT;
    aa.query = &tq, aa.key_cache = &tkc, aa.value_cache = &tvc, aa.block_table = &tbt, aa.query_start_loc = &tqsl;
    aa.seq_lens = &tsl, aa.out = &tout, aa.causal = 1;

    /* 2. the capacity plan */
    attnrt_capacity_t cap = ATTNRT_CAPACITY_INIT;
    cap.max_seqs = MAX_SEQS, cap.max_tokens = MAX_TOKENS, cap.max_blocks_per_seq = MAX_BLOCKS;
    attnrt_plan_t *plan = NULL;
    CHECK_AT(attnrt_attention_plan_capacity(ctx, &aa, &cap, &plan), "attnrt_attention_plan_capacity");
    size_t ws_bytes = 0;
    CHECK_AT(attnrt_plan_workspace_size(plan, &ws_bytes), "attnrt_plan_workspace_size");
    void *ws = ws_bytes ? dev_alloc(ctx, ws_bytes) : NULL;
    printf("cuda_graph_replay: capacity %d requests, %d tokens, %d blocks of %d; Hq %d Hkv %d D %d bf16; workspace %zu "
           "bytes\n", MAX_SEQS, MAX_TOKENS, MAX_BLOCKS, BS, HQ, HKV, D, ws_bytes);

    const batch_t batches[3] = {
        {"decode: 16 requests, 300-4100 keys", 16,
         {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
         {4100, 3000, 300, 2222, 1024, 17, 4000, 777, 1500, 3333, 64, 2900, 4096, 1, 650, 3901}},
        {"mixed: 6 decode + prefill chunks of 20 and 31", 8, {1, 20, 1, 1, 31, 1, 1, 1}, {2500, 900, 4090, 33, 31, 1800, 700, 3000}},
        {"3 requests (13 padding rows)", 3, {1, 1, 5}, {3500, 1200, 260}},
    };

    /* 3. capture once (the first batch's metadata in place so the capture itself is a valid step) */
    int failures = 0;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    for (int bi = 0; bi < 3; bi++) {
        const batch_t *bt = &batches[bi];
        /* the step's metadata, padded to the capacity as vLLM pads it */
        qsl[0] = 0;
        for (int b = 0; b < MAX_SEQS; b++) {
            qsl[b + 1] = qsl[b] + (b < bt->num_seqs ? bt->q_len[b] : 0);
            sl[b] = b < bt->num_seqs ? bt->kv_len[b] : 0;
        }
        const int T = qsl[bt->num_seqs];
        for (int i = NUM_BLOCKS - 1; i >= 0; i--) perm[i] = i;
        for (int i = NUM_BLOCKS - 1; i > 0; i--) { /* a new shuffle of physical blocks each step */
            int j = (int)((frand() + 1.0f) * 0.5f * (float)(i + 1));
            j = j < 0 ? 0 : j > i ? i : j;
            const int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int i = 0; i < MAX_SEQS * MAX_BLOCKS; i++) table[i] = perm[i];
        for (int t = 0; t < MAX_TOKENS; t++) slots[t] = -1;
        fill_bf16(h_q, q_elems);
        fill_bf16(h_k, kv_elems);
        fill_bf16(h_v, kv_elems);
        for (int b = 0; b < bt->num_seqs; b++)
            for (int i = 0; i < bt->q_len[b]; i++) {
                const int pos = bt->kv_len[b] - bt->q_len[b] + i, t = qsl[b] + i;
                slots[t] = (int64_t)table[b * MAX_BLOCKS + pos / BS] * BS + pos % BS;
                for (int h = 0; h < HKV; h++) { /* the reference's caches as kv_write leaves them */
                    memcpy(h_kc + ((size_t)slots[t] * HKV + h) * D, h_k + ((size_t)t * HKV + h) * D, D * 2);
                    memcpy(h_vc + ((size_t)slots[t] * HKV + h) * D, h_v + ((size_t)t * HKV + h) * D, D * 2);
                }
            }
        CHECK_AT(attnrt_mem_copy_to_device(ctx, d_q, h_q, q_elems * 2, stream), "upload q");
        CHECK_AT(attnrt_mem_copy_to_device(ctx, d_k, h_k, kv_elems * 2, stream), "upload k");
        CHECK_AT(attnrt_mem_copy_to_device(ctx, d_v, h_v, kv_elems * 2, stream), "upload v");
        CHECK_AT(attnrt_mem_copy_to_device(ctx, d_table, table, sizeof(int32_t) * MAX_SEQS * MAX_BLOCKS, stream), "upload table");
        CHECK_AT(attnrt_mem_copy_to_device(ctx, d_qsl, qsl, sizeof qsl, stream), "upload qsl");
        CHECK_AT(attnrt_mem_copy_to_device(ctx, d_sl, sl, sizeof sl, stream), "upload seq_lens");
        CHECK_AT(attnrt_mem_copy_to_device(ctx, d_slots, slots, sizeof slots, stream), "upload slots");
        attnrt_batch_host_t bh = ATTNRT_BATCH_HOST_INIT;
        bh.num_seqs = bt->num_seqs, bh.query_start_loc = qsl, bh.seq_lens = sl, bh.block_table = table;
        bh.block_table_stride = MAX_BLOCKS;
        CHECK_AT(attnrt_plan_update(plan, &bh, stream), "attnrt_plan_update");
        if (!exec) {
            CHECK_CU(cu.begin(cs, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
            attnrt_status_t st = attnrt_kv_write(ctx, &kw, stream);
            if (st == ATTNRT_OK) st = attnrt_attention_run(plan, &aa, ws, ws_bytes, stream);
            const CUresult end = cu.end(cs, &graph);
            CHECK_AT(st, "kv_write + attention_run while capturing");
            CHECK_CU(end, "cuStreamEndCapture");
            size_t num_nodes = 0;
            CHECK_CU(cu.nodes(graph, NULL, &num_nodes), "cuGraphGetNodes");
            CHECK_CU(cu.instantiate(&exec, graph, 0), "cuGraphInstantiate");
            printf("  captured once on the wrapped stream: %zu nodes\n", num_nodes);
        }
        CHECK_AT(attnrt_mem_set(ctx, d_out, 0xff, q_elems * 2, stream), "poison out");
        CHECK_CU(cu.launch(exec, cs), "cuGraphLaunch");
        CHECK_CU(cu.sync(cs), "cuStreamSynchronize");
        CHECK_AT(attnrt_mem_copy_to_host(ctx, h_out, d_out, q_elems * 2, NULL), "download out");
        size_t poison_lost = 0;
        const double err = check_batch(bt, qsl, table, h_kc, h_vc, h_q, h_out, &poison_lost);
        const int ok = err <= TOL && poison_lost == 0;
        printf("  replay %d, %-44s T %2d: max |out - ref| %.2e (tol %.0e), padding rows written: %zu  %s\n", bi + 1,
               bt->name, T, err, TOL, poison_lost, ok ? "ok" : "FAIL");
        failures += !ok;
    }

    cu.exec_destroy(exec);
    cu.destroy(graph);
    attnrt_plan_destroy(plan);
    void *bufs[] = {ws, d_kc, d_vc, d_q, d_out, d_k, d_v, d_table, d_qsl, d_sl, d_slots};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) attnrt_mem_free(ctx, bufs[i]);
    attnrt_stream_destroy(stream);
    stream_destroy(cs);
    attnrt_stream_destroy(own);
    CHECK_AT(attnrt_close(ctx), "attnrt_close");
    attnrt_shutdown();
    free(h_kc), free(h_vc), free(h_q), free(h_k), free(h_v), free(h_out), free(table), free(perm);
    printf("cuda_graph_replay: %s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
