/* npu_plugin.c — the npu_sim plugin's vtable: one simulated Rebellions NPU (npu_sim:0) whose profile
 * (rbln-atom | rbln-rebel100) comes from ATTNRT_NPU_PROFILE at init or the "profile" open option;
 * host memory counted against the profile's budget; synchronous streams; events that read the
 * device's simulated clock, so elapsed times are cost-model times; kernel selection and op counters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt_plugin.h"
#include "npu_device.h"
#include "npu_mla.h"
#include "npu_ops.h"
#include "npu_profile.h"
#include "npu_select.h"
#include "plugin_entry.h"
#include "plugin_error.h"
#include "plugin_host.h"
#include "plugin_struct.h"

#define NPU_VERSION "0.1.0"

typedef struct npu_plugin { const npu_profile_t *profile; } npu_plugin_t; /* the environment's choice */

void npu_device_record(npu_device_t *d, const attnrt_op_stats_t *stats)
{
    pthread_mutex_lock(&d->lock);
    d->last = *stats;
    d->clock_us += stats->time_us;
    pthread_mutex_unlock(&d->lock);
}

double npu_device_clock(npu_device_t *d)
{
    pthread_mutex_lock(&d->lock);
    const double t = d->clock_us;
    pthread_mutex_unlock(&d->lock);
    return t;
}

/* Events read the simulated clock: elapsed times are the cost model's times of the ops between. */
static double clock_of(void *device) { return npu_device_clock(device); }

static attnrt_status_t npu_probe(void) { return ATTNRT_OK; } /* nothing to find: the device is simulated */

static attnrt_status_t npu_init(const attnrt_host_api_t *host, void **plugin)
{
    (void)host;
    const npu_profile_t *p;
    attnrt_status_t st = npu_profile_from_env(&p);
    if (st != ATTNRT_OK) return st;
    npu_plugin_t *pl = calloc(1, sizeof *pl);
    if (!pl) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "npu_sim: out of memory at init");
    pl->profile = p;
    *plugin = pl;
    return ATTNRT_OK;
}

static void npu_shutdown(void *plugin) { free(plugin); }

static attnrt_status_t check_index(uint32_t index) { return plugin_one_device_index("npu_sim", "npu_sim:0", index); }

static attnrt_status_t npu_device_properties(void *plugin, uint32_t index, attnrt_device_properties_t *props)
{
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    const npu_profile_t *p = ((npu_plugin_t *)plugin)->profile;
    attnrt_device_properties_t r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    snprintf(r.name, sizeof r.name, "npu_sim:0");
    snprintf(r.vendor, sizeof r.vendor, "Rebellions (simulated)");
    snprintf(r.model, sizeof r.model, "%s", p->model);
    snprintf(r.arch, sizeof r.arch, "%s", p->name);
    snprintf(r.driver, sizeof r.driver, "npu_sim %s (cost model, no device)", NPU_VERSION);
    r.device_type = ATTNRT_DEVICE_TYPE_EXTDEV; /* opt-in: attnrt_open(NULL) prefers real devices */
    r.compute_units = p->compute_units;
    r.memory_total = npu_profile_budget(p);
    const uint64_t used = npu_mem_used_all();
    r.memory_free = used < r.memory_total ? r.memory_total - used : 0;
    r.attribute_count = npu_attribute_count();
    PLUGIN_COPY_OUT(props, r);
    return ATTNRT_OK;
}

static attnrt_status_t npu_device_attribute(void *plugin, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    const npu_profile_t *p = ((npu_plugin_t *)plugin)->profile;
    return npu_attribute_fill(p, ATTNRT_FRONT_END_VLLM, p->default_prefill_chunk, i, attr);
}

