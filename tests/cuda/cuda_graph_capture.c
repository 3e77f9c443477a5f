/* cuda_graph_capture — proves that attnrt_kv_write + attnrt_attention_run on the cuda plugin can be
 * captured in a CUDA graph (Driver API, global capture mode: any allocation or synchronisation inside
 * the run would end the capture with an error) and that replaying the graph gives the direct run's
 * result bit for bit. Not a CI test (it needs a GPU): bench/h200/run.sh runs it.
 *
 *   1. a mixed batch (decode rows with long contexts, so split-KV and its merge take part, and one
 *      chunked prefill), bf16, Hq 32 / Hkv 8, D 128, block 16, caches in shuffled blocks;
 *   2. direct: kv_write + attention_run on a stream -> reference bytes;
 *   3. capture the same two calls on that stream, instantiate, poison out, replay -> equal bytes;
 *   4. new query values and one more token per request (seq_lens + 1 written on the device, the plan
 *      unchanged): direct run again, replay again -> equal bytes (the graph reads data by pointer and
 *      the kernels read the lengths on the device).
 * Exit 0 when every comparison is bit-exact, 1 otherwise, 77 when there is no CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_capture_util.h"

#define B 8
#define HQ 32
#define HKV 8
#define D 128
#define BS 16
#define MAX_CTX 3072

int main(void)
{
    attnrt_stream_t *stream = NULL;
    attnrt_context_t *ctx = open_cuda_or_skip("cuda_graph_capture", &stream);
    const CUstream cs = native_stream(ctx, stream);

    /* the batch: 7 decode rows with long contexts, one chunked prefill of 40 tokens */
    int32_t q_len[B] = {1, 1, 1, 1, 1, 1, 1, 40}, kv_len[B] = {3000, 1800, 2500, 700, 2900, 1200, 2047, 1000};
    int32_t qsl[B + 1] = {0};
    for (int b = 0; b < B; b++) qsl[b + 1] = qsl[b] + q_len[b];
    const int T = qsl[B], max_blocks = (MAX_CTX + BS) / BS, num_blocks = B * max_blocks + 7;
    int32_t *table = malloc(sizeof(int32_t) * B * max_blocks), *perm = malloc(sizeof(int32_t) * num_blocks);
    for (int i = 0; i < num_blocks; i++) perm[i] = i;
    uint64_t lcg = 12345;
    for (int i = num_blocks - 1; i > 0; i--) { /* shuffled physical blocks */
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((lcg >> 33) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < B * max_blocks; i++) table[i] = perm[i];
    int64_t *slots = malloc(sizeof(int64_t) * T);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < q_len[b]; i++) {
            int pos = kv_len[b] - q_len[b] + i;
            slots[qsl[b] + i] = (int64_t)table[b * max_blocks + pos / BS] * BS + pos % BS;
        }

    const size_t cache_elems = (size_t)num_blocks * BS * HKV * D, q_elems = (size_t)T * HQ * D;
    uint16_t *h_cache = malloc(cache_elems * 2), *h_q = malloc(q_elems * 2), *h_kv_new = malloc((size_t)T * HKV * D * 2);
    void *d_kc = dev_alloc(ctx, cache_elems * 2), *d_vc = dev_alloc(ctx, cache_elems * 2);
    void *d_q = dev_alloc(ctx, q_elems * 2), *d_out = dev_alloc(ctx, q_elems * 2), *d_lse = dev_alloc(ctx, (size_t)T * HQ * 4);
    void *d_knew = dev_alloc(ctx, (size_t)T * HKV * D * 2), *d_vnew = dev_alloc(ctx, (size_t)T * HKV * D * 2);
    void *d_table = dev_alloc(ctx, sizeof(int32_t) * B * max_blocks), *d_qsl = dev_alloc(ctx, sizeof qsl);
    void *d_sl = dev_alloc(ctx, sizeof kv_len), *d_slots = dev_alloc(ctx, sizeof(int64_t) * T);
    fill_bf16(h_cache, cache_elems);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_kc, h_cache, cache_elems * 2, NULL), "upload K");
    fill_bf16(h_cache, cache_elems);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_vc, h_cache, cache_elems * 2, NULL), "upload V");
    fill_bf16(h_q, q_elems);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_q, h_q, q_elems * 2, NULL), "upload q");
    fill_bf16(h_kv_new, (size_t)T * HKV * D);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_knew, h_kv_new, (size_t)T * HKV * D * 2, NULL), "upload k");
    fill_bf16(h_kv_new, (size_t)T * HKV * D);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_vnew, h_kv_new, (size_t)T * HKV * D * 2, NULL), "upload v");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_table, table, sizeof(int32_t) * B * max_blocks, NULL), "upload table");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_qsl, qsl, sizeof qsl, NULL), "upload qsl");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_sl, kv_len, sizeof kv_len, NULL), "upload seq_lens");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_slots, slots, sizeof(int64_t) * T, NULL), "upload slots");

    attnrt_tensor_t tq, tk, tv, tkc, tvc, tbt, tqsl, tsl, tout, tlse, tslots;
    const int64_t s_q[3] = {T, HQ, D}, s_kv[3] = {T, HKV, D}, s_cache[4] = {num_blocks, BS, HKV, D};
    const int64_t s_bt[2] = {B, max_blocks}, s_qsl[1] = {B + 1}, s_b[1] = {B}, s_lse[2] = {T, HQ}, s_t[1] = {T};
    tensor(&tq, d_q, ATTNRT_BF16, 3, s_q);
    tensor(&tk, d_knew, ATTNRT_BF16, 3, s_kv);
    tensor(&tv, d_vnew, ATTNRT_BF16, 3, s_kv);
    tensor(&tkc, d_kc, ATTNRT_BF16, 4, s_cache);
    tensor(&tvc, d_vc, ATTNRT_BF16, 4, s_cache);
    tensor(&tbt, d_table, ATTNRT_I32, 2, s_bt);
    tensor(&tqsl, d_qsl, ATTNRT_I32, 1, s_qsl);
    tensor(&tsl, d_sl, ATTNRT_I32, 1, s_b);
    tensor(&tout, d_out, ATTNRT_BF16, 3, s_q);
    tensor(&tlse, d_lse, ATTNRT_F32, 2, s_lse);
    tensor(&tslots, d_slots, ATTNRT_I64, 1, s_t);
    attnrt_kv_write_args_t kw = {.struct_size = sizeof kw, .key = &tk, .value = &tv, .slot_mapping = &tslots,
                                 .key_cache = &tkc, .value_cache = &tvc};
    attnrt_attention_args_t aa = {.struct_size = sizeof aa, .query = &tq, .key_cache = &tkc, .value_cache = &tvc,
                                  .block_table = &tbt, .query_start_loc = &tqsl, .seq_lens = &tsl, .out = &tout,
                                  .lse = &tlse, .causal = 1};
    attnrt_batch_host_t bh = {.struct_size = sizeof bh, .num_seqs = B, .query_start_loc = qsl, .seq_lens = kv_len,
                              .block_table = table, .block_table_stride = max_blocks};
    attnrt_plan_t *plan = NULL;
    CHECK_AT(attnrt_attention_plan(ctx, &aa, &bh, &plan), "attnrt_attention_plan");
    size_t ws_bytes = 0;
    CHECK_AT(attnrt_plan_workspace_size(plan, &ws_bytes), "attnrt_plan_workspace_size");
    void *ws = ws_bytes ? dev_alloc(ctx, ws_bytes) : NULL;
    printf("cuda_graph_capture: T=%d B=%d Hq=%d Hkv=%d D=%d block %d, workspace %zu bytes\n", T, B, HQ, HKV, D, BS, ws_bytes);

    const size_t out_bytes = q_elems * 2, lse_bytes = (size_t)T * HQ * 4;
    uint8_t *direct = malloc(out_bytes + lse_bytes), *replay = malloc(out_bytes + lse_bytes);
    int failures = 0;

    /* 2. direct */
    CHECK_AT(attnrt_mem_set(ctx, d_out, 0xff, out_bytes, stream), "poison out");
    CHECK_AT(attnrt_kv_write(ctx, &kw, stream), "attnrt_kv_write (direct)");
    CHECK_AT(attnrt_attention_run(plan, &aa, ws, ws_bytes, stream), "attnrt_attention_run (direct)");
    CHECK_AT(attnrt_stream_synchronize(ctx, stream), "synchronize");
    CHECK_AT(attnrt_mem_copy_to_host(ctx, direct, d_out, out_bytes, NULL), "download out");
    CHECK_AT(attnrt_mem_copy_to_host(ctx, direct + out_bytes, d_lse, lse_bytes, NULL), "download lse");
    size_t bad = 0;
    for (size_t i = 0; i < q_elems; i++) {
        uint16_t v;
        memcpy(&v, direct + 2 * i, 2);
        bad += (v & 0x7f80u) == 0x7f80u; /* inf or NaN: unwritten (poison) or broken */
    }
    printf("  direct run: %zu non-finite outputs of %zu\n", bad, q_elems);
    failures += bad != 0;

    /* 3. capture kv_write + attention_run, replay */
    CHECK_CU(cu.begin(cs, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
    attnrt_status_t st = attnrt_kv_write(ctx, &kw, stream);
    if (st == ATTNRT_OK) st = attnrt_attention_run(plan, &aa, ws, ws_bytes, stream);
    CUgraph graph = NULL;
    CUresult end = cu.end(cs, &graph);
    CHECK_AT(st, "kv_write + attention_run while capturing");
    CHECK_CU(end, "cuStreamEndCapture");
    size_t num_nodes = 0;
    CHECK_CU(cu.nodes(graph, NULL, &num_nodes), "cuGraphGetNodes");
    CUgraphExec exec = NULL;
    CHECK_CU(cu.instantiate(&exec, graph, 0), "cuGraphInstantiate");
    printf("  captured graph: %zu nodes (kv_write and the attention kernels)\n", num_nodes);
    CHECK_AT(attnrt_mem_set(ctx, d_out, 0xff, out_bytes, stream), "poison out");
    CHECK_AT(attnrt_mem_set(ctx, d_lse, 0xff, lse_bytes, stream), "poison lse");
    CHECK_CU(cu.launch(exec, cs), "cuGraphLaunch");
    CHECK_CU(cu.sync(cs), "cuStreamSynchronize");
    CHECK_AT(attnrt_mem_copy_to_host(ctx, replay, d_out, out_bytes, NULL), "download out");
    CHECK_AT(attnrt_mem_copy_to_host(ctx, replay + out_bytes, d_lse, lse_bytes, NULL), "download lse");
    failures += compare("replay == direct (out, lse)", direct, replay, out_bytes + lse_bytes);

    /* 4. new queries and one more token per request, same plan: direct again, replay again */
    fill_bf16(h_q, q_elems);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_q, h_q, q_elems * 2, NULL), "upload q");
    for (int b = 0; b < B; b++) kv_len[b] += 1;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < q_len[b]; i++) {
            int pos = kv_len[b] - q_len[b] + i;
            slots[qsl[b] + i] = (int64_t)table[b * max_blocks + pos / BS] * BS + pos % BS;
        }
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_sl, kv_len, sizeof kv_len, NULL), "upload seq_lens + 1");
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_slots, slots, sizeof(int64_t) * T, NULL), "upload slots");
    CHECK_AT(attnrt_mem_set(ctx, d_out, 0xff, out_bytes, stream), "poison out");
    CHECK_AT(attnrt_kv_write(ctx, &kw, stream), "attnrt_kv_write (direct, step 2)");
    CHECK_AT(attnrt_attention_run(plan, &aa, ws, ws_bytes, stream), "attnrt_attention_run (direct, step 2)");
    CHECK_AT(attnrt_stream_synchronize(ctx, stream), "synchronize");
    CHECK_AT(attnrt_mem_copy_to_host(ctx, direct, d_out, out_bytes, NULL), "download out");
    CHECK_AT(attnrt_mem_copy_to_host(ctx, direct + out_bytes, d_lse, lse_bytes, NULL), "download lse");
    CHECK_AT(attnrt_mem_set(ctx, d_out, 0xff, out_bytes, stream), "poison out");
    CHECK_CU(cu.launch(exec, cs), "cuGraphLaunch (step 2)");
    CHECK_CU(cu.sync(cs), "cuStreamSynchronize");
    CHECK_AT(attnrt_mem_copy_to_host(ctx, replay, d_out, out_bytes, NULL), "download out");
    CHECK_AT(attnrt_mem_copy_to_host(ctx, replay + out_bytes, d_lse, lse_bytes, NULL), "download lse");
    failures += compare("step 2 (new q, seq_lens + 1): replay == direct", direct, replay, out_bytes + lse_bytes);

    cu.exec_destroy(exec);
    cu.destroy(graph);
    attnrt_plan_destroy(plan);
    void *bufs[] = {ws, d_kc, d_vc, d_q, d_out, d_lse, d_knew, d_vnew, d_table, d_qsl, d_sl, d_slots};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) attnrt_mem_free(ctx, bufs[i]);
    attnrt_stream_destroy(stream);
    CHECK_AT(attnrt_close(ctx), "attnrt_close");
    attnrt_shutdown();
    free(table);
    free(perm);
    free(slots);
    free(h_cache);
    free(h_q);
    free(h_kv_new);
    free(direct);
    free(replay);
    printf("cuda_graph_capture: %s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
