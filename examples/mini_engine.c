/*
 * mini_engine.c — a small continuous-batching loop that uses libattnrt the way an LLM engine does.
 *
 * Each step the scheduler (mini_engine_sched.c) picks tokens within a budget: one for every decoding
 * request, then chunks of prompts being prefilled, all in ONE mixed batch. The engine then
 *   1. copies the batch metadata (query_start_loc, seq_lens, block_table, slot_mapping) to the device,
 *   2. makes ONE attention plan for the step: the shapes are the same in every layer, so the work
 *      split and the validation of every index are paid once, not once per layer,
 *   3. per layer: writes the new tokens' K/V into that layer's paged cache (attnrt_kv_write) and runs
 *      attention over the cache (attnrt_attention_run) with the plan and a reused workspace,
 *   4. then (--gdn-layers 1, the default) one gated-delta-net layer, as in Qwen3-Next-class hybrid
 *      models: its recurrent state lives in a state slot (attnrt_state_pool_*) that a request takes
 *      when it is admitted and gives back when it completes or is preempted; the step makes one
 *      attnrt_gated_delta_plan from query_start_loc, the rows' slots and has_initial_state (0 on a
 *      request's first prefill chunk: start from zeros; 1 on later chunks and decodes) and runs it.
 * A sample of steps is recomputed in float64 from the cache as stored on the device
 * (mini_engine_check.c), and the GDN layer of those steps against a float64 recurrence started from
 * each request's slot as read back before the run; a result beyond the dtype's tolerance fails the
 * run (exit 1).
 *
 * Run: mini_engine [--help]. With no flags it uses attnrt_open(NULL)'s device and small defaults.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mini_engine.h"

int api_ok(attnrt_status_t st, const char *what)
{
    if (st == ATTNRT_OK) return 1;
    fprintf(stderr, "mini_engine: %s failed: %s: %s\n", what, attnrt_status_name(st), attnrt_last_error());
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- flags ----------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mini_engine [flags]\n"
            "  --device NAME          device to open (default: attnrt_open(NULL)'s choice)\n"
            "  --layers N             full-attention layers, each with its own paged KV cache (2)\n"
            "  --gdn-layers N         0 | 1 gated-delta-net layers after them: state slots of\n"
            "                         [--heads, 64, 64] f32, key heads = --kv-heads, one slot per seat (1)\n"
            "  --heads N              query heads (8)\n"
            "  --kv-heads N           KV heads; divides --heads (2)\n"
            "  --head-dim N           head dimension (128)\n"
            "  --block-size N         tokens per KV block (16)\n"
            "  --pool-tokens N        KV pool capacity in tokens, per layer (16384)\n"
            "  --steps N              scheduler steps to run (200)\n"
            "  --max-batch-tokens N   token budget per step (256)\n"
            "  --max-seqs N           requests running at once (32)\n"
            "  --arrival-rate X       mean requests arriving per step, Poisson (0.5)\n"
            "  --max-prompt N         prompt lengths are log-normal in [32, N] (2048)\n"
            "  --max-output N         output lengths are log-normal in [16, N] (256)\n"
            "  --dtype T              f32 | f16 | bf16: q, k, v and out (bf16)\n"
            "  --kv-dtype T           f32 | f16 | bf16 | fp8_e4m3 | fp8_e5m2: the cache (as --dtype)\n"
            "  --seed N               RNG seed for arrivals, lengths and data (1)\n"
            "  --check-every N        check every Nth step and the first in float64; 0: never (10)\n"
            "  --quiet                only the summary\n");
}

static int parse_dtype(const char *s, int allow_fp8, attnrt_dtype_t *out)
{
    if (!strcmp(s, "f32")) *out = ATTNRT_F32;
    else if (!strcmp(s, "f16")) *out = ATTNRT_F16;
    else if (!strcmp(s, "bf16")) *out = ATTNRT_BF16;
    else if (allow_fp8 && !strcmp(s, "fp8_e4m3")) *out = ATTNRT_FP8_E4M3;
    else if (allow_fp8 && !strcmp(s, "fp8_e5m2")) *out = ATTNRT_FP8_E5M2;
    else return 0;
    return 1;
}

/* 1: run; 0: exit 0 (--help); -1: bad flags (exit 2). */
static int parse_flags(int argc, char **argv, engine_config_t *c)
{
    static const struct { const char *name; size_t offset; int lo, hi; } ints[] = {
        {"--layers", offsetof(engine_config_t, layers), 1, 1024},
        {"--gdn-layers", offsetof(engine_config_t, gdn_layers), 0, 1},
        {"--heads", offsetof(engine_config_t, q_heads), 1, 1024},
        {"--kv-heads", offsetof(engine_config_t, kv_heads), 1, 1024},
        {"--head-dim", offsetof(engine_config_t, head_dim), 1, 1024},
        {"--block-size", offsetof(engine_config_t, block_size), 1, 4096},
        {"--pool-tokens", offsetof(engine_config_t, pool_tokens), 1, 1 << 26},
        {"--steps", offsetof(engine_config_t, steps), 0, 1 << 30},
        {"--max-batch-tokens", offsetof(engine_config_t, max_batch_tokens), 1, 1 << 20},
        {"--max-seqs", offsetof(engine_config_t, max_seqs), 1, 1 << 16},
        {"--max-prompt", offsetof(engine_config_t, max_prompt), 1, 1 << 20},
        {"--max-output", offsetof(engine_config_t, max_output), 1, 1 << 20},
        {"--check-every", offsetof(engine_config_t, check_every), 0, 1 << 30},
    };
    int kv_dtype_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(flag, "--quiet")) {
            c->quiet = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "mini_engine: %s needs a value (--help lists the flags)\n", flag);
            return -1;
        }
        const char *val = argv[++i];
        char *end = NULL;
        size_t k = 0;
        while (k < sizeof ints / sizeof ints[0] && strcmp(flag, ints[k].name)) k++;
        if (k < sizeof ints / sizeof ints[0]) {
            long v = strtol(val, &end, 10);
            if (*val == '\0' || *end != '\0' || v < ints[k].lo || v > ints[k].hi) {
                fprintf(stderr, "mini_engine: %s %s: expected an integer in [%d, %d]\n", flag, val, ints[k].lo,
                        ints[k].hi);
                return -1;
            }
            *(int *)((char *)c + ints[k].offset) = (int)v;
        } else if (!strcmp(flag, "--seed")) {
            c->seed = strtoull(val, &end, 10);
            if (*val == '\0' || *end != '\0') goto bad_value;
        } else if (!strcmp(flag, "--arrival-rate")) {
            c->arrival_rate = strtod(val, &end);
            if (*val == '\0' || *end != '\0' || !(c->arrival_rate > 0 && c->arrival_rate <= 100)) goto bad_value;
        } else if (!strcmp(flag, "--dtype")) {
            if (!parse_dtype(val, 0, &c->dtype)) goto bad_value;
        } else if (!strcmp(flag, "--kv-dtype")) {
            if (!parse_dtype(val, 1, &c->kv_dtype)) goto bad_value;
            kv_dtype_given = 1;
        } else if (!strcmp(flag, "--device")) {
            c->device = val;
        } else {
            fprintf(stderr, "mini_engine: unknown flag %s (--help lists the flags)\n", flag);
            return -1;
        }
        continue;
    bad_value:
        fprintf(stderr, "mini_engine: %s %s: bad value (--help lists the flags)\n", flag, val);
        return -1;
    }
    if (!kv_dtype_given) c->kv_dtype = c->dtype;
    if (c->q_heads % c->kv_heads != 0) {
        fprintf(stderr, "mini_engine: --heads %d is not a multiple of --kv-heads %d\n", c->q_heads, c->kv_heads);
        return -1;
    }
    if (c->min_prompt > c->max_prompt) c->min_prompt = c->max_prompt;
    if (c->min_output > c->max_output) c->min_output = c->max_output;
    /* A request at the longest length must fit alone, or preemption could never make room for it. */
    int longest = c->max_prompt + c->max_output;
    int pool_need = (longest + c->block_size - 1) / c->block_size * c->block_size;
    if (c->pool_tokens < pool_need) {
        fprintf(stderr, "mini_engine: --pool-tokens %d cannot hold one request of %d tokens (needs %d)\n",
                c->pool_tokens, longest, pool_need);
        return -1;
    }
    return 1;
}

