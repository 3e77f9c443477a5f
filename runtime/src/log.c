/* ATTNRT_LOG=error|warn|info|debug or 0-3 (or attnrt_log_set_level): one line per event, on stderr prefixed "attnrt: ",
 * or to the sink an engine installed with attnrt_log_set_callback. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static _Atomic uint32_t log_level = ATTNRT_LOG_WARN;

/* The engine's sink; read under the lock, called outside it (a sink that logs or blocks cannot deadlock us). */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static attnrt_log_fn   sink_fn;
static void           *sink_user;

/* Read once per process. A value that is neither a level's name nor its number (0 error .. 3 debug) is
 * reported once and ignored: the default level stays. */
static void log_read_env(void)
{
    const char *v = secure_getenv("ATTNRT_LOG");
    if (!v || !v[0]) return;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (uint32_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(v, names[i]) == 0 || (v[0] == (char)('0' + i) && v[1] == '\0')) {
            log_level = i;
            return;
        }
    char shown[65]; /* the value on one line: at most 64 bytes, control characters as '?' */
    size_t n = 0;
    for (; v[n] && n < sizeof shown - 1; n++) shown[n] = (unsigned char)v[n] < 0x20 || v[n] == 0x7f ? '?' : v[n];
    shown[n] = '\0';
    /* Not through attnrt_log: that would wait for this very pthread_once. */
    fprintf(stderr, "attnrt: warn: ATTNRT_LOG='%s'%s is not one of error, warn, info, debug (or 0-3); ignored, "
            "logging at warn\n", shown, v[n] ? "..." : "");
}

uint32_t attnrt_log_level(void)
{
    pthread_once(&log_once, log_read_env);
    return atomic_load(&log_level);
}

static const char *level_name(uint32_t level)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    return level <= ATTNRT_LOG_DEBUG ? names[level] : "debug";
}

attnrt_status_t attnrt_log_set_level(uint32_t level)
{
    if (level > ATTNRT_LOG_DEBUG)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_log_set_level: level %u is not one of ATTNRT_LOG_ERROR (0) "
                           "to ATTNRT_LOG_DEBUG (3)", level);
    pthread_once(&log_once, log_read_env); /* so that a later first read of ATTNRT_LOG cannot undo this */
    atomic_store(&log_level, level);
    attnrt_clear_error();
    return ATTNRT_OK;
}

attnrt_status_t attnrt_log_set_callback(attnrt_log_fn fn, void *user_data)
{
    pthread_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_user = fn ? user_data : NULL;
    pthread_mutex_unlock(&sink_lock);
    attnrt_clear_error();
    return ATTNRT_OK;
}

void attnrt_log(uint32_t level, const char *fmt, ...)
{
    if (level > attnrt_log_level()) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&sink_lock);
    attnrt_log_fn fn = sink_fn;
    void *user = sink_user;
    pthread_mutex_unlock(&sink_lock);
    if (fn)
        fn(level, line, user);
    else
        fprintf(stderr, "attnrt: %s: %s\n", level_name(level), line);
}

void attnrt_log_from_plugin(uint32_t level, const char *plugin_name, const char *msg)
{
    attnrt_log(level, "[%s] %s", plugin_name ? plugin_name : "?", msg ? msg : "");
}
