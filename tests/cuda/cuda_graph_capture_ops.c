/* cuda_graph_capture_ops — proves that the MLA, lightning and gated-delta runs of the cuda plugin (attnrt_mla_run,
 * attnrt_lightning_run, attnrt_gated_delta_run) can be captured in a CUDA graph (Driver API, global
 * capture mode: an allocation or a synchronisation inside a run ends the capture with an error) and that
 * a replay writes the same bytes as the direct run. Not a CI test (it needs a GPU): bench/h200/run_ops.sh
 * runs it.
 *
 * For each op: a mixed batch (decode rows and one prefill chunk; MLA with contexts long enough to be
 * split over keys and merged; lightning and GDN also a decode-only batch: GDN's decode kernel), bf16
 * activations, random f32 states in the pool's slots. The state is
 * saved on the device first, because the ops read and write it: direct run -> out + state; restore the
 * state; capture the run; poison out; replay -> the same out and state, bit for bit.
 * Exit 0 when every comparison is bit-exact, 1 otherwise, 77 when there is no CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_capture_util.h"

/* One op, ready to run on the stream: `run` launches it; `out` (bf16), the optional `lse` (f32) and the
 * optional `state` (the pool's bytes, read and written by the op) are what a replay must reproduce. */
typedef struct capture_case {
    const char *name;
    attnrt_status_t (*run)(const void *op, attnrt_stream_t *stream);
    const void *op;
    void       *out, *lse, *state; /* lse, state: NULL when the op has none */
    size_t      out_bytes, lse_bytes, state_bytes;
} capture_case_t;

/* out, then lse, then state, into one host buffer of out + lse + state bytes. */
static void download_results(attnrt_context_t *ctx, const capture_case_t *c, uint8_t *host)
{
    CHECK_AT(attnrt_mem_copy_to_host(ctx, host, c->out, c->out_bytes, NULL), "download out");
    if (c->lse) CHECK_AT(attnrt_mem_copy_to_host(ctx, host + c->out_bytes, c->lse, c->lse_bytes, NULL), "download lse");
    if (c->state)
        CHECK_AT(attnrt_mem_copy_to_host(ctx, host + c->out_bytes + c->lse_bytes, c->state, c->state_bytes, NULL),
                 "download state");
}

static void poison_results(attnrt_context_t *ctx, const capture_case_t *c, attnrt_stream_t *stream)
{
    CHECK_AT(attnrt_mem_set(ctx, c->out, 0xff, c->out_bytes, stream), "poison out");
    if (c->lse) CHECK_AT(attnrt_mem_set(ctx, c->lse, 0xff, c->lse_bytes, stream), "poison lse");
}

static void upload_bf16(attnrt_context_t *ctx, void *dst, size_t n)
{
    uint16_t *h = malloc(n * 2);
    if (!h) exit(1);
    fill_bf16(h, n);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, dst, h, n * 2, NULL), "upload bf16");
    free(h);
}

static void upload_f32(attnrt_context_t *ctx, void *dst, size_t n, float lo, float hi)
{
    float *h = malloc(n * 4);
    if (!h) exit(1);
    for (size_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * 0.5f * (frand() + 1.0f);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, dst, h, n * 4, NULL), "upload f32");
    free(h);
}

static void *dev_copy_of(attnrt_context_t *ctx, const void *host, size_t bytes)
{
    void *d = dev_alloc(ctx, bytes);
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d, host, bytes, NULL), "upload metadata");
    return d;
}