/* ---- the engine ------------------------------------------------------------------------------ */

typedef struct engine {
    engine_config_t   cfg;
    attnrt_context_t *ctx;
    attnrt_stream_t  *stream;
    scheduler_t       sched;
    batch_t           batch;
    rng_t             data_rng;
    int               num_blocks;
    float             k_scale, v_scale;
    /* device memory: one K and one V cache per layer; activations sized for the largest step */
    void            **k_cache, **v_cache;
    void             *q, *k, *v, *out, *qsl, *seq_lens, *block_table, *slot_mapping, *k_scale_dev, *v_scale_dev;
    void             *workspace;
    size_t            workspace_bytes;
    /* host staging of this layer's activations */
    void             *q_host, *k_host, *v_host;
    /* the GDN layer (cfg.gdn_layers = 1): one state pool [max_seqs, HV, Dk, Dv] f32 and its inputs */
    attnrt_state_pool_t *gdn_pool;
    void             *gq, *gk, *gv, *gg, *gbeta, *gout, *state_idx, *has_init, *gdn_workspace;
    size_t            gdn_workspace_bytes;
    void             *gq_host, *gk_host, *gv_host;
    float            *gg_host, *gbeta_host, *state_before;
    int32_t          *state_idx_host;
    uint8_t          *has_init_host;
    int               slot_free_failed;
    /* statistics */
    int               step;   /* the loop's current step, 0-based */
    long              steps_run, idle_steps, prefill_tokens, decode_tokens, checks, checks_passed;
    double            attn_s, plan_s, pool_used_sum, pool_used_peak, max_rel, tol;
    long              gdn_checks, gdn_checks_passed;
    double            gdn_s, gdn_plan_s, gdn_max_rel;
} engine_t;

/* The GDN layer's shape: H = --kv-heads key heads, HV = --heads value heads, small Dk = Dv. */
enum { GDN_DK = 64, GDN_DV = 64 };

static size_t act_bytes(const engine_t *e, int heads)
{
    return (size_t)e->cfg.max_batch_tokens * heads * e->cfg.head_dim * attnrt_dtype_size(e->cfg.dtype);
}

