/* npu_profile.h — the simulated devices: one record per Rebellions NPU family with the limits the
 * vendor's stack enforces and the figures the cost model uses. [S] = a vendor fact (docs, optimum-rbln,
 * vllm-rbln; see docs/backends/npu_sim.md), [P] = our proposal or calibration guess. */
#ifndef ATTNRT_NPU_PROFILE_H
#define ATTNRT_NPU_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"

/* Decode batches are padded up to a power of two no larger than this [P]. */
#define NPU_DECODE_BUCKET_MAX 256
/* Kernel head dims are padded to a multiple of this [S: optimum-rbln align(head_dim, 64)]. */
#define NPU_HEAD_DIM_ALIGN 64
/* Prefill chunks are a positive multiple of this [S]. */
#define NPU_PREFILL_CHUNK_ALIGN 64

typedef struct npu_profile {
    const char *name;                   /* "rbln-atom": the device arch and the profile key          */
    const char *family;                 /* "ATOM" / "Rebel100": used in messages                     */
    const char *model;                  /* device model string                                       */
    const char *memory_kind;            /* "GDDR6" / "HBM3E"                                          */
    int64_t     eager_max_seq_len;      /* [S] naive (eager) max_seq_len                              */
    int64_t     flash_partition_min;    /* [S] flash kvcache_partition_len range, compiled path       */
    int64_t     flash_partition_max;
    int64_t     flash_default_partition;/* [S]                                                       */
    int64_t     default_prefill_chunk;  /* [S]                                                       */
    int64_t     vllm_block_min;         /* vLLM model path block_size range (powers of two)          */
    int64_t     vllm_block_max;
    int         vllm_range_documented;  /* 1: [S] from the docs; 0: [P] borrowed from the compiled path */
    int64_t     sliding_window_base;    /* [S] max sliding window = base - prefill chunk              */
    uint64_t    memory_physical;        /* [S] bytes                                                  */
    uint64_t    memory_reserved;        /* [S] bytes the runtime keeps                                */
    uint32_t    compute_units;          /* [S] neural engines (ATOM) / chiplets (Rebel100)            */
    uint64_t    sram_bytes;             /* [S] on-chip SRAM; 0 = not published                        */
    double      peak_flops_fp16;        /* [S, vendor claim] FLOP/s                                   */
    double      peak_flops_fp8;         /* [S, vendor claim] FLOP/s; 0 = no fp8 compute               */
    double      dram_bw_eff;            /* [P] effective bytes/s                                      */
    double      partition_overhead_us;  /* [P] per KV partition a row visits                          */
    double      launch_overhead_us;     /* [P] per kernel launch                                      */
} npu_profile_t;

/* The profile named `name` ("rbln-atom", "rbln-rebel100"), or NULL. */
const npu_profile_t *npu_profile_find(const char *name);
/* The profile used when nothing chooses one. */
const npu_profile_t *npu_profile_default(void);
/* "rbln-atom, rbln-rebel100": for messages. */
const char *npu_profile_names(void);
/* Usable device memory: physical minus reserved. */
uint64_t npu_profile_budget(const npu_profile_t *p);
/* Largest sliding window the compiled stack accepts with this prefill chunk [S]. */
int64_t npu_profile_window_max(const npu_profile_t *p, int64_t prefill_chunk);

/* The profile from ATTNRT_NPU_PROFILE (read with secure_getenv): the default when unset or empty;
 * ATTNRT_ERR_INVALID_ARGUMENT naming the value and the known profiles otherwise. */
attnrt_status_t npu_profile_from_env(const npu_profile_t **out);

/* The device's key/value attributes: its limits and cost-model constants, as the profile, front end
 * and prefill chunk of an opened device (or the defaults) give them. */
uint32_t        npu_attribute_count(void);
attnrt_status_t npu_attribute_fill(const npu_profile_t *p, uint32_t front_end, int64_t prefill_chunk, uint32_t i,
                                   attnrt_device_attribute_t *attr);

#endif
