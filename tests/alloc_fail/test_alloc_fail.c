/* Allocation failure, SQLite style: for each scenario (plugin discovery, opening a device, streams, every
 * op's plan and run, state pools, queries) the clean call is made once to count the host allocations
 * libattnrt and its plugins make in it; then, for every N up to that count, the N-th fails and
 *  - the call returns ATTNRT_OK with the clean call's result, or ATTNRT_ERR_OUT_OF_MEMORY with a message
 *    that starts with the failing API function's name (discovery: any message, as it is replayed to
 *    whichever call comes next);
 *  - once what the call made is released, none of our blocks is left over;
 *  - the same call without the failure then succeeds again with the clean result.
 * Runs (kv_write, merge_states and every plan's run) must make no host allocation at all (the ABI's rule,
 * so that a run can be captured in a graph).
 * The allocator is interposed (fail_malloc.c); the cpu plugin runs 2 threads (ATTNRT_NUM_THREADS), so
 * its pool is made and used but its allocations stay in a fixed order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fail_malloc.h"
#include "workload.h"

enum { AF_BLOCKS = 64, AF_MAX_PLUGINS = 32 };

typedef struct scenario scenario_t;

/* One scenario's state across its calls. */
typedef struct run {
    const scenario_t *s;
    wl_t             *w;         /* the workload's context and args; NULL where the scenario needs none */
    const char       *failed_fn; /* the API function whose step failed */
    long              failing;   /* the allocation made to fail in this call (0: none) */

    /* what a call made, released after each call */
    attnrt_context_t    *ctx;
    attnrt_stream_t     *stream;
    attnrt_event_t      *event;
    attnrt_plan_t       *plan;
    attnrt_state_pool_t *pool;
    void                *blocks[AF_BLOCKS];

    /* the device regions the call writes: restored before each call, compared with the clean result */
    wl_region_t    regions[WL_MAX_REGIONS];
    int            num_regions;
    unsigned char *initial[WL_MAX_REGIONS], *expected[WL_MAX_REGIONS];

    /* discovery: what a clean attnrt_init finds */
    uint32_t        plugins, devices;
    char            plugin_names[AF_MAX_PLUGINS][64];
    attnrt_status_t plugin_status[AF_MAX_PLUGINS];
} run_t;

struct scenario {
    const char       *name;
    const wl_shape_t *shape;                /* NULL: no workload                                         */
    attnrt_status_t (*call)(run_t *r);      /* the call under test                                       */
    void (*outputs)(run_t *r);              /* (optional) sets r->regions                                */
    void (*same)(run_t *r, int clean);      /* (optional) other checks of a successful call's result     */
    const char       *discovery;            /* the call loads plugins with this ATTNRT_PLUGIN ("": auto);
                                               release is attnrt_shutdown. NULL: a call on a loaded runtime */
    int               allocates;            /* the clean call must make allocations we see (a self-check) */
};

#define STEP(r, fn, call)                                                                             \
    do {                                                                                              \
        attnrt_status_t step_st_ = (call);                                                            \
        if (step_st_ != ATTNRT_OK) {                                                                  \
            (r)->failed_fn = (fn);                                                                    \
            return step_st_;                                                                          \
        }                                                                                             \
    } while (0)

/* A run step: as STEP, and it may not allocate (runs can be captured in a graph: no host allocation). */
#define RUN_STEP(r, fn, call)                                                                         \
    do {                                                                                              \
        const long run_before_ = fail_malloc_count();                                                 \
        STEP(r, fn, call);                                                                            \
        if (fail_malloc_count() != run_before_)                                                       \
            fail_msg("%s allocated %ld time(s); a run makes no host allocation", (fn),                \
                     fail_malloc_count() - run_before_);                                              \
    } while (0)