/* Direct run, then capture + replay from the same starting state; returns the number of failures. */
static int check_case(attnrt_context_t *ctx, attnrt_stream_t *stream, const capture_case_t *c)
{
    const CUstream cs = native_stream(ctx, stream);
    const size_t total = c->out_bytes + c->lse_bytes + c->state_bytes;
    uint8_t *direct = malloc(total), *replay = malloc(total);
    void *backup = c->state ? dev_alloc(ctx, c->state_bytes) : NULL;
    if (!direct || !replay) exit(1);
    printf("%s\n", c->name);
    if (c->state) CHECK_AT(attnrt_mem_copy_on_device(ctx, backup, c->state, c->state_bytes, stream), "save state");

    poison_results(ctx, c, stream);
    CHECK_AT(c->run(c->op, stream), "run (direct)");
    CHECK_AT(attnrt_stream_synchronize(ctx, stream), "synchronize");
    download_results(ctx, c, direct);
    size_t bad = 0;
    for (size_t i = 0; i < c->out_bytes / 2; i++) {
        uint16_t v;
        memcpy(&v, direct + 2 * i, 2);
        bad += (v & 0x7f80u) == 0x7f80u; /* inf or NaN: unwritten (poison) or broken */
    }
    printf("  direct run: %zu non-finite outputs of %zu\n", bad, c->out_bytes / 2);
    int failures = bad != 0;

    if (c->state) CHECK_AT(attnrt_mem_copy_on_device(ctx, c->state, backup, c->state_bytes, stream), "restore state");
    CHECK_AT(attnrt_stream_synchronize(ctx, stream), "synchronize");
    CHECK_CU(cu.begin(cs, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
    attnrt_status_t st = c->run(c->op, stream);
    CUgraph graph = NULL;
    CUresult end = cu.end(cs, &graph);
    CHECK_AT(st, "run while capturing");
    CHECK_CU(end, "cuStreamEndCapture");
    size_t num_nodes = 0;
    CHECK_CU(cu.nodes(graph, NULL, &num_nodes), "cuGraphGetNodes");
    CUgraphExec exec = NULL;
    CHECK_CU(cu.instantiate(&exec, graph, 0), "cuGraphInstantiate");
    printf("  captured graph: %zu nodes\n", num_nodes);
    poison_results(ctx, c, stream);
    CHECK_CU(cu.launch(exec, cs), "cuGraphLaunch");
    CHECK_CU(cu.sync(cs), "cuStreamSynchronize");
    download_results(ctx, c, replay);
    failures += compare(c->state ? "replay == direct (out, state)" : "replay == direct (out, lse)", direct, replay, total);

    cu.exec_destroy(exec);
    cu.destroy(graph);
    if (backup) attnrt_mem_free(ctx, backup);
    free(direct);
    free(replay);
    return failures;
}

/* ---- MLA: 576/512 latent, block 64, Hq 128; 3 decode rows (split over keys) and a causal prefill ---- */

#define MLA_B 4
#define MLA_HQ 128
#define MLA_KV 576
#define MLA_V 512
#define MLA_BS 64

typedef struct mla_op {
    attnrt_plan_t    *plan;
    attnrt_mla_args_t args;
    void             *ws;
    size_t            ws_bytes;
} mla_op_t;

static attnrt_status_t run_mla(const void *op, attnrt_stream_t *stream)
{
    const mla_op_t *m = op;
    return attnrt_mla_run(m->plan, &m->args, m->ws, m->ws_bytes, stream);
}

static int mla_case(attnrt_context_t *ctx, attnrt_stream_t *stream)
{
    const int32_t q_len[MLA_B] = {1, 1, 1, 24}, kv_len[MLA_B] = {4096, 3001, 2050, 700};
    int32_t qsl[MLA_B + 1] = {0};
    for (int b = 0; b < MLA_B; b++) qsl[b + 1] = qsl[b] + q_len[b];
    const int T = qsl[MLA_B], max_blocks = 4096 / MLA_BS, num_blocks = MLA_B * max_blocks + 3;
    int32_t table[MLA_B * (4096 / MLA_BS)];
    for (int i = 0; i < MLA_B * max_blocks; i++) table[i] = (i * 41 + 5) % num_blocks; /* scattered, distinct (41 and 259 coprime) */
    const size_t cache_elems = (size_t)num_blocks * MLA_BS * MLA_KV, out_elems = (size_t)T * MLA_HQ * MLA_V;
    void *d_cache = dev_alloc(ctx, cache_elems * 2), *d_q = dev_alloc(ctx, (size_t)T * MLA_HQ * MLA_KV * 2);
    void *d_out = dev_alloc(ctx, out_elems * 2), *d_lse = dev_alloc(ctx, (size_t)T * MLA_HQ * 4);
    upload_bf16(ctx, d_cache, cache_elems);
    upload_bf16(ctx, d_q, (size_t)T * MLA_HQ * MLA_KV);
    void *d_table = dev_copy_of(ctx, table, sizeof table), *d_qsl = dev_copy_of(ctx, qsl, sizeof qsl);
    void *d_sl = dev_copy_of(ctx, kv_len, sizeof kv_len);

    attnrt_tensor_t tq, tc, tbt, tqsl, tsl, tout, tlse;
    const int64_t s_q[3] = {T, MLA_HQ, MLA_KV}, s_c[4] = {num_blocks, MLA_BS, 1, MLA_KV}, s_bt[2] = {MLA_B, max_blocks};
    const int64_t s_qsl[1] = {MLA_B + 1}, s_b[1] = {MLA_B}, s_out[3] = {T, MLA_HQ, MLA_V}, s_lse[2] = {T, MLA_HQ};
    tensor(&tq, d_q, ATTNRT_BF16, 3, s_q);
    tensor(&tc, d_cache, ATTNRT_BF16, 4, s_c);
    tensor(&tbt, d_table, ATTNRT_I32, 2, s_bt);
    tensor(&tqsl, d_qsl, ATTNRT_I32, 1, s_qsl);
    tensor(&tsl, d_sl, ATTNRT_I32, 1, s_b);
    tensor(&tout, d_out, ATTNRT_BF16, 3, s_out);
    tensor(&tlse, d_lse, ATTNRT_F32, 2, s_lse);
    mla_op_t m = {.args = {.struct_size = sizeof m.args, .query = &tq, .kv_cache = &tc, .block_table = &tbt,
                           .query_start_loc = &tqsl, .seq_lens = &tsl, .out = &tout, .lse = &tlse,
                           .scale = 1.0f / sqrtf(192.0f), .causal = 1}};
    const attnrt_batch_host_t bh = {.struct_size = sizeof bh, .num_seqs = MLA_B, .query_start_loc = qsl,
                                    .seq_lens = kv_len, .block_table = table, .block_table_stride = max_blocks};
    CHECK_AT(attnrt_mla_plan(ctx, &m.args, &bh, &m.plan), "attnrt_mla_plan");
    CHECK_AT(attnrt_plan_workspace_size(m.plan, &m.ws_bytes), "attnrt_plan_workspace_size");
    m.ws = m.ws_bytes ? dev_alloc(ctx, m.ws_bytes) : NULL;
    const capture_case_t c = {"mla: 576/512, block 64, Hq 128, B 4 (3 decode up to 4096 keys, 1 prefill of 24), bf16",
                              run_mla, &m, d_out, d_lse, NULL, out_elems * 2, (size_t)T * MLA_HQ * 4, 0};
    const int failures = check_case(ctx, stream, &c);
    attnrt_plan_destroy(m.plan);
    void *bufs[] = {m.ws, d_cache, d_q, d_out, d_lse, d_table, d_qsl, d_sl};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) attnrt_mem_free(ctx, bufs[i]);
    return failures;
}

/* ---- lightning and gated delta: 5 requests (4 decode, 1 prefill of 37: the general kernel; or 5
 * decode: GDN's decode kernel), states in a pool ---- */

#define LIN_B 5
#define LIN_DK 128
#define LIN_DV 128

typedef struct linear_batch {
    int32_t q_len[LIN_B], qsl[LIN_B + 1], slots[LIN_B];
    uint8_t has_init[LIN_B];
    int     T;
    void   *d_qsl, *d_slots, *d_has_init;
    attnrt_tensor_t      tqsl, tslots, thas;
    attnrt_batch_host_t  batch;
    attnrt_state_host_t  states;
    attnrt_state_pool_t *pool;
    attnrt_tensor_t      tstate;
    size_t               state_bytes;
} linear_batch_t;

/* A pool of 8 slots of [HV, Dk, Dv] f32, random states, slots 1..5 used (slot 3 starts from zero);
 * request 2 prefills 37 tokens unless `decode`. */
static void linear_batch_init(attnrt_context_t *ctx, int HV, int decode, linear_batch_t *lb)
{
    memset(lb, 0, sizeof *lb);
    const int32_t q_len[LIN_B] = {1, 1, decode ? 1 : 37, 1, 1};
    const int64_t slot_shape[3] = {HV, LIN_DK, LIN_DV};
    CHECK_AT(attnrt_state_pool_create(ctx, ATTNRT_F32, 3, slot_shape, 8, &lb->pool), "attnrt_state_pool_create");
    CHECK_AT(attnrt_state_pool_tensor(lb->pool, &lb->tstate), "attnrt_state_pool_tensor");
    lb->state_bytes = (size_t)8 * (size_t)HV * LIN_DK * LIN_DV * 4;
    upload_f32(ctx, lb->tstate.data, lb->state_bytes / 4, -0.5f, 0.5f);
    int32_t slot;
    CHECK_AT(attnrt_state_slot_alloc(lb->pool, &slot), "attnrt_state_slot_alloc"); /* slot 0 stays unused */
    for (int b = 0; b < LIN_B; b++) {
        CHECK_AT(attnrt_state_slot_alloc(lb->pool, &lb->slots[b]), "attnrt_state_slot_alloc");
        lb->q_len[b] = q_len[b];
        lb->qsl[b + 1] = lb->qsl[b] + q_len[b];
        lb->has_init[b] = b != 3;
    }
    lb->T = lb->qsl[LIN_B];
    lb->d_qsl = dev_copy_of(ctx, lb->qsl, sizeof lb->qsl);
    lb->d_slots = dev_copy_of(ctx, lb->slots, sizeof lb->slots);
    lb->d_has_init = dev_copy_of(ctx, lb->has_init, sizeof lb->has_init);
    const int64_t s_qsl[1] = {LIN_B + 1}, s_b[1] = {LIN_B};
    tensor(&lb->tqsl, lb->d_qsl, ATTNRT_I32, 1, s_qsl);
    tensor(&lb->tslots, lb->d_slots, ATTNRT_I32, 1, s_b);
    tensor(&lb->thas, lb->d_has_init, ATTNRT_U8, 1, s_b);
    lb->batch = (attnrt_batch_host_t){.struct_size = sizeof lb->batch, .num_seqs = LIN_B, .query_start_loc = lb->qsl};
    lb->states = (attnrt_state_host_t){.struct_size = sizeof lb->states, .state_indices = lb->slots,
                                       .has_initial_state = lb->has_init};
}

static void linear_batch_free(attnrt_context_t *ctx, linear_batch_t *lb)
{
    attnrt_mem_free(ctx, lb->d_qsl);
    attnrt_mem_free(ctx, lb->d_slots);
    attnrt_mem_free(ctx, lb->d_has_init);
    CHECK_AT(attnrt_state_pool_destroy(lb->pool), "attnrt_state_pool_destroy");
}

typedef struct lightning_op {
    attnrt_plan_t          *plan;
    attnrt_lightning_args_t args;
    void                   *ws;
    size_t                  ws_bytes;
} lightning_op_t;

static attnrt_status_t run_lightning(const void *op, attnrt_stream_t *stream)
{
    const lightning_op_t *l = op;
    return attnrt_lightning_run(l->plan, &l->args, l->ws, l->ws_bytes, stream);
}

static int lightning_case(attnrt_context_t *ctx, attnrt_stream_t *stream, int decode)
{
    enum { H = 4 };
    linear_batch_t lb;
    linear_batch_init(ctx, H, decode, &lb);
    const size_t qk = (size_t)lb.T * H * LIN_DK, v = (size_t)lb.T * H * LIN_DV;
    void *d_q = dev_alloc(ctx, qk * 2), *d_k = dev_alloc(ctx, qk * 2), *d_v = dev_alloc(ctx, v * 2);
    void *d_out = dev_alloc(ctx, v * 2), *d_slopes = dev_alloc(ctx, H * 4);
    upload_bf16(ctx, d_q, qk);
    upload_bf16(ctx, d_k, qk);
    upload_bf16(ctx, d_v, v);
    const float slopes[H] = {0.5f, 0.125f, 0.03125f, 0.0078125f}; /* MiniMax-style 2^(-8h/H) */
    CHECK_AT(attnrt_mem_copy_to_device(ctx, d_slopes, slopes, sizeof slopes, NULL), "upload slopes");
    attnrt_tensor_t tq, tk, tv, tout, tsl;
    const int64_t s_qk[3] = {lb.T, H, LIN_DK}, s_v[3] = {lb.T, H, LIN_DV}, s_h[1] = {H};
    tensor(&tq, d_q, ATTNRT_BF16, 3, s_qk);
    tensor(&tk, d_k, ATTNRT_BF16, 3, s_qk);
    tensor(&tv, d_v, ATTNRT_BF16, 3, s_v);
    tensor(&tout, d_out, ATTNRT_BF16, 3, s_v);
    tensor(&tsl, d_slopes, ATTNRT_F32, 1, s_h);
    lightning_op_t l = {.args = {.struct_size = sizeof l.args, .query = &tq, .key = &tk, .value = &tv, .out = &tout,
                                 .slopes = &tsl, .state = &lb.tstate, .query_start_loc = &lb.tqsl,
                                 .state_indices = &lb.tslots, .has_initial_state = &lb.thas}};
    CHECK_AT(attnrt_lightning_plan(ctx, &l.args, &lb.batch, &lb.states, lb.pool, &l.plan), "attnrt_lightning_plan");
    CHECK_AT(attnrt_plan_workspace_size(l.plan, &l.ws_bytes), "attnrt_plan_workspace_size");
    l.ws = l.ws_bytes ? dev_alloc(ctx, l.ws_bytes) : NULL;
    const capture_case_t c = {decode ? "lightning: H 4, Dk = Dv = 128, B 5 decode (one zero state), bf16"
                                     : "lightning: H 4, Dk = Dv = 128, B 5 (4 decode, 1 prefill of 37, one zero state), bf16",
                              run_lightning, &l, d_out, NULL, lb.tstate.data, v * 2, 0, lb.state_bytes};
    const int failures = check_case(ctx, stream, &c);
    attnrt_plan_destroy(l.plan);
    void *bufs[] = {l.ws, d_q, d_k, d_v, d_out, d_slopes};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) attnrt_mem_free(ctx, bufs[i]);
    linear_batch_free(ctx, &lb);
    return failures;
}