static int engine_alloc(engine_t *e)
{
    const engine_config_t *c = &e->cfg;
    const int W = e->sched.max_blocks_per_seq;
    size_t cache_bytes = (size_t)e->num_blocks * c->block_size * c->kv_heads * c->head_dim *
                         attnrt_dtype_size(c->kv_dtype);
    e->k_cache = calloc((size_t)c->layers, sizeof *e->k_cache);
    e->v_cache = calloc((size_t)c->layers, sizeof *e->v_cache);
    e->q_host = malloc(act_bytes(e, c->q_heads));
    e->k_host = malloc(act_bytes(e, c->kv_heads));
    e->v_host = malloc(act_bytes(e, c->kv_heads));
    if (!e->k_cache || !e->v_cache || !e->q_host || !e->k_host || !e->v_host) {
        fprintf(stderr, "mini_engine: out of host memory\n");
        return 0;
    }
    for (int l = 0; l < c->layers; l++) {
        TRY_API(attnrt_mem_alloc(e->ctx, cache_bytes, &e->k_cache[l]));
        TRY_API(attnrt_mem_alloc(e->ctx, cache_bytes, &e->v_cache[l]));
    }
    TRY_API(attnrt_mem_alloc(e->ctx, act_bytes(e, c->q_heads), &e->q));
    TRY_API(attnrt_mem_alloc(e->ctx, act_bytes(e, c->kv_heads), &e->k));
    TRY_API(attnrt_mem_alloc(e->ctx, act_bytes(e, c->kv_heads), &e->v));
    TRY_API(attnrt_mem_alloc(e->ctx, act_bytes(e, c->q_heads), &e->out));
    TRY_API(attnrt_mem_alloc(e->ctx, (size_t)(c->max_seqs + 1) * sizeof(int32_t), &e->qsl));
    TRY_API(attnrt_mem_alloc(e->ctx, (size_t)c->max_seqs * sizeof(int32_t), &e->seq_lens));
    TRY_API(attnrt_mem_alloc(e->ctx, (size_t)c->max_seqs * W * sizeof(int32_t), &e->block_table));
    TRY_API(attnrt_mem_alloc(e->ctx, (size_t)c->max_batch_tokens * sizeof(int64_t), &e->slot_mapping));
    if (fp8_max(c->kv_dtype) > 0) {
        /* Per-tensor scales so that |x| <= 1 (our random data) uses the format's whole range; a real
         * engine calibrates amax / fp8_max per layer, or uses per-(block, head) scales. */
        e->k_scale = e->v_scale = (float)(1.0 / fp8_max(c->kv_dtype));
        TRY_API(attnrt_mem_alloc(e->ctx, sizeof(float), &e->k_scale_dev));
        TRY_API(attnrt_mem_alloc(e->ctx, sizeof(float), &e->v_scale_dev));
        TRY_API(attnrt_mem_copy_to_device(e->ctx, e->k_scale_dev, &e->k_scale, sizeof(float), NULL));
        TRY_API(attnrt_mem_copy_to_device(e->ctx, e->v_scale_dev, &e->v_scale, sizeof(float), NULL));
    }
    if (c->gdn_layers) {
        const int H = c->kv_heads, HV = c->q_heads;
        const size_t T = (size_t)c->max_batch_tokens, es = attnrt_dtype_size(c->dtype);
        const size_t slot_elems = (size_t)HV * GDN_DK * GDN_DV;
        e->gq_host = malloc(T * H * GDN_DK * es);
        e->gk_host = malloc(T * H * GDN_DK * es);
        e->gv_host = malloc(T * HV * GDN_DV * es);
        e->gg_host = malloc(T * HV * sizeof(float));
        e->gbeta_host = malloc(T * HV * sizeof(float));
        e->state_before = malloc((size_t)c->max_seqs * slot_elems * sizeof(float));
        e->state_idx_host = malloc((size_t)c->max_seqs * sizeof(int32_t));
        e->has_init_host = malloc((size_t)c->max_seqs);
        if (!e->gq_host || !e->gk_host || !e->gv_host || !e->gg_host || !e->gbeta_host || !e->state_before ||
            !e->state_idx_host || !e->has_init_host) {
            fprintf(stderr, "mini_engine: out of host memory\n");
            return 0;
        }
        /* One slot per seat: a running request always finds one free. */
        const int64_t slot_shape[3] = {HV, GDN_DK, GDN_DV};
        TRY_API(attnrt_state_pool_create(e->ctx, ATTNRT_F32, 3, slot_shape, c->max_seqs, &e->gdn_pool));
        TRY_API(attnrt_mem_alloc(e->ctx, T * H * GDN_DK * es, &e->gq));
        TRY_API(attnrt_mem_alloc(e->ctx, T * H * GDN_DK * es, &e->gk));
        TRY_API(attnrt_mem_alloc(e->ctx, T * HV * GDN_DV * es, &e->gv));
        TRY_API(attnrt_mem_alloc(e->ctx, T * HV * sizeof(float), &e->gg));
        TRY_API(attnrt_mem_alloc(e->ctx, T * HV * sizeof(float), &e->gbeta));
        TRY_API(attnrt_mem_alloc(e->ctx, T * HV * GDN_DV * es, &e->gout));
        TRY_API(attnrt_mem_alloc(e->ctx, (size_t)c->max_seqs * sizeof(int32_t), &e->state_idx));
        TRY_API(attnrt_mem_alloc(e->ctx, (size_t)c->max_seqs, &e->has_init));
    }
    return 1;
fail:
    return 0;
}

