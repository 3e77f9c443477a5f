/* An interposed allocator for SQLite-style allocation-failure tests. The test executable defines malloc,
 * calloc, realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign, strdup and strndup; they
 * forward to glibc's __libc_* entries. Once fail_malloc_start() has run, every allocation whose caller
 * (the return address) lies in libattnrt.so or in a plugin file attnrt_*.so is "ours": it is counted,
 * the N-th one can be made to fail (NULL, errno ENOMEM), and our live blocks are tracked so a test can
 * see that a failure path leaked nothing. Allocations by anyone else (libc, the dynamic loader, cmocka,
 * the test itself) pass through untouched. Not for sanitizer or valgrind builds: they own malloc.
 * FAIL_MALLOC_TRACE=1 in the environment prints, for each failed allocation, the function that made it. */
#ifndef FAIL_MALLOC_H
#define FAIL_MALLOC_H

/* Starts classifying callers; before this every allocation passes through (start-up runs uncounted). */
void fail_malloc_start(void);
/* Fails our n-th allocation from now on (1-based); 0 fails none. Resets the count and the fired flag. */
void fail_malloc_arm(long n);
/* Our allocations since the last fail_malloc_arm, the failed one included. */
long fail_malloc_count(void);
/* Whether the armed failure has happened. */
int fail_malloc_fired(void);
/* Our blocks allocated and not yet freed. */
long fail_malloc_live(void);

#endif /* FAIL_MALLOC_H */
