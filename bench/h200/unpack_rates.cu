/* unpack_rates.cu — what the fp8 decode loop's per-key instructions cost on the GPU, measured: the issue rate
 * of the fp8 -> f16 widening (cvt.rn.f16x2.e4m3x2, SASS F2FP), of the integer instructions a bit-level
 * widening would use instead (LOP3, SHF, PRMT), of both widenings of 4 bytes, of the f32 -> f16x2 pack and
 * ex2, and of mma.sync on fp8 operands (m16n8k32 e4m3, sm_89+) against the f16 m16n8k16 form, with an
 * exactness check of one fp8 product. It answers whether the conversions of fp8 decode are a throughput limit and
 * whether QK^T could take the raw key bytes.
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 bench/h200/unpack_rates.cu -o unpack_rates && ./unpack_rates
 *
 * Each rate kernel runs 8 independent dependency chains a thread (enough to fill a pipe at 8 warps an SM, the
 * decode kernels' occupancy, and at 32), timed with CUDA events; rates are lane results a clock an SM at the
 * device's reported clock (the H200 ran at it: ncu put F2FP and the integer ops on the ALU pipe at 97-100 %). */
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CK(call)                                                                                            \
    do {                                                                                                    \
        cudaError_t e_ = (call);                                                                            \
        if (e_ != cudaSuccess) {                                                                            \
            fprintf(stderr, "unpack_rates: %s: %s\n", #call, cudaGetErrorString(e_));                       \
            exit(1);                                                                                        \
        }                                                                                                   \
    } while (0)

enum { OP_CVT, OP_LOP3, OP_PRMT, OP_SHF, OP_FFMA, OP_ALU_UNPACK, OP_CVT_UNPACK, OP_PACK, OP_EX2, OPS };
static const char *op_name[OPS] = {"cvt.rn.f16x2.e4m3x2 (F2FP)", "lop3", "prmt", "shf", "ffma",
                                   "4 bytes by bit ops (6 + 1)", "4 bytes by 2 cvt (+ 1)", "cvt.rn.f16x2.f32 (pack)",
                                   "ex2.approx"};
#define CHAINS 8

template <int OP> __global__ void rate_kernel(uint32_t *sink, int iters, uint32_t seed)
{
    uint32_t r[CHAINS];
    float f[CHAINS];
    for (int c = 0; c < CHAINS; c++) {
        r[c] = seed * (threadIdx.x + 1) + c * 0x01030507u;
        f[c] = (float)r[c] * 1e-9f;
    }
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int c = 0; c < CHAINS; c++) {
            if (OP == OP_CVT) asm volatile("{ .reg .b16 l, h;\n mov.b32 {l, h}, %0;\n cvt.rn.f16x2.e4m3x2 %0, l;\n}" : "+r"(r[c]));
            if (OP == OP_LOP3) asm volatile("lop3.b32 %0, %0, 0x7f007f00, 0x12345678, 0x96;" : "+r"(r[c]));
            if (OP == OP_PRMT) asm volatile("prmt.b32 %0, %0, 0x12345678, 0x3120;" : "+r"(r[c]));
            if (OP == OP_SHF) asm volatile("shf.r.wrap.b32 %0, %0, %0, 1;" : "+r"(r[c]));
            if (OP == OP_FFMA) asm volatile("fma.rn.f32 %0, %0, 0f3F800001, 0f3A000000;" : "+f"(f[c]));
            if (OP == OP_ALU_UNPACK || OP == OP_CVT_UNPACK) {
                /* bytes b0..b3 -> f16x2 {b0, b2} and {b1, b3}, each 2^-8 times the e4m3 value (exact; NaN becomes
                 * finite): sign to bit 15, the 7 other bits to 13..7. The cvt form gives {b0, b1}, {b2, b3}. */
                uint32_t lo, hi;
                if (OP == OP_ALU_UNPACK)
                    asm volatile("{ .reg .b32 s, s8, x7, x1;\n and.b32 s, %2, 0x80808080;\n shl.b32 s8, s, 8;\n"
                                 " shl.b32 x7, %2, 7;\n lop3.b32 %0, s8, x7, 0x3f803f80, 0xd8;\n shr.b32 x1, %2, 1;\n"
                                 " lop3.b32 %1, s, x1, 0x3f803f80, 0xd8;\n}"
                                 : "=r"(lo), "=r"(hi) : "r"(r[c]));
                else
                    asm volatile("{ .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e4m3x2 %0, l;\n cvt.rn.f16x2.e4m3x2 %1, h;\n}"
                                 : "=r"(lo), "=r"(hi) : "r"(r[c]));
                asm volatile("lop3.b32 %0, %1, %2, 0, 0xf6;" : "=r"(r[c]) : "r"(lo), "r"(hi)); /* chains them on */
            }
            if (OP == OP_PACK) asm volatile("cvt.rn.f16x2.f32 %0, %1, %1;" : "=r"(r[c]) : "f"(__uint_as_float(r[c] | 0x3f000000u)));
            if (OP == OP_EX2) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(f[c]));
        }
    }
    uint32_t x = 0;
    for (int c = 0; c < CHAINS; c++) x ^= r[c] ^ __float_as_uint(f[c]);
    if (x == 0x9e3779b9u) sink[0] = x; /* never in practice; keeps the chains live */
}