/* Options: "profile" (rbln-atom | rbln-rebel100), "front_end" (vllm | compiled), "model_kind", "prefill_chunk". */
static attnrt_status_t apply_option(npu_device_t *d, const attnrt_device_attribute_t *o, int *chunk_given)
{
    char key[ATTNRT_ATTR_KEY_MAX + 1], value[ATTNRT_ATTR_VALUE_MAX + 1];
    snprintf(key, sizeof key, "%.*s", (int)sizeof o->key, o->key);
    snprintf(value, sizeof value, "%.*s", (int)sizeof o->value, o->value);
    if (!strcmp(key, "profile")) {
        const npu_profile_t *p = npu_profile_find(value);
        if (!p)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "npu_sim:0: open option profile = \"%s\": unknown profile; "
                               "known profiles: %s", value, npu_profile_names());
        d->sel.profile = p;
    } else if (!strcmp(key, "front_end")) {
        if (!strcmp(value, "vllm"))
            d->sel.front_end = ATTNRT_FRONT_END_VLLM;
        else if (!strcmp(value, "compiled") || !strcmp(value, "optimum"))
            d->sel.front_end = ATTNRT_FRONT_END_COMPILED;
        else
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "npu_sim:0: open option front_end = \"%s\": unknown front "
                               "end; known: vllm, compiled", value);
    } else if (!strcmp(key, "model_kind")) {
        const int kind = npu_model_kind_parse(value);
        if (kind < 0)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "npu_sim:0: open option model_kind = \"%s\": unknown model "
                               "kind; known: decoder, pooling, pooling_qwen3, encoder_decoder", value);
        d->sel.model_kind = (uint32_t)kind;
    } else if (!strcmp(key, "prefill_chunk")) {
        char *end = NULL;
        const long long v = strtoll(value, &end, 10);
        char msg[NPU_MSG_MAX];
        if (!end || end == value || *end || !npu_rule_prefill_chunk(v, msg, sizeof msg))
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "npu_sim:0: open option prefill_chunk = \"%s\": %s", value,
                               "`prefill_chunk_size` must be a positive integer divisible by 64.");
        d->sel.prefill_chunk = v;
        *chunk_given = 1;
    } else {
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "npu_sim:0: unknown open option \"%s\"; known options: profile "
                           "(%s), front_end (vllm, compiled), model_kind (decoder, pooling, pooling_qwen3, encoder_decoder), "
                           "prefill_chunk (a positive multiple of 64)", key,
                           npu_profile_names());
    }
    return ATTNRT_OK;
}

static attnrt_status_t npu_device_open_with_options(void *plugin, uint32_t index, const attnrt_device_attribute_t *options,
                                                    uint32_t num_options, void **device)
{
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    if (num_options && !options)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "npu_sim:0: %u options but the options pointer is NULL", num_options);
    npu_device_t *d = calloc(1, sizeof *d);
    if (!d) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "npu_sim:0: out of memory opening the device");
    d->sel.profile = ((npu_plugin_t *)plugin)->profile;
    d->sel.front_end = ATTNRT_FRONT_END_VLLM;
    int chunk_given = 0;
    for (uint32_t i = 0; i < num_options; i++) {
        st = apply_option(d, &options[i], &chunk_given);
        if (st != ATTNRT_OK) {
            free(d);
            return st;
        }
    }
    if (!chunk_given) d->sel.prefill_chunk = d->sel.profile->default_prefill_chunk;
    snprintf(d->host.name, sizeof d->host.name, NPU_DEV_FMT, NPU_DEV_ARG(d));
    d->host.clock = clock_of;
    d->host.ms_per_tick = 1e-3;
    d->budget = npu_profile_budget(d->sel.profile);
    atomic_init(&d->used, 0);
    pthread_mutex_init(&d->lock, NULL);
    *device = d;
    return ATTNRT_OK;
}

static attnrt_status_t npu_device_open(void *plugin, uint32_t index, void **device)
{
    return npu_device_open_with_options(plugin, index, NULL, 0, device);
}

