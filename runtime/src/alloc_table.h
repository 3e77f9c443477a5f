/* The attnrt_mem_alloc allocations live on one context, sorted by address. attnrt_mem_free looks a pointer up
 * (a double free or a foreign pointer is refused, not passed to the plugin), attnrt_close counts what is left,
 * and the op checks ask whether a tensor that starts inside an allocation also ends inside it. */
#ifndef ATTNRT_ALLOC_TABLE_H
#define ATTNRT_ALLOC_TABLE_H

#include <pthread.h>

#include "internal.h"

typedef struct alloc_entry {
    uintptr_t base;
    size_t    bytes;
} alloc_entry_t;

typedef struct alloc_table {
    pthread_rwlock_t lock;    /* writers: alloc and free; readers: op checks (never contended by runs) */
    alloc_entry_t   *entries; /* sorted by base; owned                                                  */
    size_t           count, cap;
} alloc_table_t;

ATTNRT_HIDDEN attnrt_status_t attnrt_alloc_table_init(alloc_table_t *t);
ATTNRT_HIDDEN void attnrt_alloc_table_destroy(alloc_table_t *t);
/* Records [p, p + bytes); ATTNRT_ERR_OUT_OF_MEMORY (no message) when the table cannot grow. */
ATTNRT_HIDDEN attnrt_status_t attnrt_alloc_table_insert(alloc_table_t *t, void *p, size_t bytes);
/* Forgets the allocation that starts at p. Returns 1 when there was one; else 0, and *inside_base / *inside_bytes
 * describe the allocation p points into (0 / 0 when none). */
ATTNRT_HIDDEN int attnrt_alloc_table_remove(alloc_table_t *t, void *p, uintptr_t *inside_base, size_t *inside_bytes);
ATTNRT_HIDDEN size_t attnrt_alloc_table_count(alloc_table_t *t);
/* Finds the allocation holding address p: 1 and its base and size, or 0 when p lies in none. */
ATTNRT_HIDDEN int attnrt_alloc_table_find(alloc_table_t *t, const void *p, uintptr_t *base, size_t *bytes);

#endif /* ATTNRT_ALLOC_TABLE_H */
