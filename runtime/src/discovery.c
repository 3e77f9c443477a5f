/* Plugin discovery: which files are plugins and in what order they load. ATTNRT_PLUGIN names exactly one
 * (a name searched for in the directories, or an absolute path; any failure fails the init); else, in auto
 * mode, every attnrt_<name>.so of the directories plugin_dirs.c lists, in that order, a name loaded from an
 * earlier directory shadowing later files. Runs with the registry locked exclusively (registry.c). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_dirs.h"
#include "registry.h"

static registry_t *const reg = &attnrt_reg;

#define PLUGIN_PREFIX "attnrt_"
#define PLUGIN_SUFFIX ".so"

static attnrt_status_t out_of_memory(const char *what)
{
    return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "out of memory %s during plugin discovery", what);
}

static attnrt_plugin_t *plugins_push(void)
{
    attnrt_plugin_t *grown = realloc(reg->plugins, (reg->plugin_count + 1) * sizeof *grown);
    if (!grown) return NULL;
    reg->plugins = grown;
    memset(&reg->plugins[reg->plugin_count], 0, sizeof *grown);
    return &reg->plugins[reg->plugin_count++];
}

/* In auto mode a plugin that calls itself by a loaded plugin's name is refused: it must not stand in for
 * that plugin's devices. */
static void check_name_unique(attnrt_plugin_t *p)
{
    for (const attnrt_plugin_t *q = reg->plugins; q < p; q++)
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
    for (uint32_t i = 0; i < reg->plugin_count; i++) {
        const attnrt_plugin_t *p = &reg->plugins[i];
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
static attnrt_status_t load_explicit(const char *wanted, const plugin_dirs_t *dirs)
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

attnrt_status_t attnrt_discover_plugins(const char *wanted)
{
    plugin_dirs_t dirs = {0};
    attnrt_status_t status = attnrt_plugin_dirs_collect(&dirs);
    if (status == ATTNRT_OK && wanted && wanted[0]) {
        attnrt_log(ATTNRT_LOG_DEBUG, "explicit mode: ATTNRT_PLUGIN=%s", wanted);
        status = load_explicit(wanted, &dirs);
    } else if (status == ATTNRT_OK) {
        for (uint32_t i = 0; i < dirs.count && status == ATTNRT_OK; i++) status = scan_directory(dirs.dirs[i]);
        if (status == ATTNRT_OK) attnrt_clear_error(); /* auto mode: each reason is kept in the plugin list */
    }
    attnrt_plugin_dirs_free(&dirs);
    return status;
}
