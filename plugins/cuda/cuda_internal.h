/* cuda_internal.h — the cuda plugin's objects, shared by its host files (never by the runtime).
 * An opened device holds its primary context (retained), the kernel modules loaded from the embedded
 * fatbins and the kernels' handles. Every entry makes the context current before it calls the driver. */
#ifndef ATTNRT_CUDA_INTERNAL_H
#define ATTNRT_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "cuda_driver.h"
#include "cuda_kernel_args.h"
#include "cuda_stream.h"

/* Tensor-core attention kernels: [config][q type][kv kind][head dim] (see kernels/attn_mma.cu). */
enum { CUDA_CFG_PREFILL = 0, CUDA_CFG_DECODE = 1 };
#define CUDA_MMA_DIMS 3 /* 64, 128, 256 */
/* The fatbins, one per kernel family, and the sm_90a one (plugins/cuda/meson.build builds them, cuda_module.c
 * loads them; the sm_90a module on compute capability 9.0 only, else NULL). */
enum { CUDA_FAMILY_ATTENTION, CUDA_FAMILY_DECODE, CUDA_FAMILY_MLA, CUDA_FAMILY_LINEAR, CUDA_FAMILY_SM90A, CUDA_FAMILIES };

/* The decode kernels by tensor copies (cuda_kernels_t.dec_tma's second index; cuda_module.c's table of names) */
enum {
    CUDA_DEC_TMA_FP8_D64,
    CUDA_DEC_TMA_D64,
    CUDA_DEC_TMA_D128,
    CUDA_DEC_TMA_D256,
    CUDA_DEC_TMA_FP8_D128_T32, /* 32-key tiles */
    CUDA_DEC_TMA_FP8_D128_T16, /* 16-key tiles */
    CUDA_DEC_TMA_D64_R32,      /* wide GQA groups: 32-row tiles of one token's heads */
    CUDA_DEC_TMA_D128_R32,
    CUDA_DEC_TMA_KINDS
};

/* The decode kernels with a twin in 2-warp blocks (cuda_kernels_t.dec_w2's second index): the 4-warp kernel each
 * stands in for is `_c4` (mma[1][t][1][1]) and dec_tma[t][CUDA_DEC_TMA_FP8_D128_T32 / _FP8_D64] */
enum { CUDA_DEC_W2_FP8_D128_C4, CUDA_DEC_W2_FP8_D128_T32, CUDA_DEC_W2_FP8_D64, CUDA_DEC_W2_KINDS };

