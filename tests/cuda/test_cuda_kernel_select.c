/* test_cuda_kernel_select — the cuda plugin's kernel table against its fatbins and its rules, without a GPU: the plugin's
 * host code runs on a fake driver whose modules hold exactly the kernels the fatbin sources define (kernel_names.py's
 * list). Checks that every table row names real kernels and every paged-attention kernel of the fatbins is a table row
 * (nothing compiled that no rule can pick), that each device loads its table, and that each row serves the shape its rule
 * describes (the kernel map of docs/backends/cuda.md, shape by shape). Occupancy is modelled: a kernel's blocks an SM are
 * its launch bounds' unless its shared memory or threads allow fewer. Exit 0 pass, 1 fail. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_attention_plan.h"
#include "kernel_shapes.h"
#include "plugin_error.h"

/* the embedded images' symbols (cuda_module.c): each family's image names its fake module */
const unsigned char attnrt_cuda_fatbin_attention[1] = {CUDA_FAMILY_ATTENTION};
const unsigned char attnrt_cuda_fatbin_decode[1] = {CUDA_FAMILY_DECODE};
const unsigned char attnrt_cuda_fatbin_mla[1] = {CUDA_FAMILY_MLA};
const unsigned char attnrt_cuda_fatbin_linear[1] = {CUDA_FAMILY_LINEAR};
const unsigned char attnrt_cuda_fatbin_sm90a[1] = {CUDA_FAMILY_SM90A};

#define MAX_KERNELS 512
typedef struct fake_kernel {
    char name[96];
    int  family, smem_attr, loaded;
} fake_kernel_t;
static fake_kernel_t kernels[MAX_KERNELS];
static int n_kernels, optin, failures;

static void fail(const char *what, const char *why)
{
    printf("FAIL: %s: %s\n", what, why);
    failures++;
}

