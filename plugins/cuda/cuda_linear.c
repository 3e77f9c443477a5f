/* cuda_linear.c — lightning and gated delta plan / run (kernels/linear.cu). Both ops walk state slots
 * the same way: one block per (request, state head, CK_LIN_COLS value columns), so the plan only
 * records the shapes and picks the kernel (rows per thread from Dk, float4 state access when the pool
 * allows it; the decode kernel when every request of the batch has one token and there are no
 * speculative slots, unless ATTNRT_CUDA_LINEAR=general); the run fills the argument struct and makes
 * one launch. No workspace, no host read of device data, nothing allocated at run: the run can be
 * captured in a CUDA graph. The runtime has checked every slot against the pool on the host (and that
 * no two requests share one). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ops12.h"
#include "plugin_args.h"
#include "plugin_error.h"
#include "plugin_linear.h"
#include "plugin_query.h"
#include "plugin_struct.h"
#include "plugin_tensor.h"

typedef struct cuda_lin_plan {
    cuda_plan12_head_t head;
    int64_t    T, B, H, HV, Dk, Dv, num_spec; /* num_spec -1: no speculative decoding */
    CUfunction f_vec, f_scalar;
    CUfunction f_decode; /* decode kernel (1-D grid); NULL: not a plain decode batch, or Dk outside 33-128 */
} cuda_lin_plan_t;

typedef struct lin_shape {
    int64_t T, H, HV, Dk, Dv;
} lin_shape_t;

