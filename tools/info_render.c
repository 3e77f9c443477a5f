/* attnrt-info: the report as text (a table per device, refusal reasons numbered) or as one JSON document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info_report.h"
#include "json_writer.h"

#define TEXT_MAX_REASONS 24 /* distinct reasons listed per device in text; --json has them all */
#define TEXT_MAX_REFS    8  /* reason references on one op row */

/* ---- shared helpers for both renderers ------------------------------------------------------- */

static const char *device_type_name(uint32_t type)
{
    switch (type) {
    case ATTNRT_DEVICE_TYPE_CPU:    return "cpu";
    case ATTNRT_DEVICE_TYPE_CUDA:   return "cuda";
    case ATTNRT_DEVICE_TYPE_ROCM:   return "rocm";
    case ATTNRT_DEVICE_TYPE_EXTDEV: return "extdev";
    case ATTNRT_DEVICE_TYPE_ONEAPI: return "oneapi";
    default:                        return "unknown";
    }
}

static void human_bytes(uint64_t bytes, char *out, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < COUNT_OF(units)) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(out, cap, "%llu B", (unsigned long long)bytes);
    else snprintf(out, cap, "%.1f %s", v, units[u]);
}

static const char *default_device_name(const report_t *r)
{
    for (uint32_t i = 0; i < r->device_count; i++)
        if (r->devices[i].is_default) return r->devices[i].props.name;
    return NULL;
}

/* ---- text ------------------------------------------------------------------------------------ */

static void text_head(const head_dims_t *h)
{
    if (h->qk == h->v) printf("%u", h->qk);
    else printf("%u/%u", h->qk, h->v);
}

static void text_grids(void)
{
    printf("capability grids (the combinations asked of each device):\n");
    for (size_t gi = 0; gi < info_grid_count; gi++) {
        const op_grid_t *g = &info_grids[gi];
        printf("  %s (%s): %u combinations each\n    q", g->name, g->ops, info_grid_size(g));
        for (size_t i = 0; i < g->nq; i++) printf("%c%s", i ? ',' : ' ', g->q[i].name);
        printf(" x %s", g->kv_axis);
        for (size_t i = 0; i < g->nkv; i++) printf("%c%s", i ? ',' : ' ', g->kv[i].name);
        printf(" x %s", g->head_axis);
        for (size_t i = 0; i < g->nheads; i++) {
            putchar(i ? ',' : ' ');
            text_head(&g->heads[i]);
        }
        if (g->blocks[0]) {
            printf(" x block");
            for (size_t i = 0; i < g->nblocks; i++) printf("%c%u", i ? ',' : ' ', g->blocks[i]);
        }
        printf(" x features");
        for (size_t i = 0; i < g->nfeatures; i++) printf("%c%s", i ? ',' : ' ', g->features[i].name);
        printf("\n");
    }
}

/* Distinct reasons across a device's ops, numbered in order of first appearance (1-based). */
typedef struct reason_index {
    const char **text;
    uint32_t    *count;
    uint32_t     n;
} reason_index_t;

static uint32_t reason_number(reason_index_t *ix, const char *reason, uint32_t count)
{
    for (uint32_t i = 0; i < ix->n; i++)
        if (strcmp(ix->text[i], reason) == 0) {
            ix->count[i] += count;
            return i + 1;
        }
    ix->text = info_must(realloc(ix->text, (ix->n + 1) * sizeof *ix->text));
    ix->count = info_must(realloc(ix->count, (ix->n + 1) * sizeof *ix->count));
    ix->text[ix->n] = reason;
    ix->count[ix->n] = count;
    return ++ix->n;
}