/* The scheduler's on_release: a request that completes or is preempted gives its state slot back
 * (a preempted one is recomputed from scratch, state included, and takes a slot again then). */
static void release_slot(void *user, request_t *r)
{
    engine_t *e = user;
    if (r->state_slot < 0) return;
    if (!api_ok(attnrt_state_slot_free(e->gdn_pool, r->state_slot), "attnrt_state_slot_free"))
        e->slot_free_failed = 1;
    r->state_slot = -1;
}

/* Frees what engine_alloc made (any part of it) and reports a context that still counts live objects. */
static int engine_free(engine_t *e)
{
    int ok = 1;
    void *single[] = {e->q, e->k, e->v, e->out, e->qsl, e->seq_lens, e->block_table, e->slot_mapping,
                      e->k_scale_dev, e->v_scale_dev, e->workspace, e->gq, e->gk, e->gv, e->gg, e->gbeta,
                      e->gout, e->state_idx, e->has_init, e->gdn_workspace};
    for (size_t i = 0; i < sizeof single / sizeof single[0]; i++)
        if (single[i]) ok &= api_ok(attnrt_mem_free(e->ctx, single[i]), "attnrt_mem_free");
    for (int l = 0; e->k_cache && e->v_cache && l < e->cfg.layers; l++) {
        if (e->k_cache[l]) ok &= api_ok(attnrt_mem_free(e->ctx, e->k_cache[l]), "attnrt_mem_free(k_cache)");
        if (e->v_cache[l]) ok &= api_ok(attnrt_mem_free(e->ctx, e->v_cache[l]), "attnrt_mem_free(v_cache)");
    }
    if (e->gdn_pool) ok &= api_ok(attnrt_state_pool_destroy(e->gdn_pool), "attnrt_state_pool_destroy");
    if (e->stream) ok &= api_ok(attnrt_stream_destroy(e->stream), "attnrt_stream_destroy");
    if (e->ctx) ok &= api_ok(attnrt_close(e->ctx), "attnrt_close"); /* BUSY here would mean a leak above */
    /* Unloads the plugins and frees the registry, so that a leak checker sees nothing left behind. */
    if (ok) ok &= api_ok(attnrt_shutdown(), "attnrt_shutdown");
    free(e->k_cache);
    free(e->v_cache);
    free(e->q_host);
    free(e->k_host);
    free(e->v_host);
    free(e->gq_host);
    free(e->gk_host);
    free(e->gv_host);
    free(e->gg_host);
    free(e->gbeta_host);
    free(e->state_before);
    free(e->state_idx_host);
    free(e->has_init_host);
    batch_free(&e->batch);
    sched_destroy(&e->sched);
    return ok;
}

/* A real engine computes q, k and v with the layer's projections (and RoPE) on the device; random
 * numbers in [-1, 1) stand in for them here, drawn on the host and copied over. */
static void fill_random(engine_t *e, void *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) encode_act(dst, i, (float)(2.0 * rng_uniform(&e->data_rng) - 1.0), e->cfg.dtype);
}

/* Runs the step's GDN layer (after the attention layers, whose plan and metadata it does not need
 * beyond query_start_loc, already on the device). With `check`, verifies it in float64. */
