/* Runtime internals shared by runtime/src only; never installed, never seen by plugins. */
#ifndef ATTNRT_INTERNAL_H
#define ATTNRT_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "attnrt.h"
#include "attnrt_plugin.h"

#define ATTNRT_HIDDEN __attribute__((visibility("hidden")))
#define ATTNRT_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* ---- errors (status.c) ---- */
/* Sets the thread's last error and returns `status`, so callers write `return attnrt_fail(...)`. */
ATTNRT_HIDDEN attnrt_status_t attnrt_fail(attnrt_status_t status, const char *fmt, ...) ATTNRT_PRINTF(2, 3);
ATTNRT_HIDDEN void attnrt_clear_error(void);

/* ---- logging (log.c) ---- */
ATTNRT_HIDDEN uint32_t attnrt_log_level(void);
ATTNRT_HIDDEN void attnrt_log(uint32_t level, const char *fmt, ...) ATTNRT_PRINTF(2, 3);
/* The callback handed to plugins in attnrt_host_api_t. */
ATTNRT_HIDDEN void attnrt_log_from_plugin(uint32_t level, const char *plugin_name, const char *msg);

/* ---- one plugin file (loader.c) ---- */
/* What the runtime accepts of a plugin (docs/abi.md "What a plugin may return"). */
#define ATTNRT_PLUGIN_NAME_MAX    48   /* a plugin's name: 1..48 of a-z, 0-9, '_', '-' */
#define ATTNRT_PLUGIN_MAX_DEVICES 4096 /* devices one plugin may report */

typedef struct attnrt_plugin {
    char               *path;       /* owned; NULL only when even the record ran out of memory */
    char               *name;       /* owned; likewise */
    char               *version;    /* owned; likewise */
    char               *reason;     /* owned; "" when loaded; likewise */
    attnrt_status_t     status;
    uint32_t            abi_major, abi_minor;
    void               *dl;         /* dlopen handle; NULL when not loaded */
    attnrt_plugin_api_t api;        /* the plugin's vtable, zero beyond its struct_size */
    void               *handle;     /* what api.init returned */
    uint32_t            device_count;
} attnrt_plugin_t;

/* Loads the plugin at `path` into *p (always filled: on failure p->status and p->reason say why).
 * `expected_name` (may be NULL) is the name the caller asked for, to check the plugin's own.
 * ATTNRT_ERR_OUT_OF_MEMORY means the runtime itself ran out of host memory. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plugin_load(const char *path, const char *expected_name, attnrt_plugin_t *p);
/* Refuses a plugin that loaded (the registry found a conflict): records why, shuts it down and unmaps
 * its code; the record stays. Returns `status`, with the reason as the last error. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plugin_reject(attnrt_plugin_t *p, attnrt_status_t status, const char *fmt, ...)
    ATTNRT_PRINTF(3, 4);
ATTNRT_HIDDEN void attnrt_plugin_unload(attnrt_plugin_t *p);
/* True for a name of 1..ATTNRT_PLUGIN_NAME_MAX characters of a-z, 0-9, '_' and '-' (reads at most that many). */
ATTNRT_HIDDEN bool attnrt_plugin_name_valid(const char *name);
/* A status a plugin returned, as the runtime passes it on: the enum's values as they are, anything else
 * (positive, or an unknown negative) ATTNRT_ERR_PLUGIN, so that it can never read as success. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plugin_status(attnrt_status_t status);
/* Fetches the plugin's last error message for this thread into buf. */
ATTNRT_HIDDEN void attnrt_plugin_message(const attnrt_plugin_t *p, char *buf, size_t cap);
/* The one way a failed plugin call reaches the caller: returns attnrt_plugin_status(status) with
 * attnrt_last_error() = "<what>: <plugin's message>" (naming the bad code when it was not a status). */
ATTNRT_HIDDEN attnrt_status_t attnrt_plugin_fail(const attnrt_plugin_t *p, attnrt_status_t status, const char *what);

/* ---- the registry (registry.c, registry_query.c) ---- */
typedef struct attnrt_device_ref {
    attnrt_plugin_t *plugin;
    uint32_t         index;      /* index inside the plugin */
    char             name[ATTNRT_NAME_MAX];
    uint32_t         device_type;
} attnrt_device_ref_t;

/* Holds the registry shared (discovering plugins first when needed) until attnrt_registry_leave, which
 * must follow every enter whatever it returned; nested enters on one thread are allowed. While held,
 * attnrt_shutdown returns ATTNRT_ERR_BUSY, so no plugin is unloaded under the caller. Returns the init
 * status, its message prefixed with `fn` (the public function). */
ATTNRT_HIDDEN attnrt_status_t attnrt_registry_enter(const char *fn);
ATTNRT_HIDDEN void attnrt_registry_leave(void);
/* With the registry held: device `index` ("<fn>: index = ... >= device count ..."). */
ATTNRT_HIDDEN attnrt_status_t attnrt_registry_device(const char *fn, uint32_t index, const attnrt_device_ref_t **ref);
/* With the registry held: the device named `name`, or attnrt_device_default's choice for NULL or "". */
ATTNRT_HIDDEN attnrt_status_t attnrt_registry_pick(const char *fn, const char *name, const attnrt_device_ref_t **ref);
/* A context opened (call it with the registry held) / closed: attnrt_shutdown is BUSY while any is open. */
ATTNRT_HIDDEN void attnrt_registry_retain(void);
ATTNRT_HIDDEN void attnrt_registry_release(void);

/* ---- contexts (context.c) ---- */
/* attnrt_open without options, its messages naming `fn` (for the calls that open a context of their own). */
ATTNRT_HIDDEN attnrt_status_t attnrt_context_open(const char *fn, const char *device, attnrt_context_t **ctx);

/* ---- small string helpers (status.c) ---- */
ATTNRT_HIDDEN char *attnrt_strdup(const char *s);
ATTNRT_HIDDEN char *attnrt_strdupf(const char *fmt, ...) ATTNRT_PRINTF(1, 2);
/* Copies with truncation; always NUL-terminates when cap > 0. */
ATTNRT_HIDDEN void attnrt_strlcpy(char *dst, const char *src, size_t cap);

#endif /* ATTNRT_INTERNAL_H */
