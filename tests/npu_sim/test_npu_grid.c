/* test_npu_grid.c — selection and plan agree. Over a generated grid (both profiles, both front ends,
 * every model kind, full / sinks / FP8 / sliding-window / dense MLA / sparse FP8 MLA layers, and every
 * limit of the profile at, one below and one above it, as block sizes, max_model_len and windows), each
 * configuration is asked of select_attention and planned as a batch whose block table is
 * ceil(max_model_len / block_size) columns wide on a device opened with the same front end and model
 * kind: both accept with the same kernel, partition and partition count, or both refuse with the same
 * rule. A max_model_len the table rounds up to whole blocks must select what the rounded one does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "npu_fixture.h"
#include "npu_mla.h"
#include "npu_ops.h"
#include "npu_plan.h"
#include "npu_select.h"

enum { L_FULL, L_SINKS, L_FP8, L_SLIDING, L_MLA, L_MLA_SPARSE_FP8, L_COUNT };
static const char *const layer_names[L_COUNT] = {"full", "full+sinks", "full+fp8", "sliding", "mla", "mla_sparse+fp8"};
static const char *const kind_names[] = {"decoder", "pooling", "pooling_qwen3", "encoder_decoder"};

#define HQ 8
#define HKV 2
#define HEAD 128
#define KV_DIM 576
#define V_DIM 512
#define TOPK 16
#define MAX_COLS 70000 /* configurations of more block-table columns are asked of selection only */

typedef struct grid_stats {
    long configs, planned, accepted, refused;
} grid_stats_t;

static attnrt_tensor_t tensor(attnrt_dtype_t dt, int ndim, const int64_t *shape)
{
    attnrt_tensor_t t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.dtype = dt;
    t.ndim = ndim;
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t.shape[d] = shape[d];
        t.strides[d] = stride;
        stride *= shape[d] > 0 ? shape[d] : 1;
    }
    return t;
}

typedef struct config {
    uint32_t fe, kind, layer;
    int64_t  max_len, block, window;
} config_t;

static void describe(const char *profile, const config_t *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s %s %s %s max_model_len %lld block %lld window %lld", profile,
             c->fe == ATTNRT_FRONT_END_COMPILED ? "compiled" : "vllm", kind_names[c->kind], layer_names[c->layer],
             (long long)c->max_len, (long long)c->block, (long long)c->window);
}

static attnrt_attention_config_t make_config(const config_t *c, int64_t max_len)
{
    attnrt_attention_config_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.front_end = c->fe;
    a.model_kind = c->kind;
    a.layer_kind = c->layer == L_SLIDING ? ATTNRT_LAYER_SLIDING
                 : c->layer == L_MLA ? ATTNRT_LAYER_MLA_DENSE
                 : c->layer == L_MLA_SPARSE_FP8 ? ATTNRT_LAYER_MLA_SPARSE : ATTNRT_LAYER_FULL;
    a.max_model_len = max_len;
    a.block_size = c->block;
    a.sliding_window = c->layer == L_SLIDING ? c->window : 0;
    a.head_dim = c->layer >= L_MLA ? KV_DIM : HEAD;
    a.has_sinks = c->layer == L_SINKS;
    a.kv_dtype = c->layer == L_FP8 || c->layer == L_MLA_SPARSE_FP8 ? ATTNRT_FP8_E4M3 : (attnrt_dtype_t){0, 0, 0};
    return a;
}

/* Plans one decode row at position max_len over `cols` columns of `block`; returns the status, the
 * kernel name in kernel and the message in msg. */