static int run_gdn(engine_t *e, int check)
{
    const engine_config_t *c = &e->cfg;
    const batch_t *b = &e->batch;
    const int B = b->num_seqs, T = b->num_tokens, H = c->kv_heads, HV = c->q_heads;
    attnrt_context_t *ctx = e->ctx;
    attnrt_stream_t *st = e->stream;
    attnrt_plan_t *plan = NULL;

    /* Admission: a request scheduled for the first time (or again after a preemption) takes a slot. */
    for (int r = 0; r < B; r++) {
        request_t *req = b->rows[r];
        if (req->state_slot < 0) TRY_API(attnrt_state_slot_alloc(e->gdn_pool, &req->state_slot));
        e->state_idx_host[r] = req->state_slot;
        /* Its first prefill chunk starts from zeros (the slot's old contents are never read). */
        e->has_init_host[r] = req->computed > 0;
    }
    TRY_API(attnrt_mem_copy_to_device(ctx, e->state_idx, e->state_idx_host, (size_t)B * sizeof(int32_t), st));
    TRY_API(attnrt_mem_copy_to_device(ctx, e->has_init, e->has_init_host, (size_t)B, st));

    /* Stand-ins for the layer's projections: q, k, v in [-1, 1); g = -softplus(x) < 0 (log decay),
     * beta = sigmoid(x) in (0, 1). */
    const size_t qk_elems = (size_t)T * H * GDN_DK, v_elems = (size_t)T * HV * GDN_DV, gb = (size_t)T * HV;
    const size_t es = attnrt_dtype_size(c->dtype);
    fill_random(e, e->gq_host, qk_elems);
    fill_random(e, e->gk_host, qk_elems);
    fill_random(e, e->gv_host, v_elems);
    for (size_t i = 0; i < gb; i++) {
        e->gg_host[i] = (float)-log1p(exp(4.0 * rng_uniform(&e->data_rng) - 4.0));
        e->gbeta_host[i] = (float)(1.0 / (1.0 + exp(-(4.0 * rng_uniform(&e->data_rng) - 2.0))));
    }
    TRY_API(attnrt_mem_copy_to_device(ctx, e->gq, e->gq_host, qk_elems * es, st));
    TRY_API(attnrt_mem_copy_to_device(ctx, e->gk, e->gk_host, qk_elems * es, st));
    TRY_API(attnrt_mem_copy_to_device(ctx, e->gv, e->gv_host, v_elems * es, st));
    TRY_API(attnrt_mem_copy_to_device(ctx, e->gg, e->gg_host, gb * sizeof(float), st));
    TRY_API(attnrt_mem_copy_to_device(ctx, e->gbeta, e->gbeta_host, gb * sizeof(float), st));

    const int64_t qk_shape[3] = {T, H, GDN_DK}, v_shape[3] = {T, HV, GDN_DV}, gb_shape[2] = {T, HV};
    const int64_t qsl_shape[1] = {B + 1}, b_shape[1] = {B};
    attnrt_tensor_t q, k, v, g, beta, out, state, qsl, sidx, hinit;
    TRY_API(attnrt_tensor_init(&q, e->gq, c->dtype, 3, qk_shape));
    TRY_API(attnrt_tensor_init(&k, e->gk, c->dtype, 3, qk_shape));
    TRY_API(attnrt_tensor_init(&v, e->gv, c->dtype, 3, v_shape));
    TRY_API(attnrt_tensor_init(&g, e->gg, ATTNRT_F32, 2, gb_shape));
    TRY_API(attnrt_tensor_init(&beta, e->gbeta, ATTNRT_F32, 2, gb_shape));
    TRY_API(attnrt_tensor_init(&out, e->gout, c->dtype, 3, v_shape));
    TRY_API(attnrt_state_pool_tensor(e->gdn_pool, &state));
    TRY_API(attnrt_tensor_init(&qsl, e->qsl, ATTNRT_I32, 1, qsl_shape));
    TRY_API(attnrt_tensor_init(&sidx, e->state_idx, ATTNRT_I32, 1, b_shape));
    TRY_API(attnrt_tensor_init(&hinit, e->has_init, ATTNRT_U8, 1, b_shape));
    /* The output is not fed anywhere (like the attention layers' outputs): a real model would run it
     * through the gated RMSNorm and the output projection into the residual stream. */
    const attnrt_gated_delta_args_t args = {
        .struct_size = sizeof args, .query = &q, .key = &k, .value = &v, .g = &g, .beta = &beta, .out = &out,
        .state = &state, .query_start_loc = &qsl, .state_indices = &sidx, .has_initial_state = &hinit,
        .scale = 0.0f /* Dk^-1/2 */, .use_l2norm = 1};
    const attnrt_batch_host_t host = {.struct_size = sizeof host, .num_seqs = B,
                                      .query_start_loc = b->query_start_loc};
    const attnrt_state_host_t states = {.struct_size = sizeof states, .state_indices = e->state_idx_host,
                                        .has_initial_state = e->has_init_host};

    double t0 = now_s();
    TRY_API(attnrt_gated_delta_plan(ctx, &args, &host, &states, e->gdn_pool, &plan));
    e->gdn_plan_s += now_s() - t0;
    size_t need = 0;
    TRY_API(attnrt_plan_workspace_size(plan, &need));
    if (need > e->gdn_workspace_bytes) {
        if (e->gdn_workspace) TRY_API(attnrt_mem_free(ctx, e->gdn_workspace));
        e->gdn_workspace = NULL;
        e->gdn_workspace_bytes = 0;
        TRY_API(attnrt_mem_alloc(ctx, need + need / 4, &e->gdn_workspace));
        e->gdn_workspace_bytes = need + need / 4;
    }

    const size_t slot_elems = (size_t)HV * GDN_DK * GDN_DV;
    if (check) /* the run overwrites the slots: keep what the continuing requests start from */
        for (int r = 0; r < B; r++) {
            if (!e->has_init_host[r]) continue;
            const unsigned char *src = (const unsigned char *)state.data +
                                       (size_t)e->state_idx_host[r] * slot_elems * sizeof(float);
            TRY_API(attnrt_mem_copy_to_host(ctx, e->state_before + (size_t)r * slot_elems, src,
                                            slot_elems * sizeof(float), st));
        }
    TRY_API(attnrt_stream_synchronize(ctx, st)); /* the host buffers are refilled next step */

    t0 = now_s();
    TRY_API(attnrt_gated_delta_run(plan, &args, e->gdn_workspace_bytes ? e->gdn_workspace : NULL,
                                   e->gdn_workspace_bytes, st));
    TRY_API(attnrt_stream_synchronize(ctx, st));
    e->gdn_s += now_s() - t0;

    if (check) {
        const check_gdn_t in = {.batch = b, .H = H, .HV = HV, .Dk = GDN_DK, .Dv = GDN_DV, .q_host = e->gq_host,
                                .k_host = e->gk_host, .v_host = e->gv_host, .g_host = e->gg_host,
                                .beta_host = e->gbeta_host, .has_initial_state = e->has_init_host,
                                .state_before = e->state_before, .out_dev = e->gout};
        double rel = 0.0;
        if (!check_gdn(ctx, st, c, &in, &rel)) goto fail;
        e->gdn_checks++;
        if (isnan(rel) || rel > e->gdn_max_rel) e->gdn_max_rel = rel;
        if (!(rel <= e->tol)) {
            fprintf(stderr, "mini_engine: CHECK FAILED at step %d, GDN layer: relative L2 error %.3g > %.3g "
                    "(%d seqs, %d tokens)\n", e->step + 1, rel, e->tol, B, T);
            goto fail;
        }
        e->gdn_checks_passed++;
    }
    TRY_API(attnrt_plan_destroy(plan));
    return 1;
fail:
    attnrt_plan_destroy(plan);
    return 0;
}

