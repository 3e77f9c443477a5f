/* Plugin discovery and the process-wide registry of plugins and devices.
 * Order (docs/abi.md): ATTNRT_PLUGIN (one plugin, fails loudly) or else, in auto mode,
 * ATTNRT_PLUGIN_PATH, the build tree when libattnrt runs from it, and the install directory.
 * Threads: queries and attnrt_open hold the registry lock shared for their whole call, discovery holds it
 * exclusively, and attnrt_shutdown only tries to take it exclusively (ATTNRT_ERR_BUSY while any call is
 * inside or any context is open), so no plugin is unloaded while anything of it is in use. */
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
    pthread_rwlock_t     lock;
    /* guarded by lock */
    bool                 ready;         /* discovery ran */
    bool                 retry;         /* it ran out of memory: the next call discovers again */
    attnrt_status_t      init_status;
    char                 init_message[1024]; /* a failed init's message, replayed to later callers */
    attnrt_plugin_t     *plugins;
    uint32_t             plugin_count;
    attnrt_device_ref_t *devices;
    uint32_t             device_count;
    /* changed by attnrt_open (with lock held shared) and attnrt_close (without it) */
    atomic_uint          open_contexts;
} reg = {.lock = PTHREAD_RWLOCK_INITIALIZER};

/* How many attnrt_registry_enter calls this thread is inside: nested ones do not lock again. */
static _Thread_local unsigned held_depth;

/* A record's string, or what to show when the record ran out of memory making it. */
static const char *or_lost(const char *s) { return s ? s : "(lost: out of memory)"; }

/* ---- search directories ---- */

typedef struct dir_list {
    char   **dirs;
    uint32_t count, cap;
} dir_list_t;

static attnrt_status_t out_of_memory(const char *what)
{
    return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "out of memory %s during plugin discovery", what);
}

static attnrt_status_t dirs_add(dir_list_t *l, const char *dir, const char *origin)
{
    if (!dir || !dir[0]) return ATTNRT_OK;
    if (dir[0] != '/') {
        attnrt_log(ATTNRT_LOG_WARN, "ignoring relative plugin directory '%s' from %s: only absolute paths "
                   "are searched (nothing is loaded from the current directory implicitly)", dir, origin);
        return ATTNRT_OK;
    }
    char real[PATH_MAX];
    const char *key = realpath(dir, real) ? real : dir;
    for (uint32_t i = 0; i < l->count; i++)
        if (strcmp(l->dirs[i], key) == 0) return ATTNRT_OK;
    if (l->count == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 16;
        char **grown = realloc(l->dirs, cap * sizeof *grown);
        if (!grown) return out_of_memory("listing plugin directories");
        l->dirs = grown;
        l->cap = cap;
    }
    char *copy = attnrt_strdup(key);
    if (!copy) return out_of_memory("listing plugin directories");
    l->dirs[l->count++] = copy;
    attnrt_log(ATTNRT_LOG_DEBUG, "plugin directory %s (from %s)", key, origin);
    return ATTNRT_OK;
}

static attnrt_status_t dirs_add_list(dir_list_t *l, const char *colon_list, const char *origin)
{
    if (!colon_list) return ATTNRT_OK;
    char *copy = attnrt_strdup(colon_list);
    if (!copy) return out_of_memory("reading ATTNRT_PLUGIN_PATH");
    attnrt_status_t st = ATTNRT_OK;
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d && st == ATTNRT_OK; d = strtok_r(NULL, ":", &save))
        st = dirs_add(l, d, origin);
    free(copy);
    return st;
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

static attnrt_status_t dirs_collect(dir_list_t *l)
{
    attnrt_status_t st = dirs_add_list(l, secure_getenv("ATTNRT_PLUGIN_PATH"), "ATTNRT_PLUGIN_PATH");
    /* A build-tree libattnrt wants its own plugins, not an older installed copy of them. */
    if (st == ATTNRT_OK && running_from_build_tree()) st = dirs_add_list(l, ATTNRT_BUILD_PLUGIN_DIRS, "the build tree");
    if (st == ATTNRT_OK) st = dirs_add(l, ATTNRT_PLUGIN_INSTALL_DIR, "the install directory");
    return st;
}

