/* cuda_internal.h — the cuda plugin's objects, shared by its host files (never by the runtime).
 * An opened device holds its primary context (retained), the kernel modules loaded from the embedded
 * fatbins and the kernels' handles. Every entry makes the context current before it calls the driver. */
#ifndef CK_CUDA_INTERNAL_H
#define CK_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "cuda_driver.h"
#include "cuda_kernel_args.h"

#define CUDA_MMA_DIMS 3 /* head dims of the tensor-core kernels: 64, 128, 256 */
/* The fatbins, one per kernel family, and the sm_90a one (plugins/cuda/meson.build builds them, cuda_module.c
 * loads them; the sm_90a module on compute capability 9.0 only, else NULL). */
enum { CUDA_FAMILY_ATTENTION, CUDA_FAMILY_DECODE, CUDA_FAMILY_MLA, CUDA_FAMILY_LINEAR, CUDA_FAMILY_SM90A, CUDA_FAMILIES };

#include "cuda_kernel_table.h"

typedef struct cuda_kernels {
    cuda_kernel_fns_t row[CK_KERNELS];         /* each table row's kernels (cuda_kernel_table.c), NULL where not loaded */
    CUfunction kv_write, attn_simt, merge_states; /* the device-wide ones, also by name */
    int        mma_ok;                         /* 0: the device cannot run the tensor-core kernels (SIMT only) */
} cuda_kernels_t;

typedef struct cuda_dev {
    uint32_t       index;
    CUdevice       dev;
    CUcontext      ctx;        /* the device's primary context, retained until close */
    CUmodule       modules[CUDA_FAMILIES]; /* one per fatbin (cuda_module.c); [CUDA_FAMILY_SM90A] NULL off CC 9.0 */
    cuda_kernels_t k;
    int            sm_count;
    int            cc_major, cc_minor; /* the compute capability whose kernels the device loads (its own, or 8.0 under
                                          ATTNRT_CUDA_KERNELS=sm80) */
    int            force_simt; /* ATTNRT_CUDA_KERNELS=simt: every attention on the CUDA cores */
    int            pdl;        /* a mixed batch's decode kernel may start in its prefill kernel's tail (programmatic
                                  dependent launch: CC 9.0+, a CUDA 12.3+ driver) */
} cuda_dev_t;

/* What init returns: the devices, and their primary contexts, retained on first use (properties or
 * open) and released at shutdown, so that each is created once per process. */
typedef struct cuda_plugin {
    const attnrt_host_api_t *host;
    uint32_t                 count;
    CUdevice                *devs;
    CUcontext               *ctx;  /* NULL until first retained */
    void                    *lock; /* pthread_mutex_t, guarding ctx */
} cuda_plugin_t;

/* The retained primary context of device `index` (retaining it on first use). */
attnrt_status_t cuda_plugin_context(cuda_plugin_t *p, uint32_t index, CUcontext *ctx);

/* A stream handle: created by stream_create (cuStreamCreate, CU_STREAM_NON_BLOCKING; owned) or wrapped from the
 * engine's CUstream by stream_wrap (not owned: stream_destroy frees the wrapper only). Work on either is only
 * queued; no entry waits for a non-NULL stream except stream_synchronize. */
typedef struct cuda_stream {
    CUstream stream;
    int      owned;
} cuda_stream_t;

/* An event handle: from event_create (owned) or event_wrap (the engine's CUevent, not owned). */
typedef struct cuda_event {
    CUevent event;
    int     owned;
} cuda_event_t;

/* Makes the device's context current on this thread (cheap; every entry calls it). */
attnrt_status_t cuda_enter(const cuda_dev_t *d);
/* The CUstream of a plugin stream handle; NULL is the legacy default stream. */
static inline CUstream cuda_stream_of(void *stream) { return stream ? ((cuda_stream_t *)stream)->stream : NULL; }
/* After work queued on the NULL stream: wait for it (the ABI's default stream completes every call). */
attnrt_status_t cuda_finish(void *stream, const char *what);
/* A plan's host data into new device memory (*dst, which the caller frees; 0 where the allocation failed), copied
 * before it returns: runs then only pass its address (nothing copied on their streams). */