/* Runs one scheduled step through every layer. */
static int run_step(engine_t *e, int check_layer)
{
    const engine_config_t *c = &e->cfg;
    const batch_t *b = &e->batch;
    const int B = b->num_seqs, T = b->num_tokens, W = e->sched.max_blocks_per_seq;
    attnrt_plan_t *plan = NULL;

    /* The step's metadata, on the device once and shared by every layer. */
    attnrt_context_t *ctx = e->ctx;
    attnrt_stream_t *st = e->stream;
    TRY_API(attnrt_mem_copy_to_device(ctx, e->qsl, b->query_start_loc, (size_t)(B + 1) * sizeof(int32_t), st));
    TRY_API(attnrt_mem_copy_to_device(ctx, e->seq_lens, b->seq_lens, (size_t)B * sizeof(int32_t), st));
    TRY_API(attnrt_mem_copy_to_device(ctx, e->block_table, b->block_table, (size_t)B * W * sizeof(int32_t), st));
    TRY_API(attnrt_mem_copy_to_device(ctx, e->slot_mapping, b->slot_mapping, (size_t)T * sizeof(int64_t), st));

    const int64_t q_shape[3] = {T, c->q_heads, c->head_dim}, kv_shape[3] = {T, c->kv_heads, c->head_dim};
    const int64_t cache_shape[4] = {e->num_blocks, c->block_size, c->kv_heads, c->head_dim};
    const int64_t bt_shape[2] = {B, W}, qsl_shape[1] = {B + 1}, sl_shape[1] = {B}, slot_shape[1] = {T}, one[1] = {1};
    attnrt_tensor_t q, k, v, out, kc, vc, bt, qsl, sl, slots, ks, vs;
    TRY_API(attnrt_tensor_init(&q, e->q, c->dtype, 3, q_shape));
    TRY_API(attnrt_tensor_init(&k, e->k, c->dtype, 3, kv_shape));
    TRY_API(attnrt_tensor_init(&v, e->v, c->dtype, 3, kv_shape));
    TRY_API(attnrt_tensor_init(&out, e->out, c->dtype, 3, q_shape));
    TRY_API(attnrt_tensor_init(&kc, e->k_cache[0], c->kv_dtype, 4, cache_shape)); /* NHD layout */
    TRY_API(attnrt_tensor_init(&vc, e->v_cache[0], c->kv_dtype, 4, cache_shape));
    TRY_API(attnrt_tensor_init(&bt, e->block_table, ATTNRT_I32, 2, bt_shape));
    TRY_API(attnrt_tensor_init(&qsl, e->qsl, ATTNRT_I32, 1, qsl_shape));
    TRY_API(attnrt_tensor_init(&sl, e->seq_lens, ATTNRT_I32, 1, sl_shape));
    TRY_API(attnrt_tensor_init(&slots, e->slot_mapping, ATTNRT_I64, 1, slot_shape));
    TRY_API(attnrt_tensor_init(&ks, e->k_scale_dev, ATTNRT_F32, 1, one));
    TRY_API(attnrt_tensor_init(&vs, e->v_scale_dev, ATTNRT_F32, 1, one));
    const int fp8 = fp8_max(c->kv_dtype) > 0;

    attnrt_attention_args_t args = {
        .struct_size = sizeof args, .query = &q, .key_cache = &kc, .value_cache = &vc, .block_table = &bt,
        .query_start_loc = &qsl, .seq_lens = &sl, .out = &out, .key_scale = fp8 ? &ks : NULL,
        .value_scale = fp8 ? &vs : NULL, .scale = 0.0f /* 1/sqrt(D) */, .causal = 1};
    attnrt_kv_write_args_t kv_args = {
        .struct_size = sizeof kv_args, .key = &k, .value = &v, .slot_mapping = &slots, .key_cache = &kc,
        .value_cache = &vc, .key_scale = args.key_scale, .value_scale = args.value_scale,
        /* The host copy lets the runtime check every slot before dispatch: cheap insurance. */
        .slot_mapping_host = b->slot_mapping};
    const attnrt_batch_host_t host = {.struct_size = sizeof host, .num_seqs = B,
                                      .query_start_loc = b->query_start_loc, .seq_lens = b->seq_lens,
                                      .block_table = b->block_table, .block_table_stride = W};

    double t0 = now_s();
    TRY_API(attnrt_attention_plan(ctx, &args, &host, &plan));
    e->plan_s += now_s() - t0;
    size_t need = 0;
    TRY_API(attnrt_plan_workspace_size(plan, &need));
    if (need > e->workspace_bytes) { /* grown with headroom, so that it settles after a few steps */
        if (e->workspace) TRY_API(attnrt_mem_free(ctx, e->workspace));
        e->workspace = NULL;
        e->workspace_bytes = 0;
        TRY_API(attnrt_mem_alloc(ctx, need + need / 4, &e->workspace));
        e->workspace_bytes = need + need / 4;
    }

    const size_t q_elems = (size_t)T * c->q_heads * c->head_dim, kv_elems = (size_t)T * c->kv_heads * c->head_dim;
    const size_t es = attnrt_dtype_size(c->dtype);
    for (int l = 0; l < c->layers; l++) {
        fill_random(e, e->q_host, q_elems);
        fill_random(e, e->k_host, kv_elems);
        fill_random(e, e->v_host, kv_elems);
        TRY_API(attnrt_mem_copy_to_device(ctx, e->q, e->q_host, q_elems * es, st));
        TRY_API(attnrt_mem_copy_to_device(ctx, e->k, e->k_host, kv_elems * es, st));
        TRY_API(attnrt_mem_copy_to_device(ctx, e->v, e->v_host, kv_elems * es, st));
        TRY_API(attnrt_stream_synchronize(ctx, st)); /* the host buffers are refilled for the next layer */

        /* Same plan, same shapes; only the caches' data pointers change from layer to layer. */
        kc.data = e->k_cache[l];
        vc.data = e->v_cache[l];
        t0 = now_s();
        TRY_API(attnrt_kv_write(ctx, &kv_args, st));
        TRY_API(attnrt_attention_run(plan, &args, e->workspace, e->workspace_bytes, st));
        TRY_API(attnrt_stream_synchronize(ctx, st));
        e->attn_s += now_s() - t0;

        if (l == check_layer) {
            const check_layer_t in = {.batch = b, .q_host = e->q_host, .k_host = e->k_host, .v_host = e->v_host,
                                      .out_dev = e->out,
                                      .k_cache_dev = e->k_cache[l], .v_cache_dev = e->v_cache[l],
                                      .k_scale = e->k_scale, .v_scale = e->v_scale};
            double rel = 0.0;
            long kv_bad = 0;
            if (!check_step(ctx, st, c, W, &in, &rel, &kv_bad)) goto fail;
            e->checks++;
            if (rel > e->max_rel) e->max_rel = rel;
            if (kv_bad > 0) {
                fprintf(stderr, "mini_engine: CHECK FAILED at step %d, layer %d: %ld cache elements of this "
                        "step's tokens differ from what attnrt_kv_write was given\n", e->step + 1,
                        l, kv_bad);
                goto fail;
            }
            if (!(rel <= e->tol)) {
                fprintf(stderr, "mini_engine: CHECK FAILED at step %d, layer %d: relative L2 error %.3g > %.3g "
                        "(%d seqs, %d tokens)\n", e->step + 1, l, rel, e->tol, B, T);
                goto fail;
            }
            e->checks_passed++;
        }
    }
    TRY_API(attnrt_plan_destroy(plan));
    plan = NULL;
    /* The GDN layer is checked on every checked step (check_layer >= 0), whatever attention layer is. */
    if (c->gdn_layers && !run_gdn(e, check_layer >= 0)) goto fail;
    return 1;
fail:
    attnrt_plan_destroy(plan);
    return 0;
}

