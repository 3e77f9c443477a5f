/* cuda_driver.h — the CUDA Driver API reached through dlopen("libcuda.so.1"): no link-time dependency
 * on the driver, so the plugin loads (and says why it cannot work) on machines without one. cuda.h is
 * included for its types and prototypes only; every call goes through the table below. */
#ifndef CK_CUDA_DRIVER_H
#define CK_CUDA_DRIVER_H

#include <cuda.h>

#include "attnrt_plugin.h"

/* X(member, prototype, symbol, fallback symbol or NULL). The prototype is cuda.h's (through its
 * versioning macros, e.g. cuMemAlloc -> cuMemAlloc_v2), so a pointer's type cannot drift from it. */
#define CUDA_DRIVER_FUNCTIONS(X)                                                                          \
    X(Init, cuInit, "cuInit", NULL)                                                                       \
    X(DriverGetVersion, cuDriverGetVersion, "cuDriverGetVersion", NULL)                                   \
    X(GetErrorName, cuGetErrorName, "cuGetErrorName", NULL)                                               \
    X(GetErrorString, cuGetErrorString, "cuGetErrorString", NULL)                                         \
    X(DeviceGetCount, cuDeviceGetCount, "cuDeviceGetCount", NULL)                                         \
    X(DeviceGet, cuDeviceGet, "cuDeviceGet", NULL)                                                        \
    X(DeviceGetName, cuDeviceGetName, "cuDeviceGetName", NULL)                                            \
    X(DeviceTotalMem, cuDeviceTotalMem, "cuDeviceTotalMem_v2", NULL)                                      \
    X(DeviceGetAttribute, cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL)                             \
    X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL)                 \
    X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL)           \
    X(CtxSetCurrent, cuCtxSetCurrent, "cuCtxSetCurrent", NULL)                                            \
    X(MemGetInfo, cuMemGetInfo, "cuMemGetInfo_v2", NULL)                                                  \
    X(MemAlloc, cuMemAlloc, "cuMemAlloc_v2", NULL)                                                        \
    X(MemFree, cuMemFree, "cuMemFree_v2", NULL)                                                           \
    X(MemAllocHost, cuMemAllocHost, "cuMemAllocHost_v2", NULL)                                            \
    X(MemFreeHost, cuMemFreeHost, "cuMemFreeHost", NULL)                                                  \
    X(MemcpyHtoDAsync, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL)                                   \
    X(MemcpyDtoHAsync, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL)                                   \
    X(MemcpyDtoDAsync, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL)                                   \
    X(MemsetD8Async, cuMemsetD8Async, "cuMemsetD8Async", NULL)                                            \
    X(StreamCreate, cuStreamCreate, "cuStreamCreate", NULL)                                               \
    X(StreamDestroy, cuStreamDestroy, "cuStreamDestroy_v2", NULL)                                         \
    X(StreamSynchronize, cuStreamSynchronize, "cuStreamSynchronize", NULL)                                \
    X(StreamWaitEvent, cuStreamWaitEvent, "cuStreamWaitEvent", NULL)                                      \
    X(StreamGetCtx, cuStreamGetCtx, "cuStreamGetCtx", NULL)                                               \
    X(EventCreate, cuEventCreate, "cuEventCreate", NULL)                                                  \
    X(EventDestroy, cuEventDestroy, "cuEventDestroy_v2", NULL)                                            \
    X(EventRecord, cuEventRecord, "cuEventRecord", NULL)                                                  \
    X(EventSynchronize, cuEventSynchronize, "cuEventSynchronize", NULL)                                   \
    X(EventElapsedTime, cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime")                \
    X(ModuleLoadData, cuModuleLoadData, "cuModuleLoadData", NULL)                                         \
    X(ModuleUnload, cuModuleUnload, "cuModuleUnload", NULL)                                               \
    X(ModuleGetFunction, cuModuleGetFunction, "cuModuleGetFunction", NULL)                                \
    X(FuncSetAttribute, cuFuncSetAttribute, "cuFuncSetAttribute", NULL)                                   \
    X(FuncGetAttribute, cuFuncGetAttribute, "cuFuncGetAttribute", NULL)                                   \
    X(LaunchKernel, cuLaunchKernel, "cuLaunchKernel", NULL)                                               \
    X(OccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor,              \
      "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL)

typedef struct cuda_driver {
    void *lib;     /* dlopen handle of libcuda.so.1; kept for the life of the process */
    int   version; /* cuDriverGetVersion: 13000 = CUDA 13.0 */
    int   device_count;
#define CUDA_DRIVER_MEMBER(member, proto, sym, alt) __typeof__(&proto) member;
    CUDA_DRIVER_FUNCTIONS(CUDA_DRIVER_MEMBER)
#undef CUDA_DRIVER_MEMBER
    /* optional (CUDA 12+ drivers): NULL where the driver has none, and the kernels that need it are not used */
    __typeof__(&cuTensorMapEncodeTiled) TensorMapEncodeTiled;
    __typeof__(&cuLaunchKernelEx)       LaunchKernelEx; /* launch attributes: a programmatic dependent launch */
} cuda_driver_t;

/* Loads the driver once per process (dlopen, symbols, cuInit, device count) and returns the table,
 * or NULL with the reason in the plugin's last error, in one line:
 *   "no CUDA driver: libcuda.so.1 not found ..." / "CUDA driver present but cuInit failed: <name>" /
 *   "no CUDA device" (only when require_device). Thread-safe; the library is never unloaded (the driver
 * does not support it while its state lives). */
const cuda_driver_t *cuda_driver_get(int require_device);

/* "CUDA_ERROR_OUT_OF_MEMORY" etc. for messages ("CUresult 999" when the driver cannot name it). */
const char *cuda_result_name(CUresult r);

/* Records "<what>: <name> (<description>)" and returns ATTNRT_ERR_OUT_OF_MEMORY for allocation
 * failures, ATTNRT_ERR_DEVICE for everything else. `what` is printf-style. */
attnrt_status_t cuda_fail(CUresult r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The table once loaded (callers that run after a successful init). */
extern cuda_driver_t cuda_drv;

#endif /* CK_CUDA_DRIVER_H */
