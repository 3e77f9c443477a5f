/* Plugin discovery and the process-wide registry of plugins and devices.
 * Order (docs/abi.md): ATTNRT_PLUGIN (one plugin, fails loudly) or else, in auto mode,
 * ATTNRT_PLUGIN_PATH, the build tree when libattnrt runs from it, and the install directory. */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PLUGIN_PREFIX "attnrt_"
#define PLUGIN_SUFFIX ".so"

static struct {
    pthread_mutex_t      lock;
    atomic_bool          ready;
    attnrt_status_t      init_status;
    char                *init_message;  /* the message of a failed init, replayed to later callers */
    attnrt_plugin_t     *plugins;
    uint32_t             plugin_count;
    attnrt_device_ref_t *devices;
    uint32_t             device_count;
    atomic_uint          open_contexts;
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- search directories ---- */

typedef struct dir_list {
    char    *dirs[64];
    uint32_t count;
} dir_list_t;

static void dirs_add(dir_list_t *l, const char *dir, const char *origin)
{
    if (!dir || !dir[0]) return;
    if (dir[0] != '/') {
        attnrt_log(ATTNRT_LOG_WARN, "ignoring relative plugin directory '%s' from %s: only absolute paths "
                   "are searched (nothing is loaded from the current directory implicitly)", dir, origin);
        return;
    }
    char real[PATH_MAX];
    const char *key = realpath(dir, real) ? real : dir;
    for (uint32_t i = 0; i < l->count; i++)
        if (strcmp(l->dirs[i], key) == 0) return;
    if (l->count == sizeof l->dirs / sizeof l->dirs[0]) return;
    char *copy = attnrt_strdup(key);
    if (!copy) return;
    l->dirs[l->count++] = copy;
    attnrt_log(ATTNRT_LOG_DEBUG, "plugin directory %s (from %s)", key, origin);
}

static void dirs_add_list(dir_list_t *l, const char *colon_list, const char *origin)
{
    if (!colon_list) return;
    char *copy = attnrt_strdup(colon_list);
    if (!copy) return;
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) dirs_add(l, d, origin);
    free(copy);
}

/* True when this libattnrt.so is the one in the build tree, so its sibling plugins are the right ones. */
static int running_from_build_tree(void)
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)attnrt_init, &info) || !info.dli_fname) return 0;
    char lib[PATH_MAX], build[PATH_MAX];
    if (!realpath(info.dli_fname, lib) || !realpath(ATTNRT_BUILD_RUNTIME_DIR, build)) return 0;
    char *slash = strrchr(lib, '/');
    if (slash) *slash = '\0';
    return strcmp(lib, build) == 0;
}

static void dirs_collect(dir_list_t *l)
{
    dirs_add_list(l, secure_getenv("ATTNRT_PLUGIN_PATH"), "ATTNRT_PLUGIN_PATH");
    /* A build-tree libattnrt wants its own plugins, not an older installed copy of them. */
    if (running_from_build_tree()) dirs_add_list(l, ATTNRT_BUILD_PLUGIN_DIRS, "the build tree");
    dirs_add(l, ATTNRT_PLUGIN_INSTALL_DIR, "the install directory");
}

static void dirs_free(dir_list_t *l)
{
    for (uint32_t i = 0; i < l->count; i++) free(l->dirs[i]);
    l->count = 0;
}

/* ---- the plugin list ---- */

static attnrt_plugin_t *plugins_push(void)
{
    attnrt_plugin_t *grown = realloc(reg.plugins, (reg.plugin_count + 1) * sizeof *grown);
    if (!grown) return NULL;
    reg.plugins = grown;
    memset(&reg.plugins[reg.plugin_count], 0, sizeof *grown);
    return &reg.plugins[reg.plugin_count++];
}

/* Loads `path` into a new record; *reason (may be NULL) points at the record's reason or, when even the
 * record could not be made, at a static line. */
