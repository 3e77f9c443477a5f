/* plugin_error.h — the thread-local "last error" behind attnrt_plugin_api_t.last_error, and the
 * refusal reasons of op_supported.
 *
 * Ownership: the message lives in a buffer of the calling thread (1 KiB, truncated beyond), owned by
 * this library and overwritten by that thread's next failure; the format arguments are borrowed for
 * the call. plugin_last_error and plugin_refuse write into the caller's buffer, which stays the
 * caller's. */
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
