/* attnrt-info's model: the capability grids it asks each device about, and the report it gathers once
 * (info_gather.c) and renders as text or JSON (info_render.c). */
#ifndef ATTNRT_INFO_REPORT_H
#define ATTNRT_INFO_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the capability grids: representative combinations, per family of ops -------------------- */
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

extern const op_grid_t info_grids[];
extern const size_t    info_grid_count;
/* The grid an op is asked about, and its number of combinations. */
const op_grid_t *info_grid_of(uint32_t op);
uint32_t         info_grid_size(const op_grid_t *g);

#define FIRST_OP ATTNRT_OP_KV_WRITE
#define LAST_OP  ATTNRT_OP_GATED_DELTA

/* ---- what the tool learns, gathered once and then rendered as text or JSON ------------------- */

typedef struct refusal_reason {
    char    *text;  /* owned */
    uint32_t count; /* combinations refused with exactly this reason */
} refusal_reason_t;

/* One refused combination of the op's grid: an index into each axis, and its reason's. */
typedef struct refused_combo {
    uint8_t  q, kv, head, block, feature;
    uint32_t reason; /* index into op_caps_t.reasons */
} refused_combo_t;

typedef struct op_caps {
    uint32_t          supported, total;
    refusal_reason_t *reasons; /* distinct, in order of first appearance */
    uint32_t          reason_count;
    refused_combo_t  *refused; /* every refused combination, in grid order */
    uint32_t          refused_count;
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

/* Asks libattnrt everything the report holds (plugins, devices, properties, attributes, capabilities). */
void info_gather(report_t *r);
void info_report_free(report_t *r);
/* Renders the report on stdout; info_json_report returns nonzero when stdout could not be written. */
void info_text_report(const report_t *r);
int  info_json_report(const report_t *r);

/* The version of attnrt-info's JSON documents (docs/tools.md): raised when a field changes meaning or
 * goes away; fields are only added within a version. */
#define INFO_SCHEMA_VERSION 1

/* --query SPEC [--device NAME]: answers one capability question (docs/tools.md). Returns the exit
 * status: 0 supported, 1 unsupported, 2 a malformed SPEC, 3 when the question could not be asked. */
int info_query(const char *spec, const char *device, int json);
/* Exits with a message when out of memory. */
void *info_must(void *p);

#endif
