/* attn_decode_timeline.cuh — a developer's timeline of the decode kernels, compiled in only with
 * -DCK_DEC_TIMELINE=1 (a variant fatbin loaded by ATTNRT_CUDA_FATBIN_DIR; the plugin's own build defines
 * nothing, so every macro below is empty there). Each block records on the global timer when it starts,
 * when warp 0 has issued its request's loads, has its item, request, first block id and Q in registers,
 * starts its key loop, has its first tile's data, half its tiles and ends its loop, when the last warp
 * has its first data and ends its loop, and when the block ends; the
 * block that ends last prints one line a block after every block's work, so that printing slows no
 * block still running (ns):
 *     TL <block> 0 <SM> <start> <end> <first data> <half> <loop end> <request> <loop start>
 *        <last warp's first data> <last warp's loop end> <item> <request in> <table> <Q>
 * bench/h200/timeline.py reads them (where a run's fixed cost goes). */
#ifndef ATTNRT_ATTN_DECODE_TIMELINE_CUH
#define ATTNRT_ATTN_DECODE_TIMELINE_CUH

#if CK_DEC_TIMELINE
#include <cstdio>

#define CK_TL_MAX_BLOCKS 65536
/* what each of a block's times is; the order is the printed line's */
enum ck_tl_slot {
    CK_TL_START,
    CK_TL_END,
    CK_TL_FIRST_DATA, /* warp 0 */
    CK_TL_HALF,
    CK_TL_LOOP_END,
    CK_TL_REQUEST,
    CK_TL_LOOP_START,
    CK_TL_LAST_FIRST_DATA, /* the last warp */
    CK_TL_LAST_LOOP_END,
    CK_TL_ITEM, /* warp 0's work item, request, first block id and Q in its registers (CK_TL_MARK_AFTER) */
    CK_TL_REQUEST_IN,
    CK_TL_TABLE,
    CK_TL_Q,
    CK_TL_SLOTS
};
__device__ unsigned long long ck_tl_times[CK_TL_MAX_BLOCKS][CK_TL_SLOTS];
__device__ unsigned ck_tl_sm[CK_TL_MAX_BLOCKS];
__device__ unsigned ck_tl_done; /* blocks ended; the last one prints and resets it for the next launch */

__device__ __forceinline__ unsigned long long ck_tl_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned ck_tl_block() { return blockIdx.x + blockIdx.y * gridDim.x; }

/* slot `slot` by lane 0 of warp 0 / of the last warp */
#define CK_TL_MARK_BY(lead, slot)                                                                             \
    do {                                                                                                      \
        if (threadIdx.x == (lead) && ck_tl_block() < CK_TL_MAX_BLOCKS) ck_tl_times[ck_tl_block()][slot] = ck_tl_now(); \
    } while (0)
#define CK_TL_MARK(slot) CK_TL_MARK_BY(0, slot)
/* once value v (a load's result) is in its register: the branch on it waits for the load (a plain mark does not:
 * the timer is read as soon as the load is issued); -2 - block is never a loaded id, length or element */
#define CK_TL_MARK_AFTER(slot, v)                                                                             \
    do {                                                                                                      \
        if ((int64_t)(v) != -2 - (int64_t)blockIdx.x) CK_TL_MARK(slot);                                       \
    } while (0)
#define CK_TL_MARK_LAST(slot) CK_TL_MARK_BY(blockDim.x - 32, slot)
#define CK_TL_MARK_TILE(j, n)                                                                                 \
    do {                                                                                                      \
        if ((j) == 0) {                                                                                       \
            CK_TL_MARK(CK_TL_FIRST_DATA);                                                                     \
            CK_TL_MARK_LAST(CK_TL_LAST_FIRST_DATA);                                                           \
        }                                                                                                     \
        if ((j) == (n) / 2) CK_TL_MARK(CK_TL_HALF);                                                           \
    } while (0)
#define CK_TL_MARK_LOOP_END                                                                                   \
    do {                                                                                                      \
        CK_TL_MARK(CK_TL_LOOP_END);                                                                           \
        CK_TL_MARK_LAST(CK_TL_LAST_LOOP_END);                                                                 \
    } while (0)
#define CK_TL_BLOCK_BEGIN CK_TL_MARK(CK_TL_START)
#define CK_TL_BLOCK_END                                                                                       \
    do {                                                                                                      \
        __syncthreads();                                                                                      \
        const unsigned id = ck_tl_block(), total = gridDim.x * gridDim.y;                                     \
        if (threadIdx.x == 0) {                                                                               \
            unsigned sm;                                                                                      \
            asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));                                                   \
            if (id < CK_TL_MAX_BLOCKS) ck_tl_times[id][CK_TL_END] = ck_tl_now(), ck_tl_sm[id] = sm;           \
            __threadfence();                                                                                  \
            if (atomicAdd(&ck_tl_done, 1u) == total - 1) {                                                    \
                __threadfence();                                                                              \
                for (unsigned i = 0; i < total && i < CK_TL_MAX_BLOCKS; i++)                                  \
                    printf("TL %u 0 %u %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n", i, \
                           ck_tl_sm[i], ck_tl_times[i][0], ck_tl_times[i][1], ck_tl_times[i][2],              \
                           ck_tl_times[i][3], ck_tl_times[i][4], ck_tl_times[i][5], ck_tl_times[i][6],        \
                           ck_tl_times[i][7], ck_tl_times[i][8], ck_tl_times[i][9], ck_tl_times[i][10],       \
                           ck_tl_times[i][11], ck_tl_times[i][12]);                                           \
                ck_tl_done = 0;                                                                               \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)
#else
#define CK_TL_MARK(slot) ((void)0)
#define CK_TL_MARK_AFTER(slot, v) ((void)0)
#define CK_TL_MARK_TILE(j, n) ((void)0)
#define CK_TL_MARK_LOOP_END ((void)0)
#define CK_TL_BLOCK_BEGIN ((void)0)
#define CK_TL_BLOCK_END ((void)0)
#endif

#endif /* ATTNRT_ATTN_DECODE_TIMELINE_CUH */
