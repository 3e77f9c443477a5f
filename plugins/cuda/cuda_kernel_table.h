/* cuda_kernel_table.h — every kernel the cuda plugin loads, in one table (cuda_kernel_table.c), and the one function
 * that picks a paged-attention plan's kernels from it. docs/backends/cuda.md's kernel map mirrors the table.
 * Internal to the cuda plugin. */
#ifndef CK_CUDA_KERNEL_TABLE_H
#define CK_CUDA_KERNEL_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "cuda_driver.h"

struct cuda_dev;
struct cuda_select;

/* The rows, in table order: within a role, the first row whose kernel is loaded for the call and whose rule holds
 * serves (cuda_kernel_select), so each fast form stands before the kernel it stands in for. */
typedef enum cuda_kernel_id {
    /* what a prefill tile runs on (the tiles of requests of more than one token, unless they fit a decode tile) */
    CK_K_PREFILL_WG,        /* wgmma, 128 rows (sm_90a) */
    CK_K_PREFILL_FA2,       /* mma.sync, 128 rows (where the wgmma kernel is not loaded) */
    CK_K_PREFILL,           /* the general tensor-core kernel, 64 rows */
    /* the persistent kernel that walks a batch's prefill items in place of the prefill role's (its fallback) */
    CK_K_PREFILL_WS_FP8_KD, /* fp8 cache, bf16 Q, K read by e4m3 products */
    CK_K_PREFILL_WS_FP8,    /* fp8 cache, widened by the producer */
    CK_K_PREFILL_WS_N192,   /* D 64, 192-key tiles */
    CK_K_PREFILL_WS,        /* 16-bit cache */
    /* what a decode tile runs on (a row tile of at most 16 rows, or every token of a one-token request) */
    CK_K_DECODE_WS,         /* pure decode batches of wide groups on the persistent prefill kernel, in key splits */
    CK_K_DECODE_WIDE_TMA,   /* 32-row tiles of one token's heads, tensor copies */
    CK_K_DECODE_WIDE,       /* 32-row tiles */
    CK_K_DECODE_TMA_W8,     /* 16-bit D 128, tensor copies, 8 warps */
    CK_K_DECODE_T32_W2,     /* fp8 D 128, tensor copies, 32-key tiles, 2 warps */
    CK_K_DECODE_T32,        /* fp8 D 128, tensor copies, 32-key tiles */
    CK_K_DECODE_T16,        /* fp8 D 128, tensor copies, 16-key tiles */
    CK_K_DECODE_TMA_W2,     /* fp8 D 64, tensor copies, 2 warps */
    CK_K_DECODE_W2,         /* fp8 D 128, cp.async, 2 warps */
    CK_K_DECODE_L2W,        /* fp8 D 64, cp.async with 256-byte L2 fetches */
    CK_K_DECODE_TMA,        /* D 64 and 16-bit D 128 / 256, tensor copies */
    CK_K_DECODE,            /* the general decode kernel */
    /* every attention the tensor-core rows do not take */
    CK_K_SIMT,
    /* the other ops' kernels (loaded by their plans, or once at device open: kv_write, merge_states) */
    CK_K_KV_WRITE,
    CK_K_MERGE,
    CK_K_MLA_WG,
    CK_K_MLA_MMA,
    CK_K_MLA_SIMT,
    CK_K_MLA_MERGE,
    CK_K_LIN_DECODE,
    CK_K_LIN,
    CK_KERNELS
} cuda_kernel_id_t;

/* What a row computes for the attention plan */
enum {
    CK_ROLE_PREFILL,    /* a prefill tile's kernel */
    CK_ROLE_PREFILL_WS, /* the persistent kernel over the prefill items */
    CK_ROLE_DECODE,     /* a decode tile's kernel */
    CK_ROLE_OP          /* another op's (no plan choice here) */
};

/* Where a row's kernel loads: the device's compute capability as the plugin takes it (cuda_dev_t.cc_major / minor) */
enum {
    CK_ARCH_ANY,   /* every device */
    CK_ARCH_SM80,  /* 8.0 and newer (cp.async, bf16 mma.sync) */
    CK_ARCH_TMA,   /* 9.0 and newer with a driver that encodes tensor maps */
    CK_ARCH_SM90A  /* 9.0 only: the sm_90a fatbin (wgmma, setmaxnreg) */
};

/* A kernel's cache forms (cuda_kernel_t.kv; its kernels' second index): the query's 16-bit type (kv16) and fp8 in one
 * kernel each, or e4m3 and e5m2 in one each */
enum { CK_KV_16_FP8, CK_KV_E4M3_E5M2 };