static attnrt_status_t load_into_list(const char *path, const char *expected_name, const char **reason)
{
    attnrt_plugin_t *p = plugins_push();
    if (!p) {
        if (reason) *reason = "out of memory recording the plugin";
        return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "out of memory recording plugin %s", path);
    }
    attnrt_status_t st = attnrt_plugin_load(path, expected_name, p);
    if (reason) *reason = p->reason ? p->reason : "out of memory";
    return st;
}

/* In auto mode a file whose stem names an already-loaded plugin is shadowed: the earlier directory wins. */
static int shadowed(const char *file_name, const char *path)
{
    size_t np = strlen(PLUGIN_PREFIX), n = strlen(file_name) - np - strlen(PLUGIN_SUFFIX);
    for (uint32_t i = 0; i < reg.plugin_count; i++) {
        const attnrt_plugin_t *p = &reg.plugins[i];
        if (p->status == ATTNRT_OK && strlen(p->name) == n && strncmp(p->name, file_name + np, n) == 0) {
            attnrt_log(ATTNRT_LOG_DEBUG, "%s: skipped, plugin '%s' already loaded from %s", path, p->name, p->path);
            return 1;
        }
    }
    return 0;
}

static int is_plugin_file(const char *base)
{
    size_t n = strlen(base), np = strlen(PLUGIN_PREFIX), ns = strlen(PLUGIN_SUFFIX);
    return n > np + ns && strncmp(base, PLUGIN_PREFIX, np) == 0 && strcmp(base + n - ns, PLUGIN_SUFFIX) == 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_directory(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        attnrt_log(ATTNRT_LOG_DEBUG, "plugin directory %s: cannot be read, skipped", dir);
        return;
    }
    char *names[256];
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)) && count < sizeof names / sizeof names[0])
        if (is_plugin_file(e->d_name) && (names[count] = attnrt_strdup(e->d_name))) count++;
    closedir(d);
    qsort(names, count, sizeof names[0], compare_names); /* a stable order, not readdir's */
    for (size_t i = 0; i < count; i++) {
        char *path = attnrt_strdupf("%s/%s", dir, names[i]);
        if (path && !shadowed(names[i], path)) load_into_list(path, NULL, NULL);
        free(path);
        free(names[i]);
    }
}

static int valid_plugin_name(const char *name)
{
    if (!name[0] || strlen(name) > 48) return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-')) return 0;
    return 1;
}

/* ATTNRT_PLUGIN: exactly one plugin, and any failure is the init's failure. */
static attnrt_status_t load_explicit(const char *wanted, const dir_list_t *dirs)
{
    if (wanted[0] == '/') {
        const char *reason = NULL;
        attnrt_status_t st = load_into_list(wanted, NULL, &reason);
        return st == ATTNRT_OK ? st : attnrt_fail(st, "ATTNRT_PLUGIN=%s: %s", wanted, reason);
    }
    if (!valid_plugin_name(wanted))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "ATTNRT_PLUGIN='%s' is neither a plugin name (like 'cpu' "
                           "or 'cuda') nor an absolute path to a plugin file", wanted);
    char searched[2048] = "";
    for (uint32_t i = 0; i < dirs->count; i++) {
        char *path = attnrt_strdupf("%s/" PLUGIN_PREFIX "%s" PLUGIN_SUFFIX, dirs->dirs[i], wanted);
        if (!path) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "out of memory");
        FILE *f = fopen(path, "rb");
        if (f) {
            fclose(f);
            const char *reason = NULL;
            attnrt_status_t st = load_into_list(path, wanted, &reason);
            free(path);
            return st == ATTNRT_OK ? st : attnrt_fail(st, "ATTNRT_PLUGIN=%s: %s", wanted, reason);
        }
        attnrt_log(ATTNRT_LOG_DEBUG, "ATTNRT_PLUGIN=%s: %s does not exist", wanted, path);
        size_t used = strlen(searched);
        snprintf(searched + used, sizeof searched - used, "%s%s", used ? ", " : "", dirs->dirs[i]);
        free(path);
    }
    return attnrt_fail(ATTNRT_ERR_NOT_FOUND, "ATTNRT_PLUGIN=%s: no plugin file " PLUGIN_PREFIX "%s" PLUGIN_SUFFIX
                       " in %s; build libattnrt with the %s plugin (meson -D%s=enabled) and install it, or set "
                       "ATTNRT_PLUGIN to the plugin's absolute path",
                       wanted, wanted, searched[0] ? searched : "(no plugin directories)", wanted, wanted);
}

