/* cuda_device.c — properties and key/value attributes of cuda:<i>, read from the driver. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "plugin_error.h"

static int attr_of(CUdevice dev, CUdevice_attribute a)
{
    int v = 0;
    return cuda_drv.DeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
}

static attnrt_status_t check_index(const cuda_plugin_t *p, uint32_t index)
{
    return index < p->count ? ATTNRT_OK
                            : plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda plugin has %u device(s); asked for cuda:%u",
                                          p->count, index);
}

attnrt_status_t cuda_fill_properties(cuda_plugin_t *plug, uint32_t index, attnrt_device_properties_t *props)
{
    attnrt_status_t st = check_index(plug, index);
    if (st != ATTNRT_OK) return st;
    const CUdevice dev = plug->devs[index];
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    snprintf(p.name, sizeof p.name, "cuda:%u", index);
    snprintf(p.vendor, sizeof p.vendor, "NVIDIA");
    if (cuda_drv.DeviceGetName(p.model, (int)sizeof p.model, dev) != CUDA_SUCCESS) snprintf(p.model, sizeof p.model, "unknown");
    snprintf(p.arch, sizeof p.arch, "sm_%d%d", attr_of(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
             attr_of(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    snprintf(p.driver, sizeof p.driver, "CUDA driver %d.%d", cuda_drv.version / 1000, (cuda_drv.version % 1000) / 10);
    p.device_type = ATTNRT_DEVICE_TYPE_CUDA;
    p.compute_units = (uint32_t)attr_of(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    size_t total = 0, free_bytes = 0;
    if (cuda_drv.DeviceTotalMem(&total, dev) == CUDA_SUCCESS) p.memory_total = total;
    /* Free memory needs a context: the primary one, retained once per process. */
    CUcontext ctx;
    if (cuda_plugin_context(plug, index, &ctx) == ATTNRT_OK && cuda_drv.CtxSetCurrent(ctx) == CUDA_SUCCESS &&
        cuda_drv.MemGetInfo(&free_bytes, &total) == CUDA_SUCCESS)
        p.memory_free = free_bytes;
    p.attribute_count = cuda_attribute_count();
    const size_t caller_size = props->struct_size;
    memcpy(props, &p, caller_size < sizeof p ? caller_size : sizeof p);
    props->struct_size = caller_size;
    return ATTNRT_OK;
}

enum { ATTR_CC, ATTR_SM_COUNT, ATTR_L2, ATTR_SMEM_OPTIN, ATTR_DRIVER, ATTR_KERNELS, ATTR_COUNT_ };

uint32_t cuda_attribute_count(void) { return ATTR_COUNT_; }

attnrt_status_t cuda_fill_attribute(cuda_plugin_t *plug, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    attnrt_status_t st = check_index(plug, index);
    if (st != ATTNRT_OK) return st;
    if (i >= ATTR_COUNT_)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda:%u has %u attributes; asked for attribute %u", index,
                           ATTR_COUNT_, i);
    const CUdevice dev = plug->devs[index];
    static const char *const keys[ATTR_COUNT_] = {"cc", "sm_count", "l2_bytes", "smem_per_block_optin",
                                                  "driver_version", "kernels"};
    snprintf(attr->key, sizeof attr->key, "%s", keys[i]);
    switch (i) {
    case ATTR_CC:
        snprintf(attr->value, sizeof attr->value, "%d.%d", attr_of(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                 attr_of(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
        break;
    case ATTR_SM_COUNT:
        snprintf(attr->value, sizeof attr->value, "%d", attr_of(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
        break;
    case ATTR_L2:
        snprintf(attr->value, sizeof attr->value, "%d", attr_of(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
        break;
    case ATTR_SMEM_OPTIN:
        snprintf(attr->value, sizeof attr->value, "%d", attr_of(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
        break;
    case ATTR_DRIVER:
        snprintf(attr->value, sizeof attr->value, "%d", cuda_drv.version);
        break;
    default:
        snprintf(attr->value, sizeof attr->value, "%s",
                 attr_of(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) >= 8
                     ? "mma.sync (f16/bf16 q; 16-bit or fp8 KV) + SIMT (the rest); fatbin sm_80, sm_90, compute_90"
                     : "SIMT only (tensor-core kernels need sm_80); fatbin sm_80, sm_90, compute_90");
        break;
    }
    return ATTNRT_OK;
}
