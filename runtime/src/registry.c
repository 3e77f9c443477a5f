/* The process-wide registry of plugins and devices: its lock, init (discovery.c finds the plugins; their
 * devices are named and admitted here) and shutdown. The public queries are in registry_query.c.
 * Threads: queries and attnrt_open hold the registry lock shared for their whole call, discovery holds it
 * exclusively, and attnrt_shutdown only tries to take it exclusively (ATTNRT_ERR_BUSY while any call is
 * inside or any context is open), so no plugin is unloaded while anything of it is in use. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

registry_t attnrt_reg = {.lock = PTHREAD_RWLOCK_INITIALIZER};
static registry_t *const reg = &attnrt_reg;

/* How many attnrt_registry_enter calls this thread is inside: nested ones do not lock again. */
static _Thread_local unsigned held_depth;

/* ---- devices ---- */

static bool printable_name(const char *name)
{
    for (const char *c = name; *c; c++)
        if (*c <= 0x20 || *c >= 0x7f) return false;
    return true;
}

/* Names device d of p into *ref: the plugin's name for it, or "<plugin>:<d>" when it gives none. NULL when
 * the name is acceptable, else why not. */
static const char *name_device(attnrt_plugin_t *p, uint32_t d, attnrt_device_ref_t *ref, char *why, size_t cap)
{
    attnrt_device_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    ref->plugin = p;
    ref->index = d;
    if (p->api.device_properties(p->handle, d, &props) != ATTNRT_OK || !props.name[0]) {
        snprintf(ref->name, sizeof ref->name, "%s:%u", p->name, d);
        return NULL;
    }
    if (!memchr(props.name, '\0', sizeof props.name)) {
        snprintf(why, cap, "device %u's name is not NUL-terminated within its %zu bytes", d, sizeof props.name);
        return why;
    }
    if (!printable_name(props.name)) {
        snprintf(why, cap, "device %u's name has a space or a character that is not printable ASCII", d);
        return why;
    }
    attnrt_strlcpy(ref->name, props.name, sizeof ref->name);
    ref->device_type = props.device_type;
    return NULL;
}

/* Appends p's devices, or refuses p (with no device of it listed) when one's name is broken or taken.
 * ATTNRT_ERR_OUT_OF_MEMORY when even the refusal could not be recorded. */
static attnrt_status_t admit_devices(attnrt_plugin_t *p)
{
    uint32_t first = reg->device_count;
    char why[256];
    for (uint32_t d = 0; d < p->device_count; d++) {
        attnrt_device_ref_t *ref = &reg->devices[first + d];
        const char *bad = name_device(p, d, ref, why, sizeof why);
        const attnrt_device_ref_t *same = NULL;
        for (uint32_t k = 0; !bad && k < first + d; k++)
            if (strcmp(reg->devices[k].name, ref->name) == 0) same = &reg->devices[k];
        if (bad || same) {
            if (same)
                attnrt_plugin_reject(p, ATTNRT_ERR_PLUGIN, "plugin %s (%s): refused: its device %u calls itself '%s', "
                                     "the name of device %u of the plugin %s (%s); a device name must be unique",
                                     p->name, p->path, d, same->name, same->index, same->plugin->name,
                                     same->plugin->path);
            else
                attnrt_plugin_reject(p, ATTNRT_ERR_PLUGIN, "plugin %s (%s): refused: %s; the plugin is broken",
                                     p->name, p->path, bad);
            memset(&reg->devices[first], 0, (d + 1) * sizeof *ref);
            return p->status == ATTNRT_ERR_OUT_OF_MEMORY ? ATTNRT_ERR_OUT_OF_MEMORY : ATTNRT_OK;
        }
    }
    reg->device_count = first + p->device_count;
    return ATTNRT_OK;
}

static attnrt_status_t collect_devices(void)
{
    size_t total = 0; /* each plugin has at most ATTNRT_PLUGIN_MAX_DEVICES, so this cannot wrap */
    for (uint32_t i = 0; i < reg->plugin_count; i++)
        if (reg->plugins[i].status == ATTNRT_OK) total += reg->plugins[i].device_count;
    if (total == 0) return ATTNRT_OK;
    if (total > UINT32_MAX)
        return attnrt_fail(ATTNRT_ERR_PLUGIN, "the plugins report %zu devices in all, more than 2^32 - 1", total);
    reg->devices = calloc(total, sizeof *reg->devices);
    if (!reg->devices)
        return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "out of memory listing devices during plugin discovery");
    attnrt_status_t status = ATTNRT_OK;
    for (uint32_t i = 0; i < reg->plugin_count && status == ATTNRT_OK; i++)
        if (reg->plugins[i].status == ATTNRT_OK) status = admit_devices(&reg->plugins[i]);
    return status;
}