/* ---- devices ---- */

static attnrt_status_t collect_devices(void)
{
    uint32_t total = 0;
    for (uint32_t i = 0; i < reg.plugin_count; i++)
        if (reg.plugins[i].status == ATTNRT_OK) total += reg.plugins[i].device_count;
    if (total == 0) return ATTNRT_OK;
    reg.devices = calloc(total, sizeof *reg.devices);
    if (!reg.devices) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "out of memory listing devices");
    for (uint32_t i = 0; i < reg.plugin_count; i++) {
        attnrt_plugin_t *p = &reg.plugins[i];
        for (uint32_t d = 0; p->status == ATTNRT_OK && d < p->device_count; d++) {
            attnrt_device_properties_t props = {.struct_size = sizeof props};
            attnrt_device_ref_t *ref = &reg.devices[reg.device_count];
            ref->plugin = p;
            ref->index = d;
            if (p->api.device_properties(p->handle, d, &props) == ATTNRT_OK && props.name[0]) {
                attnrt_strlcpy(ref->name, props.name, sizeof ref->name);
                ref->device_type = props.device_type;
            } else {
                snprintf(ref->name, sizeof ref->name, "%.40s:%u", p->name, d);
            }
            reg.device_count++;
        }
    }
    return ATTNRT_OK;
}

/* ---- init / shutdown ---- */

static attnrt_status_t discover(void)
{
    dir_list_t dirs = {0};
    dirs_collect(&dirs);
    const char *wanted = secure_getenv("ATTNRT_PLUGIN");
    attnrt_status_t status = ATTNRT_OK;
    if (wanted && wanted[0]) {
        attnrt_log(ATTNRT_LOG_DEBUG, "explicit mode: ATTNRT_PLUGIN=%s", wanted);
        status = load_explicit(wanted, &dirs);
    } else {
        for (uint32_t i = 0; i < dirs.count; i++) scan_directory(dirs.dirs[i]);
        attnrt_clear_error(); /* auto mode: each reason is kept in the plugin list instead */
    }
    dirs_free(&dirs);
    if (status == ATTNRT_OK) status = collect_devices();
    return status;
}

attnrt_status_t attnrt_ensure_init(void)
{
    if (atomic_load_explicit(&reg.ready, memory_order_acquire)) {
        if (reg.init_status != ATTNRT_OK) return attnrt_fail(reg.init_status, "%s", reg.init_message);
        return ATTNRT_OK;
    }
    pthread_mutex_lock(&reg.lock);
    if (!atomic_load_explicit(&reg.ready, memory_order_relaxed)) {
        reg.init_status = discover();
        reg.init_message = attnrt_strdup(reg.init_status == ATTNRT_OK ? "" : attnrt_last_error());
        atomic_store_explicit(&reg.ready, true, memory_order_release);
    }
    attnrt_status_t status = reg.init_status;
    pthread_mutex_unlock(&reg.lock);
    if (status != ATTNRT_OK) return attnrt_fail(status, "%s", reg.init_message ? reg.init_message : "init failed");
    return ATTNRT_OK;
}

attnrt_status_t attnrt_init(void)
{
    attnrt_clear_error();
    return attnrt_ensure_init();
}

