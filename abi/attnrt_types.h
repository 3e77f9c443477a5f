/*
 * attnrt_types.h — the types libattnrt's public API and its plugin ABI share: status codes, dtypes, device
 * properties, capability queries, tensors and every op's argument structs. Engines include attnrt.h (which
 * includes this); plugin vendors include attnrt_plugin.h (this plus the plugin vtable).
 *
 * Versioned structs
 * -----------------
 * Every struct that crosses the boundary starts with `struct_size`, set by whoever fills it to sizeof as
 * that side compiled it (the ATTNRT_*_INIT macros do it). Fields are only ever appended within a major
 * version. A reader uses the fields inside both its own sizeof and the given struct_size; fields beyond
 * the writer's struct_size read as zero. An input struct larger than the reader knows is accepted when
 * the bytes it does not know are zero, and refused (naming the struct) when they are not, so a newer
 * caller's option is never silently dropped.
 *
 * Zero means default
 * ------------------
 * In every input struct, a field left zero (or NULL) is "off" or "the default": no window, no soft-cap,
 * no sinks, scale 1/sqrt(head_dim), not causal. A struct from its ATTNRT_*_INIT macro (or zero-filled with
 * struct_size set) plus the required tensors computes plain attention; it never computes something else
 * silently. The few required scalars (MLA's scale) are refused when zero.
 */
#ifndef ATTNRT_TYPES_H
#define ATTNRT_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNRT_ABI_MAJOR 2
#define ATTNRT_ABI_MINOR 0

/* Size of `type` up to and including `last_field`: the struct_size of the version that ends there. */
#define ATTNRT_STRUCT_SIZE(type, last_field) \
    (offsetof(type, last_field) + sizeof(((type *)0)->last_field))

#if defined(__cplusplus)
#define ATTNRT_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define ATTNRT_ALIGNOF(type) alignof(type)
#else
#define ATTNRT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define ATTNRT_ALIGNOF(type) _Alignof(type)
#endif

/* An input struct with struct_size set and every other field zero (= off / default). C: a designated
 * initialiser (no -Wmissing-field-initializers warning); C++: value-initialised. */
#if defined(__cplusplus)
#define ATTNRT_STRUCT_INIT(type) {sizeof(type)}
#else
#define ATTNRT_STRUCT_INIT(type) {.struct_size = sizeof(type)}
#endif

/* Fails to compile when a field was appended after `last_field` without updating the size macro:
 * only tail padding may follow the last field. */