static attnrt_status_t plan(const npu_fx_t *fx, const config_t *c, int64_t cols, char *kernel, size_t kcap, char *msg,
                            size_t cap)
{
    const int64_t S = cols * c->block;
    const int32_t qsl[2] = {0, 1}, sl[1] = {(int32_t)S};
    attnrt_batch_host_t batch = {sizeof batch, 1, qsl, sl, NULL, 0};
    const int64_t bt_shape[2] = {1, cols}, one[1] = {1}, two[1] = {2}, heads[1] = {HQ};
    attnrt_tensor_t bt = tensor(ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_INT, 32), 2, bt_shape);
    attnrt_tensor_t qsl_t = tensor(ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_INT, 32), 1, two);
    attnrt_tensor_t sl_t = tensor(ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_INT, 32), 1, one);
    attnrt_tensor_t sinks = tensor(ATTNRT_F32, 1, heads);
    const attnrt_dtype_t kv = c->layer == L_FP8 || c->layer == L_MLA_SPARSE_FP8 ? ATTNRT_FP8_E4M3 : ATTNRT_F16;
    void *p = NULL;
    size_t ws = 0;
    attnrt_status_t st;
    if (c->layer >= L_MLA) {
        const int64_t qs[3] = {1, HQ, KV_DIM}, cs[4] = {1, c->block, 1, KV_DIM}, os[3] = {1, HQ, V_DIM}, is[2] = {1, TOPK};
        attnrt_tensor_t q = tensor(ATTNRT_F16, 3, qs), cache = tensor(kv, 4, cs), out = tensor(ATTNRT_F16, 3, os);
        attnrt_tensor_t idx = tensor(ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_INT, 32), 2, is);
        attnrt_mla_args_t a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.query = &q;
        a.kv_cache = &cache;
        a.block_table = &bt;
        a.query_start_loc = &qsl_t;
        a.seq_lens = &sl_t;
        a.out = &out;
        a.indices = c->layer == L_MLA_SPARSE_FP8 ? &idx : NULL;
        a.scale = 0.1f;
        a.causal = c->layer == L_MLA;
        st = fx->api->mla_plan(fx->dev, &a, &batch, &p, &ws);
        if (st == ATTNRT_OK) {
            snprintf(kernel, kcap, "%s", ((const npu_mla_plan_t *)p)->kernel_name);
            fx->api->plan_destroy(fx->dev, p);
        }
    } else {
        const int64_t qs[3] = {1, HQ, HEAD}, cs[4] = {1, c->block, HKV, HEAD};
        attnrt_tensor_t q = tensor(ATTNRT_F16, 3, qs), k = tensor(kv, 4, cs), v = tensor(kv, 4, cs);
        attnrt_tensor_t out = tensor(ATTNRT_F16, 3, qs);
        attnrt_attention_args_t a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.query = &q;
        a.key_cache = &k;
        a.value_cache = &v;
        a.block_table = &bt;
        a.query_start_loc = &qsl_t;
        a.seq_lens = &sl_t;
        a.out = &out;
        a.sinks = c->layer == L_SINKS ? &sinks : NULL;
        a.causal = 1;
        a.sliding_window_left = c->layer == L_SLIDING ? (int32_t)c->window : 0;
        st = fx->api->attention_plan(fx->dev, &a, &batch, &p, &ws);
        if (st == ATTNRT_OK) {
            snprintf(kernel, kcap, "%s", ((const npu_attn_plan_t *)p)->kernel_name);
            fx->api->attention_plan_destroy(fx->dev, p);
        }
    }
    if (st != ATTNRT_OK) fx->api->last_error(msg, cap);
    return st;
}

/* The rule's own words: the message up to the closing " [profile, ...]" hint. */
static void core_message(const char *msg, const char *profile, char *out, size_t cap)
{
    char tag[64];
    snprintf(tag, sizeof tag, " [%s", profile);
    const char *end = strstr(msg, tag);
    const size_t n = end ? (size_t)(end - msg) : strlen(msg);
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), msg);
}

static int check_config(const npu_fx_t *fx, const npu_select_ctx_t *ctx, const config_t *c, grid_stats_t *gs)
{
    char what[192], msg[NPU_MSG_MAX], msg_r[NPU_MSG_MAX], pmsg[1024], core[NPU_MSG_MAX], kernel[32] = "";
    describe(ctx->profile->name, c, what, sizeof what);
    attnrt_attention_selection_t sel, sel_r;
    const attnrt_attention_config_t cfg = make_config(c, c->max_len);
    const attnrt_status_t st = npu_select(ctx, &cfg, &sel, msg, sizeof msg);
    gs->configs++;
    if (st == ATTNRT_ERR_INVALID_ARGUMENT) return 0;
    if (st == ATTNRT_OK) gs->accepted++; else gs->refused++;
    const int64_t cols = (c->max_len + c->block - 1) / c->block, S_r = cols * c->block;
    /* the length the block table rounds up to selects what max_model_len does */
    const attnrt_attention_config_t cfg_r = make_config(c, S_r);
    const attnrt_status_t st_r = npu_select(ctx, &cfg_r, &sel_r, msg_r, sizeof msg_r);
    if (st == ATTNRT_OK && (st_r != ATTNRT_OK || strcmp(sel.kernel, sel_r.kernel) || sel.block_size != sel_r.block_size ||
                            sel.partition_len != sel_r.partition_len || sel.num_partitions != sel_r.num_partitions)) {
        fprintf(stderr, "FAIL %s: accepted (%s x %lld) but max_model_len %lld is not: %s\n", what, sel.kernel,
                (long long)sel.num_partitions, (long long)S_r, st_r == ATTNRT_OK ? sel_r.kernel : msg_r);
        return 1;
    }
    if (cols > MAX_COLS) return 0;
    gs->planned++;
    const attnrt_status_t pst = plan(fx, c, cols, kernel, sizeof kernel, pmsg, sizeof pmsg);
    if ((pst == ATTNRT_OK) != (st_r == ATTNRT_OK)) {
        fprintf(stderr, "FAIL %s: select %s, plan %s\n", what, st_r == ATTNRT_OK ? sel_r.kernel : msg_r,
                pst == ATTNRT_OK ? "accepted" : pmsg);
        return 1;
    }
    if (pst != ATTNRT_OK) {
        core_message(msg_r, ctx->profile->name, core, sizeof core);
        if (pst != ATTNRT_ERR_UNSUPPORTED || !strstr(pmsg, core)) {
            fprintf(stderr, "FAIL %s: select refuses \"%s\", plan refuses (%d) \"%s\"\n", what, core, pst, pmsg);
            return 1;
        }
        return 0;
    }
    if (strcmp(kernel, sel_r.kernel)) {
        fprintf(stderr, "FAIL %s: select %s, plan %s\n", what, sel_r.kernel, kernel);
        return 1;
    }
    return 0;
}