attnrt_status_t attnrt_shutdown(void)
{
    attnrt_clear_error();
    pthread_mutex_lock(&reg.lock);
    unsigned open = atomic_load(&reg.open_contexts);
    if (open) {
        pthread_mutex_unlock(&reg.lock);
        return attnrt_fail(ATTNRT_ERR_BUSY, "attnrt_shutdown: %u context(s) still open; attnrt_close them first", open);
    }
    for (uint32_t i = 0; i < reg.plugin_count; i++) attnrt_plugin_unload(&reg.plugins[i]);
    free(reg.plugins);
    free(reg.devices);
    free(reg.init_message);
    reg.plugins = NULL;
    reg.devices = NULL;
    reg.init_message = NULL;
    reg.plugin_count = reg.device_count = 0;
    reg.init_status = ATTNRT_OK;
    atomic_store(&reg.ready, false);
    pthread_mutex_unlock(&reg.lock);
    return ATTNRT_OK;
}

void attnrt_registry_retain(void) { atomic_fetch_add(&reg.open_contexts, 1); }
void attnrt_registry_release(void) { atomic_fetch_sub(&reg.open_contexts, 1); }

/* ---- queries ---- */

attnrt_status_t attnrt_plugin_count(uint32_t *count)
{
    attnrt_clear_error();
    if (!count) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_plugin_count: count is NULL");
    /* The list is readable even after a failed explicit load: it holds the failure's record. */
    attnrt_ensure_init();
    attnrt_clear_error();
    *count = reg.plugin_count;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_plugin_get_info(uint32_t index, attnrt_plugin_info_t *info)
{
    attnrt_clear_error();
    if (!info) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_plugin_get_info: info is NULL");
    if (info->struct_size < ATTNRT_STRUCT_SIZE(attnrt_plugin_info_t, device_count))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_plugin_get_info: info->struct_size = %zu is smaller "
                           "than the %zu of this API version; set it to sizeof(attnrt_plugin_info_t)",
                           info->struct_size, (size_t)ATTNRT_STRUCT_SIZE(attnrt_plugin_info_t, device_count));
    attnrt_ensure_init();
    attnrt_clear_error();
    if (index >= reg.plugin_count)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_plugin_get_info: index = %u >= plugin count = %u",
                           index, reg.plugin_count);
    const attnrt_plugin_t *p = &reg.plugins[index];
    info->path = p->path;
    info->name = p->name;
    info->version = p->version;
    info->abi_major = p->abi_major;
    info->abi_minor = p->abi_minor;
    info->status = p->status;
    info->reason = p->reason;
    info->device_count = p->status == ATTNRT_OK ? p->device_count : 0;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_registry_device(uint32_t index, const attnrt_device_ref_t **ref)
{
    attnrt_status_t status = attnrt_ensure_init();
    if (status != ATTNRT_OK) return status;
    if (index >= reg.device_count)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "device index = %u >= device count = %u", index,
                           reg.device_count);
    *ref = &reg.devices[index];
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_count(uint32_t *count)
{
    attnrt_clear_error();
    if (!count) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_device_count: count is NULL");
    attnrt_status_t status = attnrt_ensure_init();
    if (status != ATTNRT_OK) return status;
    *count = reg.device_count;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_get_properties(uint32_t index, attnrt_device_properties_t *props)
{
    attnrt_clear_error();
    if (!props) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_device_get_properties: props is NULL");
    if (props->struct_size < ATTNRT_STRUCT_SIZE(attnrt_device_properties_t, name))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_device_get_properties: props->struct_size = %zu; "
                           "set it to sizeof(attnrt_device_properties_t)", props->struct_size);
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_device(index, &ref);
    if (status != ATTNRT_OK) return status;
    /* The plugin fills a full-size copy; the caller gets only the fields its struct_size covers. */
    attnrt_device_properties_t full = {.struct_size = sizeof full};
    status = ref->plugin->api.device_properties(ref->plugin->handle, ref->index, &full);
    if (status != ATTNRT_OK) return attnrt_plugin_fail(ref->plugin, status, ref->name);
    size_t caller_size = props->struct_size;
    memcpy(props, &full, caller_size < sizeof full ? caller_size : sizeof full);
    props->struct_size = caller_size;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_get_attribute(uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    attnrt_clear_error();
    if (!attr) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_device_get_attribute: attr is NULL");
    if (attr->struct_size < sizeof *attr)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_device_get_attribute: attr->struct_size = %zu; set "
                           "it to sizeof(attnrt_device_attribute_t)", attr->struct_size);
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_device(index, &ref);
    if (status != ATTNRT_OK) return status;
    if (!ref->plugin->api.device_attribute)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: the %s plugin reports no device attributes", ref->name,
                           ref->plugin->name);
    attnrt_device_attribute_t full = {.struct_size = sizeof full};
    status = ref->plugin->api.device_attribute(ref->plugin->handle, ref->index, i, &full);
    if (status != ATTNRT_OK) return attnrt_plugin_fail(ref->plugin, status, ref->name);
    full.key[sizeof full.key - 1] = full.value[sizeof full.value - 1] = '\0';
    *attr = full;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_get_plugin(uint32_t index, uint32_t *plugin_index)
{
    attnrt_clear_error();
    if (!plugin_index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_device_get_plugin: plugin_index is NULL");
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_device(index, &ref);
    if (status != ATTNRT_OK) return status;
    *plugin_index = (uint32_t)(ref->plugin - reg.plugins);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_find(const char *name, uint32_t *index)
{
    attnrt_clear_error();
    if (!name || !index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_device_find: %s is NULL", name ? "index" : "name");
    attnrt_status_t status = attnrt_ensure_init();
    if (status != ATTNRT_OK) return status;
    char names[512] = "";
    for (uint32_t i = 0; i < reg.device_count; i++) {
        if (strcmp(reg.devices[i].name, name) == 0) {
            *index = i;
            return ATTNRT_OK;
        }
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", reg.devices[i].name);
    }
    return attnrt_fail(ATTNRT_ERR_NOT_FOUND, "no device named '%s'; devices: %s", name, names[0] ? names : "(none)");
}

/* Lower is preferred: GPUs, then the CPU, then anything else (simulators are opt-in). */
static int device_rank(uint32_t device_type)
{
    switch (device_type) {
    case ATTNRT_DEVICE_TYPE_CUDA:
    case ATTNRT_DEVICE_TYPE_ROCM:
    case ATTNRT_DEVICE_TYPE_ONEAPI: return 0;
    case ATTNRT_DEVICE_TYPE_CPU: return 1;
    default: return 2;
    }
}

attnrt_status_t attnrt_device_default(uint32_t *index)
{
    attnrt_clear_error();
    if (!index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_device_default: index is NULL");
    attnrt_status_t status = attnrt_ensure_init();
    if (status != ATTNRT_OK) return status;
    const char *wanted = secure_getenv("ATTNRT_DEVICE");
    if (wanted && wanted[0]) {
        status = attnrt_device_find(wanted, index);
        if (status == ATTNRT_OK) return status;
        char why[1024];
        attnrt_strlcpy(why, attnrt_last_error(), sizeof why);
        return attnrt_fail(status, "ATTNRT_DEVICE=%s: %s", wanted, why);
    }
    if (reg.device_count == 0)
        return attnrt_fail(ATTNRT_ERR_NO_DEVICE, "no device: no plugin loaded a device (run attnrt-info to see "
                           "each plugin's reason)");
    uint32_t best = 0;
    for (uint32_t i = 1; i < reg.device_count; i++)
        if (device_rank(reg.devices[i].device_type) < device_rank(reg.devices[best].device_type)) best = i;
    *index = best;
    return ATTNRT_OK;
}