static void text_capabilities(const device_info_t *d)
{
    reason_index_t ix = {0};
    printf("    capabilities:\n");
    for (uint32_t op = FIRST_OP; op <= LAST_OP; op++) {
        const op_caps_t *c = &d->caps[op];
        printf("      %-16s supported %3u of %u", attnrt_op_name(op), c->supported, c->total);
        for (uint32_t k = 0; k < c->reason_count; k++) {
            uint32_t num = reason_number(&ix, c->reasons[k].text, c->reasons[k].count);
            if (k < TEXT_MAX_REFS) printf("%s[%u] %u", k ? ", " : "; refused ", num, c->reasons[k].count);
        }
        if (c->reason_count > TEXT_MAX_REFS) printf(", ... (%u reasons)", c->reason_count);
        printf("\n");
    }
    if (ix.n) printf("    refusal reasons:\n");
    for (uint32_t i = 0; i < ix.n && i < TEXT_MAX_REASONS; i++)
        printf("      [%u] %s  (%u combination%s)\n", i + 1, ix.text[i], ix.count[i], ix.count[i] == 1 ? "" : "s");
    if (ix.n > TEXT_MAX_REASONS) printf("      ... %u more distinct reasons: see --json\n", ix.n - TEXT_MAX_REASONS);
    free(ix.text);
    free(ix.count);
}

static void text_device(const device_info_t *d)
{
    const attnrt_device_properties_t *p = &d->props;
    printf("  %s%s: %s\n", p->name, d->is_default ? " (default)" : "", d->open_error ? "NOT usable" : "usable");
    if (d->props_error) printf("    properties unavailable: %s\n", d->props_error);
    char total[32], free_[32];
    human_bytes(p->memory_total, total, sizeof total);
    human_bytes(p->memory_free, free_, sizeof free_);
    printf("    plugin         %s\n", d->plugin[0] ? d->plugin : "?");
    if (!d->props_error) {
        printf("    type           %s\n", device_type_name(p->device_type));
        printf("    vendor         %s\n", p->vendor);
        printf("    model          %s\n", p->model);
        printf("    arch           %s\n", p->arch);
        printf("    driver         %s\n", p->driver[0] ? p->driver : "(none)");
        printf("    compute units  %u\n", p->compute_units);
        printf("    memory         %s total, %s free\n", total, free_);
    }
    if (d->attr_count) printf("    attributes:\n");
    for (uint32_t i = 0; i < d->attr_count; i++) printf("      %s = %s\n", d->attrs[i].key, d->attrs[i].value);
    if (d->attr_error) printf("    attributes unavailable: %s\n", d->attr_error);
    if (d->open_error) printf("    cannot open: %s\n", d->open_error);
    else text_capabilities(d);
}