static void dirs_free(dir_list_t *l)
{
    for (uint32_t i = 0; i < l->count; i++) free(l->dirs[i]);
    free(l->dirs);
    memset(l, 0, sizeof *l);
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

/* In auto mode a plugin that calls itself by a loaded plugin's name is refused: it must not stand in for
 * that plugin's devices. */
static void check_name_unique(attnrt_plugin_t *p)
{
    for (const attnrt_plugin_t *q = reg.plugins; q < p; q++)
        if (q->status == ATTNRT_OK && strcmp(q->name, p->name) == 0) {
            attnrt_plugin_reject(p, ATTNRT_ERR_PLUGIN, "%s: refused: it calls itself '%s', the name of the plugin "
                                 "already loaded from %s; rename one of them", p->path, p->name, q->path);
            return;
        }
}

/* Loads `path` into a new record; *reason (may be NULL) points at the record's reason or, when even the
 * record could not be made, at a static line. ATTNRT_ERR_OUT_OF_MEMORY only for the runtime's own memory. */
static attnrt_status_t load_into_list(const char *path, const char *expected_name, const char **reason)
{
    attnrt_plugin_t *p = plugins_push();
    if (!p) {
        if (reason) *reason = "out of memory recording the plugin";
        return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "out of memory recording plugin %s", path);
    }
    attnrt_status_t st = attnrt_plugin_load(path, expected_name, p);
    if (st == ATTNRT_OK && !expected_name) check_name_unique(p);
    if (reason) *reason = p->reason ? p->reason : "out of memory";
    return p->status;
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

/* The plugin files in `dir`, sorted (a stable order, not readdir's); the caller frees them. */
static attnrt_status_t list_directory(const char *dir, char ***names, size_t *count)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) {
        attnrt_log(ATTNRT_LOG_DEBUG, "plugin directory %s: cannot be read, skipped", dir);
        return ATTNRT_OK;
    }
    size_t cap = 0;
    attnrt_status_t st = ATTNRT_OK;
    struct dirent *e;
    while (st == ATTNRT_OK && (e = readdir(d))) {
        if (!is_plugin_file(e->d_name)) continue;
        if (*count == cap) {
            cap = cap ? 2 * cap : 16;
            char **grown = realloc(*names, cap * sizeof *grown);
            if (!grown) {
                st = out_of_memory("listing a plugin directory");
                break;
            }
            *names = grown;
        }
        if (((*names)[*count] = attnrt_strdup(e->d_name)) == NULL)
            st = out_of_memory("listing a plugin directory");
        else
            (*count)++;
    }
    closedir(d);
    if (*count) qsort(*names, *count, sizeof **names, compare_names);
    return st;
}

static attnrt_status_t scan_directory(const char *dir)
{
    char **names;
    size_t count;
    attnrt_status_t st = list_directory(dir, &names, &count);
    for (size_t i = 0; i < count; i++) {
        char *path = st == ATTNRT_OK ? attnrt_strdupf("%s/%s", dir, names[i]) : NULL;
        if (st == ATTNRT_OK && !path) st = out_of_memory("naming a plugin file");
        if (path && !shadowed(names[i], path) && load_into_list(path, NULL, NULL) == ATTNRT_ERR_OUT_OF_MEMORY)
            st = ATTNRT_ERR_OUT_OF_MEMORY;
        free(path);
        free(names[i]);
    }
    free(names);
    return st;
}

/* The plugins meson_options.txt has an option for: only for those may a message suggest one. */
static int has_meson_option(const char *name)
{
    static const char *const options[] = {"cpu", "cuda", "rocm", "xpu", "npu_sim"};
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        if (strcmp(options[i], name) == 0) return 1;
    return 0;
}