/* ---- the fake driver ------------------------------------------------------------------------------------------ */
static CUresult f_name(CUresult r, const char **s) { return (void)r, *s = "CUDA_ERROR_FAKE", CUDA_SUCCESS; }
static CUresult f_ctx(CUcontext c) { return (void)c, CUDA_SUCCESS; }
static CUresult f_sync(CUstream s) { return (void)s, CUDA_SUCCESS; }
static CUresult f_unload(CUmodule m) { return (void)m, CUDA_SUCCESS; }
static CUresult f_attr(int *v, CUdevice_attribute a, CUdevice d)
{
    *v = a == CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN ? optin : 0;
    return (void)d, CUDA_SUCCESS;
}
static CUresult f_load(CUmodule *m, const void *image)
{
    *m = (CUmodule)(uintptr_t)(1 + *(const unsigned char *)image);
    return CUDA_SUCCESS;
}
static CUresult f_function(CUfunction *f, CUmodule m, const char *name)
{
    for (int i = 0; i < n_kernels; i++)
        if (kernels[i].family + 1 == (int)(uintptr_t)m && !strcmp(kernels[i].name, name)) {
            kernels[i].loaded = 1;
            *f = (CUfunction)(void *)&kernels[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}
static CUresult f_set(CUfunction f, CUfunction_attribute a, int v)
{
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) ((fake_kernel_t *)(void *)f)->smem_attr = v;
    return CUDA_SUCCESS;
}
/* blocks an SM of the kernel's launch bounds (attn_decode.cu, attn_prefill*.cu: by its name) */
static int launch_bounds(const char *n)
{
    if (strstr(n, "_w2")) return 4;
    if (strstr(n, "_w8") || strstr(n, "prefill_ws")) return 1;
    if (strstr(n, "prefill_wg") || strstr(n, "mma_decode")) return strstr(n, "d256") ? 1 : 2;
    if (strstr(n, "attn_prefill_")) return strstr(n, "d64") ? 3 : strstr(n, "d128") ? 2 : 1;
    return 2;
}
static CUresult f_occupancy(int *n, CUfunction f, int threads, size_t smem)
{
    const fake_kernel_t *k = (const fake_kernel_t *)(void *)f;
    int b = launch_bounds(k->name);
    const int by_smem = (int)(233472 / (smem + 1024)), by_threads = 2048 / threads;
    b = by_smem < b ? by_smem : b;
    b = by_threads < b ? by_threads : b;
    *n = (int)smem > k->smem_attr && smem > 49152 ? 0 : b; /* the limit was not raised: the launch would fail */
    return CUDA_SUCCESS;
}
static CUresult f_alloc(CUdeviceptr *p, size_t n) { return *p = (CUdeviceptr)(uintptr_t)malloc(n ? n : 1), CUDA_SUCCESS; }
static CUresult f_free(CUdeviceptr p) { return free((void *)(uintptr_t)p), CUDA_SUCCESS; }
static CUresult f_copy(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    return (void)s, memcpy((void *)(uintptr_t)d, h, n), CUDA_SUCCESS;
}
static CUresult f_map(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t r, void *g, const cuuint64_t *d, const cuuint64_t *s,
                      const cuuint32_t *b, const cuuint32_t *e, CUtensorMapInterleave i, CUtensorMapSwizzle w,
                      CUtensorMapL2promotion l, CUtensorMapFloatOOBfill o)
{
    (void)m, (void)t, (void)r, (void)g, (void)d, (void)s, (void)b, (void)e, (void)i, (void)w, (void)l, (void)o;
    return CUDA_SUCCESS;
}

static int read_kernels(const char *path)
{
    static const char *const family_names[CUDA_FAMILIES] = {"attention", "decode", "mla", "linear", "sm90a"};
    FILE *f = fopen(path, "r");
    char family[32], name[96];
    while (f && n_kernels < MAX_KERNELS && fscanf(f, "%31s %95s", family, name) == 2) {
        kernels[n_kernels].family = -1;
        for (int i = 0; i < CUDA_FAMILIES; i++)
            if (!strcmp(family, family_names[i])) kernels[n_kernels].family = i;
        snprintf(kernels[n_kernels++].name, sizeof kernels[0].name, "%s", name);
    }
    if (f) fclose(f);
    return n_kernels > 0;
}

/* ---- devices ----------------------------------------------------------------------------------------------------- */
typedef struct fake_device {
    const char *name;
    int         cc_major, cc_minor, sms, optin;
} fake_device_t;
static const fake_device_t H100 = {"H100", 9, 0, 132, 232448}, A100 = {"A100", 8, 0, 108, 166912},
                           L40 = {"L40", 8, 9, 142, 101376}, B200 = {"B200", 10, 0, 148, 232448};

static int open_device(const fake_device_t *fd, cuda_dev_t *d)
{
    memset(d, 0, sizeof *d);
    d->cc_major = fd->cc_major;
    d->cc_minor = fd->cc_minor;
    d->sm_count = fd->sms;
    d->pdl = fd->cc_major >= 9;
    optin = fd->optin;
    for (int i = 0; i < n_kernels; i++) kernels[i].loaded = 0;
    const attnrt_status_t st = cuda_module_load(d);
    if (st != ATTNRT_OK) {
        char why[512];
        plugin_last_error(why, sizeof why);
        fail(fd->name, why);
    }
    return st == ATTNRT_OK;
}

/* ---- calls ------------------------------------------------------------------------------------------------------- */
static attnrt_tensor_t tensor(attnrt_dtype_t dt, int nd, const int64_t *shape, const int64_t *strides)
{
    attnrt_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)0x10000;
    t.dtype = dt;
    t.ndim = nd;
    for (int i = 0; i < nd; i++) t.shape[i] = shape[i], t.strides[i] = strides[i];
    return t;
}

