/* npu_memory.c — device memory: the profile's budget (16 GiB - 288 MiB on ATOM, 144 GiB - 4 GiB on
 * Rebel100) is enforced by counting, while the bytes themselves are host memory of exactly the size
 * asked (so a test can "fill" a 16 GiB device without having 16 GiB). Each allocation carries a
 * 256-byte header that remembers its size, so mem_free can give the budget back. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "npu_device.h"
#include "plugin_error.h"

#define NPU_ALIGN 256 /* the ABI's alignment promise; also the header size */

static atomic_uint_least64_t used_all;

uint64_t npu_mem_used_all(void) { return atomic_load(&used_all); }

/* Takes `bytes` from the device's budget; 0 when it does not fit. */
static int reserve(npu_device_t *d, uint64_t bytes)
{
    uint64_t cur = atomic_load(&d->used);
    do {
        if (bytes > d->budget || cur > d->budget - bytes) return 0;
    } while (!atomic_compare_exchange_weak(&d->used, &cur, cur + bytes));
    atomic_fetch_add(&used_all, bytes);
    return 1;
}

static void release(npu_device_t *d, uint64_t bytes)
{
    atomic_fetch_sub(&d->used, bytes);
    atomic_fetch_sub(&used_all, bytes);
}

attnrt_status_t npu_mem_alloc(npu_device_t *d, size_t bytes, void **ptr)
{
    if (!ptr) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT ": mem_alloc: ptr is NULL", NPU_DEV_ARG(d));
    *ptr = NULL;
    if (bytes == 0) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT ": mem_alloc of 0 bytes", NPU_DEV_ARG(d));
    if (!reserve(d, bytes)) {
        const uint64_t used = atomic_load(&d->used);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY,
                           NPU_DEV_FMT ": out of device memory: %zu bytes asked, %llu of %llu bytes free (%llu GiB %s "
                           "- %llu MiB reserved)", NPU_DEV_ARG(d), bytes,
                           (unsigned long long)(used < d->budget ? d->budget - used : 0), (unsigned long long)d->budget,
                           (unsigned long long)(d->sel.profile->memory_physical >> 30), d->sel.profile->memory_kind,
                           (unsigned long long)(d->sel.profile->memory_reserved >> 20));
    }
    const size_t total = (bytes + NPU_ALIGN - 1) / NPU_ALIGN * NPU_ALIGN + NPU_ALIGN;
    char *base = total > bytes ? aligned_alloc(NPU_ALIGN, total) : NULL;
    if (!base) {
        release(d, bytes);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, NPU_DEV_FMT ": the host cannot back %zu bytes of simulated device "
                           "memory", NPU_DEV_ARG(d), bytes);
    }
    memcpy(base, &bytes, sizeof bytes);
    *ptr = base + NPU_ALIGN;
    return ATTNRT_OK;
}

void npu_mem_free(npu_device_t *d, void *ptr)
{
    if (!ptr) return;
    char *base = (char *)ptr - NPU_ALIGN;
    size_t bytes;
    memcpy(&bytes, base, sizeof bytes);
    release(d, bytes);
    free(base);
}
