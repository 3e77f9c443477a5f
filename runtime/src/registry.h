/* The process-wide registry of plugins and devices, shared by its three files: registry.c (the lock, init,
 * shutdown and the device table), discovery.c (which plugin files load) and registry_query.c (the public
 * queries). Everything in it is guarded by its lock (attnrt_registry_enter, internal.h). */
#ifndef ATTNRT_REGISTRY_H
#define ATTNRT_REGISTRY_H

#include <pthread.h>

#include "internal.h"

typedef struct registry {
    pthread_rwlock_t     lock;
    /* guarded by lock */
    bool                 ready;              /* discovery ran                                          */
    bool                 retry;              /* it ran out of memory: the next call discovers again    */
    attnrt_status_t      init_status;
    char                 init_message[1024]; /* a failed init's message, replayed to later callers    */
    attnrt_plugin_t     *plugins;
    uint32_t             plugin_count;
    attnrt_device_ref_t *devices;
    uint32_t             device_count;
    /* changed by attnrt_open (with lock held shared) and attnrt_close (without it) */
    atomic_uint          open_contexts;
} registry_t;

ATTNRT_HIDDEN extern registry_t attnrt_reg;

/* With the lock held exclusively: loads ATTNRT_PLUGIN's plugin (`wanted`, NULL or "" for auto mode) or every
 * plugin file of the search directories into the plugin list (discovery.c). */
ATTNRT_HIDDEN attnrt_status_t attnrt_discover_plugins(const char *wanted);

/* A record's string, or what to show when the record ran out of memory making it. */
static inline const char *registry_or_lost(const char *s) { return s ? s : "(lost: out of memory)"; }

#endif /* ATTNRT_REGISTRY_H */
