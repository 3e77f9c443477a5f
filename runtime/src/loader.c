/* Loading one plugin file: dlopen, the entry symbol, ABI negotiation, vtable checks, probe, init.
 * Every failure leaves a one-line reason that names the file and says what to do. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

static const attnrt_host_api_t host_api = {
    .struct_size = sizeof(attnrt_host_api_t),
    .abi_major   = ATTNRT_ABI_MAJOR,
    .abi_minor   = ATTNRT_ABI_MINOR,
    .log_level   = ATTNRT_LOG_DEBUG, /* the runtime filters; see attnrt_log */
    .log         = attnrt_log_from_plugin,
};

/* Entries a plugin must provide, with their offsets: a NULL one refuses the plugin at load. */
#define REQUIRED(field) {#field, offsetof(attnrt_plugin_api_t, field)}
static const struct {
    const char *name;
    size_t      offset;
} required_entries[] = {
    REQUIRED(probe),        REQUIRED(init),          REQUIRED(shutdown),       REQUIRED(last_error),
    REQUIRED(device_count), REQUIRED(device_properties), REQUIRED(device_open), REQUIRED(device_close),
    REQUIRED(mem_alloc),    REQUIRED(mem_free),      REQUIRED(mem_copy),       REQUIRED(stream_create),
    REQUIRED(stream_destroy), REQUIRED(stream_synchronize),
};
#undef REQUIRED

/* The smallest vtable we accept: ABI 1.0, whose last entry is op_supported. */
#define ATTNRT_PLUGIN_API_V1_0_SIZE ATTNRT_STRUCT_SIZE(attnrt_plugin_api_t, op_supported)

static attnrt_status_t refuse(attnrt_plugin_t *p, attnrt_status_t status, const char *fmt, ...)
    ATTNRT_PRINTF(3, 4);

static attnrt_status_t refuse(attnrt_plugin_t *p, attnrt_status_t status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    free(p->reason);
    p->reason = attnrt_strdup(msg);
    p->status = status;
    attnrt_log(ATTNRT_LOG_DEBUG, "plugin %s refused: %s", p->path, msg);
    return attnrt_fail(status, "%s", msg);
}

/* The file's stem without "attnrt_" and ".so": the name to show before the plugin tells its own. */
static char *stem_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "attnrt_", 7) == 0) base += 7;
    char *name = attnrt_strdup(base);
    if (!name) return NULL;
    char *dot = strstr(name, ".so");
    if (dot) *dot = '\0';
    return name;
}

void attnrt_plugin_message(const attnrt_plugin_t *p, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (p->api.last_error) p->api.last_error(buf, cap);
    buf[cap - 1] = '\0';
    if (buf[0] == '\0') attnrt_strlcpy(buf, "(the plugin gave no message)", cap);
}

attnrt_status_t attnrt_plugin_fail(const attnrt_plugin_t *p, attnrt_status_t status, const char *what)
{
    char msg[768];
    attnrt_plugin_message(p, msg, sizeof msg);
    return attnrt_fail(status, "%s: %s", what, msg);
}

