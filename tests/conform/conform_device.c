/* conform_device.c - per-case device memory and tensor descriptors (see conform_device.h). */
#include "conform_device.h"

#include <stdio.h>
#include <string.h>

void cf_dev_init(cf_dev_t *dev, attnrt_context_t *ctx)
{
    memset(dev, 0, sizeof *dev);
    dev->ctx = ctx;
}

void cf_dev_release(cf_dev_t *dev)
{
    for (int i = dev->count - 1; i >= 0; i--) attnrt_mem_free(dev->ctx, dev->ptrs[i]);
    dev->count = 0;
}

int cf_dev_fail(cf_dev_t *dev, attnrt_status_t st, const char *what)
{
    dev->status = st;
    snprintf(dev->error, sizeof dev->error, "%s: %s: %s", what, attnrt_status_name(st), attnrt_last_error());
    return -1;
}

int cf_dev_upload_new(cf_dev_t *dev, const void *init, size_t bytes, void **ptr, const char *what)
{
    *ptr = NULL;
    if (bytes == 0) return 0;
    if (dev->count == CF_DEV_MAX_ALLOCS) {
        dev->status = ATTNRT_ERR_INTERNAL;
        snprintf(dev->error, sizeof dev->error, "%s: checker bug: more than %d allocations in one case", what,
                 CF_DEV_MAX_ALLOCS);
        return -1;
    }
    void *p = NULL;
    attnrt_status_t st = attnrt_mem_alloc(dev->ctx, bytes, &p);
    if (st != ATTNRT_OK) return cf_dev_fail(dev, st, what);
    dev->ptrs[dev->count++] = p;
    st = attnrt_mem_copy_to_device(dev->ctx, p, init, bytes, NULL);
    if (st != ATTNRT_OK) return cf_dev_fail(dev, st, what);
    *ptr = p;
    return 0;
}

int cf_dev_download(cf_dev_t *dev, void *host, const void *device_ptr, size_t bytes, const char *what)
{
    if (bytes == 0) return 0;
    attnrt_status_t st = attnrt_mem_copy_to_host(dev->ctx, host, device_ptr, bytes, NULL);
    return st == ATTNRT_OK ? 0 : cf_dev_fail(dev, st, what);
}

void cf_tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int ndim, const int64_t *shape,
               const int64_t *strides)
{
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->data = data;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->strides[d] = strides[d];
    }
}

void cf_tensor_contig(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int ndim, const int64_t *shape)
{
    int64_t strides[ATTNRT_MAX_DIMS], s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
    cf_tensor(t, data, dtype, ndim, shape, strides);
}