/* ---- init / shutdown (with the lock held exclusively) ---- */

static attnrt_status_t discover(void)
{
    const char *wanted = secure_getenv("ATTNRT_PLUGIN");
    attnrt_status_t status = attnrt_discover_plugins(wanted);
    if (status == ATTNRT_OK) status = collect_devices();
    /* Explicit mode: a plugin refused for its devices fails the init as any other refusal does. */
    if (status == ATTNRT_OK && wanted && wanted[0] && reg->plugin_count == 1 && reg->plugins[0].status != ATTNRT_OK)
        status = attnrt_fail(reg->plugins[0].status, "ATTNRT_PLUGIN=%s: %s", wanted,
                             registry_or_lost(reg->plugins[0].reason));
    return status;
}

static void registry_clear(void)
{
    for (uint32_t i = 0; i < reg->plugin_count; i++) attnrt_plugin_unload(&reg->plugins[i]);
    free(reg->plugins);
    free(reg->devices);
    reg->plugins = NULL;
    reg->devices = NULL;
    reg->plugin_count = reg->device_count = 0;
    reg->init_status = ATTNRT_OK;
    reg->init_message[0] = '\0';
    reg->ready = reg->retry = false;
}

static void init_locked(void)
{
    registry_clear(); /* a retry after running out of memory starts from nothing */
    attnrt_status_t status = discover();
    bool oom = status == ATTNRT_ERR_OUT_OF_MEMORY;
    char message[sizeof reg->init_message];
    attnrt_strlcpy(message, status == ATTNRT_OK ? "" : attnrt_last_error(), sizeof message);
    if (oom) registry_clear(); /* nothing half-loaded stays: the next call tries again */
    reg->init_status = status;
    attnrt_strlcpy(reg->init_message, message, sizeof reg->init_message);
    reg->retry = oom;
    reg->ready = true;
}

/* The init status for a caller inside the registry, its message naming `fn`. */
static attnrt_status_t init_result(const char *fn)
{
    if (!reg->ready) /* only a nested call from inside discovery sees this (a plugin calling back into us) */
        return attnrt_fail(ATTNRT_ERR_BUSY, "%s: called while libattnrt is discovering plugins", fn);
    if (reg->init_status != ATTNRT_OK) return attnrt_fail(reg->init_status, "%s: %s", fn, reg->init_message);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_registry_enter(const char *fn)
{
    if (held_depth++ > 0) return init_result(fn);
    pthread_rwlock_rdlock(&reg->lock);
    if (!reg->ready || reg->retry) {
        /* Discover under the exclusive lock, then keep it for this one call: the caller only reads. A
         * shutdown that slipped in between finds nothing held; this call then discovers afresh. */
        pthread_rwlock_unlock(&reg->lock);
        pthread_rwlock_wrlock(&reg->lock);
        if (!reg->ready || reg->retry) init_locked();
    }
    return init_result(fn);
}

void attnrt_registry_leave(void)
{
    if (--held_depth == 0) pthread_rwlock_unlock(&reg->lock);
}

attnrt_status_t attnrt_init(void)
{
    attnrt_clear_error();
    attnrt_status_t status = attnrt_registry_enter("attnrt_init");
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_shutdown(void)
{
    attnrt_clear_error();
    if (held_depth > 0 || pthread_rwlock_trywrlock(&reg->lock) != 0)
        return attnrt_fail(ATTNRT_ERR_BUSY, "attnrt_shutdown: another libattnrt call (a plugin or device query, "
                           "attnrt_open or attnrt_init) is using the plugins; call it again when that call has "
                           "returned");
    unsigned open = atomic_load(&reg->open_contexts);
    if (open) {
        pthread_rwlock_unlock(&reg->lock);
        return attnrt_fail(ATTNRT_ERR_BUSY, "attnrt_shutdown: %u context(s) still open; attnrt_close them first", open);
    }
    registry_clear();
    pthread_rwlock_unlock(&reg->lock);
    return ATTNRT_OK;
}

void attnrt_registry_retain(void) { atomic_fetch_add(&reg->open_contexts, 1); }
void attnrt_registry_release(void) { atomic_fetch_sub(&reg->open_contexts, 1); }

