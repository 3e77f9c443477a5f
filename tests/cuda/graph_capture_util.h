/* graph_capture_util.h — what the cuda plugin's graph-capture programs share: the Driver API's graph
 * entry points (dlopen'd, as the plugin does), fatal-error checks, seeded bf16 data, dense tensors, and
 * the bit-exact comparison of a direct run with a replay. Header-only, so each program builds from one
 * gcc command on the device. */
#ifndef ATTNRT_GRAPH_CAPTURE_UTIL_H
#define ATTNRT_GRAPH_CAPTURE_UTIL_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "attnrt.h"

static struct {
    __typeof__(&cuStreamBeginCapture) begin;
    __typeof__(&cuStreamEndCapture) end;
    __typeof__(&cuGraphInstantiate) instantiate;
    __typeof__(&cuGraphLaunch) launch;
    __typeof__(&cuGraphGetNodes) nodes;
    __typeof__(&cuGraphExecDestroy) exec_destroy;
    __typeof__(&cuGraphDestroy) destroy;
    __typeof__(&cuStreamSynchronize) sync;
    __typeof__(&cuGetErrorName) err_name;
} cu;

static inline int load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
    const struct { const char *name; void *slot; } syms[] = {
        {"cuStreamBeginCapture_v2", &cu.begin},  {"cuStreamEndCapture", &cu.end},
        {"cuGraphInstantiateWithFlags", &cu.instantiate}, {"cuGraphLaunch", &cu.launch},
        {"cuGraphGetNodes", &cu.nodes},          {"cuGraphExecDestroy", &cu.exec_destroy},
        {"cuGraphDestroy", &cu.destroy},         {"cuStreamSynchronize", &cu.sync},
        {"cuGetErrorName", &cu.err_name},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(lib, syms[i].name);
        if (!p) {
            fprintf(stderr, "graph capture: libcuda.so.1 has no %s\n", syms[i].name);
            return 0;
        }
        memcpy(syms[i].slot, &p, sizeof p);
    }
    return 1;
}

#define CHECK_AT(st, what)                                                                              \
    do {                                                                                                \
        if ((st) != ATTNRT_OK) {                                                                        \
            fprintf(stderr, "FAIL %s: %s: %s\n", what, attnrt_status_name(st), attnrt_last_error());    \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)
#define CHECK_CU(r, what)                                                                               \
    do {                                                                                                \
        CUresult r_ = (r);                                                                              \
        if (r_ != CUDA_SUCCESS) {                                                                       \
            const char *n_ = "?";                                                                       \
            cu.err_name(r_, &n_);                                                                       \
            fprintf(stderr, "FAIL %s: %s\n", what, n_);                                                 \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0);
}
static inline uint16_t bf16(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
static inline void fill_bf16(uint16_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = bf16(frand());
}

static inline void tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dt, int ndim, const int64_t *shape)
{
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->data = data;
    t->dtype = dt;
    t->ndim = ndim;
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->strides[i] = s;
        s *= shape[i];
    }
}

static inline void *dev_alloc(attnrt_context_t *ctx, size_t bytes)
{
    void *p = NULL;
    CHECK_AT(attnrt_mem_alloc(ctx, bytes, &p), "attnrt_mem_alloc");
    return p;
}

/* The CUstream under an attnrt stream (attnrt_stream_native), to capture on it through the Driver API. */
static inline CUstream native_stream(attnrt_context_t *ctx, attnrt_stream_t *stream)
{
    void *native = NULL;
    CHECK_AT(attnrt_stream_native(ctx, stream, &native), "attnrt_stream_native");
    return (CUstream)native;
}

/* Compares out and lse after a direct run and after a replay; prints and counts differences. */
static inline int compare(const char *what, const void *a, const void *b, size_t bytes)
{
    if (memcmp(a, b, bytes) == 0) {
        printf("  %-44s bit-exact (%zu bytes)\n", what, bytes);
        return 0;
    }
    size_t diff = 0;
    for (size_t i = 0; i < bytes; i++) diff += ((const uint8_t *)a)[i] != ((const uint8_t *)b)[i];
    printf("  %-44s DIFFERS in %zu of %zu bytes\n", what, diff, bytes);
    return 1;
}

/* Loads the driver, initialises libattnrt on the cuda plugin (unless ATTNRT_PLUGIN names another) and
 * opens cuda:0 with a stream; exits 77 (skipped) when there is no CUDA driver or device. */
static inline attnrt_context_t *open_cuda_or_skip(const char *prog, attnrt_stream_t **stream)
{
    if (!getenv("ATTNRT_PLUGIN")) setenv("ATTNRT_PLUGIN", "cuda", 1);
    if (!load_driver()) {
        printf("%s: no CUDA driver (skipped)\n", prog);
        exit(77);
    }
    attnrt_status_t st = attnrt_init();
    if (st == ATTNRT_ERR_NO_DEVICE) {
        printf("%s: %s (skipped)\n", prog, attnrt_last_error());
        exit(77);
    }
    CHECK_AT(st, "attnrt_init");
    attnrt_context_t *ctx = NULL;
    CHECK_AT(attnrt_open("cuda:0", &ctx), "attnrt_open(cuda:0)");
    CHECK_AT(attnrt_stream_create(ctx, stream), "attnrt_stream_create");
    return ctx;
}

#endif /* ATTNRT_GRAPH_CAPTURE_UTIL_H */