/* ATTNRT_PLUGIN: exactly one plugin, and any failure is the init's failure. */
static attnrt_status_t load_explicit(const char *wanted, const dir_list_t *dirs)
{
    if (wanted[0] == '/') {
        const char *reason = NULL;
        attnrt_status_t st = load_into_list(wanted, NULL, &reason);
        return st == ATTNRT_OK ? st : attnrt_fail(st, "ATTNRT_PLUGIN=%s: %s", wanted, reason);
    }
    if (!attnrt_plugin_name_valid(wanted))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "ATTNRT_PLUGIN='%s' is neither a plugin name (like 'cpu' "
                           "or 'cuda') nor an absolute path to a plugin file", wanted);
    char searched[2048] = "";
    for (uint32_t i = 0; i < dirs->count; i++) {
        char *path = attnrt_strdupf("%s/" PLUGIN_PREFIX "%s" PLUGIN_SUFFIX, dirs->dirs[i], wanted);
        if (!path) return out_of_memory("naming a plugin file");
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
    const char *where = searched[0] ? searched : "(no plugin directories)";
    if (has_meson_option(wanted))
        return attnrt_fail(ATTNRT_ERR_NOT_FOUND, "ATTNRT_PLUGIN=%s: no plugin file " PLUGIN_PREFIX "%s" PLUGIN_SUFFIX
                           " in %s; build libattnrt with the %s plugin (meson -D%s=enabled) and install it, or set "
                           "ATTNRT_PLUGIN to the plugin's absolute path", wanted, wanted, where, wanted, wanted);
    return attnrt_fail(ATTNRT_ERR_NOT_FOUND, "ATTNRT_PLUGIN=%s: no plugin file " PLUGIN_PREFIX "%s" PLUGIN_SUFFIX
                       " in %s; put the plugin's file in one of them or its folder in ATTNRT_PLUGIN_PATH, or set "
                       "ATTNRT_PLUGIN to the plugin's absolute path", wanted, wanted, where);
}

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
    uint32_t first = reg.device_count;
    char why[256];
    for (uint32_t d = 0; d < p->device_count; d++) {
        attnrt_device_ref_t *ref = &reg.devices[first + d];
        const char *bad = name_device(p, d, ref, why, sizeof why);
        const attnrt_device_ref_t *same = NULL;
        for (uint32_t k = 0; !bad && k < first + d; k++)
            if (strcmp(reg.devices[k].name, ref->name) == 0) same = &reg.devices[k];
        if (bad || same) {
            if (same)
                attnrt_plugin_reject(p, ATTNRT_ERR_PLUGIN, "plugin %s (%s): refused: its device %u calls itself '%s', "
                                     "the name of device %u of the plugin %s (%s); a device name must be unique",
                                     p->name, p->path, d, same->name, same->index, same->plugin->name,
                                     same->plugin->path);
            else
                attnrt_plugin_reject(p, ATTNRT_ERR_PLUGIN, "plugin %s (%s): refused: %s; the plugin is broken",
                                     p->name, p->path, bad);
            memset(&reg.devices[first], 0, (d + 1) * sizeof *ref);
            return p->status == ATTNRT_ERR_OUT_OF_MEMORY ? ATTNRT_ERR_OUT_OF_MEMORY : ATTNRT_OK;
        }
    }
    reg.device_count = first + p->device_count;
    return ATTNRT_OK;
}

static attnrt_status_t collect_devices(void)
{
    size_t total = 0; /* each plugin has at most ATTNRT_PLUGIN_MAX_DEVICES, so this cannot wrap */
    for (uint32_t i = 0; i < reg.plugin_count; i++)
        if (reg.plugins[i].status == ATTNRT_OK) total += reg.plugins[i].device_count;
    if (total == 0) return ATTNRT_OK;
    if (total > UINT32_MAX)
        return attnrt_fail(ATTNRT_ERR_PLUGIN, "the plugins report %zu devices in all, more than 2^32 - 1", total);
    reg.devices = calloc(total, sizeof *reg.devices);
    if (!reg.devices) return out_of_memory("listing devices");
    attnrt_status_t status = ATTNRT_OK;
    for (uint32_t i = 0; i < reg.plugin_count && status == ATTNRT_OK; i++)
        if (reg.plugins[i].status == ATTNRT_OK) status = admit_devices(&reg.plugins[i]);
    return status;
}

/* ---- init / shutdown (with the lock held exclusively) ---- */