static void print_header(const engine_t *e)
{
    const engine_config_t *c = &e->cfg;
    const char *name = attnrt_context_device_name(e->ctx);
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    uint32_t index = 0;
    if (attnrt_device_find(name, &index) != ATTNRT_OK || attnrt_device_get_properties(index, &props) != ATTNRT_OK)
        props.model[0] = '\0';
    double mib = (double)e->num_blocks * c->block_size * 2 * c->kv_heads * c->head_dim *
                 attnrt_dtype_size(c->kv_dtype) / (1024.0 * 1024.0);
    printf("mini_engine: libattnrt %s on %s (%s)\n", attnrt_version_string(), name, props.model);
    printf("  model: %d layers, %d q heads / %d kv heads, head dim %d; %s activations, %s KV cache\n", c->layers,
           c->q_heads, c->kv_heads, c->head_dim, attnrt_dtype_name(c->dtype), attnrt_dtype_name(c->kv_dtype));
    if (c->gdn_layers)
        printf("  + %d GDN layer: %d key / %d value heads, Dk %d, Dv %d; %d f32 state slots (%.1f MiB)\n",
               c->gdn_layers, c->kv_heads, c->q_heads, GDN_DK, GDN_DV, c->max_seqs,
               (double)c->max_seqs * c->q_heads * GDN_DK * GDN_DV * sizeof(float) / (1024.0 * 1024.0));
    printf("  pool: %d blocks of %d tokens per layer (%.1f MiB K+V per layer); budget %d tokens/step, <= %d seqs\n",
           e->num_blocks, c->block_size, mib, c->max_batch_tokens, c->max_seqs);
    printf("  load: %.2f requests/step, prompts 32..%d, outputs 16..%d tokens; %d steps, seed %llu\n",
           c->arrival_rate, c->max_prompt, c->max_output, c->steps, (unsigned long long)c->seed);
}

