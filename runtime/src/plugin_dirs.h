/* The folders plugin discovery searches, in order (plugin_dirs.c); discovery.c loads what they hold. */
#ifndef ATTNRT_PLUGIN_DIRS_H
#define ATTNRT_PLUGIN_DIRS_H

#include "internal.h"

typedef struct plugin_dirs {
    char   **dirs; /* absolute, symbolic links resolved where the folder exists, no duplicates */
    uint32_t count, cap;
} plugin_dirs_t;

/* ATTNRT_PLUGIN_PATH, the build tree's plugin folders (only when libattnrt.so runs from a build tree),
 * <folder of libattnrt.so>/attnrt/plugins, then the configured install folder. ATTNRT_ERR_OUT_OF_MEMORY
 * is the only failure; a folder that does not exist is listed all the same (scanning skips it). */
ATTNRT_HIDDEN attnrt_status_t attnrt_plugin_dirs_collect(plugin_dirs_t *dirs);
ATTNRT_HIDDEN void attnrt_plugin_dirs_free(plugin_dirs_t *dirs);

#endif /* ATTNRT_PLUGIN_DIRS_H */