static attnrt_status_t discover(void)
{
    dir_list_t dirs = {0};
    attnrt_status_t status = dirs_collect(&dirs);
    const char *wanted = secure_getenv("ATTNRT_PLUGIN");
    if (status == ATTNRT_OK && wanted && wanted[0]) {
        attnrt_log(ATTNRT_LOG_DEBUG, "explicit mode: ATTNRT_PLUGIN=%s", wanted);
        status = load_explicit(wanted, &dirs);
    } else if (status == ATTNRT_OK) {
        for (uint32_t i = 0; i < dirs.count && status == ATTNRT_OK; i++) status = scan_directory(dirs.dirs[i]);
        if (status == ATTNRT_OK) attnrt_clear_error(); /* auto mode: each reason is kept in the plugin list */
    }
    dirs_free(&dirs);
    if (status == ATTNRT_OK) status = collect_devices();
    /* Explicit mode: a plugin refused for its devices fails the init as any other refusal does. */
    if (status == ATTNRT_OK && wanted && wanted[0] && reg.plugin_count == 1 && reg.plugins[0].status != ATTNRT_OK)
        status = attnrt_fail(reg.plugins[0].status, "ATTNRT_PLUGIN=%s: %s", wanted, or_lost(reg.plugins[0].reason));
    return status;
}

static void registry_clear(void)
{
    for (uint32_t i = 0; i < reg.plugin_count; i++) attnrt_plugin_unload(&reg.plugins[i]);
    free(reg.plugins);
    free(reg.devices);
    reg.plugins = NULL;
    reg.devices = NULL;
    reg.plugin_count = reg.device_count = 0;
    reg.init_status = ATTNRT_OK;
    reg.init_message[0] = '\0';
    reg.ready = reg.retry = false;
}

static void init_locked(void)
{
    registry_clear(); /* a retry after running out of memory starts from nothing */
    attnrt_status_t status = discover();
    bool oom = status == ATTNRT_ERR_OUT_OF_MEMORY;
    char message[sizeof reg.init_message];
    attnrt_strlcpy(message, status == ATTNRT_OK ? "" : attnrt_last_error(), sizeof message);
    if (oom) registry_clear(); /* nothing half-loaded stays: the next call tries again */
    reg.init_status = status;
    attnrt_strlcpy(reg.init_message, message, sizeof reg.init_message);
    reg.retry = oom;
    reg.ready = true;
}

/* The init status for a caller inside the registry, its message naming `fn`. */
static attnrt_status_t init_result(const char *fn)
{
    if (!reg.ready) /* only a nested call from inside discovery sees this (a plugin calling back into us) */
        return attnrt_fail(ATTNRT_ERR_BUSY, "%s: called while libattnrt is discovering plugins", fn);
    if (reg.init_status != ATTNRT_OK) return attnrt_fail(reg.init_status, "%s: %s", fn, reg.init_message);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_registry_enter(const char *fn)
{
    if (held_depth++ > 0) return init_result(fn);
    pthread_rwlock_rdlock(&reg.lock);
    if (!reg.ready || reg.retry) {
        /* Discover under the exclusive lock, then keep it for this one call: the caller only reads. A
         * shutdown that slipped in between finds nothing held; this call then discovers afresh. */
        pthread_rwlock_unlock(&reg.lock);
        pthread_rwlock_wrlock(&reg.lock);
        if (!reg.ready || reg.retry) init_locked();
    }
    return init_result(fn);
}

void attnrt_registry_leave(void)
{
    if (--held_depth == 0) pthread_rwlock_unlock(&reg.lock);
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
    if (held_depth > 0 || pthread_rwlock_trywrlock(&reg.lock) != 0)
        return attnrt_fail(ATTNRT_ERR_BUSY, "attnrt_shutdown: another libattnrt call (a plugin or device query, "
                           "attnrt_open or attnrt_init) is using the plugins; call it again when that call has "
                           "returned");
    unsigned open = atomic_load(&reg.open_contexts);
    if (open) {
        pthread_rwlock_unlock(&reg.lock);
        return attnrt_fail(ATTNRT_ERR_BUSY, "attnrt_shutdown: %u context(s) still open; attnrt_close them first", open);
    }
    registry_clear();
    pthread_rwlock_unlock(&reg.lock);
    return ATTNRT_OK;
}

void attnrt_registry_retain(void) { atomic_fetch_add(&reg.open_contexts, 1); }
void attnrt_registry_release(void) { atomic_fetch_sub(&reg.open_contexts, 1); }

/* ---- queries (each holds the registry for its whole call) ---- */

/* True when the plugin list may be read after the init status `status`: it holds every record even
 * after a failed explicit load, but nothing after running out of memory. */
static bool plugins_readable(attnrt_status_t status)
{
    return status == ATTNRT_OK || (reg.ready && !reg.retry);
}

attnrt_status_t attnrt_plugin_count(uint32_t *count)
{
    static const char fn[] = "attnrt_plugin_count";
    attnrt_clear_error();
    if (!count) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: count is NULL", fn);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (plugins_readable(status)) {
        attnrt_clear_error();
        *count = reg.plugin_count;
        status = ATTNRT_OK;
    }
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_plugin_get_info(uint32_t index, attnrt_plugin_info_t *info)
{
    static const char fn[] = "attnrt_plugin_get_info";
    attnrt_clear_error();
    if (!info) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: info is NULL", fn);
    if (info->struct_size < ATTNRT_STRUCT_SIZE(attnrt_plugin_info_t, device_count))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: info->struct_size = %zu is smaller than the %zu of this "
                           "API version; set it to sizeof(attnrt_plugin_info_t)", fn, info->struct_size,
                           (size_t)ATTNRT_STRUCT_SIZE(attnrt_plugin_info_t, device_count));
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (plugins_readable(status)) {
        attnrt_clear_error();
        status = ATTNRT_OK;
        if (index >= reg.plugin_count) {
            status = attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: index = %u >= plugin count = %u", fn, index,
                                 reg.plugin_count);
        } else {
            const attnrt_plugin_t *p = &reg.plugins[index];
            info->path = or_lost(p->path);
            info->name = or_lost(p->name);
            info->version = or_lost(p->version);
            info->abi_major = p->abi_major;
            info->abi_minor = p->abi_minor;
            info->status = p->status;
            info->reason = or_lost(p->reason);
            info->device_count = p->status == ATTNRT_OK ? p->device_count : 0;
        }
    }
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_registry_device(const char *fn, uint32_t index, const attnrt_device_ref_t **ref)
{
    if (index >= reg.device_count)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: index = %u >= device count = %u", fn, index,
                           reg.device_count);
    *ref = &reg.devices[index];
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_count(uint32_t *count)
{
    static const char fn[] = "attnrt_device_count";
    attnrt_clear_error();
    if (!count) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: count is NULL", fn);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) *count = reg.device_count;
    attnrt_registry_leave();
    return status;
}