int main(int argc, char **argv)
{
    engine_t e;
    memset(&e, 0, sizeof e);
    e.cfg = (engine_config_t){.layers = 2, .gdn_layers = 1, .q_heads = 8, .kv_heads = 2, .head_dim = 128, .block_size = 16,
                              .steps = 200, .max_batch_tokens = 256, .max_seqs = 32, .pool_tokens = 16384,
                              .arrival_rate = 0.5, .min_prompt = 32, .max_prompt = 2048, .min_output = 16,
                              .max_output = 256, .seed = 1, .dtype = ATTNRT_BF16, .kv_dtype = ATTNRT_BF16,
                              .check_every = 10};
    int parsed = parse_flags(argc, argv, &e.cfg);
    if (parsed <= 0) return parsed == 0 ? 0 : 2;
    const engine_config_t *c = &e.cfg;
    int ok = 0;

    e.tol = check_tolerance(c);
    e.data_rng.s = c->seed ^ 0x5eed0fda7aull; /* apart from the scheduler's, so data size cannot shift arrivals */
    if (!sched_init(&e.sched, c) || !batch_alloc(&e.batch, &e.sched)) {
        fprintf(stderr, "mini_engine: out of host memory\n");
        goto fail;
    }
    e.num_blocks = e.sched.pool.num_total;
    if (c->gdn_layers) {
        e.sched.on_release = release_slot;
        e.sched.release_user = &e;
    }
    TRY_API(attnrt_open(c->device, &e.ctx));
    TRY_API(attnrt_stream_create(e.ctx, &e.stream));
    if (!engine_alloc(&e)) goto fail;
    print_header(&e);

    const int progress_every = c->steps >= 10 ? c->steps / 10 : 1;
    double start = now_s();
    for (int step = 0; step < c->steps; step++) {
        e.step = step;
        if (!sched_arrivals(&e.sched)) {
            fprintf(stderr, "mini_engine: out of host memory\n");
            goto fail;
        }
        sched_schedule(&e.sched, &e.batch);
        if (e.slot_free_failed) goto fail; /* a preemption's slot could not be freed (printed) */
        double used = sched_pool_used(&e.sched);
        e.pool_used_sum += used;
        if (used > e.pool_used_peak) e.pool_used_peak = used;
        if (e.batch.num_tokens == 0) {
            e.idle_steps++; /* nobody has arrived yet */
            continue;
        }
        /* Check the first step and every Nth after it, rotating through the layers. */
        int check_layer = -1;
        if (c->check_every > 0 && e.steps_run % c->check_every == 0)
            check_layer = (int)(e.steps_run / c->check_every % c->layers);
        if (!run_step(&e, check_layer)) goto fail;
        e.steps_run++;
        e.prefill_tokens += e.batch.prefill_tokens;
        e.decode_tokens += e.batch.decode_tokens;
        sched_finish_step(&e.sched);
        if (e.slot_free_failed) goto fail;
        if (!c->quiet && (step + 1) % progress_every == 0)
            printf("step %4d | running %3d waiting %3d | batch %4d tok (prefill %4d, decode %3d) | pool %3.0f%% | "
                   "%.0f tok/s\n", step + 1, e.sched.num_running, e.sched.num_waiting, e.batch.num_tokens,
                   e.batch.prefill_tokens, e.batch.decode_tokens, 100.0 * used,
                   (double)(e.prefill_tokens + e.decode_tokens) / (now_s() - start));
    }
    double wall = now_s() - start;

    long tokens = e.prefill_tokens + e.decode_tokens;
    printf("summary:\n");
    printf("  steps       %ld run, %ld idle (waiting for the first arrival)\n", e.steps_run, e.idle_steps);
    printf("  requests    %ld arrived, %ld completed, %d running, %d waiting; %ld preemptions\n", e.sched.arrived,
           e.sched.completed, e.sched.num_running, e.sched.num_waiting, e.sched.preemptions);
    printf("  tokens      %ld (prefill %ld, decode %ld) x %d attention + %d GDN layers\n", tokens, e.prefill_tokens,
           e.decode_tokens, c->layers, c->gdn_layers);
    printf("  wall        %.2f s, %.0f tokens/s (with host-side random data and checks)\n", wall,
           wall > 0 ? tokens / wall : 0.0);
    printf("  attention   %.2f s in kv_write + attention_run (synchronised), %.0f tokens/s; planning %.3f s\n",
           e.attn_s, e.attn_s > 0 ? tokens / e.attn_s : 0.0, e.plan_s);
    if (c->gdn_layers)
        printf("  gdn         %.2f s in gated_delta_run (synchronised), %.0f tokens/s; planning %.3f s\n", e.gdn_s,
               e.gdn_s > 0 ? tokens / e.gdn_s : 0.0, e.gdn_plan_s);
    printf("  pool        peak %.0f%%, mean %.0f%% of %d blocks\n", 100.0 * e.pool_used_peak,
           c->steps ? 100.0 * e.pool_used_sum / c->steps : 0.0, e.num_blocks);
    printf("  checks      %ld/%ld passed, max relative L2 error of a request %.2e (tolerance %.0e)\n",
           e.checks_passed, e.checks, e.max_rel, e.tol);
    if (c->gdn_layers)
        printf("  gdn checks  %ld/%ld passed, max relative L2 error of a request %.2e (tolerance %.0e)\n",
               e.gdn_checks_passed, e.gdn_checks, e.gdn_max_rel, e.tol);
    ok = 1;
fail:
    ok &= engine_free(&e); /* also closes the context */
    return ok ? 0 : 1;
}
