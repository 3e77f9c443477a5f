/* attnrt-info: what it learns, gathered once through the public API (attnrt.h): plugins, devices, their
 * properties and attributes, and each device's answer for every combination of the capability grids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info_report.h"

#define MAX_ATTRIBUTES 256 /* read at most this many: a broken plugin's count must not exhaust memory */

#define F32_16_BF16 {"f32", {ATTNRT_DTYPE_CODE_FLOAT, 32, 1}}, {"f16", {ATTNRT_DTYPE_CODE_FLOAT, 16, 1}}, \
                    {"bf16", {ATTNRT_DTYPE_CODE_BFLOAT, 16, 1}}
static const named_dtype_t act_dtypes[] = {F32_16_BF16};
static const named_dtype_t cache_dtypes[] = {
    F32_16_BF16,
    {"fp8_e4m3", {ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN, 8, 1}},
    {"fp8_e5m2", {ATTNRT_DTYPE_CODE_FLOAT8_E5M2, 8, 1}},
};
static const head_dims_t attention_heads[] = {{64, 64}, {128, 128}, {256, 256}};
static const head_dims_t mla_heads[] = {{576, 512}, {288, 256}}; /* DeepSeek-V2/V3, MiniCPM3 latents */
static const head_dims_t linear_heads[] = {{64, 64}, {128, 128}, {256, 256}};
static const uint32_t attention_blocks[] = {1, 16, 1024}; /* 1024: inside an NPU's partition ranges */
static const uint32_t mla_blocks[] = {1, 16, 64};
static const uint32_t no_blocks[] = {0};
static const feature_set_t attention_features[] = {
    {"none", 0},
    {"sliding_window", ATTNRT_FEATURE_SLIDING_WINDOW},
    {"softcap", ATTNRT_FEATURE_SOFTCAP},
    {"alibi", ATTNRT_FEATURE_ALIBI},
    {"sinks", ATTNRT_FEATURE_SINKS},
    {"lse", ATTNRT_FEATURE_LSE},
};
static const feature_set_t mla_features[] = {
    {"none", 0}, {"causal", ATTNRT_FEATURE_CAUSAL}, {"sinks", ATTNRT_FEATURE_SINKS},
    {"lse", ATTNRT_FEATURE_LSE}, {"sparse", ATTNRT_FEATURE_SPARSE},
};
static const feature_set_t linear_features[] = {{"none", 0}};

#define AXIS(a) a, COUNT_OF(a)
const op_grid_t info_grids[] = {
    {"attention", "kv_write, paged_attention, merge_states, cascade", "kv", "head", AXIS(act_dtypes),
     AXIS(cache_dtypes), AXIS(attention_heads), AXIS(attention_blocks), AXIS(attention_features)},
    {"mla", "mla", "latent", "kv_dim/v_dim", AXIS(act_dtypes), AXIS(cache_dtypes), AXIS(mla_heads),
     AXIS(mla_blocks), AXIS(mla_features)},
    {"linear", "lightning, gated_delta", "key", "head_k/head_v", AXIS(act_dtypes), AXIS(act_dtypes),
     AXIS(linear_heads), AXIS(no_blocks), AXIS(linear_features)},
};

const size_t info_grid_count = COUNT_OF(info_grids);

const op_grid_t *info_grid_of(uint32_t op)
{
    switch (op) {
    case ATTNRT_OP_MLA:         return &info_grids[1];
    case ATTNRT_OP_LIGHTNING:
    case ATTNRT_OP_GATED_DELTA: return &info_grids[2];
    default:                    return &info_grids[0];
    }
}

uint32_t info_grid_size(const op_grid_t *g)
{
    return (uint32_t)(g->nq * g->nkv * g->nheads * g->nblocks * g->nfeatures);
}

