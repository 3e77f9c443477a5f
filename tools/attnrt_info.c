/* attnrt-info: which plugins libattnrt found (and why any was refused), the devices they bring, and
 * which op / dtype / shape / feature combinations each device supports. Text by default, --json for
 * scripts. Exit status: 0 when at least one device opens, 1 when none does, 2 for a bad command line.
 * Uses only the public API (attnrt.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt.h"
#include "json_writer.h"

/* ---- the capability grids: representative combinations, per family of ops -------------------- */
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
/* Each family asks only about shapes its ops can have: MLA's latent widths, linear attention's
 * blockless states. One grid for every op would count 540 impossible combinations as refusals. */

typedef struct named_dtype {
    const char    *name;
    attnrt_dtype_t dtype;
} named_dtype_t;

typedef struct head_dims {
    uint32_t qk, v;
} head_dims_t;

typedef struct feature_set {
    const char *name;
    uint32_t    bits;
} feature_set_t;

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
typedef struct op_grid {
    const char          *name, *ops;          /* ops: the ops it serves, for the text */
    const char          *kv_axis, *head_axis; /* what kv_dtype and the head sizes mean for these ops */
    const named_dtype_t *q;
    size_t               nq;
    const named_dtype_t *kv;
    size_t               nkv;
    const head_dims_t   *heads;
    size_t               nheads;
    const uint32_t      *blocks; /* {0}: the ops have no blocks */
    size_t               nblocks;
    const feature_set_t *features;
    size_t               nfeatures;
} op_grid_t;

static const op_grid_t grids[] = {
    {"attention", "kv_write, paged_attention, merge_states, cascade", "kv", "head", AXIS(act_dtypes),
     AXIS(cache_dtypes), AXIS(attention_heads), AXIS(attention_blocks), AXIS(attention_features)},
    {"mla", "mla", "latent", "kv_dim/v_dim", AXIS(act_dtypes), AXIS(cache_dtypes), AXIS(mla_heads),
     AXIS(mla_blocks), AXIS(mla_features)},
    {"linear", "lightning, gated_delta", "key", "head_k/head_v", AXIS(act_dtypes), AXIS(act_dtypes),
     AXIS(linear_heads), AXIS(no_blocks), AXIS(linear_features)},
};

static const op_grid_t *grid_of(uint32_t op)
{
    switch (op) {
    case ATTNRT_OP_MLA:         return &grids[1];
    case ATTNRT_OP_LIGHTNING:
    case ATTNRT_OP_GATED_DELTA: return &grids[2];
    default:                    return &grids[0];
    }
}

static uint32_t grid_size(const op_grid_t *g)
{
    return (uint32_t)(g->nq * g->nkv * g->nheads * g->nblocks * g->nfeatures);
}
#define FIRST_OP ATTNRT_OP_KV_WRITE
#define LAST_OP  ATTNRT_OP_GATED_DELTA
#define TEXT_MAX_REASONS 24 /* distinct reasons listed per device in text; --json has them all */
#define TEXT_MAX_REFS    8  /* reason references on one op row */
#define MAX_ATTRIBUTES   256 /* read at most this many: a broken plugin's count must not exhaust memory */

/* ---- what the tool learns, gathered once and then rendered as text or JSON ------------------- */

typedef struct refusal {
    char    *reason; /* owned */
    uint32_t count;  /* combinations refused with exactly this reason */
} refusal_t;

typedef struct op_caps {
    uint32_t   supported, total;
    refusal_t *refusals;
    uint32_t   refusal_count;
} op_caps_t;

typedef struct device_info {
    attnrt_device_properties_t props;
    char                      *props_error;  /* NULL when the properties were read */
    char                       plugin[ATTNRT_NAME_MAX];
    attnrt_device_attribute_t *attrs;
    uint32_t                   attr_count;
    char                      *attr_error;   /* why attribute attr_count could not be read */
    int                        is_default;
    char                      *open_error;   /* NULL when a context opened: the device is usable */
    op_caps_t                  caps[LAST_OP + 1];
} device_info_t;

