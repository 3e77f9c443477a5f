/* Runtime internals shared by runtime/src only; never installed, never seen by plugins. */
#ifndef ATTNRT_INTERNAL_H
#define ATTNRT_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "attnrt.h"

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
typedef struct attnrt_plugin {
    char               *path;       /* owned */
    char               *name;       /* owned */
    char               *version;    /* owned */
    char               *reason;     /* owned; "" when loaded */
    attnrt_status_t     status;
    uint32_t            abi_major, abi_minor;
    void               *dl;         /* dlopen handle; NULL when not loaded */
    attnrt_plugin_api_t api;        /* the plugin's vtable, zero beyond its struct_size */
    void               *handle;     /* what api.init returned */
    uint32_t            device_count;
} attnrt_plugin_t;

/* Loads the plugin at `path` into *p (always filled: on failure p->status and p->reason say why).
 * `expected_name` (may be NULL) is the name the caller asked for, to check the plugin's own. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plugin_load(const char *path, const char *expected_name, attnrt_plugin_t *p);
ATTNRT_HIDDEN void attnrt_plugin_unload(attnrt_plugin_t *p);
/* Fetches the plugin's last error message for this thread into buf. */
ATTNRT_HIDDEN void attnrt_plugin_message(const attnrt_plugin_t *p, char *buf, size_t cap);
/* Returns `status` with attnrt_last_error() = "<what>: <plugin's message>". */
ATTNRT_HIDDEN attnrt_status_t attnrt_plugin_fail(const attnrt_plugin_t *p, attnrt_status_t status, const char *what);

/* ---- the registry (registry.c) ---- */
typedef struct attnrt_device_ref {
    attnrt_plugin_t *plugin;
    uint32_t         index;      /* index inside the plugin */
    char             name[ATTNRT_NAME_MAX];
    uint32_t         device_type;
} attnrt_device_ref_t;

/* Initialises once; returns the init status. */
ATTNRT_HIDDEN attnrt_status_t attnrt_ensure_init(void);
ATTNRT_HIDDEN attnrt_status_t attnrt_registry_device(uint32_t index, const attnrt_device_ref_t **ref);
ATTNRT_HIDDEN void attnrt_registry_retain(void);  /* a context opened  */
ATTNRT_HIDDEN void attnrt_registry_release(void); /* a context closed  */

/* ---- small string helpers (status.c) ---- */
ATTNRT_HIDDEN char *attnrt_strdup(const char *s);
ATTNRT_HIDDEN char *attnrt_strdupf(const char *fmt, ...) ATTNRT_PRINTF(1, 2);
/* Copies with truncation; always NUL-terminates when cap > 0. */
ATTNRT_HIDDEN void attnrt_strlcpy(char *dst, const char *src, size_t cap);

#endif /* ATTNRT_INTERNAL_H */
