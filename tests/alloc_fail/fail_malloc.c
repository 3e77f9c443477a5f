/* The interposed allocator (see fail_malloc.h). Callers are classified with dladdr on every allocation
 * (no cache: plugins are unloaded and loaded again between tests). No lock is held while dladdr runs, so
 * a thread inside dlopen (which holds the loader's lock and allocates) can never wait on us while we
 * wait on it. Live blocks sit in a fixed open-addressing table: the allocator itself never allocates. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fail_malloc.h"

/* glibc's own entries (exported by libc.so.6, declared by no header). */
void *__libc_malloc(size_t bytes);
void *__libc_calloc(size_t count, size_t bytes);
void *__libc_realloc(void *ptr, size_t bytes);
void  __libc_free(void *ptr);
void *__libc_memalign(size_t align, size_t bytes);

#define INTERPOSED __attribute__((visibility("default"))) /* the project builds with -fvisibility=hidden */

enum { TABLE_BITS = 16, TABLE_SIZE = 1 << TABLE_BITS, TABLE_MAX = TABLE_SIZE / 2 };

static atomic_bool started;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long armed_at, counted, live; /* under lock */
static int fired;                    /* under lock */
static void *table[TABLE_SIZE];      /* our live blocks; NULL = empty slot; under lock */
static _Thread_local int in_dladdr;  /* dladdr must not classify its own allocations */

/* ---- the control API ---- */

void fail_malloc_start(void) { atomic_store(&started, true); }

void fail_malloc_arm(long n)
{
    pthread_mutex_lock(&lock);
    armed_at = n;
    counted = 0;
    fired = 0;
    pthread_mutex_unlock(&lock);
}

#define LOCKED_READ(expr)              \
    do {                               \
        pthread_mutex_lock(&lock);     \
        long v_ = (long)(expr);        \
        pthread_mutex_unlock(&lock);   \
        return v_;                     \
    } while (0)

long fail_malloc_count(void) { LOCKED_READ(counted); }
int fail_malloc_fired(void) { LOCKED_READ(fired); }
long fail_malloc_live(void) { LOCKED_READ(live); }

/* ---- the live table (linear probing, deletion by backward shift) ---- */

static size_t home_of(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> (64 - TABLE_BITS));
}

static void table_insert(void *p)
{
    size_t i = home_of(p);
    while (table[i]) {
        if (table[i] == p) return;
        i = (i + 1) & (TABLE_SIZE - 1);
    }
    if (live >= TABLE_MAX) { /* a test harness may stop: the counts would be wrong from here on */
        static const char msg[] = "fail_malloc: more than 32768 live allocations of libattnrt; raise TABLE_BITS\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    table[i] = p;
    live++;
}

static int table_remove(const void *p)
{
    size_t i = home_of(p);
    while (table[i] != p) {
        if (!table[i]) return 0;
        i = (i + 1) & (TABLE_SIZE - 1);
    }
    for (size_t j = i;;) {
        j = (j + 1) & (TABLE_SIZE - 1);
        if (!table[j]) break;
        size_t k = home_of(table[j]);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j); /* its home lies in (i, j] */
        if (stays) continue;
        table[i] = table[j];
        i = j;
    }
    table[i] = NULL;
    live--;
    return 1;
}

/* ---- classification ---- */

static int is_ours(const void *caller)
{
    Dl_info info;
    in_dladdr = 1;
    int found = dladdr(caller, &info) && info.dli_fname;
    in_dladdr = 0;
    if (!found) return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    size_t n = strlen(base);
    if (strncmp(base, "libattnrt.so", 12) == 0) return 1;
    return n > 10 && strncmp(base, "attnrt_", 7) == 0 && strcmp(base + n - 3, ".so") == 0;
}

