/* conform_device.h - device memory for one case, through the public API only.
 *
 * A case allocates everything through one cf_dev_t and frees it all at the end, so a failing case
 * never leaks into the next. Functions return 0 on success; on failure they return -1 and leave
 * "what: attnrt_last_error()" in dev->error, which the case turns into its message.
 */
#ifndef ATTNRT_CONFORM_DEVICE_H
#define ATTNRT_CONFORM_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt.h"

#define CF_DEV_MAX_ALLOCS 96

typedef struct cf_dev {
    attnrt_context_t *ctx;                      /* borrowed                                  */
    void             *ptrs[CF_DEV_MAX_ALLOCS];  /* device allocations, freed by cf_dev_release */
    int               count;
    attnrt_status_t   status;                   /* of the call that failed                   */
    char              error[512];
} cf_dev_t;

void cf_dev_init(cf_dev_t *dev, attnrt_context_t *ctx);
/* Frees every allocation (the context stays open). */
void cf_dev_release(cf_dev_t *dev);
/* Allocates `bytes` of device memory and uploads `init` (host, `bytes` long) into it; bytes == 0
 * gives *ptr = NULL (the API allows NULL data for empty tensors). */
int  cf_dev_upload_new(cf_dev_t *dev, const void *init, size_t bytes, void **ptr, const char *what);
int  cf_dev_download(cf_dev_t *dev, void *host, const void *device_ptr, size_t bytes, const char *what);
/* Records a failed API status with attnrt_last_error() as dev->error; returns -1. */
int  cf_dev_fail(cf_dev_t *dev, attnrt_status_t st, const char *what);

/* A tensor descriptor with explicit strides (elements). */
void cf_tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int ndim, const int64_t *shape,
               const int64_t *strides);
/* A contiguous tensor descriptor. */
void cf_tensor_contig(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int ndim, const int64_t *shape);

#endif
