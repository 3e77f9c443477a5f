/* cuda_merge.c — host side of merge_states: up to CK_MERGE_MAX_STATES states described by value in
 * the launch's argument struct (kernels/merge.cu), so the call allocates nothing and can be captured. */
#include <string.h>

#include "cuda_internal.h"
#include "plugin_error.h"
#include "plugin_struct.h"

attnrt_status_t cuda_merge_states(cuda_dev_t *d, const attnrt_merge_args_t *in, void *stream)
{
    attnrt_merge_args_t a;
    PLUGIN_COPY_IN(a, in);
    if (a.num_states < 1 || !a.states || !a.lses || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda merge_states: needs >= 1 state, its lses and out");
    if (a.num_states > CK_MERGE_MAX_STATES)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda merge_states: %u states; the cuda plugin merges at most %d in "
                           "one call (merge in groups, keeping the partial LSEs)", a.num_states, CK_MERGE_MAX_STATES);
    ck_merge_args_t k;
    memset(&k, 0, sizeof k);
    for (uint32_t i = 0; i < a.num_states; i++) {
        const attnrt_tensor_t *o = a.states[i], *l = a.lses[i];
        const int dt = o ? cuda_ck_dtype(o->dtype) : -1;
        if (!l || dt < 0 || dt > CK_BF16)
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda merge_states: state %u is missing, has no lse, or is not "
                               "f32/f16/bf16", i);
        k.st[i].o = o->data;
        k.st[i].lse = l->data;
        k.st[i].o_st[0] = o->strides[0];
        k.st[i].o_st[1] = o->strides[1];
        k.st[i].lse_st[0] = l->strides[0];
        k.st[i].lse_st[1] = l->strides[1];
        k.st[i].dtype = dt;
    }
    k.out_dtype = cuda_ck_dtype(a.out->dtype);
    if (k.out_dtype < 0 || k.out_dtype > CK_BF16)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda merge_states: out (code %u, %u bits) is not f32/f16/bf16",
                           a.out->dtype.code, a.out->dtype.bits);
    k.out = a.out->data;
    k.out_st[0] = a.out->strides[0];
    k.out_st[1] = a.out->strides[1];
    if (a.out_lse) {
        k.out_lse = a.out_lse->data;
        k.out_lse_st[0] = a.out_lse->strides[0];
        k.out_lse_st[1] = a.out_lse->strides[1];
    }
    if (a.sinks) {
        k.sinks = a.sinks->data;
        k.sinks_st = a.sinks->strides[0];
    }
    k.num_tokens = a.out->shape[0];
    k.num_heads = a.out->shape[1];
    k.dim = a.out->shape[2];
    k.num_states = (int32_t)a.num_states;
    const int64_t rows = k.num_tokens * k.num_heads;
    if (rows <= 0) return ATTNRT_OK;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    const uint32_t grid = (uint32_t)(rows < (1 << 20) ? rows : (1 << 20));
    st = cuda_launch(d->k.merge_states, grid, 128, 0, stream, &k, "cuda merge_states");
    return st == ATTNRT_OK ? cuda_finish(stream, "cuda merge_states") : st;
}