static void npu_device_close(void *device)
{
    npu_device_t *d = device;
    if (!d) return;
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static attnrt_status_t npu_mem_alloc_op(void *device, size_t bytes, void **ptr) { return npu_mem_alloc(device, bytes, ptr); }

static void npu_mem_free_op(void *device, void *ptr) { npu_mem_free(device, ptr); }

static attnrt_status_t npu_op_supported(void *device, const attnrt_op_query_t *query, char *reason, size_t cap)
{
    return npu_op_check(&((npu_device_t *)device)->sel, query, reason, cap);
}

static attnrt_status_t npu_kv_write_op(void *device, const attnrt_kv_write_args_t *args, void *stream)
{
    (void)stream;
    return npu_kv_write(device, args);
}

static attnrt_status_t npu_attention_plan_op(void *device, const attnrt_attention_args_t *args,
                                             const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes)
{
    return npu_attention_plan(device, args, batch, plan, workspace_bytes);
}

static void npu_attention_plan_destroy_op(void *device, void *plan)
{
    (void)device;
    npu_attention_plan_destroy(plan);
}

static attnrt_status_t npu_attention_run_op(void *device, const void *plan, const attnrt_attention_args_t *args,
                                            void *workspace, size_t workspace_bytes, void *stream)
{
    (void)stream;
    return npu_attention_run(device, plan, args, workspace, workspace_bytes);
}

static attnrt_status_t npu_merge_states_op(void *device, const attnrt_merge_args_t *args, void *stream)
{
    (void)stream;
    return npu_merge_states(device, args);
}

static attnrt_status_t npu_select_attention(void *device, const attnrt_attention_config_t *config,
                                            attnrt_attention_selection_t *selection)
{
    npu_device_t *d = device;
    if (!selection || selection->struct_size < sizeof(size_t))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "select_attention: set selection->struct_size");
    attnrt_attention_selection_t sel;
    char msg[NPU_MSG_MAX];
    attnrt_status_t st = npu_select(&d->sel, config, &sel, msg, sizeof msg);
    if (st != ATTNRT_OK) return plugin_fail(st, "%s", msg);
    PLUGIN_COPY_OUT(selection, sel);
    return ATTNRT_OK;
}

static attnrt_status_t npu_last_op_stats(void *device, attnrt_op_stats_t *stats)
{
    npu_device_t *d = device;
    if (!stats || stats->struct_size < sizeof(size_t))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "last_op_stats: set stats->struct_size");
    pthread_mutex_lock(&d->lock);
    attnrt_op_stats_t s = d->last;
    pthread_mutex_unlock(&d->lock);
    s.struct_size = sizeof s;
    s.simulated = 1;
    PLUGIN_COPY_OUT(stats, s);
    return ATTNRT_OK;
}

static const attnrt_plugin_api_t npu_api = {
    PLUGIN_API_HEAD("npu_sim", NPU_VERSION),
    .probe = npu_probe, .init = npu_init, .shutdown = npu_shutdown,
    .device_count = plugin_one_device_count, .device_properties = npu_device_properties,
    .device_attribute = npu_device_attribute, .device_open = npu_device_open,
    .device_open_with_options = npu_device_open_with_options, .device_close = npu_device_close,
    .mem_alloc = npu_mem_alloc_op, .mem_free = npu_mem_free_op, PLUGIN_HOST_DEVICE_ENTRIES,
    .op_supported = npu_op_supported, .select_attention = npu_select_attention, .last_op_stats = npu_last_op_stats,
    .kv_write = npu_kv_write_op, .merge_states = npu_merge_states_op,
    .attention_plan = npu_attention_plan_op, .attention_plan_destroy = npu_attention_plan_destroy_op,
    .attention_run = npu_attention_run_op, .mla_plan = npu_mla_plan, .mla_run = npu_mla_run,
    .plan_destroy = npu_mla_plan_destroy,
};

PLUGIN_DEFINE_ENTRY(npu_api)