static attnrt_status_t lin_shapes(const char *op, uint32_t opcode, const attnrt_tensor_t *q, const attnrt_tensor_t *v,
                                  const attnrt_tensor_t *out, const attnrt_tensor_t *state, lin_shape_t *sh)
{
    if (!q || !v || !out || !state || q->ndim != 3 || v->ndim != 3 || out->ndim != 3 || state->ndim != 4)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda %s: query, value, out (3-D) and state (4-D) are required", op);
    sh->T = q->shape[0];
    sh->H = q->shape[1];
    sh->Dk = q->shape[2];
    sh->HV = v->shape[1];
    sh->Dv = v->shape[2];
    attnrt_op_query_t qq;
    plugin_linear_query(opcode, q, state, sh->H, sh->Dk, sh->Dv, &qq);
    char reason[256];
    if (cuda_op_check(&qq, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda %s: %s", op, reason);
    if (cuda_ck_dtype(state->dtype) != CK_F32)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda %s: the state pool must be f32", op);
    const int qk = cuda_ck_dtype(q->dtype), ok = cuda_ck_dtype(out->dtype);
    if (ok != qk && ok != CK_F32)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda %s: out must have the query's dtype or f32", op);
    if (sh->Dk < 1 || sh->Dv < 1 || sh->H < 1 || sh->HV < 1 || sh->HV % sh->H)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda %s: Dk %lld, Dv %lld, %lld key heads, %lld value heads", op,
                           (long long)sh->Dk, (long long)sh->Dv, (long long)sh->H, (long long)sh->HV);
    return ATTNRT_OK;
}

/* Whether request b's token is token b for every b (one token each): the decode kernel's batch. */
static int lin_one_token_each(const attnrt_batch_host_t *batch, int64_t T)
{
    if (!batch->query_start_loc || batch->num_seqs < 1 || T != batch->num_seqs) return 0;
    for (int32_t b = 0; b <= batch->num_seqs; b++)
        if (batch->query_start_loc[b] != b) return 0;
    return 1;
}

static attnrt_status_t lin_plan_new(cuda_dev_t *d, uint32_t kind, const char *op, const lin_shape_t *sh,
                                    const attnrt_batch_host_t *batch, int64_t num_spec, void **plan_out,
                                    size_t *workspace_bytes)
{
    const int64_t B = batch->num_seqs;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    const int rpt = sh->Dk <= 16 ? 1 : sh->Dk <= 32 ? 2 : sh->Dk <= 64 ? 4 : sh->Dk <= 128 ? 8 : 16;
    const char *name = kind == CUDA_PLAN_LIGHTNING ? "lightning" : "gdn";
    char vname[64], sname[64];
    snprintf(vname, sizeof vname, "ck_lin_%s_r%d_v4", name, rpt);
    snprintf(sname, sizeof sname, "ck_lin_%s_r%d_s", name, rpt);
    cuda_lin_plan_t *p = calloc(1, sizeof *p);
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda %s plan: out of memory", op);
    st = cuda_function(d, CUDA_FAMILY_LINEAR, vname, &p->f_vec);
    if (st == ATTNRT_OK) st = cuda_function(d, CUDA_FAMILY_LINEAR, sname, &p->f_scalar);
    const char *env = secure_getenv("ATTNRT_CUDA_LINEAR");
    const int general = env && strcmp(env, "general") == 0;
    if (st == ATTNRT_OK && !general && num_spec < 0 && (rpt == 4 || rpt == 8) && lin_one_token_each(batch, sh->T)) {
        char dname[64];
        snprintf(dname, sizeof dname, "ck_lin_%s_decode_r%d", name, rpt);
        st = cuda_function(d, CUDA_FAMILY_LINEAR, dname, &p->f_decode);
        if (st == ATTNRT_OK)
            (void)cuda_drv.FuncSetAttribute(p->f_decode, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
    }
    if (st != ATTNRT_OK) {
        free(p);
        return st;
    }
    /* the state slice lives in static shared memory (16 KB a block at Dk 128): ask for the largest
     * carveout so that the register-bound count of blocks (8-10 an SM) also fits there; a hint only */
    (void)cuda_drv.FuncSetAttribute(p->f_vec, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
    (void)cuda_drv.FuncSetAttribute(p->f_scalar, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
    p->head.magic = CUDA_PLAN12_MAGIC;
    p->head.kind = kind;
    p->head.dev = d;
    p->T = sh->T;
    p->B = B;
    p->H = sh->H;
    p->HV = sh->HV;
    p->Dk = sh->Dk;
    p->Dv = sh->Dv;
    p->num_spec = num_spec;
    *plan_out = p;
    *workspace_bytes = 0;
    return ATTNRT_OK;
}

static const cuda_lin_plan_t *lin_plan_of(const cuda_dev_t *d, const void *plan, uint32_t kind, const char *op)
{
    const cuda_lin_plan_t *p = plan;
    if (!p || p->head.magic != CUDA_PLAN12_MAGIC || p->head.kind != kind || p->head.dev != d) {
        plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda %s run: the plan is NULL, not a %s plan, or made on another device",
                    op, op);
        return NULL;
    }
    return p;
}

/* The fields both ops share; then one launch of B x HV x ceil(Dv / 32) blocks: the decode kernels' grid
 * is 1-D, a head's column slices adjacent; ck_lin_body's is B x HV by the slices. */
static attnrt_status_t lin_launch(cuda_dev_t *d, const cuda_lin_plan_t *p, ck_lin_args_t *k, const attnrt_tensor_t *q,
                                  const attnrt_tensor_t *key, const attnrt_tensor_t *v, const attnrt_tensor_t *out,
                                  const attnrt_tensor_t *state, const attnrt_tensor_t *qsl,
                                  const attnrt_tensor_t *has_init, void *stream, const char *what)
{
    k->q = plugin_tensor_ref(q, k->q_st, 2);
    k->k = plugin_tensor_ref(key, k->k_st, 2);
    k->v = plugin_tensor_ref(v, k->v_st, 2);
    k->out = plugin_tensor_ref(out, k->out_st, 2);
    k->state = plugin_tensor_ref(state, k->state_st, 3);
    k->qsl = plugin_tensor_ref(qsl, &k->qsl_st, 1);
    if (has_init && has_init->data) {
        k->has_init = has_init->data;
        k->init_st = has_init->ndim > 0 ? has_init->strides[0] : 0;
        k->init_bits = has_init->dtype.bits;
    }
    k->num_tokens = p->T;
    k->num_seqs = p->B;
    k->num_slots = state->shape[0];
    k->heads = (int32_t)p->HV;
    k->group = (int32_t)(p->HV / p->H);
    k->dk = (int32_t)p->Dk;
    k->dv = (int32_t)p->Dv;
    k->q_dtype = cuda_ck_dtype(q->dtype);
    k->k_dtype = cuda_ck_dtype(key->dtype);
    k->v_dtype = cuda_ck_dtype(v->dtype);
    k->out_dtype = cuda_ck_dtype(out->dtype);
    k->vec4 = p->Dv % 4 == 0 && (uintptr_t)state->data % 16 == 0 && state->strides[0] % 4 == 0 &&
              state->strides[1] % 4 == 0 && state->strides[2] % 4 == 0 && state->strides[3] == 1;
    if (p->B <= 0) return ATTNRT_OK;
    const int64_t blocks = p->B * p->HV, slices = (p->Dv + CK_LIN_COLS - 1) / CK_LIN_COLS;
    const CUfunction f = !k->vec4 ? p->f_scalar : p->f_decode ? p->f_decode : p->f_vec;
    const int flat = f == p->f_decode; /* 32-bit block index in the decode kernels */
    if (flat ? blocks * slices > 0x7fffffff : (blocks > 0x7fffffff || slices > 65535))
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda %s: %lld requests x heads and %lld column slices are too many "
                           "for one launch", what, (long long)blocks, (long long)slices);
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    void *params[1] = {k};
    CUresult r = cuda_drv.LaunchKernel(f, (unsigned)(flat ? blocks * slices : blocks), flat ? 1u : (unsigned)slices, 1,
                                       CK_LIN_THREADS, 1, 1, 0, cuda_stream_of(stream), params, NULL);
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuda %s: cuLaunchKernel (%lld x %lld blocks)", what, (long long)blocks,
                                            (long long)slices);
    return cuda_finish(stream, what);
}

/* ---- lightning ------------------------------------------------------------------------------- */

attnrt_status_t cuda_lightning_plan(cuda_dev_t *d, const attnrt_lightning_args_t *args_in, const attnrt_batch_host_t *batch_in,
                                    const attnrt_state_host_t *states, void **plan_out, size_t *workspace_bytes)
{
    (void)states; /* the kernel reads the device copies; the runtime has checked the host ones */
    attnrt_lightning_args_t a;
    attnrt_batch_host_t batch;
    attnrt_status_t st = PLUGIN_PLAN_OPEN("cuda", "lightning", a, args_in, batch, batch_in, PLUGIN_BATCH_AS_GIVEN, plan_out,
                                          workspace_bytes);
    if (st != ATTNRT_OK) return st;
    if (batch.num_seqs < 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda lightning plan: %d requests", batch.num_seqs);
    lin_shape_t sh;
    st = lin_shapes("lightning", ATTNRT_OP_LIGHTNING, a.query, a.value, a.out, a.state, &sh);
    if (st != ATTNRT_OK) return st;
    if (sh.HV != sh.H)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda lightning: value has %lld heads, query %lld", (long long)sh.HV,
                           (long long)sh.H);
    return lin_plan_new(d, CUDA_PLAN_LIGHTNING, "lightning", &sh, &batch, -1, plan_out, workspace_bytes);
}

attnrt_status_t cuda_lightning_run(cuda_dev_t *d, const void *plan, const attnrt_lightning_args_t *in, void *workspace,
                                   size_t workspace_bytes, void *stream)
{
    (void)workspace;
    (void)workspace_bytes;
    const cuda_lin_plan_t *p = lin_plan_of(d, plan, CUDA_PLAN_LIGHTNING, "lightning");
    if (!p) return ATTNRT_ERR_INVALID_ARGUMENT;
    if (!in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda lightning run: args are required");
    attnrt_lightning_args_t a;
    PLUGIN_COPY_IN(a, in);
    lin_shape_t sh;
    attnrt_status_t st = lin_shapes("lightning", ATTNRT_OP_LIGHTNING, a.query, a.value, a.out, a.state, &sh);
    if (st != ATTNRT_OK) return st;
    if (sh.T != p->T || sh.H != p->H || sh.HV != p->HV || sh.Dk != p->Dk || sh.Dv != p->Dv)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda lightning run: shapes differ from the plan's; plan this batch again");
    if (p->B <= 0) return ATTNRT_OK;
    /* per-token tensors of a batch without tokens may have no data (they have no elements) */
    if (!a.key || !a.slopes || !a.query_start_loc || !a.state_indices ||
        (sh.T > 0 && (!a.query->data || !a.key->data || !a.value->data || !a.out->data)) || !a.slopes->data ||
        !a.state->data || !a.query_start_loc->data || !a.state_indices->data)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda lightning run: a required tensor or its data is missing");
    ck_lin_args_t k;
    memset(&k, 0, sizeof k);
    k.slopes = plugin_tensor_ref(a.slopes, &k.slopes_st, 1);
    k.slot_idx = plugin_tensor_ref(a.state_indices, &k.slot_st, 1);
    return lin_launch(d, p, &k, a.query, a.key, a.value, a.out, a.state, a.query_start_loc, a.has_initial_state, stream,
                      "cuda lightning");
}

/* ---- gated delta ----------------------------------------------------------------------------- */

attnrt_status_t cuda_gated_delta_plan(cuda_dev_t *d, const attnrt_gated_delta_args_t *args_in,
                                      const attnrt_batch_host_t *batch_in, const attnrt_state_host_t *states_in,
                                      void **plan_out, size_t *workspace_bytes)
{
    attnrt_gated_delta_args_t a;
    attnrt_batch_host_t batch;
    attnrt_status_t st = PLUGIN_PLAN_OPEN("cuda", "gated_delta", a, args_in, batch, batch_in, PLUGIN_BATCH_AS_GIVEN, plan_out,
                                          workspace_bytes);
    if (st != ATTNRT_OK) return st;
    if (batch.num_seqs < 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda gated_delta plan: %d requests", batch.num_seqs);
    lin_shape_t sh;
    st = lin_shapes("gated_delta", ATTNRT_OP_GATED_DELTA, a.query, a.value, a.out, a.state, &sh);
    if (st != ATTNRT_OK) return st;
    if (!(a.scale >= 0.0f) || isinf(a.scale))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda gated_delta: scale %g is not a finite number >= 0", (double)a.scale);
    int64_t num_spec = -1;
    if (a.spec_state_indices) {
        if (a.spec_state_indices->ndim != 2 || a.spec_state_indices->shape[1] < 1 || !a.num_accepted)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda gated_delta: spec_state_indices [B, num_spec + 1] needs "
                               "num_accepted");
        num_spec = a.spec_state_indices->shape[1] - 1;
    }
    if (states_in) {
        attnrt_state_host_t states;
        PLUGIN_COPY_IN(states, states_in);
        const int host_spec = states.spec_state_indices != NULL;
        if (host_spec != (num_spec >= 0) || (host_spec && states.num_spec != num_spec))
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda gated_delta plan: the host states and the args disagree "
                               "on speculative decoding (num_spec %d vs %lld)", states.num_spec, (long long)num_spec);
    }
    return lin_plan_new(d, CUDA_PLAN_GATED_DELTA, "gated_delta", &sh, &batch, num_spec, plan_out, workspace_bytes);
}

attnrt_status_t cuda_gated_delta_run(cuda_dev_t *d, const void *plan, const attnrt_gated_delta_args_t *in, void *workspace,
                                     size_t workspace_bytes, void *stream)
{
    (void)workspace;
    (void)workspace_bytes;
    const cuda_lin_plan_t *p = lin_plan_of(d, plan, CUDA_PLAN_GATED_DELTA, "gated_delta");
    if (!p) return ATTNRT_ERR_INVALID_ARGUMENT;
    if (!in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda gated_delta run: args are required");
    attnrt_gated_delta_args_t a;
    PLUGIN_COPY_IN(a, in);
    lin_shape_t sh;
    attnrt_status_t st = lin_shapes("gated_delta", ATTNRT_OP_GATED_DELTA, a.query, a.value, a.out, a.state, &sh);
    if (st != ATTNRT_OK) return st;
    const int spec = a.spec_state_indices != NULL;
    const int64_t num_spec = spec && a.spec_state_indices->ndim == 2 ? a.spec_state_indices->shape[1] - 1 : -1;
    if (sh.T != p->T || sh.H != p->H || sh.HV != p->HV || sh.Dk != p->Dk || sh.Dv != p->Dv || num_spec != p->num_spec)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda gated_delta run: shapes differ from the plan's; plan this "
                           "batch again");
    if (p->B <= 0) return ATTNRT_OK;
    if (!a.key || !a.g || !a.beta || !a.query_start_loc || (!spec && !a.state_indices) || (spec && !a.num_accepted) ||
        (sh.T > 0 && (!a.query->data || !a.key->data || !a.value->data || !a.g->data || !a.beta->data ||
                      !a.out->data)) ||
        !a.state->data || !a.query_start_loc->data || (!spec && !a.state_indices->data) ||
        (spec && (!a.spec_state_indices->data || !a.num_accepted->data)))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda gated_delta run: a required tensor or its data is missing");
    const int gk = cuda_ck_dtype(a.g->dtype), bk = cuda_ck_dtype(a.beta->dtype);
    if (gk < CK_F32 || gk > CK_BF16 || bk < CK_F32 || bk > CK_BF16)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda gated_delta: g and beta must be f32, f16 or bf16");
    ck_lin_args_t k;
    memset(&k, 0, sizeof k);
    k.g = plugin_tensor_ref(a.g, k.g_st, 2);
    k.beta = plugin_tensor_ref(a.beta, k.beta_st, 2);
    k.g_dtype = gk;
    k.beta_dtype = bk;
    if (spec) {
        k.spec = 1;
        k.num_spec = (int32_t)num_spec;
        k.spec_idx = plugin_tensor_ref(a.spec_state_indices, k.spec_st, 2);
        k.accepted = plugin_tensor_ref(a.num_accepted, &k.acc_st, 1);
    } else {
        k.slot_idx = plugin_tensor_ref(a.state_indices, &k.slot_st, 1);
    }
    k.l2norm = a.use_l2norm != 0;
    k.scale = plugin_gated_delta_scale(a.scale, sh.Dk);
    return lin_launch(d, p, &k, a.query, a.key, a.value, a.out, a.state, a.query_start_loc, a.has_initial_state, stream,
                      "cuda gated_delta");
}