#define ATTNRT_CHECK_LAST_FIELD(type, last_field)                                              \
    ATTNRT_STATIC_ASSERT(sizeof(type) - ATTNRT_STRUCT_SIZE(type, last_field) < ATTNRT_ALIGNOF(type), \
                         #type ": a field follows " #last_field "; update its STRUCT_SIZE macro")

#if defined(_WIN32)
#define ATTNRT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ATTNRT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Status codes: 0 is success, every error is negative. attnrt_status_name() in the runtime names  */
/* them. A plugin returns these and keeps a message for attnrt_plugin_api_t.last_error.           */
/* ---------------------------------------------------------------------------------------------- */
typedef enum attnrt_status {
    ATTNRT_OK                   = 0,
    ATTNRT_ERR_INVALID_ARGUMENT = -1,  /* a bad pointer, size, shape, dtype, stride or index      */
    ATTNRT_ERR_UNSUPPORTED      = -2,  /* valid, but this plugin/device does not do it             */
    ATTNRT_ERR_OUT_OF_MEMORY    = -3,  /* host or device allocation failed                          */
    ATTNRT_ERR_NOT_FOUND        = -4,  /* no such plugin, device, file or symbol                    */
    ATTNRT_ERR_ABI_MISMATCH     = -5,  /* plugin built for another ABI major                        */
    ATTNRT_ERR_PLUGIN           = -6,  /* a plugin could not be loaded or broke its contract        */
    ATTNRT_ERR_NO_DEVICE        = -7,  /* driver or device absent (probe failed)                    */
    ATTNRT_ERR_DEVICE           = -8,  /* the device or its driver reported an error                */
    ATTNRT_ERR_BUSY             = -9,  /* the object is still in use (e.g. contexts open)           */
    ATTNRT_ERR_INTERNAL         = -10, /* a bug: please report it                                   */
} attnrt_status_t;

/* ---------------------------------------------------------------------------------------------- */
/* Data types: DLPack's DLDataTypeCode values, so a DLPack tensor maps onto ours without a table.   */
/* ---------------------------------------------------------------------------------------------- */
enum attnrt_dtype_code {
    ATTNRT_DTYPE_CODE_INT             = 0,  /* kDLInt            */
    ATTNRT_DTYPE_CODE_UINT            = 1,  /* kDLUInt           */
    ATTNRT_DTYPE_CODE_FLOAT           = 2,  /* kDLFloat (IEEE)   */
    ATTNRT_DTYPE_CODE_BFLOAT          = 4,  /* kDLBfloat         */
    ATTNRT_DTYPE_CODE_BOOL            = 6,  /* kDLBool (8 bits)  */
    ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN   = 10, /* kDLFloat8_e4m3fn (DLPack 1.1): max 448, no inf */
    ATTNRT_DTYPE_CODE_FLOAT8_E5M2     = 12, /* kDLFloat8_e5m2   (DLPack 1.1)                  */
};

/* DLPack's DLDataType: {code, bits, lanes}; lanes is always 1 here. */
typedef struct attnrt_dtype {
    uint8_t  code;
    uint8_t  bits;
    uint16_t lanes;
} attnrt_dtype_t;

#define ATTNRT_DTYPE_INIT(code_, bits_) {(uint8_t)(code_), (uint8_t)(bits_), 1}
#ifndef __cplusplus
#define ATTNRT_DTYPE(code_, bits_) ((attnrt_dtype_t)ATTNRT_DTYPE_INIT(code_, bits_))
#define ATTNRT_F32     ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT, 32)
#define ATTNRT_F16     ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT, 16)
#define ATTNRT_BF16    ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_BFLOAT, 16)
#define ATTNRT_FP8_E4M3 ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN, 8)
#define ATTNRT_FP8_E5M2 ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT8_E5M2, 8)
#define ATTNRT_I32     ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_INT, 32)
#define ATTNRT_I64     ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_INT, 64)
#define ATTNRT_U8      ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_UINT, 8)
#define ATTNRT_BOOL    ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_BOOL, 8)
#endif

/* DLPack DLDeviceType values for the device kinds a plugin reports. */
enum attnrt_device_type {
    ATTNRT_DEVICE_TYPE_CPU    = 1,  /* kDLCPU    */
    ATTNRT_DEVICE_TYPE_CUDA   = 2,  /* kDLCUDA   */
    ATTNRT_DEVICE_TYPE_ROCM   = 10, /* kDLROCM   */
    ATTNRT_DEVICE_TYPE_EXTDEV = 12, /* kDLExtDev: simulated and other accelerators */
    ATTNRT_DEVICE_TYPE_ONEAPI = 14, /* kDLOneAPI */
};

/* ---------------------------------------------------------------------------------------------- */
/* Devices                                                                                          */
/* ---------------------------------------------------------------------------------------------- */
#define ATTNRT_NAME_MAX 64

/* Filled by the plugin; the caller sets struct_size. All strings are NUL-terminated copies. */
typedef struct attnrt_device_properties {
    size_t   struct_size;
    char     name[ATTNRT_NAME_MAX];   /* stable "<plugin>:<index>", e.g. "cpu:0", "cuda:1"       */
    char     vendor[ATTNRT_NAME_MAX]; /* "GenuineIntel", "NVIDIA", "Rebellions (simulated)"      */
    char     model[ATTNRT_NAME_MAX];  /* marketing name: "NVIDIA H200", CPU model string          */
    char     arch[ATTNRT_NAME_MAX];   /* "x86_64", "sm_90", "gfx90a", "rbln-atom"                 */
    char     driver[ATTNRT_NAME_MAX]; /* driver / runtime version string, or "" when none         */
    uint32_t device_type;             /* enum attnrt_device_type                                  */
    uint32_t compute_units;           /* CPU cores, SMs, CUs, NPU engines                         */
    uint64_t memory_total;            /* bytes                                                    */
    uint64_t memory_free;             /* bytes, at the time of the call                           */
    uint32_t attribute_count;         /* key/value attributes readable by device_attribute        */
} attnrt_device_properties_t;
#define ATTNRT_DEVICE_PROPERTIES_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_device_properties_t, attribute_count)
ATTNRT_CHECK_LAST_FIELD(attnrt_device_properties_t, attribute_count);
#define ATTNRT_DEVICE_PROPERTIES_INIT ATTNRT_STRUCT_INIT(attnrt_device_properties_t)

#define ATTNRT_ATTR_KEY_MAX   64
#define ATTNRT_ATTR_VALUE_MAX 192

/* One key/value attribute for the long tail ("simd" = "avx512f,avx2", "cc" = "9.0"). Copies.
 * FROZEN for ABI major 1 (it is passed in arrays, whose stride struct_size cannot fix): never appended to. */
typedef struct attnrt_device_attribute {
    size_t struct_size;
    char   key[ATTNRT_ATTR_KEY_MAX];
    char   value[ATTNRT_ATTR_VALUE_MAX];
} attnrt_device_attribute_t;
#define ATTNRT_DEVICE_ATTRIBUTE_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_device_attribute_t, value)
ATTNRT_CHECK_LAST_FIELD(attnrt_device_attribute_t, value);
#define ATTNRT_DEVICE_ATTRIBUTE_INIT ATTNRT_STRUCT_INIT(attnrt_device_attribute_t)

/* ---------------------------------------------------------------------------------------------- */
/* Capability query: capabilities are data. The runtime and tools ask before they call.            */
/* ---------------------------------------------------------------------------------------------- */
typedef enum attnrt_op {
    ATTNRT_OP_KV_WRITE         = 1, /* write new K/V rows into the paged cache                    */
    ATTNRT_OP_PAGED_ATTENTION  = 2, /* varlen paged attention over mixed prefill/decode batches  */
    ATTNRT_OP_MERGE_STATES     = 3, /* merge partial (o, lse) states                             */
    ATTNRT_OP_CASCADE          = 4, /* shared-prefix + per-request suffix attention               */
    ATTNRT_OP_MLA              = 5, /* multi-head latent attention (dense / sparse)               */
    ATTNRT_OP_LIGHTNING        = 6, /* linear (lightning) attention with state slots              */
    ATTNRT_OP_GATED_DELTA      = 7, /* gated delta rule with state slots                          */
    ATTNRT_OP_COUNT_           = 8  /* one past the last; grows with minor versions               */
} attnrt_op_t;

/* The op's short name ("paged_attention"), "unknown" otherwise: one table for runtime, plugins and tools. */
static inline const char *attnrt_op_string(uint32_t op)
{
    static const char *const names[ATTNRT_OP_COUNT_] = {"unknown",   "kv_write", "paged_attention", "merge_states",
                                                        "cascade",   "mla",      "lightning",       "gated_delta"};
    return op < ATTNRT_OP_COUNT_ ? names[op] : "unknown";
}

/* Feature bits of a capability query. */
enum attnrt_feature {
    ATTNRT_FEATURE_CAUSAL         = 1u << 0,
    ATTNRT_FEATURE_SLIDING_WINDOW = 1u << 1,
    ATTNRT_FEATURE_SOFTCAP        = 1u << 2,
    ATTNRT_FEATURE_ALIBI          = 1u << 3,
    ATTNRT_FEATURE_SINKS          = 1u << 4,
    ATTNRT_FEATURE_LSE            = 1u << 5,
    ATTNRT_FEATURE_KV_SCALE_BLOCK = 1u << 6, /* fp8 scale per (block, KV head); else per tensor */
    ATTNRT_FEATURE_LAYOUT_HND     = 1u << 7, /* cache [blocks, Hkv, block_size, D]; else NHD     */
    ATTNRT_FEATURE_SPARSE         = 1u << 8, /* MLA sparse (indices)                             */
};

/* One combination to ask about. Zero means "any / not relevant" for every numeric field. */
typedef struct attnrt_op_query {
    size_t         struct_size;
    uint32_t       op;          /* attnrt_op_t                                   */
    attnrt_dtype_t q_dtype;     /* query / output dtype                          */
    attnrt_dtype_t kv_dtype;    /* cache dtype                                   */
    uint32_t       head_dim_qk;
    uint32_t       head_dim_v;
    uint32_t       block_size;
    uint32_t       num_q_heads;
    uint32_t       num_kv_heads;
    uint32_t       features;    /* enum attnrt_feature bits                      */
} attnrt_op_query_t;
#define ATTNRT_OP_QUERY_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_op_query_t, features)
ATTNRT_CHECK_LAST_FIELD(attnrt_op_query_t, features);
#define ATTNRT_OP_QUERY_INIT ATTNRT_STRUCT_INIT(attnrt_op_query_t)

/* ---------------------------------------------------------------------------------------------- */
/* Tensors: DLPack-style      descriptors. Strides are in elements; a stride of 0 broadcasts.      */
/* ---------------------------------------------------------------------------------------------- */
#define ATTNRT_MAX_DIMS 6

typedef struct attnrt_tensor {
    size_t         struct_size;
    void          *data;                     /* borrowed device memory of the op's device; may be NULL
                                                in a plan call (only shapes and dtypes are read there)  */
    attnrt_dtype_t dtype;
    int32_t        ndim;
    int64_t        shape[ATTNRT_MAX_DIMS];
    int64_t        strides[ATTNRT_MAX_DIMS]; /* elements, >= 0                                        */
} attnrt_tensor_t;
#define ATTNRT_TENSOR_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_tensor_t, strides)
ATTNRT_CHECK_LAST_FIELD(attnrt_tensor_t, strides);
#define ATTNRT_TENSOR_INIT ATTNRT_STRUCT_INIT(attnrt_tensor_t)

/* ---------------------------------------------------------------------------------------------- */
/* Op arguments. The same       structs serve the public API and the plugin ABI. Tensor pointers   */
/* are borrowed for the call; an optional tensor is NULL when absent. Paged caches are 4-D tensors  */
/* of logical shape [num_blocks, block_size, num_kv_heads, head_dim]: NHD or HND is only a matter   */
/* of strides. The innermost (head_dim) stride of q, k, v, out and the caches is 1.                 */
/* By the time a plugin sees them the runtime has checked every shape, dtype, stride and index.    */
/* ---------------------------------------------------------------------------------------------- */

/* Writes new K/V rows into the paged caches; fp8 caches quantise on write (stored = sat(x / scale)). */
typedef struct attnrt_kv_write_args {
    size_t                 struct_size;
    const attnrt_tensor_t *key;               /* [T, Hkv, Dk]  f32 / f16 / bf16                    */
    const attnrt_tensor_t *value;             /* [T, Hkv, Dv]  same dtype as key                   */
    const attnrt_tensor_t *slot_mapping;      /* [T] int64: block * block_size + row; < 0 skipped  */
    const attnrt_tensor_t *key_cache;         /* [num_blocks, block_size, Hkv, Dk]                 */
    const attnrt_tensor_t *value_cache;       /* [num_blocks, block_size, Hkv, Dv]; same dtype     */
    const attnrt_tensor_t *key_scale;         /* fp8 caches only: f32 [1] (per tensor) or
                                                 [num_blocks, Hkv] (per block and KV head)          */
    const attnrt_tensor_t *value_scale;       /* like key_scale                                    */
    const int64_t         *slot_mapping_host; /* (optional) host copy of slot_mapping [T]: when given
                                                 the runtime checks every slot before dispatch. Plugins
                                                 skip out-of-range slots either way.                 */
} attnrt_kv_write_args_t;
#define ATTNRT_KV_WRITE_ARGS_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_kv_write_args_t, slot_mapping_host)
ATTNRT_CHECK_LAST_FIELD(attnrt_kv_write_args_t, slot_mapping_host);
#define ATTNRT_KV_WRITE_ARGS_INIT ATTNRT_STRUCT_INIT(attnrt_kv_write_args_t)

/* Paged varlen attention over a mixed prefill/decode batch (SEMANTICS.md). */
typedef struct attnrt_attention_args {
    size_t                 struct_size;
    const attnrt_tensor_t *query;           /* [T, Hq, Dqk] f32 / f16 / bf16                       */
    const attnrt_tensor_t *key_cache;       /* [num_blocks, block_size, Hkv, Dqk]                  */
    const attnrt_tensor_t *value_cache;     /* [num_blocks, block_size, Hkv, Dv]; same dtype as K  */
    const attnrt_tensor_t *block_table;     /* [B, max_blocks_per_seq] int32                       */
    const attnrt_tensor_t *query_start_loc; /* [B + 1] int32, cumulative query lengths             */
    const attnrt_tensor_t *seq_lens;        /* [B] int32, KV length including the new tokens       */
    const attnrt_tensor_t *out;             /* [T, Hq, Dv], dtype of query or f32                  */
    const attnrt_tensor_t *lse;             /* (optional) [T, Hq] f32, natural log, sinks excluded */
    const attnrt_tensor_t *alibi_slopes;    /* (optional) [Hq] f32                                 */
    const attnrt_tensor_t *sinks;           /* (optional) [Hq] f32 raw logits                      */
    const attnrt_tensor_t *key_scale;       /* fp8 caches only, as in attnrt_kv_write_args_t       */
    const attnrt_tensor_t *value_scale;
    float                  scale;           /* 0: 1 / sqrt(Dqk)                                     */
    float                  softcap;         /* 0: off                                               */
    int32_t                causal;          /* 1: bottom-right causal; 0: none (then seq_len may be
                                               shorter than the query length: cross-attention)      */
    int32_t                sliding_window_left;  /* 0: unlimited; W > 0: a query at position p sees keys
                                               at positions > p - W (W keys ending at its own: HF's
                                               and vLLM's sliding_window W; FlashAttention's
                                               window_size_left = W - 1)                           */
    int32_t                sliding_window_right; /* 0: unlimited; W > 0: keys at positions < p + W
                                               (FlashAttention's window_size_right = W - 1)        */
} attnrt_attention_args_t;
#define ATTNRT_ATTENTION_ARGS_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_attention_args_t, sliding_window_right)
ATTNRT_CHECK_LAST_FIELD(attnrt_attention_args_t, sliding_window_right);
#define ATTNRT_ATTENTION_ARGS_INIT ATTNRT_STRUCT_INIT(attnrt_attention_args_t)

/* The batch metadata on the host, read once per step by plan (all borrowed for the plan call). */
typedef struct attnrt_batch_host {
    size_t         struct_size;
    int32_t        num_seqs;           /* B                                                     */
    const int32_t *query_start_loc;    /* [B + 1]                                               */
    const int32_t *seq_lens;           /* [B]                                                   */
    const int32_t *block_table;        /* row b starts at block_table + b * block_table_stride  */
    int64_t        block_table_stride; /* elements between rows; 0 shares one row              */
} attnrt_batch_host_t;
#define ATTNRT_BATCH_HOST_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_batch_host_t, block_table_stride)
ATTNRT_CHECK_LAST_FIELD(attnrt_batch_host_t, block_table_stride);
#define ATTNRT_BATCH_HOST_INIT ATTNRT_STRUCT_INIT(attnrt_batch_host_t)

/* A capacity plan's bounds (attnrt_attention_plan_capacity): the plan serves any batch within them, so a
 * run captured once in a graph replays every later batch after attnrt_plan_update. Zero: not bounded by
 * this field beyond what the args' tensor shapes already bound. */
typedef struct attnrt_capacity {
    size_t  struct_size;
    int32_t max_seqs;           /* requests a batch; 0: block_table's dim 0                       */
    int32_t max_blocks_per_seq; /* 0: block_table's dim 1                                          */
    int64_t max_tokens;         /* query tokens a batch; 0: query's dim 0                         */
    int64_t max_seq_len;        /* keys a request; 0: max_blocks_per_seq x block_size              */
} attnrt_capacity_t;
#define ATTNRT_CAPACITY_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_capacity_t, max_seq_len)
ATTNRT_CHECK_LAST_FIELD(attnrt_capacity_t, max_seq_len);
#define ATTNRT_CAPACITY_INIT ATTNRT_STRUCT_INIT(attnrt_capacity_t)

/* n-way merge of partial attention states (SEMANTICS.md "Merging partial states"). */
typedef struct attnrt_merge_args {
    size_t                        struct_size;
    uint32_t                      num_states; /* >= 1                                              */
    const attnrt_tensor_t *const *states;     /* num_states tensors [T, H, D] (f32 / f16 / bf16)   */
    const attnrt_tensor_t *const *lses;       /* num_states tensors [T, H] f32                      */
    const attnrt_tensor_t        *out;        /* [T, H, D]                                          */
    const attnrt_tensor_t        *out_lse;    /* (optional) [T, H] f32; sinks excluded              */
    const attnrt_tensor_t        *sinks;      /* (optional) [H] f32, applied once after the merge   */
} attnrt_merge_args_t;
#define ATTNRT_MERGE_ARGS_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_merge_args_t, sinks)
ATTNRT_CHECK_LAST_FIELD(attnrt_merge_args_t, sinks);
#define ATTNRT_MERGE_ARGS_INIT ATTNRT_STRUCT_INIT(attnrt_merge_args_t)

/* ---------------------------------------------------------------------------------------------- */
/* MLA, linear attention and gated delta net. Batch       metadata on the host comes in the same   */
/* attnrt_batch_host_t as paged attention (block_table unused for the linear ops) plus, for the     */
/* state ops, attnrt_state_host_t. State pools are tensors [num_slots, ...] the runtime owns.      */
/* ---------------------------------------------------------------------------------------------- */

/* Multi-head latent attention over a latent cache (SEMANTICS.md "MLA"). */
typedef struct attnrt_mla_args {
    size_t                 struct_size;
    const attnrt_tensor_t *query;           /* [T, Hq, kv_dim] (absorbed), f32 / f16 / bf16          */
    const attnrt_tensor_t *kv_cache;        /* [num_blocks, block_size, 1, kv_dim], e.g. 576          */
    const attnrt_tensor_t *block_table;     /* [B, max_blocks_per_seq] int32                          */
    const attnrt_tensor_t *query_start_loc; /* [B + 1] int32                                          */
    const attnrt_tensor_t *seq_lens;        /* [B] int32                                              */
    const attnrt_tensor_t *out;             /* [T, Hq, v_dim] (v_dim <= kv_dim, e.g. 512)             */
    const attnrt_tensor_t *lse;             /* (optional) [T, Hq] f32                                 */
    const attnrt_tensor_t *sinks;           /* (optional) [Hq] f32                                    */
    const attnrt_tensor_t *kv_scale;        /* fp8 caches: f32 [1] or [num_blocks, 1] (a device may
                                               accept fp8 for sparse MLA only: op_supported says)   */
    const attnrt_tensor_t *indices;         /* (optional) sparse: [T, topk] int32 absolute key
                                               positions, -1 unused; NULL = dense                     */
    const int32_t         *indices_host;    /* (optional) host copy of indices, row stride topk: the
                                               runtime checks each against seq_len; plugins skip
                                               indices outside [0, seq_len) either way              */
    float                  scale;           /* required (> 0): models need 1/sqrt(192) * mscale       */
    int32_t                causal;          /* dense only: bottom-right causal                        */
} attnrt_mla_args_t;
#define ATTNRT_MLA_ARGS_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_mla_args_t, causal)
ATTNRT_CHECK_LAST_FIELD(attnrt_mla_args_t, causal);
#define ATTNRT_MLA_ARGS_INIT ATTNRT_STRUCT_INIT(attnrt_mla_args_t)

/* Host copies of the per-request state metadata, read by plan (borrowed for the call). */
typedef struct attnrt_state_host {
    size_t         struct_size;
    const int32_t *state_indices;      /* [B]; -1 = padding row                                 */
    const uint8_t *has_initial_state;  /* [B] 0/1 (required: 0 starts from a zero state)       */
    const int32_t *spec_state_indices; /* (GDN, optional) [B, num_spec + 1], row stride num_spec+1 */
    const int32_t *num_accepted;       /* (GDN, with spec) [B], >= 1                             */
    int32_t        num_spec;           /* draft tokens per request (spec decoding), else 0       */
} attnrt_state_host_t;
#define ATTNRT_STATE_HOST_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_state_host_t, num_spec)
ATTNRT_CHECK_LAST_FIELD(attnrt_state_host_t, num_spec);
#define ATTNRT_STATE_HOST_INIT ATTNRT_STRUCT_INIT(attnrt_state_host_t)

/* Lightning (linear) attention with per-head decay exp(-slope_h); SEMANTICS.md. */
typedef struct attnrt_lightning_args {
    size_t                 struct_size;
    const attnrt_tensor_t *query;             /* [T, H, Dk] f32 / f16 / bf16                         */
    const attnrt_tensor_t *key;               /* [T, H, Dk]                                          */
    const attnrt_tensor_t *value;             /* [T, H, Dv]                                          */
    const attnrt_tensor_t *out;               /* [T, H, Dv]                                          */
    const attnrt_tensor_t *slopes;            /* [H] f32                                             */
    const attnrt_tensor_t *state;             /* the pool: [num_slots, H, Dk, Dv] f32, read+written  */
    const attnrt_tensor_t *query_start_loc;   /* [B + 1] int32                                       */
    const attnrt_tensor_t *state_indices;     /* [B] int32, -1 = padding                             */
    const attnrt_tensor_t *has_initial_state; /* [B] bool / uint8: 0 starts from a zero state       */
} attnrt_lightning_args_t;
#define ATTNRT_LIGHTNING_ARGS_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_lightning_args_t, has_initial_state)
ATTNRT_CHECK_LAST_FIELD(attnrt_lightning_args_t, has_initial_state);
#define ATTNRT_LIGHTNING_ARGS_INIT ATTNRT_STRUCT_INIT(attnrt_lightning_args_t)

/* Gated delta rule (Qwen3-Next / Kimi-style GDN); SEMANTICS.md. */
typedef struct attnrt_gated_delta_args {
    size_t                 struct_size;
    const attnrt_tensor_t *query;              /* [T, H, Dk] f32 / f16 / bf16                        */
    const attnrt_tensor_t *key;                /* [T, H, Dk]                                         */
    const attnrt_tensor_t *value;              /* [T, HV, Dv], HV % H == 0                            */
    const attnrt_tensor_t *g;                  /* [T, HV] log decay, f32 or query's dtype             */
    const attnrt_tensor_t *beta;               /* [T, HV] f32 or query's dtype                       */
    const attnrt_tensor_t *out;                /* [T, HV, Dv]                                        */
    const attnrt_tensor_t *state;              /* the pool: [num_slots, HV, Dk, Dv] f32              */
    const attnrt_tensor_t *query_start_loc;    /* [B + 1] int32                                      */
    const attnrt_tensor_t *state_indices;      /* [B] int32, -1 = padding (ignored with spec)        */
    const attnrt_tensor_t *has_initial_state;  /* [B] bool / uint8                                    */
    const attnrt_tensor_t *spec_state_indices; /* (optional) [B, num_spec + 1] int32                  */
    const attnrt_tensor_t *num_accepted;       /* (with spec) [B] int32                               */
    float                  scale;              /* 0: Dk^-1/2                                         */
    int32_t                use_l2norm;         /* 1: L2-normalise q and k first                      */
} attnrt_gated_delta_args_t;
#define ATTNRT_GATED_DELTA_ARGS_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_gated_delta_args_t, use_l2norm)
ATTNRT_CHECK_LAST_FIELD(attnrt_gated_delta_args_t, use_l2norm);
#define ATTNRT_GATED_DELTA_ARGS_INIT ATTNRT_STRUCT_INIT(attnrt_gated_delta_args_t)

/* ---------------------------------------------------------------------------------------------- */
/* Kernel selection: "which kernel, which partition, or which rule fails" before an engine    */
/* configures itself. Devices with rules (npu_sim) answer with the vendor's own wording.            */
/* ---------------------------------------------------------------------------------------------- */
enum attnrt_front_end {
    ATTNRT_FRONT_END_DEFAULT  = 0, /* the device's usual path                                     */
    ATTNRT_FRONT_END_VLLM     = 1, /* a vLLM-style model path                                      */
    ATTNRT_FRONT_END_COMPILED = 2, /* a compiled (optimum-style) model path                        */
};

enum attnrt_layer_kind {
    ATTNRT_LAYER_FULL       = 0, /* full attention                                                 */
    ATTNRT_LAYER_SLIDING    = 1, /* sliding-window attention                                       */
    ATTNRT_LAYER_MLA_DENSE  = 2,
    ATTNRT_LAYER_MLA_SPARSE = 3,
};

enum attnrt_model_kind {
    ATTNRT_MODEL_DECODER         = 0, /* a decoder (causal LM)                                     */
    ATTNRT_MODEL_POOLING         = 1, /* a pooling (embedding / scoring) model                     */
    ATTNRT_MODEL_POOLING_QWEN3   = 2, /* a pooling model on a Qwen3 backbone                       */
    ATTNRT_MODEL_ENCODER_DECODER = 3, /* an encoder-decoder model (e.g. Whisper)                   */
};

typedef struct attnrt_attention_config {
    size_t         struct_size;
    uint32_t       front_end;      /* enum attnrt_front_end                                        */
    uint32_t       layer_kind;     /* enum attnrt_layer_kind                                       */
    char           attn_impl[32];  /* "" = default; "eager" / "flash_attn" (or "naive" / "flash")  */
    int64_t        max_model_len;  /* max_seq_len                                                  */
    int64_t        block_size;     /* 0 = default                                                  */
    int64_t        partition_len;  /* kvcache_partition_len; 0 = default                           */
    int64_t        prefill_chunk;  /* 0 = default                                                  */
    int64_t        sliding_window; /* window size in tokens (sliding layers); 0 = none             */
    uint32_t       head_dim;
    uint32_t       has_sinks;
    attnrt_dtype_t kv_dtype;       /* {0, 0, 0} = the activation dtype                             */
    uint32_t       model_kind;     /* enum attnrt_model_kind; 0 = a decoder                        */
} attnrt_attention_config_t;
#define ATTNRT_ATTENTION_CONFIG_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_attention_config_t, model_kind)
ATTNRT_CHECK_LAST_FIELD(attnrt_attention_config_t, model_kind);
#define ATTNRT_ATTENTION_CONFIG_INIT ATTNRT_STRUCT_INIT(attnrt_attention_config_t)

typedef struct attnrt_attention_selection {
    size_t  struct_size;
    char    kernel[32];     /* "flash", "naive", "paged", ...                                        */
    int64_t block_size;     /* what the device will use                                              */
    int64_t partition_len;  /* 0 when the kernel does not partition                                  */
    int64_t num_partitions; /* per request at max_model_len                                          */
    int64_t prefill_chunk;
    char    notes[256];     /* warnings and defaults applied, "" when none                           */
} attnrt_attention_selection_t;
#define ATTNRT_ATTENTION_SELECTION_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_attention_selection_t, notes)
ATTNRT_CHECK_LAST_FIELD(attnrt_attention_selection_t, notes);
#define ATTNRT_ATTENTION_SELECTION_INIT ATTNRT_STRUCT_INIT(attnrt_attention_selection_t)

/* ---------------------------------------------------------------------------------------------- */
/* Per-op counters: what the last op on a device cost, measured or simulated.                */
/* ---------------------------------------------------------------------------------------------- */
typedef struct attnrt_op_stats {
    size_t   struct_size;
    uint32_t op;               /* attnrt_op_t of the last op run on the device; 0 = none yet       */
    uint32_t simulated;        /* 1: time_us comes from a cost model, not a clock                  */
    double   time_us;
    uint64_t bytes_moved;      /* device memory read + written                                     */
    uint64_t flops;
    uint64_t partitions;       /* KV partitions touched (partitioned kernels)                      */
    uint64_t padded_rows;      /* batch rows added to reach a compiled bucket                      */
    uint64_t padding_tokens;   /* tokens computed but discarded (chunk / bucket padding)           */
    uint64_t launches;         /* kernel launches                                                  */
} attnrt_op_stats_t;
#define ATTNRT_OP_STATS_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_op_stats_t, launches)
ATTNRT_CHECK_LAST_FIELD(attnrt_op_stats_t, launches);
#define ATTNRT_OP_STATS_INIT ATTNRT_STRUCT_INIT(attnrt_op_stats_t)


/* ---------------------------------------------------------------------------------------------- */
/* Logging levels (attnrt_log_set_level, the host API's log).                                       */
/* ---------------------------------------------------------------------------------------------- */
enum attnrt_log_level {
    ATTNRT_LOG_ERROR = 0,
    ATTNRT_LOG_WARN  = 1,
    ATTNRT_LOG_INFO  = 2,
    ATTNRT_LOG_DEBUG = 3,
};

#ifdef __cplusplus
}
#endif

#endif /* ATTNRT_TYPES_H */
