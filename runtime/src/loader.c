/* Loading one plugin file: the write check, dlopen, the entry symbol, ABI negotiation, vtable checks, probe,
 * init, device count; and the one mapping of the status codes plugins return. Every failure leaves a
 * one-line reason that names the file and says what to do. */
#include <dlfcn.h>
#include <limits.h>
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

/* The smallest vtable we accept: through op_supported, the last required entry (later ones read as NULL). */
#define ATTNRT_PLUGIN_API_MIN_SIZE ATTNRT_STRUCT_SIZE(attnrt_plugin_api_t, op_supported)

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
    if (!p->reason) status = ATTNRT_ERR_OUT_OF_MEMORY; /* a reason lost is a plugin lost: discovery fails */
    p->status = status;
    attnrt_log(ATTNRT_LOG_DEBUG, "plugin %s refused: %s", p->path ? p->path : "?", msg);
    return attnrt_fail(status, "%s", msg);
}

/* Shuts a loaded plugin down and unmaps it: afterwards no code of it is mapped or callable. */
static void unload_code(attnrt_plugin_t *p)
{
    if (p->handle && p->api.shutdown) p->api.shutdown(p->handle);
    if (p->dl) dlclose(p->dl);
    p->handle = NULL;
    p->dl = NULL;
    p->device_count = 0;
    memset(&p->api, 0, sizeof p->api);
}

attnrt_status_t attnrt_plugin_reject(attnrt_plugin_t *p, attnrt_status_t status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    unload_code(p);
    return refuse(p, status, "%s", msg);
}

bool attnrt_plugin_name_valid(const char *name)
{
    size_t n = strnlen(name, ATTNRT_PLUGIN_NAME_MAX + 1);
    if (n == 0 || n > ATTNRT_PLUGIN_NAME_MAX) return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-')) return false;
    return true;
}

attnrt_status_t attnrt_plugin_status(attnrt_status_t status)
{
    switch (status) {
    case ATTNRT_OK:
    case ATTNRT_ERR_INVALID_ARGUMENT:
    case ATTNRT_ERR_UNSUPPORTED:
    case ATTNRT_ERR_OUT_OF_MEMORY:
    case ATTNRT_ERR_NOT_FOUND:
    case ATTNRT_ERR_ABI_MISMATCH:
    case ATTNRT_ERR_PLUGIN:
    case ATTNRT_ERR_NO_DEVICE:
    case ATTNRT_ERR_DEVICE:
    case ATTNRT_ERR_BUSY:
    case ATTNRT_ERR_INTERNAL: return status;
    }
    return ATTNRT_ERR_PLUGIN;
}

/* At most `max` bytes of a string the plugin owns, copied, with anything unprintable made '?'. */
static char *copy_plugin_string(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    for (size_t i = 0; i < n; i++) d[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    d[n] = '\0';
    return d;
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
    attnrt_status_t mapped = attnrt_plugin_status(status);
    if (mapped == ATTNRT_OK) /* a caller's bug: success is never a failure */
        return attnrt_fail(ATTNRT_ERR_INTERNAL, "%s: failed with ATTNRT_OK (a libattnrt bug; please report it)", what);
    if (mapped != status)
        return attnrt_fail(mapped, "%s: the %s plugin returned %d, which is not an attnrt_status_t; the plugin is "
                           "broken (its message: %s)", what, p->name, (int)status, msg);
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
    if (api->struct_size < ATTNRT_PLUGIN_API_MIN_SIZE)
        return refuse(p, ATTNRT_ERR_PLUGIN, "%s: vtable struct_size %zu is smaller than its required entries (%zu "
                      "bytes, through op_supported); the plugin is broken", p->path, api->struct_size, (size_t)ATTNRT_PLUGIN_API_MIN_SIZE);

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
    if (!attnrt_plugin_name_valid(p->api.name))
        return refuse(p, ATTNRT_ERR_PLUGIN, "%s: the plugin's name is not 1..%d characters of a-z, 0-9, '_' and '-'; "
                      "the plugin is broken", p->path, ATTNRT_PLUGIN_NAME_MAX);
    return ATTNRT_OK;
}

/* The status a failed load step is refused with: `otherwise`, unless the plugin ran out of memory. */
static attnrt_status_t oom_or(attnrt_status_t plugin_status, attnrt_status_t otherwise)
{
    return plugin_status == ATTNRT_ERR_OUT_OF_MEMORY ? ATTNRT_ERR_OUT_OF_MEMORY : otherwise;
}

/* True when users other than the owner and group may write `path`; *mode gets its permission bits. */
static int writable_by_others(const char *path, mode_t *mode)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    *mode = st.st_mode & 07777;
    return (st.st_mode & S_IWOTH) != 0;
}