void *info_must(void *p)
{
    if (!p) {
        fputs("attnrt-info: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static char *dup_str(const char *s) { return info_must(strdup(s ? s : "")); }

/* The failed call's message (its status name when there is none), owned. Call it right after the
 * failure: the next libattnrt call replaces attnrt_last_error(). */
static char *error_line(attnrt_status_t status)
{
    const char *msg = attnrt_last_error();
    return dup_str(msg[0] ? msg : attnrt_status_name(status));
}

/* Records a refused combination (axis indices) and counts its reason. */
static void tally(op_caps_t *caps, refused_combo_t combo, const char *reason)
{
    uint32_t r = 0;
    while (r < caps->reason_count && strcmp(caps->reasons[r].text, reason) != 0) r++;
    if (r == caps->reason_count) {
        caps->reasons = info_must(realloc(caps->reasons, (caps->reason_count + 1) * sizeof *caps->reasons));
        caps->reasons[caps->reason_count++] = (refusal_reason_t){dup_str(reason), 0};
    }
    caps->reasons[r].count++;
    combo.reason = r;
    caps->refused = info_must(realloc(caps->refused, (caps->refused_count + 1) * sizeof *caps->refused));
    caps->refused[caps->refused_count++] = combo;
}

/* Asks the open context about every combination of the grid for `op`. The context's query is the same
 * one attnrt_device_op_supported makes, without opening the device once per combination. */
static void query_op(attnrt_context_t *ctx, uint32_t op, op_caps_t *caps)
{
    const op_grid_t *g = info_grid_of(op);
    for (size_t qi = 0; qi < g->nq; qi++)
        for (size_t ki = 0; ki < g->nkv; ki++)
            for (size_t hi = 0; hi < g->nheads; hi++)
                for (size_t bi = 0; bi < g->nblocks; bi++)
                    for (size_t fi = 0; fi < g->nfeatures; fi++) {
                        attnrt_op_query_t q = {.struct_size = sizeof q, .op = op, .q_dtype = g->q[qi].dtype,
                                               .kv_dtype = g->kv[ki].dtype, .head_dim_qk = g->heads[hi].qk,
                                               .head_dim_v = g->heads[hi].v, .block_size = g->blocks[bi],
                                               .features = g->features[fi].bits};
                        char reason[512] = "";
                        attnrt_status_t st = attnrt_op_supported(ctx, &q, reason, sizeof reason);
                        caps->total++;
                        if (st == ATTNRT_OK) {
                            caps->supported++;
                            continue;
                        }
                        const refused_combo_t combo = {(uint8_t)qi, (uint8_t)ki, (uint8_t)hi, (uint8_t)bi,
                                                       (uint8_t)fi, 0};
                        if (st != ATTNRT_ERR_UNSUPPORTED || !reason[0]) {
                            char *line = error_line(st); /* the query itself failed: say how */
                            tally(caps, combo, line);
                            free(line);
                        } else {
                            tally(caps, combo, reason);
                        }
                    }
}

static void gather_device(uint32_t index, device_info_t *d)
{
    d->props.struct_size = sizeof d->props;
    attnrt_status_t st = attnrt_device_get_properties(index, &d->props);
    if (st != ATTNRT_OK) {
        d->props_error = error_line(st);
        memset(&d->props, 0, sizeof d->props);
        snprintf(d->props.name, sizeof d->props.name, "device %u", index);
    }
    uint32_t plugin_index;
    attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
    if (attnrt_device_get_plugin(index, &plugin_index) == ATTNRT_OK &&
        attnrt_plugin_get_info(plugin_index, &info) == ATTNRT_OK)
        snprintf(d->plugin, sizeof d->plugin, "%s", info.name);

    uint32_t wanted = d->props.attribute_count < MAX_ATTRIBUTES ? d->props.attribute_count : MAX_ATTRIBUTES;
    if (wanted) d->attrs = info_must(calloc(wanted, sizeof *d->attrs));
    for (uint32_t i = 0; i < wanted; i++) {
        d->attrs[i].struct_size = sizeof d->attrs[i];
        st = attnrt_device_get_attribute(index, i, &d->attrs[i]);
        if (st != ATTNRT_OK) {
            d->attr_error = error_line(st);
            break;
        }
        d->attr_count++;
    }
    if (!d->attr_error && d->props.attribute_count > wanted) {
        char note[96];
        snprintf(note, sizeof note, "the device reports %u attributes; the first %u are shown",
                 d->props.attribute_count, wanted);
        d->attr_error = dup_str(note);
    }

    if (d->props_error) { /* contexts open by name, and the name is in the properties */
        d->open_error = dup_str("not opened: its properties, and so its name, could not be read");
        return;
    }
    attnrt_context_t *ctx = NULL;
    st = attnrt_open(d->props.name, &ctx);
    if (st != ATTNRT_OK) {
        d->open_error = error_line(st);
        return;
    }
    for (uint32_t op = FIRST_OP; op <= LAST_OP; op++) query_op(ctx, op, &d->caps[op]);
    if (attnrt_close(ctx) != ATTNRT_OK) fprintf(stderr, "attnrt-info: %s\n", attnrt_last_error());
}

void info_gather(report_t *r)
{
    r->plugin_env = secure_getenv("ATTNRT_PLUGIN");
    r->path_env = secure_getenv("ATTNRT_PLUGIN_PATH");
    r->device_env = secure_getenv("ATTNRT_DEVICE");
    r->explicit_mode = r->plugin_env && r->plugin_env[0];

    r->init_status = attnrt_init();
    if (r->init_status != ATTNRT_OK) r->init_error = error_line(r->init_status);

    /* The plugin list is readable even after a failed init: it holds the failed file's record. */
    if (attnrt_plugin_count(&r->plugin_count) != ATTNRT_OK) r->plugin_count = 0;
    if (r->plugin_count) r->plugins = info_must(calloc(r->plugin_count, sizeof *r->plugins));
    for (uint32_t i = 0; i < r->plugin_count; i++) {
        r->plugins[i] = (attnrt_plugin_info_t)ATTNRT_PLUGIN_INFO_INIT;
        if (attnrt_plugin_get_info(i, &r->plugins[i]) != ATTNRT_OK) {
            r->plugins[i].path = r->plugins[i].name = r->plugins[i].version = "";
            r->plugins[i].status = ATTNRT_ERR_INTERNAL;
            r->plugins[i].reason = "(attnrt_plugin_get_info failed)";
        }
    }

    if (r->init_error) return; /* no devices after a failed init; init_error says why */
    attnrt_status_t st = attnrt_device_count(&r->device_count);
    if (st != ATTNRT_OK) {
        r->devices_error = error_line(st);
        r->device_count = 0;
    }
    if (r->device_count) r->devices = info_must(calloc(r->device_count, sizeof *r->devices));
    uint32_t def;
    st = attnrt_device_default(&def);
    if (st != ATTNRT_OK) r->default_error = error_line(st);
    for (uint32_t i = 0; i < r->device_count; i++) {
        gather_device(i, &r->devices[i]);
        r->devices[i].is_default = st == ATTNRT_OK && def == i;
        if (!r->devices[i].open_error) r->usable_count++;
    }
}

void info_report_free(report_t *r)
{
    for (uint32_t i = 0; i < r->device_count; i++) {
        device_info_t *d = &r->devices[i];
        for (uint32_t op = FIRST_OP; op <= LAST_OP; op++) {
            for (uint32_t k = 0; k < d->caps[op].reason_count; k++) free(d->caps[op].reasons[k].text);
            free(d->caps[op].reasons);
            free(d->caps[op].refused);
        }
        free(d->attrs);
        free(d->props_error);
        free(d->attr_error);
        free(d->open_error);
    }
    free(r->devices);
    free(r->plugins);
    free(r->init_error);
    free(r->devices_error);
    free(r->default_error);
}