#define AF_OK(call)                                                                                   \
    do {                                                                                              \
        attnrt_status_t af_st_ = (call);                                                              \
        if (af_st_ != ATTNRT_OK)                                                                      \
            fail_msg("%s returned %s: %s", #call, attnrt_status_name(af_st_), attnrt_last_error());   \
    } while (0)

/* ---- shapes ---- */

/* Mixed prefill / decode / chunked prefill, as the bad-input tests' baseline. */
static const wl_shape_t cpu_mixed = {"cpu:0", NULL, 3, 4, 2, 16, 4, 4, {5, 1, 3}, {5, 9, 7}, 1};
/* Two long decodes: the cpu plan splits their keys (split-KV, with its merge and own workspace). */
static const wl_shape_t cpu_decode = {"cpu:0", NULL, 2, 4, 2, 16, 16, 40, {1, 1}, {600, 600}, 0};
/* One decode row over block size 512 (flash, 2 partitions), a shape Rebel100 runs. */
static const wl_shape_t npu_decode = {"npu_sim:0", "rbln-rebel100", 1, 2, 1, 64, 512, 2, {1}, {600}, 0};

/* ---- calls ---- */

static attnrt_status_t call_init(run_t *r)
{
    STEP(r, "attnrt_init", attnrt_init());
    return ATTNRT_OK;
}

static attnrt_status_t call_open(run_t *r, const char *device)
{
    STEP(r, "attnrt_open", attnrt_open(device, &r->ctx));
    return ATTNRT_OK;
}
static attnrt_status_t call_open_cpu(run_t *r) { return call_open(r, "cpu:0"); }
static attnrt_status_t call_open_npu(run_t *r) { return call_open(r, "npu_sim:0"); }

static attnrt_status_t call_open_npu_with_profile(run_t *r)
{
    attnrt_device_attribute_t o[2] = {{.struct_size = sizeof o[0]}, {.struct_size = sizeof o[1]}};
    snprintf(o[0].key, sizeof o[0].key, "profile");
    snprintf(o[0].value, sizeof o[0].value, "rbln-rebel100");
    snprintf(o[1].key, sizeof o[1].key, "front_end");
    snprintf(o[1].value, sizeof o[1].value, "compiled");
    STEP(r, "attnrt_open_with_options", attnrt_open_with_options("npu_sim:0", o, 2, &r->ctx));
    return ATTNRT_OK;
}

static attnrt_status_t call_stream_and_event(run_t *r)
{
    STEP(r, "attnrt_stream_create", attnrt_stream_create(r->w->ctx, &r->stream));
    STEP(r, "attnrt_event_create", attnrt_event_create(r->w->ctx, &r->event));
    STEP(r, "attnrt_event_record", attnrt_event_record(r->event, r->stream));
    STEP(r, "attnrt_stream_synchronize", attnrt_stream_synchronize(r->w->ctx, r->stream));
    return ATTNRT_OK;
}

static attnrt_status_t call_mem_alloc(run_t *r)
{
    for (int i = 0; i < AF_BLOCKS; i++) STEP(r, "attnrt_mem_alloc", attnrt_mem_alloc(r->w->ctx, 4096, &r->blocks[i]));
    return ATTNRT_OK;
}

static attnrt_status_t call_attention(run_t *r)
{
    wl_t *w = r->w;
    STEP(r, "attnrt_attention_plan", attnrt_attention_plan(w->ctx, &w->att, &w->batch, &r->plan));
    RUN_STEP(r, "attnrt_attention_run", attnrt_attention_run(r->plan, &w->att, w->workspace, WL_WORKSPACE_BYTES, NULL));
    return ATTNRT_OK;
}

static attnrt_status_t call_kv_write(run_t *r)
{
    RUN_STEP(r, "attnrt_kv_write", attnrt_kv_write(r->w->ctx, &r->w->kvw, NULL));
    return ATTNRT_OK;
}

static attnrt_status_t call_merge(run_t *r)
{
    RUN_STEP(r, "attnrt_merge_states", attnrt_merge_states(r->w->ctx, &r->w->merge, NULL));
    return ATTNRT_OK;
}

static attnrt_status_t call_cascade(run_t *r)
{
    wl_t *w = r->w;
    STEP(r, "attnrt_cascade_plan", attnrt_cascade_plan(w->ctx, &w->cas, &w->cas_host, &r->plan));
    RUN_STEP(r, "attnrt_cascade_run", attnrt_cascade_run(r->plan, &w->cas, w->workspace, WL_WORKSPACE_BYTES, NULL));
    return ATTNRT_OK;
}

static attnrt_status_t call_mla(run_t *r, const attnrt_mla_args_t *args)
{
    wl_t *w = r->w;
    STEP(r, "attnrt_mla_plan", attnrt_mla_plan(w->ctx, args, &w->batch, &r->plan));
    RUN_STEP(r, "attnrt_mla_run", attnrt_mla_run(r->plan, args, w->workspace, WL_WORKSPACE_BYTES, NULL));
    return ATTNRT_OK;
}
static attnrt_status_t call_mla_dense(run_t *r) { return call_mla(r, &r->w->mla); }
static attnrt_status_t call_mla_sparse(run_t *r) { return call_mla(r, &r->w->mla_sparse); }

static attnrt_status_t call_lightning(run_t *r)
{
    wl_t *w = r->w;
    STEP(r, "attnrt_lightning_plan",
         attnrt_lightning_plan(w->ctx, &w->lin, &w->lin_batch, &w->lin_states, w->lin_pool, &r->plan));
    RUN_STEP(r, "attnrt_lightning_run", attnrt_lightning_run(r->plan, &w->lin, w->workspace, WL_WORKSPACE_BYTES, NULL));
    return ATTNRT_OK;
}

static attnrt_status_t call_gated_delta(run_t *r, const attnrt_gated_delta_args_t *args,
                                        const attnrt_state_host_t *states)
{
    wl_t *w = r->w;
    STEP(r, "attnrt_gated_delta_plan",
         attnrt_gated_delta_plan(w->ctx, args, &w->lin_batch, states, w->gdn_pool, &r->plan));
    RUN_STEP(r, "attnrt_gated_delta_run", attnrt_gated_delta_run(r->plan, args, w->workspace, WL_WORKSPACE_BYTES, NULL));
    return ATTNRT_OK;
}
static attnrt_status_t call_gdn(run_t *r) { return call_gated_delta(r, &r->w->gdn, &r->w->gdn_states); }
static attnrt_status_t call_gdn_spec(run_t *r) { return call_gated_delta(r, &r->w->gdn_spec, &r->w->gdn_spec_states); }

static attnrt_status_t call_state_pool(run_t *r)
{
    const int64_t slot[3] = {2, 8, 4};
    int32_t a = -1, b = -1;
    STEP(r, "attnrt_state_pool_create", attnrt_state_pool_create(r->w->ctx, ATTNRT_F32, 3, slot, 8, &r->pool));
    STEP(r, "attnrt_state_slot_alloc", attnrt_state_slot_alloc(r->pool, &a));
    STEP(r, "attnrt_state_slot_alloc", attnrt_state_slot_alloc(r->pool, &b));
    STEP(r, "attnrt_state_slot_zero", attnrt_state_slot_zero(r->pool, a, NULL));
    STEP(r, "attnrt_state_slot_copy", attnrt_state_slot_copy(r->pool, a, b, NULL));
    STEP(r, "attnrt_state_slot_free", attnrt_state_slot_free(r->pool, a));
    return ATTNRT_OK;
}

/* Every query an engine or attnrt-info makes about plugins, devices and capabilities. */
static attnrt_status_t call_queries(run_t *r)
{
    attnrt_context_t *ctx = r->w->ctx;
    uint32_t plugins = 0, devices = 0, index = 0, owner = 0;
    STEP(r, "attnrt_plugin_count", attnrt_plugin_count(&plugins));
    for (uint32_t i = 0; i < plugins; i++) {
        attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
        STEP(r, "attnrt_plugin_get_info", attnrt_plugin_get_info(i, &info));
    }
    STEP(r, "attnrt_device_count", attnrt_device_count(&devices));
    STEP(r, "attnrt_device_find", attnrt_device_find(attnrt_context_device_name(ctx), &index));
    STEP(r, "attnrt_device_default", attnrt_device_default(&owner));
    STEP(r, "attnrt_device_get_plugin", attnrt_device_get_plugin(index, &owner));
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    STEP(r, "attnrt_device_get_properties", attnrt_device_get_properties(index, &props));
    for (uint32_t i = 0; i < props.attribute_count; i++) {
        attnrt_device_attribute_t attr = {.struct_size = sizeof attr};
        STEP(r, "attnrt_device_get_attribute", attnrt_device_get_attribute(index, i, &attr));
    }
    const wl_shape_t *s = &r->w->shape;
    attnrt_op_query_t q = {.struct_size = sizeof q, .op = ATTNRT_OP_PAGED_ATTENTION, .q_dtype = ATTNRT_F32,
                           .kv_dtype = ATTNRT_F32, .head_dim_qk = (uint32_t)s->head_dim,
                           .head_dim_v = (uint32_t)s->head_dim, .block_size = (uint32_t)s->block_size,
                           .num_q_heads = (uint32_t)s->q_heads, .num_kv_heads = (uint32_t)s->kv_heads};
    char reason[256];
    STEP(r, "attnrt_op_supported", attnrt_op_supported(ctx, &q, reason, sizeof reason));
    q.block_size = 0; /* the device's default profile may not run this context's block size */
    STEP(r, "attnrt_device_op_supported", attnrt_device_op_supported(index, &q, reason, sizeof reason));
    return ATTNRT_OK;
}

/* ---- outputs and results ---- */

static void add_region(run_t *r, void *dev, size_t bytes)
{
    assert_true(r->num_regions < WL_MAX_REGIONS);
    r->regions[r->num_regions++] = (wl_region_t){dev, bytes};
}

static size_t tensor_bytes(const attnrt_tensor_t *t)
{
    size_t n = attnrt_dtype_size(t->dtype);
    for (int32_t d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n;
}

static void add_tensor(run_t *r, const attnrt_tensor_t *t) { add_region(r, t->data, tensor_bytes(t)); }

static void out_attention(run_t *r) { add_tensor(r, &r->w->out); }

static void out_kv_write(run_t *r)
{
    add_tensor(r, &r->w->key_cache);
    add_tensor(r, &r->w->value_cache);
}

static void out_merge(run_t *r)
{
    add_tensor(r, &r->w->out);
    add_tensor(r, &r->w->lse);
}

static void out_lightning(run_t *r)
{
    void *data = NULL;
    size_t bytes = wl_pool_bytes(r->w->lin_pool, &data);
    add_tensor(r, &r->w->lout);
    add_region(r, data, bytes);
}

static void out_gated_delta(run_t *r)
{
    void *data = NULL;
    size_t bytes = wl_pool_bytes(r->w->gdn_pool, &data);
    add_tensor(r, &r->w->gout);
    add_region(r, data, bytes);
}

static void read_back(run_t *r, int i, unsigned char *host)
{
    AF_OK(attnrt_mem_copy_to_host(r->w->ctx, host, r->regions[i].dev, r->regions[i].bytes, NULL));
}

static void same_device_name(run_t *r, const char *want)
{
    assert_non_null(r->ctx);
    assert_string_equal(attnrt_context_device_name(r->ctx), want);
    /* and the context works: a round trip through its memory */
    unsigned char in[256], out[256];
    for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i * 7u + 3u);
    void *dev = NULL;
    AF_OK(attnrt_mem_alloc(r->ctx, sizeof in, &dev));
    AF_OK(attnrt_mem_copy_to_device(r->ctx, dev, in, sizeof in, NULL));
    AF_OK(attnrt_mem_copy_to_host(r->ctx, out, dev, sizeof out, NULL));
    AF_OK(attnrt_mem_free(r->ctx, dev));
    assert_memory_equal(in, out, sizeof in);
}
static void same_cpu(run_t *r, int clean) { (void)clean; same_device_name(r, "cpu:0"); }
static void same_npu(run_t *r, int clean) { (void)clean; same_device_name(r, "npu_sim:0"); }

static void same_pool(run_t *r, int clean)
{
    (void)clean;
    int32_t slots = 0, free_slots = 0;
    AF_OK(attnrt_state_pool_usage(r->pool, &slots, &free_slots));
    assert_int_equal(slots, 8);
    assert_int_equal(free_slots, 7);
}

/* attnrt_init may not drop a plugin or a device when an allocation fails: it reports OUT_OF_MEMORY. */
static void same_plugins(run_t *r, int clean)
{
    uint32_t plugins = 0, devices = 0;
    AF_OK(attnrt_plugin_count(&plugins));
    AF_OK(attnrt_device_count(&devices));
    if (clean) {
        assert_true(plugins <= AF_MAX_PLUGINS);
        r->plugins = plugins;
        r->devices = devices;
    } else if (plugins != r->plugins || devices != r->devices) {
        fail_msg("with allocation %ld failed, attnrt_init returned ATTNRT_OK with %u plugin(s) and %u device(s); a "
                 "clean init finds %u and %u", r->failing, plugins, devices, r->plugins, r->devices);
    }
    for (uint32_t i = 0; i < plugins; i++) {
        attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
        AF_OK(attnrt_plugin_get_info(i, &info));
        if (clean) {
            snprintf(r->plugin_names[i], sizeof r->plugin_names[i], "%s", info.name);
            r->plugin_status[i] = info.status;
        } else if (strcmp(info.name, r->plugin_names[i]) != 0 || info.status != r->plugin_status[i]) {
            fail_msg("with allocation %ld failed, attnrt_init returned ATTNRT_OK but plugin %u is %s (%s: %s); a clean "
                     "init gives %s (%s)", r->failing, i, info.name, attnrt_status_name(info.status), info.reason ? info.reason : "(no reason)",
                     r->plugin_names[i], attnrt_status_name(r->plugin_status[i]));
        }
    }
}

/* ---- the scenarios ---- */

static const scenario_t scenarios[] = {
    {"plugin discovery (attnrt_init)", NULL, call_init, NULL, same_plugins, "", 1},
    {"plugin discovery of ATTNRT_PLUGIN=cpu (attnrt_init)", NULL, call_init, NULL, same_plugins, "cpu", 1},
    {"attnrt_open cpu:0", NULL, call_open_cpu, NULL, same_cpu, NULL, 1},
    {"attnrt_open npu_sim:0", NULL, call_open_npu, NULL, same_npu, NULL, 1},
    {"attnrt_open_with_options npu_sim:0", NULL, call_open_npu_with_profile, NULL, same_npu, NULL, 1},
    {"streams and events on cpu:0", &cpu_mixed, call_stream_and_event, NULL, NULL, NULL, 1},
    {"streams and events on npu_sim:0", &npu_decode, call_stream_and_event, NULL, NULL, NULL, 1},
    {"attnrt_mem_alloc on cpu:0", &cpu_mixed, call_mem_alloc, NULL, NULL, NULL, 1},
    {"attnrt_mem_alloc on npu_sim:0", &npu_decode, call_mem_alloc, NULL, NULL, NULL, 1},
    {"device and capability queries on cpu:0", &cpu_mixed, call_queries, NULL, NULL, NULL, 0},
    {"device and capability queries on npu_sim:0", &npu_decode, call_queries, NULL, NULL, NULL, 0},
    {"attention plan and run on cpu:0", &cpu_mixed, call_attention, out_attention, NULL, NULL, 1},
    {"attention plan and run with split keys on cpu:0", &cpu_decode, call_attention, out_attention, NULL, NULL, 1},
    {"attention plan and run on npu_sim:0", &npu_decode, call_attention, out_attention, NULL, NULL, 1},
    {"kv_write on cpu:0", &cpu_mixed, call_kv_write, out_kv_write, NULL, NULL, 0},
    {"kv_write on npu_sim:0", &npu_decode, call_kv_write, out_kv_write, NULL, NULL, 0},
    {"merge_states on cpu:0", &cpu_mixed, call_merge, out_merge, NULL, NULL, 0},
    {"merge_states on npu_sim:0", &npu_decode, call_merge, out_merge, NULL, NULL, 0},
    {"cascade plan and run on cpu:0", &cpu_mixed, call_cascade, out_attention, NULL, NULL, 1},
    {"MLA plan and run on cpu:0", &cpu_mixed, call_mla_dense, out_attention, NULL, NULL, 1},
    {"sparse MLA plan and run on cpu:0", &cpu_mixed, call_mla_sparse, out_attention, NULL, NULL, 1},
    {"lightning plan and run on cpu:0", &cpu_mixed, call_lightning, out_lightning, NULL, NULL, 1},
    {"gated delta plan and run on cpu:0", &cpu_mixed, call_gdn, out_gated_delta, NULL, NULL, 1},
    {"speculative gated delta plan and run on cpu:0", &cpu_mixed, call_gdn_spec, out_gated_delta, NULL, NULL, 1},
    {"state pool and slots on cpu:0", &cpu_mixed, call_state_pool, NULL, same_pool, NULL, 1},
    {"state pool and slots on npu_sim:0", &npu_decode, call_state_pool, NULL, same_pool, NULL, 1},
};

/* ---- the harness ---- */

/* Releases what a call made (after a failure too: a failed call must have made nothing, and what it
 * wrongly made is released here so the leak check names the real leak). */
static void release(const scenario_t *s, run_t *r)
{
    AF_OK(attnrt_plan_destroy(r->plan));
    AF_OK(attnrt_state_pool_destroy(r->pool));
    AF_OK(attnrt_event_destroy(r->event));
    AF_OK(attnrt_stream_destroy(r->stream));
    for (int i = 0; i < AF_BLOCKS; i++)
        if (r->blocks[i]) AF_OK(attnrt_mem_free(r->w->ctx, r->blocks[i]));
    AF_OK(attnrt_close(r->ctx));
    r->plan = NULL;
    r->pool = NULL;
    r->event = NULL;
    r->stream = NULL;
    memset(r->blocks, 0, sizeof r->blocks);
    r->ctx = NULL;
    r->failed_fn = NULL;
    if (s->discovery) AF_OK(attnrt_shutdown());
}

/* Before each call: the regions it writes hold their initial contents again. */
static void prepare(run_t *r)
{
    for (int i = 0; i < r->num_regions; i++)
        AF_OK(attnrt_mem_copy_to_device(r->w->ctx, r->regions[i].dev, r->initial[i], r->regions[i].bytes, NULL));
}

/* The result of a successful call: on the clean call it is recorded, on the others compared (floats
 * within 1e-5: a plan that tolerated a failure may have split the work differently). */
static void check_result(const scenario_t *s, run_t *r, int clean, long failing)
{
    for (int i = 0; i < r->num_regions; i++) {
        if (clean) {
            read_back(r, i, r->expected[i]);
            continue;
        }
        size_t n = r->regions[i].bytes / sizeof(float);
        float *now = malloc(n * sizeof *now);
        assert_non_null(now);
        read_back(r, i, (unsigned char *)now);
        const float *want = (const float *)(const void *)r->expected[i];
        for (size_t k = 0; k < n; k++) {
            float d = now[k] - want[k], tol = 1e-5f * (1.0f + (want[k] < 0 ? -want[k] : want[k]));
            if (!(d <= tol && -d <= tol)) {
                float got = now[k], exp = want[k];
                free(now);
                fail_msg("%s: with allocation %ld failed the call returned ATTNRT_OK, but output %d element %zu is "
                         "%g, not %g", s->name, failing, i, k, (double)got, (double)exp);
            }
        }
        free(now);
    }
    if (s->same) s->same(r, clean);
}

static void check_leaks(const scenario_t *s, long base, long failing, long total)
{
    long live = fail_malloc_live();
    if (live == base) return;
    if (failing)
        fail_msg("%s: with allocation %ld of %ld failed, %ld block(s) of libattnrt or its plugins were left behind",
                 s->name, failing, total, live - base);
    fail_msg("%s: the clean call left %ld block(s) behind", s->name, live - base);
}

/* A call with no failure: it succeeds, gives the clean result and leaves nothing behind. */
static long clean_call(const scenario_t *s, run_t *r, int first, long base, long failed_before)
{
    prepare(r);
    fail_malloc_arm(0);
    attnrt_status_t st = s->call(r);
    long count = fail_malloc_count();
    if (st != ATTNRT_OK)
        fail_msg("%s: %s%s returned %s: %s", s->name, r->failed_fn,
                 first ? "" : " (the call after an allocation failure)", attnrt_status_name(st), attnrt_last_error());
    check_result(s, r, first, failed_before);
    release(s, r);
    check_leaks(s, base, 0, 0);
    r->failing = 0;
    return count;
}

/* A failed call writes none of its out-parameters: the object of the step that failed is still NULL. */
static void check_nothing_made(const scenario_t *s, const run_t *r, long n)
{
    const struct {
        const char *fn;
        const void *made;
    } outs[] = {{"attnrt_open", r->ctx}, {"attnrt_open_with_options", r->ctx}, {"attnrt_stream_create", r->stream},
                {"attnrt_event_create", r->event}, {"attnrt_state_pool_create", r->pool}};
    const char *fn = r->failed_fn;
    size_t len = strlen(fn);
    int is_plan = len > 5 && strcmp(fn + len - 5, "_plan") == 0;
    if (is_plan && r->plan) fail_msg("%s: with allocation %ld failed, %s failed but wrote *plan", s->name, n, fn);
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (strcmp(fn, outs[i].fn) == 0 && outs[i].made)
            fail_msg("%s: with allocation %ld failed, %s failed but wrote its out-parameter", s->name, n, fn);
}

static void check_failure(const scenario_t *s, const run_t *r, attnrt_status_t st, long n, long total)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    if (st != ATTNRT_ERR_OUT_OF_MEMORY)
        fail_msg("%s: with allocation %ld of %ld failed, %s returned %s, expected ATTNRT_OK or "
                 "ATTNRT_ERR_OUT_OF_MEMORY; message: \"%s\"", s->name, n, total, r->failed_fn,
                 attnrt_status_name(st), msg);
    if (!msg[0])
        fail_msg("%s: with allocation %ld of %ld failed, %s failed with an empty attnrt_last_error()", s->name, n,
                 total, r->failed_fn);
    if (!s->discovery && strncmp(msg, r->failed_fn, strlen(r->failed_fn)) != 0)
        fail_msg("%s: with allocation %ld of %ld failed, the message does not start with %s: \"%s\"", s->name, n,
                 total, r->failed_fn, msg);
    check_nothing_made(s, r, n);
}

