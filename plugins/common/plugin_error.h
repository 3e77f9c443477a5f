/* The thread-local "last error" every plugin keeps for attnrt_plugin_api_t.last_error. */
#ifndef ATTNRT_PLUGIN_ERROR_H
#define ATTNRT_PLUGIN_ERROR_H

#include <stddef.h>

#include "attnrt_plugin.h"

/* Records the message for this thread and returns `status` (so: `return plugin_fail(...)`). */
attnrt_status_t plugin_fail(attnrt_status_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For op_supported: writes the refusal reason into the caller's buffer (may be NULL) and returns
 * ATTNRT_ERR_UNSUPPORTED, so capability checks read `return plugin_refuse(reason, cap, ...)`. */
attnrt_status_t plugin_refuse(char *reason, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* True for the {0, 0} dtype a capability query uses for "any". */
static inline int plugin_dtype_is_any(attnrt_dtype_t dt) { return dt.code == 0 && dt.bits == 0; }
/* The last_error entry: copies this thread's message into buf, returns its full length. */
size_t plugin_last_error(char *buf, size_t cap);

#endif