void info_text_report(const report_t *r)
{
    printf("libattnrt %s\n", attnrt_version_string());
    if (r->explicit_mode) printf("discovery: explicit (ATTNRT_PLUGIN=%s)\n", r->plugin_env);
    else printf("discovery: auto (ATTNRT_PLUGIN not set)\n");
    if (r->path_env) printf("ATTNRT_PLUGIN_PATH='%s'\n", r->path_env);
    if (r->init_error) printf("init: failed (%s)\nerror: %s\n", attnrt_status_name(r->init_status), r->init_error);

    printf("\nplugins: %u found\n", r->plugin_count);
    if (!r->plugin_count && !r->explicit_mode) printf("  (ATTNRT_LOG=debug attnrt-info shows every directory searched)\n");
    for (uint32_t i = 0; i < r->plugin_count; i++) {
        const attnrt_plugin_info_t *p = &r->plugins[i];
        printf("  %s %s", p->name, p->version[0] ? p->version : "(version unknown)");
        if (p->abi_major || p->abi_minor) printf(", ABI %u.%u", p->abi_major, p->abi_minor);
        else printf(", ABI unknown");
        if (p->status == ATTNRT_OK) printf(": loaded, %u device%s\n", p->device_count, p->device_count == 1 ? "" : "s");
        else printf(": not loaded (%s)\n", attnrt_status_name(p->status));
        printf("    path: %s\n", p->path);
        if (p->status != ATTNRT_OK) printf("    reason: %s\n", p->reason);
    }

    if (!r->init_error) {
        const char *def = default_device_name(r);
        printf("\ndevices: %u, default %s\n", r->device_count, def ? def : "none");
        if (r->devices_error) printf("  cannot list devices: %s\n", r->devices_error);
        if (r->default_error && r->device_count) printf("  no default device: %s\n", r->default_error);
        if (r->usable_count) text_grids();
        for (uint32_t i = 0; i < r->device_count; i++) text_device(&r->devices[i]);
    }
    if (r->usable_count) printf("\n%u of %u device%s usable\n", r->usable_count, r->device_count, r->device_count == 1 ? "" : "s");
    else printf("\nno usable device\n");
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void json_grids(json_writer_t *w)
{
    json_key(w, "capability_grids");
    json_begin_object(w);
    for (size_t gi = 0; gi < info_grid_count; gi++) {
        const op_grid_t *g = &info_grids[gi];
        json_key(w, g->name);
        json_begin_object(w);
        json_key(w, "ops");
        json_begin_array_inline(w);
        for (uint32_t op = FIRST_OP; op <= LAST_OP; op++)
            if (info_grid_of(op) == g) json_string(w, attnrt_op_name(op));
        json_end_array(w);
        json_key(w, "q_dtypes");
        json_begin_array_inline(w);
        for (size_t i = 0; i < g->nq; i++) json_string(w, g->q[i].name);
        json_end_array(w);
        json_key(w, "kv_dtypes");
        json_begin_array_inline(w);
        for (size_t i = 0; i < g->nkv; i++) json_string(w, g->kv[i].name);
        json_end_array(w);
        json_key(w, "head_dims"); /* [qk, v] pairs */
        json_begin_array_inline(w);
        for (size_t i = 0; i < g->nheads; i++) {
            json_begin_array_inline(w);
            json_uint(w, g->heads[i].qk);
            json_uint(w, g->heads[i].v);
            json_end_array(w);
        }
        json_end_array(w);
        json_key(w, "block_sizes"); /* [0]: the ops have no blocks */
        json_begin_array_inline(w);
        for (size_t i = 0; i < g->nblocks; i++) json_uint(w, g->blocks[i]);
        json_end_array(w);
        json_key(w, "features");
        json_begin_array_inline(w);
        for (size_t i = 0; i < g->nfeatures; i++) json_string(w, g->features[i].name);
        json_end_array(w);
        json_member_uint(w, "combinations", info_grid_size(g));
        json_end_object(w);
    }
    json_end_object(w);
}

static void json_plugin(json_writer_t *w, const attnrt_plugin_info_t *p)
{
    json_begin_object(w);
    json_member_string(w, "path", p->path);
    json_member_string(w, "name", p->name);
    json_member_string(w, "version", p->version);
    json_key(w, "abi");
    json_begin_object_inline(w);
    json_member_uint(w, "major", p->abi_major);
    json_member_uint(w, "minor", p->abi_minor);
    json_end_object(w);
    json_member_bool(w, "loaded", p->status == ATTNRT_OK);
    json_member_string(w, "status", attnrt_status_name(p->status));
    json_member_string(w, "reason", p->status == ATTNRT_OK ? NULL : p->reason);
    json_member_uint(w, "device_count", p->device_count);
    json_end_object(w);
}

/* One refused combination: the op and every field the tool asked with, then the plugin's reason. */
static void json_refusal(json_writer_t *w, uint32_t op, const op_grid_t *g, const op_caps_t *c, const refused_combo_t *x)
{
    json_begin_object_inline(w);
    json_member_string(w, "op", attnrt_op_name(op));
    json_member_string(w, "q_dtype", g->q[x->q].name);
    json_member_string(w, "kv_dtype", g->kv[x->kv].name);
    json_member_uint(w, "head_dim_qk", g->heads[x->head].qk);
    json_member_uint(w, "head_dim_v", g->heads[x->head].v);
    json_member_uint(w, "block_size", g->blocks[x->block]);
    json_key(w, "features");
    json_begin_array_inline(w);
    if (g->features[x->feature].bits) json_string(w, g->features[x->feature].name);
    json_end_array(w);
    json_member_string(w, "reason", c->reasons[x->reason].text);
    json_end_object(w);
}

static void json_capabilities(json_writer_t *w, const device_info_t *d)
{
    json_key(w, "capabilities");
    if (d->open_error) {
        json_null(w);
        return;
    }
    json_begin_object(w);
    for (uint32_t op = FIRST_OP; op <= LAST_OP; op++) {
        const op_caps_t *c = &d->caps[op];
        const op_grid_t *g = info_grid_of(op);
        json_key(w, attnrt_op_name(op));
        json_begin_object(w);
        json_member_string(w, "grid", g->name);
        json_member_uint(w, "total", c->total);
        json_member_uint(w, "supported", c->supported);
        json_member_uint(w, "refused", c->refused_count);
        json_key(w, "reasons");
        json_begin_array(w);
        for (uint32_t k = 0; k < c->reason_count; k++) {
            json_begin_object_inline(w);
            json_member_string(w, "reason", c->reasons[k].text);
            json_member_uint(w, "count", c->reasons[k].count);
            json_end_object(w);
        }
        json_end_array(w);
        json_key(w, "refusals");
        json_begin_array(w);
        for (uint32_t k = 0; k < c->refused_count; k++) json_refusal(w, op, g, c, &c->refused[k]);
        json_end_array(w);
        json_end_object(w);
    }
    json_end_object(w);
}

static void json_device(json_writer_t *w, const device_info_t *d)
{
    const attnrt_device_properties_t *p = &d->props;
    json_begin_object(w);
    json_member_string(w, "name", p->name);
    json_member_string(w, "plugin", d->plugin);
    json_member_string(w, "properties_error", d->props_error);
    json_member_string(w, "type", device_type_name(p->device_type));
    json_member_string(w, "vendor", p->vendor);
    json_member_string(w, "model", p->model);
    json_member_string(w, "arch", p->arch);
    json_member_string(w, "driver", p->driver);
    json_member_uint(w, "compute_units", p->compute_units);
    json_member_uint(w, "memory_total_bytes", p->memory_total);
    json_member_uint(w, "memory_free_bytes", p->memory_free);
    json_key(w, "attributes");
    json_begin_object(w);
    for (uint32_t i = 0; i < d->attr_count; i++) json_member_string(w, d->attrs[i].key, d->attrs[i].value);
    json_end_object(w);
    json_member_string(w, "attributes_error", d->attr_error);
    json_member_bool(w, "default", d->is_default);
    json_member_bool(w, "usable", d->open_error == NULL);
    json_member_string(w, "open_error", d->open_error);
    json_capabilities(w, d);
    json_end_object(w);
}

int info_json_report(const report_t *r)
{
    json_writer_t w;
    json_init(&w, stdout);
    json_begin_object(&w);
    json_member_uint(&w, "schema_version", INFO_SCHEMA_VERSION);
    json_member_string(&w, "tool", "attnrt-info");
    json_member_string(&w, "version", attnrt_version_string());
    uint32_t abi_major = 0, abi_minor = 0;
    attnrt_abi_version(&abi_major, &abi_minor);
    json_key(&w, "abi");
    json_begin_object_inline(&w);
    json_member_uint(&w, "major", abi_major);
    json_member_uint(&w, "minor", abi_minor);
    json_end_object(&w);
    json_member_string(&w, "mode", r->explicit_mode ? "explicit" : "auto");
    json_key(&w, "env");
    json_begin_object(&w);
    json_member_string(&w, "ATTNRT_PLUGIN", r->plugin_env);
    json_member_string(&w, "ATTNRT_PLUGIN_PATH", r->path_env);
    json_member_string(&w, "ATTNRT_DEVICE", r->device_env);
    json_end_object(&w);
    json_member_string(&w, "init_error", r->init_error);
    json_key(&w, "plugins");
    json_begin_array(&w);
    for (uint32_t i = 0; i < r->plugin_count; i++) json_plugin(&w, &r->plugins[i]);
    json_end_array(&w);
    json_member_string(&w, "devices_error", r->devices_error);
    json_grids(&w);
    json_key(&w, "devices");
    json_begin_array(&w);
    for (uint32_t i = 0; i < r->device_count; i++) json_device(&w, &r->devices[i]);
    json_end_array(&w);
    json_member_string(&w, "default_device", default_device_name(r));
    json_member_string(&w, "default_device_error", r->default_error);
    json_member_uint(&w, "usable_devices", r->usable_count);
    json_end_object(&w);
    return json_finish(&w);
}