/* The plugin fills a full-size copy: terminated and named as the registry knows the device. */
static attnrt_status_t read_properties(const char *fn, const attnrt_device_ref_t *ref, attnrt_device_properties_t *full)
{
    memset(full, 0, sizeof *full);
    full->struct_size = sizeof *full;
    attnrt_status_t status = ref->plugin->api.device_properties(ref->plugin->handle, ref->index, full);
    if (status != ATTNRT_OK) {
        char what[128];
        snprintf(what, sizeof what, "%s(%s)", fn, ref->name);
        return attnrt_plugin_fail(ref->plugin, status, what);
    }
    full->struct_size = sizeof *full;
    attnrt_strlcpy(full->name, ref->name, sizeof full->name);
    full->vendor[sizeof full->vendor - 1] = full->model[sizeof full->model - 1] = '\0';
    full->arch[sizeof full->arch - 1] = full->driver[sizeof full->driver - 1] = '\0';
    return ATTNRT_OK;
}

static attnrt_status_t properties_locked(const char *fn, uint32_t index, attnrt_device_properties_t *props)
{
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_device(fn, index, &ref);
    attnrt_device_properties_t full;
    if (status == ATTNRT_OK) status = read_properties(fn, ref, &full);
    if (status != ATTNRT_OK) return status;
    /* The caller gets only the fields its struct_size covers. */
    size_t caller_size = props->struct_size;
    memcpy(props, &full, caller_size < sizeof full ? caller_size : sizeof full);
    props->struct_size = caller_size;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_get_properties(uint32_t index, attnrt_device_properties_t *props)
{
    static const char fn[] = "attnrt_device_get_properties";
    attnrt_clear_error();
    if (!props) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: props is NULL", fn);
    if (props->struct_size < ATTNRT_STRUCT_SIZE(attnrt_device_properties_t, name))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: props->struct_size = %zu; set it to "
                           "sizeof(attnrt_device_properties_t)", fn, props->struct_size);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = properties_locked(fn, index, props);
    attnrt_registry_leave();
    return status;
}