/* Every limit of the profile at, one below and one above it (in tokens and in powers of two). */
static size_t limit_values(const npu_profile_t *p, int64_t *v, size_t cap)
{
    const int64_t limits[] = {p->vllm_block_min, p->vllm_block_max, p->flash_partition_min, p->flash_partition_max,
                              p->eager_max_seq_len, p->flash_default_partition};
    size_t n = 0;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        const int64_t L = limits[i], cand[] = {L / 2, L - 1, L, L + 1, 2 * L};
        for (size_t k = 0; k < sizeof cand / sizeof cand[0]; k++) {
            int dup = 0;
            for (size_t j = 0; j < n; j++) dup |= v[j] == cand[k];
            if (!dup && n < cap) v[n++] = cand[k];
        }
    }
    return n;
}

static void selection_and_plan_agree(void **state)
{
    (void)state;
    static const char *const profiles[] = {"rbln-atom", "rbln-rebel100"};
    static const uint32_t fes[] = {ATTNRT_FRONT_END_VLLM, ATTNRT_FRONT_END_COMPILED};
    grid_stats_t gs = {0, 0, 0, 0};
    int failures = 0;
    for (size_t pi = 0; pi < 2; pi++)
        for (size_t fi = 0; fi < 2; fi++)
            for (uint32_t kind = 0; kind < 4; kind++) {
                npu_fx_t fx;
                assert_int_equal(npu_fx_open_kind(&fx, profiles[pi], fes[fi] == ATTNRT_FRONT_END_COMPILED ? "compiled" : "vllm",
                                                  kind_names[kind]),
                                 ATTNRT_OK);
                const npu_profile_t *p = npu_profile_find(profiles[pi]);
                const npu_select_ctx_t ctx = {p, fes[fi], p->default_prefill_chunk, kind};
                int64_t v[64];
                const size_t n = limit_values(p, v, 64);
                const int64_t wmax = npu_profile_window_max(p, p->default_prefill_chunk);
                const int64_t windows[] = {128, wmax - 1, wmax, wmax + 1};
                for (uint32_t layer = 0; layer < L_COUNT; layer++)
                    for (size_t bi = 0; bi < n; bi++)
                        for (size_t si = 0; si < n + 2; si++)
                            for (size_t wi = 0; wi < (layer == L_SLIDING ? 4u : 1u); wi++) {
                                /* max_model_len: every limit value, and 3 and 4 blocks */
                                const int64_t S = si < n ? v[si] : v[bi] * (int64_t)(si - n + 3);
                                const config_t c = {fes[fi], kind, layer, S, v[bi], windows[wi]};
                                failures += check_config(&fx, &ctx, &c, &gs);
                                if (failures > 20) fail_msg("more than 20 disagreements");
                            }
                npu_fx_close(&fx);
            }
    printf("%ld configurations (%ld planned): %ld accepted, %ld refused; %d disagreements\n", gs.configs, gs.planned,
           gs.accepted, gs.refused, failures);
    assert_int_equal(failures, 0);
    assert_true(gs.accepted > 1000 && gs.refused > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(selection_and_plan_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