/* cmocka fixtures: a failed check leaves the test by longjmp, so the teardown releases what is left
 * and shuts the runtime down, and the next scenario starts from a clean process state. */
static int scenario_setup(void **state)
{
    run_t *r = calloc(1, sizeof *r);
    if (!r) return -1;
    r->s = *state;
    *state = r;
    return 0;
}

static int scenario_teardown(void **state)
{
    run_t *r = *state;
    fail_malloc_arm(0);
    attnrt_plan_destroy(r->plan);
    attnrt_state_pool_destroy(r->pool);
    attnrt_event_destroy(r->event);
    attnrt_stream_destroy(r->stream);
    for (int i = 0; i < AF_BLOCKS; i++)
        if (r->blocks[i] && r->w) attnrt_mem_free(r->w->ctx, r->blocks[i]);
    attnrt_close(r->ctx);
    int rc = wl_free(r->w);
    for (int i = 0; i < r->num_regions; i++) {
        free(r->initial[i]);
        free(r->expected[i]);
    }
    setenv("ATTNRT_PLUGIN", "", 1);
    free(r);
    return attnrt_shutdown() == ATTNRT_OK && rc == 0 ? 0 : -1;
}

static void run_scenario(void **state)
{
    run_t *r = *state;
    const scenario_t *s = r->s;
    if (s->discovery) { /* the call under test is the first init */
        AF_OK(attnrt_shutdown());
        setenv("ATTNRT_PLUGIN", s->discovery, 1);
    } else {
        AF_OK(attnrt_init()); /* discovery is counted by its own scenarios only */
    }
    if (s->shape) wl_new(s->shape, &r->w);
    if (s->outputs) s->outputs(r);
    for (int i = 0; i < r->num_regions; i++) {
        r->initial[i] = malloc(r->regions[i].bytes);
        r->expected[i] = malloc(r->regions[i].bytes);
        assert_true(r->initial[i] && r->expected[i]);
        read_back(r, i, r->initial[i]);
    }
    const long base = fail_malloc_live();
    const long total = clean_call(s, r, 1, base, 0);
    if (s->allocates && total == 0)
        fail_msg("%s: the call made no allocation the interposed allocator saw; is fail_malloc.c linked with "
                 "export_dynamic?", s->name);

    long n = 1;
    for (;; n++) {
        prepare(r);
        fail_malloc_arm(n);
        r->failing = n;
        attnrt_status_t st = s->call(r);
        const int fired = fail_malloc_fired();
        fail_malloc_arm(0);
        if (!fired) {
            if (st != ATTNRT_OK)
                fail_msg("%s: with no allocation failed, %s returned %s: %s", s->name, r->failed_fn,
                         attnrt_status_name(st), attnrt_last_error());
            release(s, r);
            break;
        }
        if (st == ATTNRT_OK) check_result(s, r, 0, n); /* tolerated: the result must still be right */
        else check_failure(s, r, st, n, total);
        release(s, r);
        check_leaks(s, base, n, total);
        clean_call(s, r, 0, base, n);
    }
    /* Fewer than the first call's count when the runtime keeps capacity (a grown table) across calls. */
    if (total) print_message("%s: the first call made %ld allocation(s); each of the %ld made by later calls failed "
                             "once\n", s->name, total, n - 1);
    else print_message("%s: no allocation\n", s->name);
}

int main(void)
{
    /* Auto discovery: the build tree's cpu and npu_sim plugins. The cpu plugin's thread pool has 2 threads
     * unless the caller chose; its allocation order is fixed. */
    setenv("ATTNRT_PLUGIN", "", 1);
    setenv("ATTNRT_NUM_THREADS", "2", 0);
    fail_malloc_start();
    enum { N = sizeof scenarios / sizeof scenarios[0] };
    struct CMUnitTest tests[N];
    for (int i = 0; i < N; i++)
        tests[i] = (struct CMUnitTest){scenarios[i].name, run_scenario, scenario_setup, scenario_teardown,
                                       (void *)&scenarios[i]};
    return cmocka_run_group_tests_name("alloc_fail", tests, NULL, NULL);
}
