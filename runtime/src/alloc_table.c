/* A context's live allocations (see alloc_table.h): a sorted array searched by address. */
#include <stdlib.h>
#include <string.h>

#include "alloc_table.h"

attnrt_status_t attnrt_alloc_table_init(alloc_table_t *t)
{
    memset(t, 0, sizeof *t);
    return pthread_rwlock_init(&t->lock, NULL) == 0 ? ATTNRT_OK : ATTNRT_ERR_OUT_OF_MEMORY;
}

void attnrt_alloc_table_destroy(alloc_table_t *t)
{
    pthread_rwlock_destroy(&t->lock);
    free(t->entries);
    memset(t, 0, sizeof *t);
}

/* Index of the last entry whose base is <= p, or -1. Caller holds the lock. */
static ptrdiff_t last_at_or_below(const alloc_table_t *t, uintptr_t p)
{
    size_t lo = 0, hi = t->count; /* answer in [lo - 1, hi - 1] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->entries[mid].base <= p) lo = mid + 1;
        else hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static int holds(const alloc_entry_t *e, uintptr_t p) { return p >= e->base && p - e->base < e->bytes; }

attnrt_status_t attnrt_alloc_table_insert(alloc_table_t *t, void *p, size_t bytes)
{
    uintptr_t base = (uintptr_t)p;
    pthread_rwlock_wrlock(&t->lock);
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        alloc_entry_t *grown = cap <= SIZE_MAX / sizeof *grown ? realloc(t->entries, cap * sizeof *grown) : NULL;
        if (!grown) {
            pthread_rwlock_unlock(&t->lock);
            return ATTNRT_ERR_OUT_OF_MEMORY;
        }
        t->entries = grown;
        t->cap = cap;
    }
    size_t at = (size_t)(last_at_or_below(t, base) + 1);
    memmove(&t->entries[at + 1], &t->entries[at], (t->count - at) * sizeof t->entries[0]);
    t->entries[at] = (alloc_entry_t){base, bytes};
    t->count++;
    pthread_rwlock_unlock(&t->lock);
    return ATTNRT_OK;
}

int attnrt_alloc_table_remove(alloc_table_t *t, void *p, uintptr_t *inside_base, size_t *inside_bytes)
{
    uintptr_t addr = (uintptr_t)p;
    *inside_base = 0;
    *inside_bytes = 0;
    pthread_rwlock_wrlock(&t->lock);
    ptrdiff_t i = last_at_or_below(t, addr);
    int found = i >= 0 && t->entries[i].base == addr;
    if (found) {
        memmove(&t->entries[i], &t->entries[i + 1], (t->count - (size_t)i - 1) * sizeof t->entries[0]);
        t->count--;
    } else if (i >= 0 && holds(&t->entries[i], addr)) {
        *inside_base = t->entries[i].base;
        *inside_bytes = t->entries[i].bytes;
    }
    pthread_rwlock_unlock(&t->lock);
    return found;
}

size_t attnrt_alloc_table_count(alloc_table_t *t)
{
    pthread_rwlock_rdlock(&t->lock);
    size_t n = t->count;
    pthread_rwlock_unlock(&t->lock);
    return n;
}

int attnrt_alloc_table_find(alloc_table_t *t, const void *p, uintptr_t *base, size_t *bytes)
{
    uintptr_t addr = (uintptr_t)p;
    pthread_rwlock_rdlock(&t->lock);
    ptrdiff_t i = last_at_or_below(t, addr);
    int found = i >= 0 && holds(&t->entries[i], addr);
    if (found) {
        *base = t->entries[i].base;
        *bytes = t->entries[i].bytes;
    }
    pthread_rwlock_unlock(&t->lock);
    return found;
}
