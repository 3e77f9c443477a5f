/* ATTNRT_LOG=error|warn|info|debug: one line per event on stderr, prefixed "attnrt: ". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static uint32_t log_level = ATTNRT_LOG_WARN;

static void log_read_env(void)
{
    const char *v = secure_getenv("ATTNRT_LOG");
    if (!v || !v[0]) return;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (uint32_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(v, names[i]) == 0) {
            log_level = i;
            return;
        }
    /* Not through attnrt_log: that would wait for this very pthread_once. */
    fprintf(stderr, "attnrt: warn: ATTNRT_LOG=%.64s is not one of error, warn, info, debug; logging at warn\n", v);
}

uint32_t attnrt_log_level(void)
{
    pthread_once(&log_once, log_read_env);
    return log_level;
}

static const char *level_name(uint32_t level)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    return level <= ATTNRT_LOG_DEBUG ? names[level] : "debug";
}

void attnrt_log(uint32_t level, const char *fmt, ...)
{
    if (level > attnrt_log_level()) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "attnrt: %s: %s\n", level_name(level), line);
}

void attnrt_log_from_plugin(uint32_t level, const char *plugin_name, const char *msg)
{
    attnrt_log(level, "[%s] %s", plugin_name ? plugin_name : "?", msg ? msg : "");
}