/* The plan's rows for shape s: what its prefill tiles, its persistent kernel and its decode tiles launch */
static void plan_rows(cuda_dev_t *d, const shape_t *s, int rows[3])
{
    const int64_t B = s->b, L = s->new_tokens, S = s->ctx + s->new_tokens, T = B * L, D = s->d, bs = s->bs, hkv = s->hkv;
    const int64_t nblk = B * ((S + bs - 1) / bs), cols = (S + bs - 1) / bs;
    const int64_t kshape[4] = {nblk, bs, hkv, D};
    const int64_t kst[4] = {bs * hkv * D, s->hnd ? D : hkv * D, s->hnd ? bs * D : D, 1};
    const int64_t qshape[3] = {T, s->hq, D}, qst[3] = {s->hq * D, D, 1}, btshape[2] = {B, cols}, btst[2] = {cols, 1};
    const int64_t one[1] = {1}, n1[1] = {B + 1}, nb[1] = {B};
    attnrt_tensor_t q = tensor(shape_dtype(s->q), 3, qshape, qst), o = q, kc = tensor(shape_dtype(s->kv), 4, kshape, kst), vc = kc;
    attnrt_tensor_t bt = tensor(shape_dtype(F32), 2, btshape, btst), qsl = tensor(shape_dtype(F32), 1, n1, one), sl = qsl;
    bt.dtype.code = qsl.dtype.code = ATTNRT_DTYPE_CODE_INT;
    sl.shape[0] = nb[0];
    attnrt_attention_args_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.query = &q, a.key_cache = &kc, a.value_cache = &vc, a.out = &o;
    a.block_table = &bt, a.query_start_loc = &qsl, a.seq_lens = &sl;
    a.causal = 1;
    a.softcap = s->softcap ? 30.0f : 0.0f;
    int32_t *qs = malloc((size_t)(B + 1) * sizeof *qs), *lens = malloc((size_t)B * sizeof *lens);
    for (int64_t b = 0; b <= B; b++) qs[b] = (int32_t)(b * L);
    for (int64_t b = 0; b < B; b++) lens[b] = (int32_t)S;
    attnrt_batch_host_t batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.num_seqs = (int32_t)B;
    batch.query_start_loc = qs;
    batch.seq_lens = lens;
    void *plan = NULL;
    size_t ws = 0;
    rows[0] = rows[1] = rows[2] = -2;
    if (cuda_attention_plan(d, &a, &batch, &plan, &ws) == ATTNRT_OK) {
        const cuda_attn_plan_t *p = plan;
        /* each launch's kernel back to its row */
        const CUfunction f[3] = {p->mma && p->n_prefill && !p->ws_decode ? p->f_prefill : p->mma ? NULL : d->k.attn_simt,
                                 p->n_prefill ? p->f_prefill_ws : NULL, p->n_decode ? p->f_decode : NULL};
        for (int k = 0; k < 3; k++) {
            rows[k] = -1;
            for (int r = 0; r < CK_KERNELS && f[k]; r++)
                for (int i = 0; i < 12; i++)
                    if (d->k.row[r].f[i / 6][i / 3 % 2][i % 3] == f[k]) rows[k] = r;
        }
        cuda_attention_plan_destroy(d, plan);
    }
    free(qs);
    free(lens);
}

static const char *row_name(int r) { return r >= 0 ? cuda_kernel_table[r].name : r == -1 ? "-" : "(refused)"; }

static void check_shapes(const fake_device_t *fd, const shape_t *shapes, size_t n)
{
    cuda_dev_t d;
    if (!open_device(fd, &d)) return;
    printf("%s (compute capability %d.%d, %d SMs):\n", fd->name, fd->cc_major, fd->cc_minor, fd->sms);
    for (size_t i = 0; i < n; i++) {
        const shape_t *s = &shapes[i];
        int got[3];
        plan_rows(&d, s, got);
        const int want[3] = {s->prefill, s->ws, s->decode};
        const int ok = !memcmp(got, want, sizeof got);
        printf("  %-4s %-44s prefill %-34s persistent %-38s decode %s\n", ok ? "ok" : "FAIL", s->what, row_name(got[0]),
               row_name(got[1]), row_name(got[2]));
        if (!ok) {
            printf("        expected prefill %s, persistent %s, decode %s\n", row_name(want[0]), row_name(want[1]),
                   row_name(want[2]));
            failures++;
        }
    }
    cuda_module_unload(&d);
}