attnrt_status_t cuda_upload(CUdeviceptr *dst, const void *host, size_t bytes, const char *what);
/* cuLaunchKernel with one by-value argument struct. */
attnrt_status_t cuda_launch(CUfunction f, uint32_t grid, uint32_t block, uint32_t smem, void *stream, void *args,
                            const char *what);
/* cuda_launch of a kernel that may start before the kernel launched just before it on the stream completes (a
 * programmatic dependent launch, where d->pdl and the stream is not the NULL one; else a plain launch): for a kernel
 * that reads nothing the previous one writes, and whose block 0 waits for it before exiting (ck_pdl_wait_at_exit). */
attnrt_status_t cuda_launch_overlapped(const cuda_dev_t *d, CUfunction f, uint32_t grid, uint32_t block, uint32_t smem,
                                       void *stream, void *args, const char *what);

/* Module (cuda_module.c): loads the embedded fatbins into the current context and finds every kernel of the table. */
attnrt_status_t cuda_module_load(cuda_dev_t *d);
void cuda_module_unload(cuda_dev_t *d);
/* A kernel of the device's `family` module (CUDA_FAMILY_*) by name (plans look theirs up once; the handle
 * lives as long as the modules, i.e. the device). */
attnrt_status_t cuda_function(const cuda_dev_t *d, int family, const char *name, CUfunction *f);
/* cuda_function, then the kernel's dynamic shared-memory limit raised to smem (and the largest carveout
 * asked for): the form every kernel with more than 48 KB of dynamic shared memory is loaded by. */
attnrt_status_t cuda_function_smem(const cuda_dev_t *d, int family, const char *name, uint32_t smem, CUfunction *f);
/* Index of a padded head dim in the mma tables (64 -> 0, 128 -> 1, 256 -> 2), -1 when none fits. */
int cuda_mma_dim_index(int64_t dqk, int64_t dv);

/* Devices (cuda_device.c). */
attnrt_status_t cuda_fill_properties(cuda_plugin_t *p, uint32_t index, attnrt_device_properties_t *props);
uint32_t cuda_attribute_count(void);
attnrt_status_t cuda_fill_attribute(cuda_plugin_t *p, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr);

/* Capabilities (cuda_caps.c): ATTNRT_OK or ATTNRT_ERR_UNSUPPORTED with a reason. */
attnrt_status_t cuda_op_check(const attnrt_op_query_t *query, char *reason, size_t cap);

/* Ops. */
attnrt_status_t cuda_kv_write(cuda_dev_t *d, const attnrt_kv_write_args_t *args, void *stream);
attnrt_status_t cuda_attention_plan(cuda_dev_t *d, const attnrt_attention_args_t *args,
                                    const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes);
void cuda_attention_plan_destroy(cuda_dev_t *d, void *plan);
attnrt_status_t cuda_attention_plan_capacity(cuda_dev_t *d, const attnrt_attention_args_t *args,
                                             const attnrt_capacity_t *capacity, void **plan, size_t *workspace_bytes);
attnrt_status_t cuda_attention_plan_update(cuda_dev_t *d, void *plan, const attnrt_batch_host_t *batch, void *stream);
attnrt_status_t cuda_attention_run(cuda_dev_t *d, const void *plan, const attnrt_attention_args_t *args,
                                   void *workspace, size_t workspace_bytes, void *stream);
attnrt_status_t cuda_merge_states(cuda_dev_t *d, const attnrt_merge_args_t *args, void *stream);

/* enum ck_dtype of a tensor dtype, -1 when the kernels do not know it. */
int cuda_ck_dtype(attnrt_dtype_t dt);
/* Bytes per element of an enum ck_dtype. */
int cuda_ck_size(int ck);

#endif /* CK_CUDA_INTERNAL_H */
