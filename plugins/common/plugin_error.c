#include "plugin_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char message[1024];

attnrt_status_t plugin_fail(attnrt_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return status;
}

size_t plugin_last_error(char *buf, size_t cap)
{
    size_t n = strlen(message);
    if (buf && cap) {
        size_t k = n < cap - 1 ? n : cap - 1;
        memcpy(buf, message, k);
        buf[k] = '\0';
    }
    return n;
}

attnrt_status_t plugin_refuse(char *reason, size_t cap, const char *fmt, ...)
{
    if (reason && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, cap, fmt, ap);
        va_end(ap);
    }
    return ATTNRT_ERR_UNSUPPORTED;
}
