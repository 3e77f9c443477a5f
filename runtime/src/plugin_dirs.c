/* Where plugin discovery looks, in order: ATTNRT_PLUGIN_PATH; the build tree's plugin folders, when the
 * libattnrt.so in use is a build tree's; <folder of libattnrt.so>/attnrt/plugins, so that a moved install
 * prefix (a package, a container layer, a wheel) still finds its own plugins; and the install folder
 * configured at build time. No build path is compiled in: a build tree marks itself with a file beside its
 * libattnrt.so that names its plugin folders relative to that file (runtime/meson.build writes it; it is
 * never installed). */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_dirs.h"

#define BUILD_TREE_FILE "attnrt-build-plugins.txt"

static attnrt_status_t out_of_memory(void)
{
    return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "out of memory listing plugin directories");
}

static attnrt_status_t dirs_add(plugin_dirs_t *l, const char *dir, const char *origin)
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
        if (!grown) return out_of_memory();
        l->dirs = grown;
        l->cap = cap;
    }
    char *copy = attnrt_strdup(key);
    if (!copy) return out_of_memory();
    l->dirs[l->count++] = copy;
    attnrt_log(ATTNRT_LOG_DEBUG, "plugin directory %s (from %s)", key, origin);
    return ATTNRT_OK;
}

static attnrt_status_t dirs_add_env(plugin_dirs_t *l)
{
    const char *list = secure_getenv("ATTNRT_PLUGIN_PATH");
    if (!list) return ATTNRT_OK;
    char *copy = attnrt_strdup(list);
    if (!copy) return out_of_memory();
    attnrt_status_t st = ATTNRT_OK;
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d && st == ATTNRT_OK; d = strtok_r(NULL, ":", &save))
        st = dirs_add(l, d, "ATTNRT_PLUGIN_PATH");
    free(copy);
    return st;
}

/* `folder`/`rel`, or `rel` itself when absolute. */
static attnrt_status_t dirs_add_under(plugin_dirs_t *l, const char *folder, const char *rel, const char *origin)
{
    if (rel[0] == '/') return dirs_add(l, rel, origin);
    char *path = attnrt_strdupf("%s/%s", folder, rel);
    if (!path) return out_of_memory();
    attnrt_status_t st = dirs_add(l, path, origin);
    free(path);
    return st;
}

/* The folder of the libattnrt.so in use, symbolic links resolved (the real file's folder is the prefix it
 * was installed into); 0 when the dynamic loader cannot say. */
static int library_folder(char folder[PATH_MAX])
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)attnrt_init, &info) || !info.dli_fname || !realpath(info.dli_fname, folder))
        return 0;
    char *slash = strrchr(folder, '/');
    if (!slash) return 0;
    slash[slash == folder] = '\0'; /* "/libattnrt.so" lies in "/" */
    return 1;
}

/* A build tree's libattnrt.so has BUILD_TREE_FILE beside it: one plugin folder a line, relative to it.
 * An installed one has none, and this adds nothing. */
static attnrt_status_t dirs_add_build_tree(plugin_dirs_t *l, const char *folder)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", folder, BUILD_TREE_FILE) >= (int)sizeof path) return ATTNRT_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ATTNRT_OK;
    char text[4096];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n < 0) n = 0;
    if ((size_t)n == sizeof text - 1)
        attnrt_log(ATTNRT_LOG_WARN, "%s: only its first %zd bytes are read", path, n);
    text[n] = '\0';
    attnrt_log(ATTNRT_LOG_DEBUG, "libattnrt runs from a build tree (%s)", path);
    attnrt_status_t st = ATTNRT_OK;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line && st == ATTNRT_OK; line = strtok_r(NULL, "\n", &save))
        st = dirs_add_under(l, folder, line, "the build tree");
    return st;
}

attnrt_status_t attnrt_plugin_dirs_collect(plugin_dirs_t *l)
{
    attnrt_status_t st = dirs_add_env(l);
    char folder[PATH_MAX];
    if (library_folder(folder)) {
        /* A build tree's libattnrt wants its own plugins, not an older installed copy of them. */
        if (st == ATTNRT_OK) st = dirs_add_build_tree(l, folder);
        if (st == ATTNRT_OK) st = dirs_add_under(l, folder, "attnrt/plugins", "the folder of libattnrt.so");
    } else {
        attnrt_log(ATTNRT_LOG_DEBUG, "dladdr cannot tell where libattnrt.so is: its folder is not searched");
    }
    if (st == ATTNRT_OK) st = dirs_add(l, ATTNRT_PLUGIN_INSTALL_DIR, "the configured install directory");
    return st;
}

void attnrt_plugin_dirs_free(plugin_dirs_t *l)
{
    for (uint32_t i = 0; i < l->count; i++) free(l->dirs[i]);
    free(l->dirs);
    memset(l, 0, sizeof *l);
}
