/* paged_read.cu — the read ceiling of a paged KV cache's layout on the GPU: decode's bytes (every K and V
 * row of every request's keys, blocks shuffled as attnrt-bench shuffles them), read in decode's grid
 * order by kernels that only load and fold the bytes (no attention), next to a sequential read of the
 * same byte count. It answers whether a decode kernel is below what its cache layout lets memory give
 * (the decode rows of docs/perf/h200.md), as bench/cpu/paged_read.c does for the CPU.
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 bench/h200/paged_read.cu -o paged_read && ./paged_read [--batch 64 --ctx 4096]
 *
 * Layouts (Hkv heads of D elements of E bytes, block size bs): NHD (vLLM's: [block][row][head][D], a head's
 * row is D E bytes at a stride of Hkv D E), HND ([block][head][row][D]: a head's bs rows contiguous), and
 * "all heads" (an NHD cache read by items that take every head of a key range: whole key rows). Each
 * reader is run at a few tile shapes (keys a warp-tile, loads in flight a lane) and the best is reported.
 * Times: CUDA events around each launch, a 256 MiB write between launches (the L2 holds no KV), median of
 * --iters. */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(call)                                                                                            \
    do {                                                                                                    \
        cudaError_t e_ = (call);                                                                            \
        if (e_ != cudaSuccess) {                                                                            \
            fprintf(stderr, "paged_read: %s: %s\n", #call, cudaGetErrorString(e_));                         \
            exit(1);                                                                                        \
        }                                                                                                   \
    } while (0)

struct layout {
    long long bstride, rstride, hstride; /* bytes between blocks, rows of a block, heads */
    int row_bytes;                       /* bytes an item reads of a key (one head's row, or all heads') */
    int heads_per_item;                  /* 1, or hkv (all heads) */
};

__device__ __forceinline__ uint4 ld_nc(const unsigned char *p)
{
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

/* One block an item (request, head or all heads, split); each warp reads tiles of T keys (warp w: tiles w,
 * w + warps, ...), CPR 16-byte chunks a key, every chunk of K and V loaded before any is folded. */
template <int CPR, int T>
__global__ void __launch_bounds__(128) read_paged(const unsigned char *kc, const unsigned char *vc, const int *bt, int max_blocks,
                                                  int bs, layout L, int hkv_items, int ctx, int splits, unsigned *sink)
{
    constexpr int PER = T * CPR / 32; /* chunks a lane a tile */
    static_assert(PER >= 1 && (T * CPR) % 32 == 0, "tile shape");
    const int item = blockIdx.x, split = item % splits, ih = (item / splits) % hkv_items, seq = item / splits / hkv_items;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    const int keys = ctx / splits, k0 = split * keys, ntiles = keys / T;
    const long long hoff = (long long)ih * L.hstride;
    uint32_t acc = 0;
    for (int t = warp; t < ntiles; t += nw) {
        uint4 kv[PER], vv[PER];
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int ch = i * 32 + lane, row = ch / CPR, c = ch % CPR, key = k0 + t * T + row;
            const int blk = __ldg(bt + (long long)seq * max_blocks + key / bs);
            const long long off = (long long)blk * L.bstride + (long long)(key % bs) * L.rstride + hoff + c * 16;
            kv[i] = ld_nc(kc + off);
            vv[i] = ld_nc(vc + off);
        }
#pragma unroll
        for (int i = 0; i < PER; i++) acc ^= kv[i].x ^ kv[i].y ^ kv[i].z ^ kv[i].w ^ vv[i].x ^ vv[i].y ^ vv[i].z ^ vv[i].w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc; /* keeps the loads; practically never written */
}

/* The same byte count read front to back (two buffers, as K and V). */
__global__ void __launch_bounds__(256) read_seq(const uint4 *k, const uint4 *v, long long n, unsigned *sink)
{
    uint32_t acc = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a[4], b[4];
#pragma unroll
        for (int u = 0; u < 4; u++) a[u] = ld_nc((const unsigned char *)(k + i + u * stride)), b[u] = ld_nc((const unsigned char *)(v + i + u * stride));
#pragma unroll
        for (int u = 0; u < 4; u++) acc ^= a[u].x ^ a[u].w ^ b[u].y ^ b[u].z;
    }
    for (; i < n; i += stride) {
        const uint4 a = ld_nc((const unsigned char *)(k + i)), b = ld_nc((const unsigned char *)(v + i));
        acc ^= a.x ^ b.w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;
}

struct bench {
    unsigned char *flush;
    size_t flush_bytes;
    cudaEvent_t e0, e1;
    int iters;
};

template <typename F> static double time_ms(bench &b, F launch)
{
    std::vector<double> v;
    for (int i = 0; i < b.iters + 2; i++) {
        CK(cudaMemsetAsync(b.flush, i & 0xff, b.flush_bytes));
        CK(cudaEventRecord(b.e0));
        launch();
        CK(cudaEventRecord(b.e1));
        CK(cudaEventSynchronize(b.e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, b.e0, b.e1));
        if (i >= 2) v.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <int CPR, int T>
static double run_paged(bench &b, const unsigned char *kc, const unsigned char *vc, const int *bt, int max_blocks, int bs,
                        const layout &L, int batch, int hkv_items, int ctx, int splits, unsigned *sink)
{
    const int grid = batch * hkv_items * splits;
    return time_ms(b, [&] { read_paged<CPR, T><<<grid, 128>>>(kc, vc, bt, max_blocks, bs, L, hkv_items, ctx, splits, sink); });
}

int main(int argc, char **argv)
{
    int batch = 64, ctx = 4096, hkv = 8, bs = 16, iters = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ctx")) ctx = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: paged_read [--batch B] [--ctx C] [--iters N]\n");
            return 2;
        }
    }
    const int max_blocks = ctx / bs, blocks = batch * max_blocks;
    bench b;
    b.iters = iters;
    b.flush_bytes = 256u << 20;
    CK(cudaMalloc(&b.flush, b.flush_bytes));
    CK(cudaEventCreate(&b.e0));
    CK(cudaEventCreate(&b.e1));
    unsigned *sink;
    CK(cudaMalloc(&sink, 64));

    /* the block table: blocks shuffled (a fixed seed), as attnrt-bench's caches after an allocator's churn */
    std::vector<int> perm(blocks);
    for (int i = 0; i < blocks; i++) perm[i] = i;
    uint64_t r = 0x2545f4914f6cdd1dull;
    for (int i = blocks - 1; i > 0; i--) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        std::swap(perm[i], perm[(int)(r % (uint64_t)(i + 1))]);
    }
    int *bt;
    CK(cudaMalloc(&bt, sizeof(int) * blocks));
    CK(cudaMemcpy(bt, perm.data(), sizeof(int) * blocks, cudaMemcpyHostToDevice));

    printf("paged_read: B %d x ctx %d, Hkv %d, block %d, median of %d launches (256 MiB written between them)\n", batch, ctx, hkv, bs, iters);
    printf("%-34s %10s %10s %s\n", "pattern", "ms", "GB/s", "best tile (keys x 16-byte chunks a row)");
    for (int es = 1; es <= 2; es++) {
        const int D = 128, rowb = D * es;
        const size_t cache = (size_t)blocks * bs * hkv * rowb;
        unsigned char *kc, *vc;
        CK(cudaMalloc(&kc, cache));
        CK(cudaMalloc(&vc, cache));
        CK(cudaMemset(kc, 1, cache));
        CK(cudaMemset(vc, 2, cache));
        const double gb = 2.0 * (double)cache / 1e9;
        const char *ename = es == 1 ? "fp8" : "bf16";
        char name[64];

        const double seq_ms = time_ms(b, [&] {
            read_seq<<<132 * 8, 256>>>((const uint4 *)kc, (const uint4 *)vc, (long long)(cache / 16), sink);
        });
        snprintf(name, sizeof name, "%s D128 sequential", ename);
        printf("%-34s %10.4f %10.1f\n", name, seq_ms, gb / seq_ms * 1e3);

        const layout nhd = {(long long)bs * hkv * rowb, (long long)hkv * rowb, rowb, rowb, 1};
        const layout hnd = {(long long)bs * hkv * rowb, rowb, (long long)bs * rowb, rowb, 1};
        const layout all = {(long long)bs * hkv * rowb, (long long)hkv * rowb, 0, hkv * rowb, hkv};
        struct {
            const char *name;
            const layout *L;
        } pats[] = {{"NHD, an item a head", &nhd}, {"HND, an item a head", &hnd}, {"NHD, an item all heads (key rows)", &all}};
        for (auto &p : pats) {
            const int items = p.L->heads_per_item == 1 ? hkv : 1;
            const int splits = p.L->heads_per_item == 1 ? 1 : hkv; /* the same grid size */
            double best = 1e30;
            const char *bt_name = "";
            auto consider = [&](double ms, const char *n) {
                if (ms < best) best = ms, bt_name = n;
            };
            if (rowb == 128 && p.L->row_bytes == 128) {
                consider(run_paged<8, 16>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "16 x 8");
                consider(run_paged<8, 32>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "32 x 8");
                consider(run_paged<8, 64>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "64 x 8");
            } else if (rowb == 256 && p.L->row_bytes == 256) {
                consider(run_paged<16, 8>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "8 x 16");
                consider(run_paged<16, 16>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "16 x 16");
                consider(run_paged<16, 32>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "32 x 16");
            } else if (p.L->row_bytes == 1024) {
                consider(run_paged<64, 2>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "2 x 64");
                consider(run_paged<64, 4>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "4 x 64");
                consider(run_paged<64, 8>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "8 x 64");
            } else {
                consider(run_paged<128, 1>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "1 x 128");
                consider(run_paged<128, 2>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "2 x 128");
                consider(run_paged<128, 4>(b, kc, vc, bt, max_blocks, bs, *p.L, batch, items, ctx, splits, sink), "4 x 128");
            }
            snprintf(name, sizeof name, "%s D128 %s", ename, p.name);
            printf("%-34s %10.4f %10.1f %s\n", name, best, gb / best * 1e3, bt_name);
        }
        CK(cudaFree(kc));
        CK(cudaFree(vc));
    }
    return 0;
}