static attnrt_status_t attribute_locked(const char *fn, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_device(fn, index, &ref);
    if (status != ATTNRT_OK) return status;
    const attnrt_plugin_t *p = ref->plugin;
    if (!p->api.device_attribute)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s(%s): the %s plugin reports no device attributes", fn, ref->name,
                           p->name);
    attnrt_device_properties_t props;
    status = read_properties(fn, ref, &props);
    if (status != ATTNRT_OK) return status;
    /* Checked here, so that the plugin is asked only for attributes it has said it has. */
    if (i >= props.attribute_count)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: i = %u >= attribute_count = %u of %s", fn, i,
                           props.attribute_count, ref->name);
    attnrt_device_attribute_t full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    status = p->api.device_attribute(p->handle, ref->index, i, &full);
    if (status != ATTNRT_OK) {
        char what[160];
        snprintf(what, sizeof what, "%s(%s, i = %u)", fn, ref->name, i);
        return attnrt_plugin_fail(p, status, what);
    }
    full.struct_size = sizeof full;
    full.key[sizeof full.key - 1] = full.value[sizeof full.value - 1] = '\0';
    *attr = full;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_get_attribute(uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    static const char fn[] = "attnrt_device_get_attribute";
    attnrt_clear_error();
    if (!attr) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: attr is NULL", fn);
    if (attr->struct_size < sizeof *attr)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: attr->struct_size = %zu; set it to "
                           "sizeof(attnrt_device_attribute_t)", fn, attr->struct_size);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = attribute_locked(fn, index, i, attr);
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_device_get_plugin(uint32_t index, uint32_t *plugin_index)
{
    static const char fn[] = "attnrt_device_get_plugin";
    attnrt_clear_error();
    if (!plugin_index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plugin_index is NULL", fn);
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = attnrt_registry_device(fn, index, &ref);
    if (status == ATTNRT_OK) *plugin_index = (uint32_t)(ref->plugin - reg.plugins);
    attnrt_registry_leave();
    return status;
}

/* With the registry held. `what` starts the message: the function, and what it was looking for. */
static attnrt_status_t find_locked(const char *what, const char *name, uint32_t *index)
{
    char names[512] = "";
    for (uint32_t i = 0; i < reg.device_count; i++) {
        if (strcmp(reg.devices[i].name, name) == 0) {
            *index = i;
            return ATTNRT_OK;
        }
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", reg.devices[i].name);
    }
    return attnrt_fail(ATTNRT_ERR_NOT_FOUND, "%s: no device named '%s'; devices: %s", what, name,
                       names[0] ? names : "(none)");
}

attnrt_status_t attnrt_device_find(const char *name, uint32_t *index)
{
    static const char fn[] = "attnrt_device_find";
    attnrt_clear_error();
    if (!name || !index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, name ? "index" : "name");
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = find_locked(fn, name, index);
    attnrt_registry_leave();
    return status;
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

static attnrt_status_t default_locked(const char *fn, uint32_t *index)
{
    const char *wanted = secure_getenv("ATTNRT_DEVICE");
    if (wanted && wanted[0]) {
        char what[256];
        snprintf(what, sizeof what, "%s: ATTNRT_DEVICE=%.200s", fn, wanted);
        return find_locked(what, wanted, index);
    }
    if (reg.device_count == 0)
        return attnrt_fail(ATTNRT_ERR_NO_DEVICE, "%s: no device: no plugin loaded a device (run attnrt-info to see "
                           "each plugin's reason)", fn);
    uint32_t best = 0;
    for (uint32_t i = 1; i < reg.device_count; i++)
        if (device_rank(reg.devices[i].device_type) < device_rank(reg.devices[best].device_type)) best = i;
    *index = best;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_default(uint32_t *index)
{
    static const char fn[] = "attnrt_device_default";
    attnrt_clear_error();
    if (!index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: index is NULL", fn);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = default_locked(fn, index);
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_registry_pick(const char *fn, const char *name, const attnrt_device_ref_t **ref)
{
    uint32_t index = 0;
    attnrt_status_t status = (name && name[0]) ? find_locked(fn, name, &index) : default_locked(fn, &index);
    if (status == ATTNRT_OK) *ref = &reg.devices[index];
    return status;
}
