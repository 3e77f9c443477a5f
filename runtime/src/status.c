/* Status names, the thread-local last-error message, and the few string helpers errors need. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ATTNRT_ERROR_MAX 1024

static _Thread_local char last_error[ATTNRT_ERROR_MAX];

const char *attnrt_status_name(attnrt_status_t status)
{
    switch (status) {
    case ATTNRT_OK:                   return "ATTNRT_OK";
    case ATTNRT_ERR_INVALID_ARGUMENT: return "ATTNRT_ERR_INVALID_ARGUMENT";
    case ATTNRT_ERR_UNSUPPORTED:      return "ATTNRT_ERR_UNSUPPORTED";
    case ATTNRT_ERR_OUT_OF_MEMORY:    return "ATTNRT_ERR_OUT_OF_MEMORY";
    case ATTNRT_ERR_NOT_FOUND:        return "ATTNRT_ERR_NOT_FOUND";
    case ATTNRT_ERR_ABI_MISMATCH:     return "ATTNRT_ERR_ABI_MISMATCH";
    case ATTNRT_ERR_PLUGIN:           return "ATTNRT_ERR_PLUGIN";
    case ATTNRT_ERR_NO_DEVICE:        return "ATTNRT_ERR_NO_DEVICE";
    case ATTNRT_ERR_DEVICE:           return "ATTNRT_ERR_DEVICE";
    case ATTNRT_ERR_BUSY:             return "ATTNRT_ERR_BUSY";
    case ATTNRT_ERR_INTERNAL:         return "ATTNRT_ERR_INTERNAL";
    }
    return "ATTNRT_ERR_UNKNOWN";
}

const char *attnrt_last_error(void) { return last_error; }

void attnrt_clear_error(void) { last_error[0] = '\0'; }

attnrt_status_t attnrt_fail(attnrt_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    attnrt_log(ATTNRT_LOG_DEBUG, "%s: %s", attnrt_status_name(status), last_error);
    return status;
}

void attnrt_version(int *major, int *minor, int *patch)
{
    if (major) *major = ATTNRT_VERSION_MAJOR;
    if (minor) *minor = ATTNRT_VERSION_MINOR;
    if (patch) *patch = ATTNRT_VERSION_PATCH;
}

void attnrt_abi_version(uint32_t *major, uint32_t *minor)
{
    if (major) *major = ATTNRT_ABI_MAJOR;
    if (minor) *minor = ATTNRT_ABI_MINOR;
}

#define ATTNRT_STR2(x) #x
#define ATTNRT_STR(x) ATTNRT_STR2(x)

const char *attnrt_version_string(void)
{
    return ATTNRT_STR(ATTNRT_VERSION_MAJOR) "." ATTNRT_STR(ATTNRT_VERSION_MINOR) "." ATTNRT_STR(
        ATTNRT_VERSION_PATCH) " (plugin ABI " ATTNRT_STR(ATTNRT_ABI_MAJOR) "." ATTNRT_STR(ATTNRT_ABI_MINOR) ")";
}

char *attnrt_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *attnrt_strdupf(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *d = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (d) vsnprintf(d, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return d;
}

void attnrt_strlcpy(char *dst, const char *src, size_t cap)
{
    if (cap == 0) return;
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}