/* Every row's kernels are in their fatbins (the load above) and every paged-attention kernel of the fatbins is a row's */
static void check_table_covers_fatbins(void)
{
    cuda_dev_t d;
    const fake_device_t *devs[] = {&H100, &A100, &L40, &B200};
    int seen[MAX_KERNELS] = {0};
    for (size_t k = 0; k < sizeof devs / sizeof *devs; k++) {
        if (!open_device(devs[k], &d)) continue;
        for (int i = 0; i < n_kernels; i++) seen[i] |= kernels[i].loaded;
        cuda_module_unload(&d);
    }
    for (int i = 0; i < n_kernels; i++)
        if (!strncmp(kernels[i].name, "ck_attn_", 8) && !seen[i])
            fail(kernels[i].name, "in the fatbins, but no table row loads it on any device");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !read_kernels(argv[1])) {
        fprintf(stderr, "usage: %s KERNEL_LIST (kernel_names.py's output)\n", argv[0]);
        return 1;
    }
    cuda_drv.GetErrorName = f_name;
    cuda_drv.GetErrorString = f_name;
    cuda_drv.DeviceGetAttribute = f_attr;
    cuda_drv.CtxSetCurrent = f_ctx;
    cuda_drv.ModuleLoadData = f_load;
    cuda_drv.ModuleUnload = f_unload;
    cuda_drv.ModuleGetFunction = f_function;
    cuda_drv.FuncSetAttribute = f_set;
    cuda_drv.OccupancyMaxActiveBlocksPerMultiprocessor = f_occupancy;
    cuda_drv.MemAlloc = f_alloc;
    cuda_drv.MemFree = f_free;
    cuda_drv.MemcpyHtoDAsync = f_copy;
    cuda_drv.StreamSynchronize = f_sync;
    cuda_drv.TensorMapEncodeTiled = f_map;
    check_table_covers_fatbins();

    check_shapes(&H100, cuda_hopper_shapes, sizeof cuda_hopper_shapes / sizeof *cuda_hopper_shapes);
    /* devices without the sm_90a fatbin: the FA2 prefill kernel; without tensor copies (8.x): the cp.async / bulk forms */
    static const shape_t ampere[] = {
        {"bf16 prefill B4 x 4096, D 128", BF16, BF16, 128, 32, 8, 16, 4, 0, 4096, 0, 0, CK_K_PREFILL_FA2, -1, -1},
        {"e4m3 prefill B4 x 4096, D 128, bf16", BF16, E4M3, 128, 32, 8, 16, 4, 0, 4096, 0, 0, CK_K_PREFILL, -1, -1},
        {"bf16 decode B64 x 4096, D 128", BF16, BF16, 128, 32, 8, 16, 64, 4096, 1, 0, 0, -1, -1, CK_K_DECODE},
        {"e4m3 decode B64 x 4096, D 128", BF16, E4M3, 128, 32, 8, 16, 64, 4096, 1, 0, 0, -1, -1, CK_K_DECODE},
        {"e4m3 decode B16 x 32768, D 128", BF16, E4M3, 128, 32, 8, 16, 16, 32768, 1, 0, 0, -1, -1, CK_K_DECODE},
        {"e4m3 decode B64 x 2048, D 64", BF16, E4M3, 64, 32, 8, 16, 64, 2048, 1, 0, 0, -1, -1, CK_K_DECODE_L2W},
        {"bf16 decode MQA B256 x 2048, D 128", BF16, BF16, 128, 32, 1, 16, 256, 2048, 1, 0, 0, -1, -1, CK_K_DECODE_WIDE},
    };
    check_shapes(&A100, ampere, sizeof ampere / sizeof *ampere);
    /* 99 KB of shared memory a block (8.6 / 8.9): the decode kernels do not fit, so no call takes the tensor cores */
    static const shape_t ada[] = {
        {"bf16 prefill B4 x 4096, D 256", BF16, BF16, 256, 32, 8, 16, 4, 0, 4096, 0, 0, CK_K_SIMT, -1, -1},
        {"bf16 decode B64 x 4096, D 256", BF16, BF16, 256, 32, 8, 16, 64, 4096, 1, 0, 0, CK_K_SIMT, -1, -1},
        {"e4m3 decode B64 x 4096, D 128", BF16, E4M3, 128, 32, 8, 16, 64, 4096, 1, 0, 0, CK_K_SIMT, -1, -1},
    };
    check_shapes(&L40, ada, sizeof ada / sizeof *ada);
    static const shape_t blackwell[] = {
        {"bf16 prefill B4 x 4096, D 128", BF16, BF16, 128, 32, 8, 16, 4, 0, 4096, 0, 0, CK_K_PREFILL_FA2, -1, -1},
        {"bf16 decode B64 x 4096, D 128", BF16, BF16, 128, 32, 8, 16, 64, 4096, 1, 0, 0, -1, -1, CK_K_DECODE_TMA},
        {"e4m3 decode B256 x 2048, D 128", BF16, E4M3, 128, 32, 8, 16, 256, 2048, 1, 0, 0, -1, -1, CK_K_DECODE_T32},
    };
    check_shapes(&B200, blackwell, sizeof blackwell / sizeof *blackwell);
    printf("%s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