/* As the dynamic loader's secure mode: code that every user could have replaced is not run, whether the
 * file or its folder (sticky or not: a sticky folder still lets anyone plant a file) is writable by others.
 * ATTNRT_PLUGIN_ALLOW_WRITABLE=1 loads it anyway, with a warning. */
static attnrt_status_t check_not_writable(attnrt_plugin_t *p, const struct stat *file)
{
    char dirs[2][PATH_MAX], real[PATH_MAX];
    int ndirs = 0;
    attnrt_strlcpy(dirs[ndirs], p->path, sizeof dirs[0]);
    char *slash = strrchr(dirs[ndirs], '/');
    if (slash) {
        slash[slash == dirs[ndirs] ? 1 : 0] = '\0';
        ndirs++;
    }
    if (realpath(p->path, real) && (slash = strrchr(real, '/')) != NULL) { /* the folder of a link's target too */
        slash[slash == real ? 1 : 0] = '\0';
        if (ndirs == 0 || strcmp(real, dirs[0]) != 0) attnrt_strlcpy(dirs[ndirs++], real, sizeof dirs[0]);
    }
    const char *what = NULL, *where = p->path;
    mode_t mode = file->st_mode & 07777;
    if (file->st_mode & S_IWOTH) what = "file";
    for (int i = 0; !what && i < ndirs; i++)
        if (writable_by_others(dirs[i], &mode)) {
            what = "folder";
            where = dirs[i];
        }
    if (!what) return ATTNRT_OK;
    const char *allow = secure_getenv("ATTNRT_PLUGIN_ALLOW_WRITABLE");
    if (allow && strcmp(allow, "1") == 0) {
        attnrt_log(ATTNRT_LOG_WARN, "loading %s although its %s %s is writable by every user (mode %04o), because "
                   "ATTNRT_PLUGIN_ALLOW_WRITABLE=1", p->path, what, where, (unsigned)mode);
        return ATTNRT_OK;
    }
    return refuse(p, ATTNRT_ERR_PLUGIN, "%s: refused: its %s %s is writable by every user (mode %04o), so anyone could "
                  "replace the code this process would run; remove that permission (chmod o-w %s), or set "
                  "ATTNRT_PLUGIN_ALLOW_WRITABLE=1 to load it anyway", p->path, what, where, (unsigned)mode, where);
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
    attnrt_status_t checked = check_not_writable(p, &st);
    if (checked != ATTNRT_OK) return checked;

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
    p->version = copy_plugin_string(p->api.version ? p->api.version : "", ATTNRT_NAME_MAX);
    if (!p->name || !p->version) return refuse(p, ATTNRT_ERR_OUT_OF_MEMORY, "out of memory loading %s", path);
    if (expected_name && strcmp(expected_name, p->name) != 0)
        attnrt_log(ATTNRT_LOG_WARN, "%s calls itself '%s', not '%s'", path, p->name, expected_name);

    /* Each step's failure has its status, except running out of host memory, which stays that: discovery then
     * fails with it and the next call tries again, instead of the plugin being refused for good. */
    char msg[768];
    attnrt_status_t step = p->api.probe();
    if (step != ATTNRT_OK) {
        attnrt_plugin_message(p, msg, sizeof msg);
        return refuse(p, oom_or(step, ATTNRT_ERR_NO_DEVICE), "plugin %s (%s): probe failed: %s", p->name, path, msg);
    }
    step = p->api.init(&host_api, &p->handle);
    if (step != ATTNRT_OK) {
        attnrt_plugin_message(p, msg, sizeof msg);
        p->handle = NULL;
        return refuse(p, oom_or(step, ATTNRT_ERR_PLUGIN), "plugin %s (%s): init failed: %s", p->name, path, msg);
    }
    step = p->api.device_count(p->handle, &p->device_count);
    if (step != ATTNRT_OK) {
        attnrt_plugin_message(p, msg, sizeof msg);
        p->device_count = 0;
        return refuse(p, oom_or(step, ATTNRT_ERR_DEVICE), "plugin %s (%s): cannot count devices: %s", p->name, path,
                      msg);
    }
    if (p->device_count > ATTNRT_PLUGIN_MAX_DEVICES) {
        uint32_t claimed = p->device_count;
        p->device_count = 0;
        return refuse(p, ATTNRT_ERR_PLUGIN, "plugin %s (%s): reports %u devices, more than the %u a plugin may have; "
                      "the plugin is broken", p->name, path, claimed, ATTNRT_PLUGIN_MAX_DEVICES);
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
    if (status != ATTNRT_OK) unload_code(p); /* a refused plugin keeps only its record */
    return status;
}

void attnrt_plugin_unload(attnrt_plugin_t *p)
{
    unload_code(p);
    free(p->path);
    free(p->name);
    free(p->version);
    free(p->reason);
    memset(p, 0, sizeof *p);
}