/* FAIL_MALLOC_TRACE=1: names the function whose allocation is failed, on stderr (for debugging a test). */
static void trace_failure(const void *caller, long n)
{
    const char *knob = getenv("FAIL_MALLOC_TRACE");
    if (!knob || knob[0] != '1') return;
    Dl_info info;
    in_dladdr = 1;
    int found = dladdr(caller, &info);
    in_dladdr = 0;
    char line[512];
    /* the offset in the file, for addr2line -f -e FILE OFFSET (plugins export no symbol to name it) */
    int len = snprintf(line, sizeof line, "fail_malloc: failing allocation %ld, called from %s +%#lx\n", n,
                       found && info.dli_fname ? info.dli_fname : "?",
                       found ? (unsigned long)((const char *)caller - (const char *)info.dli_fbase) : 0ul);
    if (len > 0) (void)!write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
}

/* 1 when `caller` is ours (then counted, and *fail says whether this allocation is the one to fail). */
static int classify(const void *caller, int *fail)
{
    *fail = 0;
    if (!atomic_load_explicit(&started, memory_order_relaxed) || in_dladdr || !is_ours(caller)) return 0;
    pthread_mutex_lock(&lock);
    long n = ++counted;
    if (armed_at > 0 && n == armed_at) *fail = fired = 1;
    pthread_mutex_unlock(&lock);
    if (*fail) trace_failure(caller, n);
    return 1;
}

static void track(void *p)
{
    if (!p) return;
    pthread_mutex_lock(&lock);
    table_insert(p);
    pthread_mutex_unlock(&lock);
}

static int untrack(const void *p)
{
    if (!p || !atomic_load_explicit(&started, memory_order_relaxed)) return 0;
    pthread_mutex_lock(&lock);
    int was = table_remove(p);
    pthread_mutex_unlock(&lock);
    return was;
}

/* ---- the interposed entries ---- */

static void *alloc_from(const void *caller, size_t align, size_t bytes, int zero, size_t count)
{
    int fail;
    int mine = classify(caller, &fail);
    if (fail) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = align ? __libc_memalign(align, bytes) : zero ? __libc_calloc(count, bytes) : __libc_malloc(bytes);
    if (mine) track(p);
    return p;
}

static void *realloc_from(const void *caller, void *ptr, size_t bytes)
{
    if (!ptr) return alloc_from(caller, 0, bytes, 0, 0);
    if (bytes == 0) { /* glibc frees it */
        untrack(ptr);
        return __libc_realloc(ptr, 0);
    }
    int fail;
    int mine = classify(caller, &fail);
    if (fail) {
        errno = ENOMEM;
        return NULL; /* ptr stays valid and tracked, as realloc's contract says */
    }
    int was = untrack(ptr); /* before the call: once freed, another thread may get the address */
    void *q = __libc_realloc(ptr, bytes);
    if (q ? mine : was) track(q ? q : ptr);
    return q;
}

INTERPOSED void *malloc(size_t bytes) { return alloc_from(__builtin_return_address(0), 0, bytes, 0, 0); }

INTERPOSED void *calloc(size_t count, size_t bytes)
{
    return alloc_from(__builtin_return_address(0), 0, bytes, 1, count);
}

INTERPOSED void *realloc(void *ptr, size_t bytes) { return realloc_from(__builtin_return_address(0), ptr, bytes); }

INTERPOSED void *reallocarray(void *ptr, size_t count, size_t bytes)
{
    size_t total;
    if (__builtin_mul_overflow(count, bytes, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_from(__builtin_return_address(0), ptr, total);
}

INTERPOSED void free(void *ptr)
{
    untrack(ptr);
    __libc_free(ptr);
}

INTERPOSED void *aligned_alloc(size_t align, size_t bytes)
{
    return alloc_from(__builtin_return_address(0), align, bytes, 0, 0);
}

INTERPOSED void *memalign(size_t align, size_t bytes)
{
    return alloc_from(__builtin_return_address(0), align, bytes, 0, 0);
}

INTERPOSED int posix_memalign(void **out, size_t align, size_t bytes)
{
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    int saved = errno;
    void *p = alloc_from(__builtin_return_address(0), align, bytes, 0, 0);
    errno = saved; /* posix_memalign reports through its result, never errno */
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

INTERPOSED char *strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = alloc_from(__builtin_return_address(0), 0, n, 0, 0);
    if (d) memcpy(d, s, n);
    return d;
}

INTERPOSED char *strndup(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *d = alloc_from(__builtin_return_address(0), 0, n + 1, 0, 0);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}