/* 4 accumulators a warp, one mma a chain an iteration: fp8 m16n8k32 (FP8) or f16 m16n8k16 */
template <bool FP8> __global__ void mma_kernel(float *sink, int iters)
{
    const uint32_t a[4] = {threadIdx.x * 0x01010101u, 0x3c3c3c3cu, 0x38383838u, threadIdx.x}, b[2] = {0x30303030u, 0x34343434u};
    float c[4][4] = {};
    for (int i = 0; i < iters; i++)
#pragma unroll
        for (int ch = 0; ch < 4; ch++) {
            if (FP8)
                asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(c[ch][0]), "+f"(c[ch][1]), "+f"(c[ch][2]), "+f"(c[ch][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
            else
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(c[ch][0]), "+f"(c[ch][1]), "+f"(c[ch][2]), "+f"(c[ch][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    float s = 0.0f;
    for (int ch = 0; ch < 4; ch++) s += c[ch][0] + c[ch][1] + c[ch][2] + c[ch][3];
    if (s == 1.2345f) sink[0] = s;
}

/* One m16n8k32 e4m3 product of A [16][32] and B [8][32] (both k-contiguous) into C [16][8] */
__global__ void fp8_product(const uint8_t *A, const uint8_t *B, float *C)
{
    const int lane = threadIdx.x, g = lane >> 2, t4 = lane & 3;
    uint32_t a[4], b[2];
    for (int r = 0; r < 4; r++) a[r] = *(const uint32_t *)(A + (g + 8 * (r & 1)) * 32 + 4 * t4 + 16 * (r >> 1));
    for (int r = 0; r < 2; r++) b[r] = *(const uint32_t *)(B + g * 32 + 4 * t4 + 16 * r);
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    for (int e = 0; e < 4; e++) C[(g + 8 * (e >> 1)) * 8 + 2 * t4 + (e & 1)] = c[e];
}

static double e4m3_value(unsigned b)
{
    const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    const double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
    return s ? -v : v;
}

static float time_ms(void (*launch)(int), int iters)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    launch(16); /* warm-up: module load, clocks */
    CK(cudaEventRecord(a));
    launch(iters);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return ms;
}

static int g_blocks, g_threads;
static uint32_t *g_sink;
template <int OP> static void launch_rate(int iters) { rate_kernel<OP><<<g_blocks, g_threads>>>(g_sink, iters, 1u); }
template <bool FP8> static void launch_mma(int iters) { mma_kernel<FP8><<<g_blocks, g_threads>>>((float *)g_sink, iters); }

int main()
{
    int sms, khz;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    CK(cudaMalloc(&g_sink, 64));
    const double clk = khz * 1e3;
    void (*rates[OPS])(int) = {launch_rate<0>, launch_rate<1>, launch_rate<2>, launch_rate<3>, launch_rate<4>,
                               launch_rate<5>, launch_rate<6>, launch_rate<7>, launch_rate<8>};
    printf("%d SMs at %.0f MHz; lane results a clock an SM (ALU-class peak: 64; FFMA: 128)\n", sms, clk / 1e6);
    const int iters = 4096;
    for (int warps = 8; warps <= 32; warps += 24) {
        g_threads = 256, g_blocks = sms * warps / 8;
        for (int op = 0; op < OPS; op++) {
            const float ms = time_ms(rates[op], iters);
            const double lanes = (double)g_blocks * g_threads * iters * CHAINS;
            printf("%2d warps/SM  %-28s %7.1f\n", warps, op_name[op], lanes / sms / (ms * 1e-3 * clk));
        }
    }
    for (int fp8 = 1; fp8 >= 0; fp8--)
        for (int warps = 8; warps <= 16; warps += 8) {
            g_threads = 128, g_blocks = sms * warps / 4;
            const float ms = time_ms(fp8 ? launch_mma<true> : launch_mma<false>, iters);
            const double mmas = (double)g_blocks * 4 * iters * 4, flop = mmas * 16 * 8 * (fp8 ? 32 : 16) * 2;
            printf("%2d warps/SM  mma %-24s %5.2f warp-mma a clock an SM, %4.0f TFLOP/s\n", warps,
                   fp8 ? "m16n8k32 e4m3 (fp32 acc)" : "m16n8k16 f16 (fp32 acc)", mmas / sms / (ms * 1e-3 * clk), flop / (ms * 1e-3) / 1e12);
        }

    /* exactness: fresh random bytes (no NaN encodings), against the float64 sum */
    uint8_t hA[512], hB[256];
    srand(12345u);
    for (int i = 0; i < 512 + 256; i++) {
        uint8_t v = (uint8_t)(rand() >> 7);
        if ((v & 0x7f) == 0x7f) v = 0x30;
        (i < 512 ? hA[i] : hB[i - 512]) = v;
    }
    uint8_t *dA, *dB;
    float *dC, hC[128];
    CK(cudaMalloc(&dA, 512));
    CK(cudaMalloc(&dB, 256));
    CK(cudaMalloc(&dC, 512));
    CK(cudaMemcpy(dA, hA, 512, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, hB, 256, cudaMemcpyHostToDevice));
    CK(cudaMemset(dC, 0xff, 512)); /* NaN: every element must be written */
    fp8_product<<<1, 32>>>(dA, dB, dC);
    CK(cudaMemcpy(hC, dC, 512, cudaMemcpyDeviceToHost));
    double worst = 0.0;
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 8; n++) {
            double ref = 0.0, mag = 0.0;
            for (int k = 0; k < 32; k++) {
                const double p = e4m3_value(hA[r * 32 + k]) * e4m3_value(hB[n * 32 + k]);
                ref += p;
                mag += fabs(p);
            }
            const double err = std::isfinite(hC[r * 8 + n]) ? fabs(hC[r * 8 + n] - ref) / (mag > 0.0 ? mag : 1.0) : INFINITY;
            if (err > worst) worst = err;
        }
    printf("m16n8k32 e4m3 product: worst |got - float64| / sum |products| = %.3g\n", worst);
    CK(cudaDeviceSynchronize());
    return worst < 1e-6 ? 0 : 1;
}