static attnrt_status_t check_vtable(attnrt_plugin_t *p, const attnrt_plugin_api_t *api)
{
    if (api->struct_size < ATTNRT_STRUCT_SIZE(attnrt_plugin_api_t, abi_minor))
        return refuse(p, ATTNRT_ERR_PLUGIN, "%s: vtable struct_size %zu is too small to hold a version; "
                      "the plugin is broken", p->path, api->struct_size);
    p->abi_major = api->abi_major;
    p->abi_minor = api->abi_minor;
    attnrt_log(ATTNRT_LOG_DEBUG, "%s: plugin ABI %u.%u, runtime ABI %u.%u", p->path, api->abi_major,
               api->abi_minor, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    if (api->abi_major != ATTNRT_ABI_MAJOR)
        return refuse(p, ATTNRT_ERR_ABI_MISMATCH,
                      "%s: plugin built for attnrt plugin ABI %u.%u, but this libattnrt speaks ABI %u.%u; "
                      "rebuild the plugin against attnrt_plugin.h %u.x or use a libattnrt of ABI %u.x",
                      p->path, api->abi_major, api->abi_minor, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR,
                      ATTNRT_ABI_MAJOR, api->abi_major);
    if (api->struct_size < ATTNRT_PLUGIN_API_V1_0_SIZE)
        return refuse(p, ATTNRT_ERR_PLUGIN, "%s: vtable struct_size %zu is smaller than ABI 1.0's %zu; "
                      "the plugin is broken", p->path, api->struct_size, (size_t)ATTNRT_PLUGIN_API_V1_0_SIZE);

    /* Use only the fields inside both the plugin's struct_size and ours; the rest stay zero. */
    size_t n = api->struct_size < sizeof p->api ? api->struct_size : sizeof p->api;
    memset(&p->api, 0, sizeof p->api);
    memcpy(&p->api, api, n);
    p->api.struct_size = n;

    for (size_t i = 0; i < sizeof required_entries / sizeof required_entries[0]; i++) {
        void *entry;
        memcpy(&entry, (const char *)&p->api + required_entries[i].offset, sizeof entry);
        if (!entry)
            return refuse(p, ATTNRT_ERR_PLUGIN, "%s: required entry '%s' is NULL; the plugin is broken "
                          "(ask its vendor for a fixed build)", p->path, required_entries[i].name);
    }
    if (!p->api.name || !p->api.name[0])
        return refuse(p, ATTNRT_ERR_PLUGIN, "%s: the plugin has no name; the plugin is broken", p->path);
    return ATTNRT_OK;
}

static attnrt_status_t load_steps(const char *path, const char *expected_name, attnrt_plugin_t *p)
{
    p->path = attnrt_strdup(path);
    p->name = stem_name(path);
    p->version = attnrt_strdup("");
    p->reason = attnrt_strdup("");
    if (!p->path || !p->name || !p->version || !p->reason)
        return refuse(p, ATTNRT_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);

    attnrt_log(ATTNRT_LOG_DEBUG, "trying plugin %s", path);
    struct stat st;
    if (stat(path, &st) != 0)
        return refuse(p, ATTNRT_ERR_NOT_FOUND, "%s: no such file", path);

    dlerror();
    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        const char *why = dlerror();
        return refuse(p, ATTNRT_ERR_PLUGIN, "%s: cannot be loaded: %s", path, why ? why : "unknown dlopen error");
    }
    dlerror();
    void *sym = dlsym(p->dl, ATTNRT_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        const char *why = dlerror();
        return refuse(p, ATTNRT_ERR_PLUGIN, "%s: not an attnrt plugin: it does not export %s (%s)", path,
                      ATTNRT_PLUGIN_ENTRY_SYMBOL, why ? why : "symbol is NULL");
    }
    attnrt_plugin_get_api_fn get_api;
    memcpy(&get_api, &sym, sizeof get_api); /* object pointer -> function pointer, as POSIX allows */
    const attnrt_plugin_api_t *api = get_api(ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    if (!api)
        return refuse(p, ATTNRT_ERR_ABI_MISMATCH, "%s: the plugin declined this libattnrt's ABI %u.%u; "
                      "rebuild the plugin against attnrt_plugin.h %u.x", path, ATTNRT_ABI_MAJOR,
                      ATTNRT_ABI_MINOR, ATTNRT_ABI_MAJOR);
    attnrt_status_t st2 = check_vtable(p, api);
    if (st2 != ATTNRT_OK) return st2;

    free(p->name);
    free(p->version);
    p->name = attnrt_strdup(p->api.name);
    p->version = attnrt_strdup(p->api.version ? p->api.version : "");
    if (!p->name || !p->version) return refuse(p, ATTNRT_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
    if (expected_name && strcmp(expected_name, p->name) != 0)
        attnrt_log(ATTNRT_LOG_WARN, "%s calls itself '%s', not '%s'", path, p->name, expected_name);

    char msg[768];
    if (p->api.probe() != ATTNRT_OK) {
        attnrt_plugin_message(p, msg, sizeof msg);
        return refuse(p, ATTNRT_ERR_NO_DEVICE, "plugin %s (%s): probe failed: %s", p->name, path, msg);
    }
    if (p->api.init(&host_api, &p->handle) != ATTNRT_OK) {
        attnrt_plugin_message(p, msg, sizeof msg);
        p->handle = NULL;
        return refuse(p, ATTNRT_ERR_PLUGIN, "plugin %s (%s): init failed: %s", p->name, path, msg);
    }
    if (p->api.device_count(p->handle, &p->device_count) != ATTNRT_OK) {
        attnrt_plugin_message(p, msg, sizeof msg);
        p->device_count = 0;
        return refuse(p, ATTNRT_ERR_DEVICE, "plugin %s (%s): cannot count devices: %s", p->name, path, msg);
    }
    p->status = ATTNRT_OK;
    attnrt_log(ATTNRT_LOG_INFO, "loaded plugin %s %s (ABI %u.%u) from %s: %u device(s)", p->name, p->version,
               p->abi_major, p->abi_minor, path, p->device_count);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_plugin_load(const char *path, const char *expected_name, attnrt_plugin_t *p)
{
    memset(p, 0, sizeof *p);
    attnrt_status_t status = load_steps(path, expected_name, p);
    if (status != ATTNRT_OK) {
        /* A refused plugin keeps only its record: no code of it stays mapped or callable. */
        if (p->handle) p->api.shutdown(p->handle);
        if (p->dl) dlclose(p->dl);
        p->handle = NULL;
        p->dl = NULL;
        memset(&p->api, 0, sizeof p->api);
    }
    return status;
}

void attnrt_plugin_unload(attnrt_plugin_t *p)
{
    if (p->handle && p->api.shutdown) p->api.shutdown(p->handle);
    if (p->dl) dlclose(p->dl);
    free(p->path);
    free(p->name);
    free(p->version);
    free(p->reason);
    memset(p, 0, sizeof *p);
}
