/* hostdev.h — what the two files of the example plugin share: its name, its device, its error channel.
 * The plugin's only interface to the outside is attnrt_plugin.h (found through pkg-config's
 * attnrt-plugin); nothing here is seen by libattnrt. */
#ifndef HOSTDEV_H
#define HOSTDEV_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"

#define HOSTDEV_NAME    "hostdev" /* the vtable's name: the file must be attnrt_hostdev.so */
#define HOSTDEV_VERSION "1.0.0"

/* One opened device. Its memory is host memory, its work runs on the calling thread. */
typedef struct hostdev_device {
    uint32_t index;
} hostdev_device_t;

/* A failed call's message, kept per thread until the runtime copies it out through last_error. */
attnrt_status_t hostdev_fail(attnrt_status_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* hostdev_ops.c: the capability answer and the two ops. */
attnrt_status_t hostdev_op_supported(void *device, const attnrt_op_query_t *query, char *reason, size_t cap);
attnrt_status_t hostdev_kv_write(void *device, const attnrt_kv_write_args_t *args, void *stream);
attnrt_status_t hostdev_merge_states(void *device, const attnrt_merge_args_t *args, void *stream);

#endif