typedef struct gdn_op {
    attnrt_plan_t            *plan;
    attnrt_gated_delta_args_t args;
    void                     *ws;
    size_t                    ws_bytes;
} gdn_op_t;

static attnrt_status_t run_gdn(const void *op, attnrt_stream_t *stream)
{
    const gdn_op_t *g = op;
    return attnrt_gated_delta_run(g->plan, &g->args, g->ws, g->ws_bytes, stream);
}

static int gdn_case(attnrt_context_t *ctx, attnrt_stream_t *stream, int decode)
{
    enum { H = 2, HV = 4 };
    linear_batch_t lb;
    linear_batch_init(ctx, HV, decode, &lb);
    const size_t qk = (size_t)lb.T * H * LIN_DK, v = (size_t)lb.T * HV * LIN_DV, gates = (size_t)lb.T * HV;
    void *d_q = dev_alloc(ctx, qk * 2), *d_k = dev_alloc(ctx, qk * 2), *d_v = dev_alloc(ctx, v * 2);
    void *d_out = dev_alloc(ctx, v * 2), *d_g = dev_alloc(ctx, gates * 4), *d_beta = dev_alloc(ctx, gates * 4);
    upload_bf16(ctx, d_q, qk);
    upload_bf16(ctx, d_k, qk);
    upload_bf16(ctx, d_v, v);
    upload_f32(ctx, d_g, gates, -0.5f, -0.01f); /* log decay */
    upload_f32(ctx, d_beta, gates, 0.05f, 0.95f);
    attnrt_tensor_t tq, tk, tv, tout, tg, tb;
    const int64_t s_qk[3] = {lb.T, H, LIN_DK}, s_v[3] = {lb.T, HV, LIN_DV}, s_g[2] = {lb.T, HV};
    tensor(&tq, d_q, ATTNRT_BF16, 3, s_qk);
    tensor(&tk, d_k, ATTNRT_BF16, 3, s_qk);
    tensor(&tv, d_v, ATTNRT_BF16, 3, s_v);
    tensor(&tout, d_out, ATTNRT_BF16, 3, s_v);
    tensor(&tg, d_g, ATTNRT_F32, 2, s_g);
    tensor(&tb, d_beta, ATTNRT_F32, 2, s_g);
    gdn_op_t g = {.args = {.struct_size = sizeof g.args, .query = &tq, .key = &tk, .value = &tv, .g = &tg,
                           .beta = &tb, .out = &tout, .state = &lb.tstate, .query_start_loc = &lb.tqsl,
                           .state_indices = &lb.tslots, .has_initial_state = &lb.thas, .use_l2norm = 1}};
    CHECK_AT(attnrt_gated_delta_plan(ctx, &g.args, &lb.batch, &lb.states, lb.pool, &g.plan), "attnrt_gated_delta_plan");
    CHECK_AT(attnrt_plan_workspace_size(g.plan, &g.ws_bytes), "attnrt_plan_workspace_size");
    g.ws = g.ws_bytes ? dev_alloc(ctx, g.ws_bytes) : NULL;
    const capture_case_t c = {decode ? "gated delta: H 2, HV 4, Dk = Dv = 128, L2 norm, B 5 decode, bf16"
                                     : "gated delta: H 2, HV 4, Dk = Dv = 128, L2 norm, B 5 (4 decode, 1 prefill of 37), bf16",
                              run_gdn, &g, d_out, NULL, lb.tstate.data, v * 2, 0, lb.state_bytes};
    const int failures = check_case(ctx, stream, &c);
    attnrt_plan_destroy(g.plan);
    void *bufs[] = {g.ws, d_q, d_k, d_v, d_out, d_g, d_beta};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) attnrt_mem_free(ctx, bufs[i]);
    linear_batch_free(ctx, &lb);
    return failures;
}

int main(void)
{
    attnrt_stream_t *stream = NULL;
    attnrt_context_t *ctx = open_cuda_or_skip("cuda_graph_capture_ops", &stream);
    int failures = mla_case(ctx, stream);
    for (int decode = 0; decode < 2; decode++) {
        failures += lightning_case(ctx, stream, decode);
        failures += gdn_case(ctx, stream, decode);
    }
    attnrt_stream_destroy(stream);
    CHECK_AT(attnrt_close(ctx), "attnrt_close");
    attnrt_shutdown();
    printf("cuda_graph_capture_ops: %s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