typedef struct report {
    const char           *plugin_env, *path_env, *device_env; /* NULL when unset */
    int                   explicit_mode;
    char                 *init_error;    /* NULL when attnrt_init succeeded */
    attnrt_status_t       init_status;
    attnrt_plugin_info_t *plugins;       /* strings runtime-owned until attnrt_shutdown */
    uint32_t              plugin_count;
    device_info_t        *devices;
    uint32_t              device_count;
    char                 *devices_error; /* NULL when the device list was read */
    char                 *default_error; /* NULL when there is a default device */
    uint32_t              usable_count;
} report_t;

static void *must(void *p)
{
    if (!p) {
        fputs("attnrt-info: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static char *dup_str(const char *s) { return must(strdup(s ? s : "")); }

/* The failed call's message (its status name when there is none), owned. Call it right after the
 * failure: the next libattnrt call replaces attnrt_last_error(). */
static char *error_line(attnrt_status_t status)
{
    const char *msg = attnrt_last_error();
    return dup_str(msg[0] ? msg : attnrt_status_name(status));
}

static void tally(op_caps_t *caps, const char *reason)
{
    for (uint32_t i = 0; i < caps->refusal_count; i++)
        if (strcmp(caps->refusals[i].reason, reason) == 0) {
            caps->refusals[i].count++;
            return;
        }
    caps->refusals = must(realloc(caps->refusals, (caps->refusal_count + 1) * sizeof *caps->refusals));
    caps->refusals[caps->refusal_count++] = (refusal_t){dup_str(reason), 1};
}

/* Asks the open context about every combination of the grid for `op`. The context's query is the same
 * one attnrt_device_op_supported makes, without opening the device once per combination. */
static void query_op(attnrt_context_t *ctx, uint32_t op, op_caps_t *caps)
{
    const op_grid_t *g = grid_of(op);
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
                        if (st != ATTNRT_ERR_UNSUPPORTED || !reason[0]) {
                            char *line = error_line(st); /* the query itself failed: say how */
                            tally(caps, line);
                            free(line);
                        } else {
                            tally(caps, reason);
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
    if (wanted) d->attrs = must(calloc(wanted, sizeof *d->attrs));
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

static void gather(report_t *r)
{
    r->plugin_env = secure_getenv("ATTNRT_PLUGIN");
    r->path_env = secure_getenv("ATTNRT_PLUGIN_PATH");
    r->device_env = secure_getenv("ATTNRT_DEVICE");
    r->explicit_mode = r->plugin_env && r->plugin_env[0];

    r->init_status = attnrt_init();
    if (r->init_status != ATTNRT_OK) r->init_error = error_line(r->init_status);

    /* The plugin list is readable even after a failed init: it holds the failed file's record. */
    if (attnrt_plugin_count(&r->plugin_count) != ATTNRT_OK) r->plugin_count = 0;
    if (r->plugin_count) r->plugins = must(calloc(r->plugin_count, sizeof *r->plugins));
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
    if (r->device_count) r->devices = must(calloc(r->device_count, sizeof *r->devices));
    uint32_t def;
    st = attnrt_device_default(&def);
    if (st != ATTNRT_OK) r->default_error = error_line(st);
    for (uint32_t i = 0; i < r->device_count; i++) {
        gather_device(i, &r->devices[i]);
        r->devices[i].is_default = st == ATTNRT_OK && def == i;
        if (!r->devices[i].open_error) r->usable_count++;
    }
}

static void report_free(report_t *r)
{
    for (uint32_t i = 0; i < r->device_count; i++) {
        device_info_t *d = &r->devices[i];
        for (uint32_t op = FIRST_OP; op <= LAST_OP; op++) {
            for (uint32_t k = 0; k < d->caps[op].refusal_count; k++) free(d->caps[op].refusals[k].reason);
            free(d->caps[op].refusals);
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
    for (size_t gi = 0; gi < COUNT_OF(grids); gi++) {
        const op_grid_t *g = &grids[gi];
        printf("  %s (%s): %u combinations each\n    q", g->name, g->ops, grid_size(g));
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
    ix->text = must(realloc(ix->text, (ix->n + 1) * sizeof *ix->text));
    ix->count = must(realloc(ix->count, (ix->n + 1) * sizeof *ix->count));
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
        for (uint32_t k = 0; k < c->refusal_count; k++) {
            uint32_t num = reason_number(&ix, c->refusals[k].reason, c->refusals[k].count);
            if (k < TEXT_MAX_REFS) printf("%s[%u] %u", k ? ", " : "; refused ", num, c->refusals[k].count);
        }
        if (c->refusal_count > TEXT_MAX_REFS) printf(", ... (%u reasons)", c->refusal_count);
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

static void text_report(const report_t *r)
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
    for (size_t gi = 0; gi < COUNT_OF(grids); gi++) {
        const op_grid_t *g = &grids[gi];
        json_key(w, g->name);
        json_begin_object(w);
        json_key(w, "ops");
        json_begin_array_inline(w);
        for (uint32_t op = FIRST_OP; op <= LAST_OP; op++)
            if (grid_of(op) == g) json_string(w, attnrt_op_name(op));
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
        json_member_uint(w, "combinations", grid_size(g));
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
        json_key(w, attnrt_op_name(op));
        json_begin_object(w);
        json_member_string(w, "grid", grid_of(op)->name);
        json_member_uint(w, "supported", c->supported);
        json_member_uint(w, "total", c->total);
        json_key(w, "refusals");
        json_begin_array(w);
        for (uint32_t k = 0; k < c->refusal_count; k++) {
            json_begin_object_inline(w);
            json_member_string(w, "reason", c->refusals[k].reason);
            json_member_uint(w, "count", c->refusals[k].count);
            json_end_object(w);
        }
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

static int json_report(const report_t *r)
{
    json_writer_t w;
    json_init(&w, stdout);
    json_begin_object(&w);
    json_member_string(&w, "version", attnrt_version_string());
    json_key(&w, "abi");
    json_begin_object_inline(&w);
    json_member_uint(&w, "major", ATTNRT_ABI_MAJOR);
    json_member_uint(&w, "minor", ATTNRT_ABI_MINOR);
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

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(FILE *out)
{
    fputs("usage: attnrt-info [--json] [--help]\n"
          "Lists the plugins libattnrt finds (and why any is not loaded), their devices and what each\n"
          "device supports.\n"
          "  --json   one JSON document on stdout instead of text\n"
          "  --help   this text\n"
          "Environment: ATTNRT_PLUGIN (a name or absolute path: load only that plugin), ATTNRT_PLUGIN_PATH\n"
          "(more plugin directories), ATTNRT_DEVICE (the default device), ATTNRT_LOG=debug (every path tried).\n"
          "Exit status: 0 when at least one device opens, 1 when none does, 2 for a bad command line.\n",
          out);
}

int main(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "attnrt-info: unknown %s '%s'\n", argv[i][0] == '-' ? "option" : "argument", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    report_t r = {0};
    gather(&r);
    int write_failed = 0;
    if (json) {
        write_failed = json_report(&r) != 0;
    } else {
        text_report(&r);
        write_failed = fflush(stdout) != 0 || ferror(stdout);
    }
    if (write_failed) fputs("attnrt-info: could not write the report to stdout\n", stderr);
    int status = r.usable_count > 0 && !write_failed ? 0 : 1;
    report_free(&r);
    if (attnrt_shutdown() != ATTNRT_OK) fprintf(stderr, "attnrt-info: %s\n", attnrt_last_error());
    return status;
}