typedef struct cuda_kernel {
    cuda_kernel_id_t id;
    const char      *name;     /* its name, {q} {kv} {d} standing for the query type, cache form and head dim */
    int              family;   /* CUDA_FAMILY_*: its fatbin */
    int              role;     /* CK_ROLE_* */
    int              arch;     /* CK_ARCH_* */
    unsigned         q;        /* query types: bit 0 f16, bit 1 bf16 (0: no {q}) */
    int              kv;       /* CK_KV_* */
    unsigned         dims[2];  /* head dims of each cache form: bits 0, 1, 2 for 64, 128, 256 (0: none; both 0: no {d}) */
    int              exact_d;  /* 1: Dqk = Dv = the dim; 0: any dims up to it (multiples of 8, 16 for fp8) */
    int              rows;     /* tile: query rows of a block's item (0: not an attention tile) */
    const char      *tile;     /* the rest of its tile, in words: keys a tile, warps a block, blocks an SM */
    int              warps;    /* warps a block (the launch's threads / 32; 0: CK_PF_WARPS(d), the FA2 kernel's) */
    int              at_open;  /* 1: cuda_kernel_table_load loads it when the device opens; 0: its op's plan does */
    int              needs;    /* loaded only beside row `needs`' kernel of the same query type, cache form (or its 16-bit
                                  form) and head dim; -1: none */
    int              unless;   /* loaded only where row `unless` has no kernel of that head dim; -1: none */
    int              fallback; /* tensor copies: the row the run launches where it cannot encode the maps; -1: none */
    /* dynamic shared memory of the kernel of head dim d over an fp8 (fp8 = 1) or 16-bit cache */
    uint32_t (*smem)(int d, int fp8);
    int              box_keys; /* tensor copies: a box's rows at most (a warp's keys a tile; 0: CK_DEC_KPW(d, fp8)); -1: none */
    /* the plan's rule: whether this row serves the call of *s (cuda_kernel_select tries the role's rows in order) */
    int (*rule)(const struct cuda_dev *d, struct cuda_select *s);
    const char *serves; /* the rule in words */
} cuda_kernel_t;

/* The table, CK_KERNELS rows indexed by cuda_kernel_id_t */
extern const cuda_kernel_t cuda_kernel_table[CK_KERNELS];

/* Kernels of a loaded row: [query type][cache form][head dim] (a row without {q} / {kv} / {d} at index 0) */
typedef struct cuda_kernel_fns {
    CUfunction f[2][2][3];
    uint32_t   smem[2][3]; /* [cache form][head dim] */
} cuda_kernel_fns_t;

/* What the attention plan knows when it asks (cuda_select_init fills the call's part; the plan the rest as it goes) */
typedef struct cuda_select {
    const attnrt_attention_args_t *a;
    int     t;               /* query type: 0 f16, 1 bf16 (the tensor-core kernels') */
    int     fp8, e5m2;       /* the cache is fp8; e5m2 */
    int     form;            /* the cache form's index in a 16-bit / fp8 row: 0 16-bit, 1 fp8 */
    int     di;              /* head dim index of max(Dqk, Dv) padded to 64 / 128 / 256 (-1: over 256) */
    int64_t dqk, dv, group, num_kv_heads, block_size;
    int     box_rows;        /* the caches' block size's largest power-of-two factor where K and V share it, else 0 */
    int     nhd;             /* the key cache holds a token's heads side by side */
    /* the batch */
    int64_t num_seqs, one_token; /* requests; those of exactly one query token */
    int     all_decode;      /* every request has at most one query token (and there is one) */
    /* decided: the rows picked so far (-1: none yet) */
    int     prefill, prefill_ws, decode;
    /* set once the plan has cut the decode tiles (split = 1): the base decode row's split */
    int     split;
    int64_t resident;        /* blocks of the decode row (or the persistent grid) the device holds at once */
    int64_t longest, dec_tiles, chunk, blocks; /* key tiles of the longest decode tile; decode tiles; key tiles a split; blocks */
    /* the plan's split model for a kernel holding `resident` blocks at once: key tiles a split, *blocks its blocks (a
     * rule that weighs another split asks it: CK_K_DECODE_TMA_W8) */
    int64_t (*split_for)(const struct cuda_select *s, int64_t resident, int64_t *blocks);
    const void *plan_tiles;  /* for split_for */
    size_t  n_tiles;
    int64_t n_prefill, prefill_keys; /* prefill items; the keys they read, all together */
} cuda_select_t;

/* The rows' kernels into the device (cuda_module.c loads the fatbins first): every row of role prefill / decode and
 * the device-wide ones, where the device and the row's needs / unless allow and its shared memory fits */
attnrt_status_t cuda_kernel_table_load(struct cuda_dev *d);
/* The name of row r's kernel for query type t, cache form c and head dim index di into buf */
void cuda_kernel_name(const cuda_kernel_t *r, int t, int c, int di, char *buf, size_t cap);
/* The call's part of *s (the tensor-core kernels' view: query type, cache form, head dims, block layout) and the
 * batch's request counts; every row -1 */
void cuda_select_init(const struct cuda_dev *d, const attnrt_attention_args_t *a, const attnrt_batch_host_t *batch,
                      cuda_select_t *s);
/* The one place the attention plan's kernels are chosen: the first row of `role`, in table order, whose kernel the
 * device has for the call and whose rule holds (CK_K_SIMT for CK_ROLE_PREFILL where no tensor-core row does; -1 for
 * the other roles where none does). A rule may refine s (CK_K_DECODE_TMA_W8 lengthens s->chunk). */
int cuda_kernel_select(const struct cuda_dev *d, int role, cuda_select_t *s);
/* Row r's kernel for the call of *s (NULL: not loaded), its shared memory and threads */
CUfunction cuda_kernel_fn(const struct cuda_dev *d, int r, const cuda_select_t *s);
uint32_t cuda_kernel_smem(const struct cuda_dev *d, int r, const cuda_select_t *s);
uint32_t cuda_kernel_threads(int r, const cuda_select_t *s);
/* Tensor-copy row r: the rows of its boxes for the call's cache (0: not a tensor-copy row) */
int cuda_kernel_box_rows(int r, const cuda_select_t *s);
/* Blocks of row r's kernel the device holds at once (SMs x the driver's occupancy; 0 where it cannot say) */
int64_t cuda_kernel_resident(const struct cuda_dev *d, int r, const cuda_select_t *s);

#endif /* CK_CUDA_KERNEL_TABLE_H */