typedef struct cuda_kernels {
    CUfunction kv_write, attn_simt, merge_states;
    CUfunction mma[2][2][2][CUDA_MMA_DIMS]; /* [cfg][0 f16 / 1 bf16][0 kv16 / 1 fp8][d] */
    uint32_t   mma_smem[2][2][CUDA_MMA_DIMS];  /* dynamic shared memory: [cfg][fp8][d] */
    int        mma_ok;                         /* 0: the device cannot run them (SIMT only) */
    CUfunction dec_fp8_d64_l2w[2];             /* fp8 D 64 decode, 256-byte L2 fetches: [q type] or NULL */
    CUfunction dec_tma[2][CUDA_DEC_TMA_KINDS]; /* decode by tensor copies: [q type][CUDA_DEC_TMA_*] */
    uint32_t   dec_tma_smem[CUDA_DEC_TMA_KINDS];
    int        dec_tma_kpw[CUDA_DEC_TMA_KINDS]; /* keys a warp-tile of each */
    CUfunction dec_wide[2][2];                 /* wide GQA groups, 16-bit caches, the plain form: [q type][D 64 / 128] */
    uint32_t   dec_wide_smem[2];
    int        dec_wide_mode;                  /* ATTNRT_CUDA_DEC_WIDE: 0 wide groups always in 16-row tiles, 1 always in
                                                  the wide-group kernels' 32-row ones, else -1: the plan's rule */
    CUfunction dec_w2[2][CUDA_DEC_W2_KINDS];   /* decode in 2-warp blocks: [q type][CUDA_DEC_W2_*] */
    uint32_t   dec_w2_smem[CUDA_DEC_W2_KINDS];
    int        dec_c4;                         /* mma[1][t][1][1] is `_c4` (not ATTNRT_CUDA_DEC_CPS=0's kernel) */
    int        dec_w2_mode;                    /* ATTNRT_CUDA_DEC_W2: 0 never, 1 wherever the kernel has a twin, else
                                                  -1: the plan's rule */
    CUfunction dec_w8[2];                      /* 16-bit D 128 decode by tensor copies in 8-warp blocks: [q type] */
    uint32_t   dec_w8_smem;
    int        dec_w8_mode;                    /* ATTNRT_CUDA_DEC_W8: 0 never, 1 always, else -1: the plan's rule */
    int        dec_fp8_force;                  /* ATTNRT_CUDA_DEC_FP8_TILE: fp8 D 128 decode forced onto
                                                  CUDA_DEC_TMA_FP8_D128_T32 / _T16, or -1 (`_c4`); 0: the plan's pick */
    CUfunction prefill[2][CUDA_MMA_DIMS];      /* prefill fast path (cuda_prefill.c): [0 f16 / 1 bf16][d] */
    uint32_t   prefill_smem[CUDA_MMA_DIMS], prefill_threads[CUDA_MMA_DIMS]; /* of the kernel in prefill[][d] */
    CUfunction prefill_ws[2][CUDA_MMA_DIMS];   /* the warp-specialized wgmma prefill (tensor copies), or NULL */
    CUfunction prefill_ws_dec[2][CUDA_MMA_DIMS]; /* its decode form (`_dec`: key splits; the same shared memory) */
    uint32_t   prefill_ws_smem[CUDA_MMA_DIMS];
    CUfunction prefill_ws_fp8[2][2][CUDA_MMA_DIMS]; /* its fp8-cache form: [q type][0 e4m3 / 1 e5m2][d] */
    CUfunction prefill_ws_fp8_kd[2][CUDA_MMA_DIMS]; /* a bf16 Q's form reading K by e4m3 products (`_kd`, D 128 / 256):
                                                      [0 e4m3 / 1 e5m2][d]; the same shared memory */
    uint32_t   prefill_ws_fp8_smem[CUDA_MMA_DIMS];
    CUfunction prefill_ws_long[2];             /* D 64's long-item form (`_n192`: 192-key tiles; 16-bit caches): [q type] */
    uint32_t   prefill_ws_long_smem;
    int        prefill_tile_mode;              /* ATTNRT_CUDA_PREFILL_TILE: 128 (never the long form), 192 (wherever it runs),
                                                  else -1: the plan's rule by the keys an item reads */
    int        prefill_fp8k_mode;              /* ATTNRT_CUDA_PREFILL_FP8K: 0 `widen` (never `_kd`), 1 `direct` (wherever
                                                  it runs), else -1: the plan's rule by the keys an item reads */
    int        dec_ws_mode;                    /* ATTNRT_CUDA_DEC_WS: 0 never, 1 every decode batch it can take, else -1:
                                                  the plan's rule (decode on the warp-specialized prefill kernel) */
    int        prefill_ws_blocks;              /* ATTNRT_CUDA_PREFILL_BLOCKS: its grid at most (0: one block a SM); tests
                                                  make few blocks walk many items */
    int        prefill_ws_static;              /* ATTNRT_CUDA_PREFILL_SCHED=static: its block b takes items b, b + grid,
                                                  ... (an A/B switch) instead of the list's next when ready for one */
} cuda_kernels_t;

typedef struct cuda_dev {
    uint32_t       index;
    CUdevice       dev;
    CUcontext      ctx;        /* the device's primary context, retained until close */
    CUmodule       modules[CUDA_FAMILIES]; /* one per fatbin (cuda_module.c); [CUDA_FAMILY_SM90A] NULL off CC 9.0 */
    cuda_kernels_t k;
    int            sm_count, cc_major, cc_minor;
    int            force_simt; /* ATTNRT_CUDA_KERNELS=simt: every attention on the CUDA cores */
    int            max_splits; /* ATTNRT_CUDA_SPLITS=n caps split-KV (1: off); else CK_MAX_SPLITS */
    int            pdl;        /* a mixed batch's decode kernel may start in its prefill kernel's tail (programmatic
                                  dependent launch: CC 9.0+, a CUDA 12.3+ driver; ATTNRT_CUDA_PDL=0 turns it off) */
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

typedef struct cuda_event {
    CUevent event;
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

/* Module (cuda_module.c): loads the embedded fatbins into the current context and finds every kernel. */
attnrt_status_t cuda_module_load(cuda_dev_t *d);
/* The 4-warp decode kernel that twin CUDA_DEC_W2_* v of q type t stands in for (NULL: not loaded) */
CUfunction cuda_dec_w2_base(const cuda_dev_t *d, int t, int v);
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
attnrt_status_t cuda_attention_run(cuda_dev_t *d, const void *plan, const attnrt_attention_args_t *args,
                                   void *workspace, size_t workspace_bytes, void *stream);
attnrt_status_t cuda_merge_states(cuda_dev_t *d, const attnrt_merge_args_t *args, void *stream);

/* enum ck_dtype of a tensor dtype, -1 when the kernels do not know it. */
int cuda_ck_dtype(attnrt_dtype_t dt);
/* Bytes per element of an enum ck_dtype. */
int cuda_ck_size(int ck);

#endif /* ATTNRT_CUDA_INTERNAL_H */
