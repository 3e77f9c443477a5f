/* cuda_merge.c — host side of merge_states: up to CK_MERGE_MAX_STATES states described by value in
 * the launch's argument struct (kernels/merge.cu), so the call allocates nothing and can be captured. */
#include <string.h>

#include "cuda_internal.h"
#include "plugin_args.h"
#include "plugin_error.h"
#include "plugin_tensor.h"

attnrt_status_t cuda_merge_states(cuda_dev_t *d, const attnrt_merge_args_t *in, void *stream)
{
    attnrt_merge_args_t a;
    attnrt_status_t st = plugin_merge_open("cuda", in, &a);
    if (st != ATTNRT_OK) return st;
    if (a.num_states > CK_MERGE_MAX_STATES)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda merge_states: %u states; the cuda plugin merges at most %d in "
                           "one call (merge in groups, keeping the partial LSEs)", a.num_states, CK_MERGE_MAX_STATES);
    ck_merge_args_t k;
    memset(&k, 0, sizeof k);
    for (uint32_t i = 0; i < a.num_states; i++) {
        k.st[i].o = plugin_tensor_ref(a.states[i], k.st[i].o_st, 2);
        k.st[i].lse = plugin_tensor_ref(a.lses[i], k.st[i].lse_st, 2);
        k.st[i].dtype = cuda_ck_dtype(a.states[i]->dtype); /* f32, f16 or bf16: plugin_merge_open checked */
    }
    k.out_dtype = cuda_ck_dtype(a.out->dtype);
    k.out = plugin_tensor_ref(a.out, k.out_st, 2);
    k.out_lse = plugin_tensor_ref(a.out_lse, k.out_lse_st, 2);
    k.sinks = plugin_tensor_ref(a.sinks, &k.sinks_st, 1);
    k.num_tokens = a.out->shape[0];
    k.num_heads = a.out->shape[1];
    k.dim = a.out->shape[2];
    k.num_states = (int32_t)a.num_states;
    const int64_t rows = k.num_tokens * k.num_heads;
    if (rows <= 0) return ATTNRT_OK;
    st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    const uint32_t grid = (uint32_t)(rows < (1 << 20) ? rows : (1 << 20));
    st = cuda_launch(d->k.merge_states, grid, 128, 0, stream, &k, "cuda merge_states");
    return st == ATTNRT_OK ? cuda_finish(stream, "cuda merge_states") : st;
}
