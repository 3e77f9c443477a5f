/* cuda_driver.c — dlopen("libcuda.so.1"), the symbol table, cuInit, and error messages. */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugin_error.h"

cuda_driver_t cuda_drv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static attnrt_status_t load_status = ATTNRT_ERR_NO_DEVICE;
static char load_message[512];

static void load_fail(attnrt_status_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void load_fail(attnrt_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(load_message, sizeof load_message, fmt, ap);
    va_end(ap);
    load_status = st;
}

/* dlsym into a function pointer without the object-to-function cast that ISO C does not define. */
static int resolve(void *lib, const char *sym, const char *alt, void *slot)
{
    void *p = dlsym(lib, sym);
    if (!p && alt) p = dlsym(lib, alt);
    if (!p) return 0;
    memcpy(slot, &p, sizeof p);
    return 1;
}

static void load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        load_fail(ATTNRT_ERR_NO_DEVICE, "no CUDA driver: libcuda.so.1 not found (install the NVIDIA driver; dlopen: %s)",
                  why ? why : "unknown error");
        return;
    }
    cuda_drv.lib = lib;
#define CUDA_DRIVER_RESOLVE(member, proto, sym, alt)                                                       \
    if (!resolve(lib, sym, alt, &cuda_drv.member)) {                                                       \
        load_fail(ATTNRT_ERR_NO_DEVICE, "CUDA driver present but too old: libcuda.so.1 has no %s (update the " \
                  "NVIDIA driver)", sym);                                                                  \
        return;                                                                                            \
    }
    CUDA_DRIVER_FUNCTIONS(CUDA_DRIVER_RESOLVE)
#undef CUDA_DRIVER_RESOLVE
    if (!resolve(lib, "cuTensorMapEncodeTiled", NULL, &cuda_drv.TensorMapEncodeTiled)) cuda_drv.TensorMapEncodeTiled = NULL;
    if (!resolve(lib, "cuLaunchKernelEx", NULL, &cuda_drv.LaunchKernelEx)) cuda_drv.LaunchKernelEx = NULL;
    CUresult r = cuda_drv.Init(0);
    if (r != CUDA_SUCCESS) {
        load_fail(ATTNRT_ERR_NO_DEVICE, "CUDA driver present but cuInit failed: %s", cuda_result_name(r));
        return;
    }
    if (cuda_drv.DriverGetVersion(&cuda_drv.version) != CUDA_SUCCESS) cuda_drv.version = 0;
    int count = 0;
    r = cuda_drv.DeviceGetCount(&count);
    if (r != CUDA_SUCCESS) {
        load_fail(ATTNRT_ERR_NO_DEVICE, "CUDA driver present but cuDeviceGetCount failed: %s", cuda_result_name(r));
        return;
    }
    cuda_drv.device_count = count;
    load_status = ATTNRT_OK;
}

const cuda_driver_t *cuda_driver_get(int require_device)
{
    pthread_once(&load_once, load);
    if (load_status != ATTNRT_OK) {
        plugin_fail(load_status, "%s", load_message);
        return NULL;
    }
    if (require_device && cuda_drv.device_count <= 0) {
        plugin_fail(ATTNRT_ERR_NO_DEVICE, "no CUDA device (the driver loaded and initialised, but reports 0 devices)");
        return NULL;
    }
    return &cuda_drv;
}

const char *cuda_result_name(CUresult r)
{
    static _Thread_local char buf[32];
    const char *name = NULL;
    if (cuda_drv.GetErrorName && cuda_drv.GetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
    snprintf(buf, sizeof buf, "CUresult %d", (int)r);
    return buf;
}

attnrt_status_t cuda_fail(CUresult r, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *desc = NULL;
    if (!cuda_drv.GetErrorString || cuda_drv.GetErrorString(r, &desc) != CUDA_SUCCESS || !desc) desc = "no description";
    const attnrt_status_t st = r == CUDA_ERROR_OUT_OF_MEMORY ? ATTNRT_ERR_OUT_OF_MEMORY : ATTNRT_ERR_DEVICE;
    return plugin_fail(st, "%s: %s (%s)", what, cuda_result_name(r), desc);
}
