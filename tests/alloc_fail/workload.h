/* Valid arguments of every op on one context, for the allocation-failure scenarios: a batch shape
 * (requests' query and sequence lengths, heads, head size, block size) becomes device buffers filled
 * with finite inputs, tensors over them, and the args of paged attention, kv_write, merge and cascade;
 * on request also MLA (dense and sparse), lightning and gated delta with their state pools.
 * Every helper fails the cmocka test on an unexpected status. */
#ifndef ALLOC_FAIL_WORKLOAD_H
#define ALLOC_FAIL_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt.h"

enum { WL_MAX_SEQS = 4, WL_MAX_BUFS = 48, WL_MAX_REGIONS = 4, WL_MLA_KV_DIM = 24, WL_LIN_H = 2, WL_LIN_DK = 8,
       WL_LIN_DV = 4, WL_GDN_HV = 4, WL_GDN_NUM_SPEC = 4, WL_PREFIX_BLOCKS = 2,
       WL_WORKSPACE_BYTES = 1 << 20 };

typedef struct wl_shape {
    const char *device;   /* "cpu:0" */
    const char *profile;  /* npu_sim's "profile" open option, or NULL */
    int32_t     num_seqs, q_heads, kv_heads, head_dim, block_size, max_blocks;
    int32_t     q_lens[WL_MAX_SEQS], seq_lens[WL_MAX_SEQS];
    int         more_ops; /* also MLA, lightning and gated delta (head_dim must be 16) */
} wl_shape_t;

/* A device region an op writes: the scenarios restore it before each call and compare it after. */
typedef struct wl_region {
    void  *dev;
    size_t bytes;
} wl_region_t;

typedef struct wl {
    wl_shape_t        shape;
    attnrt_context_t *ctx;
    void             *bufs[WL_MAX_BUFS];
    int               num_bufs;
    int32_t           T;

    /* host metadata */
    int32_t             h_qsl[WL_MAX_SEQS + 1], h_seq_lens[WL_MAX_SEQS], *h_block_table;
    int32_t             h_prefix_lens[WL_MAX_SEQS], h_prefix_table[WL_PREFIX_BLOCKS];
    int64_t            *h_slots;
    attnrt_batch_host_t batch, prefix_batch;

    /* paged attention, kv_write, merge, cascade */
    attnrt_tensor_t query, key_cache, value_cache, block_table, qsl, seq_lens, out, lse, key, value, slots,
        states[2], lses[2], prefix_table, prefix_lens;
    const attnrt_tensor_t  *merge_states[2], *merge_lses[2];
    attnrt_attention_args_t att;
    attnrt_kv_write_args_t  kvw;
    attnrt_merge_args_t     merge;
    attnrt_cascade_args_t   cas;
    attnrt_cascade_host_t   cas_host;
    void                   *workspace; /* WL_WORKSPACE_BYTES */

    /* MLA (more_ops): query [T, Hq, 24], latent cache [blocks, block, 1, 24], out = `out` */
    attnrt_tensor_t   mla_query, latent, indices;
    int32_t          *h_indices;
    attnrt_mla_args_t mla, mla_sparse;

    /* lightning and gated delta (more_ops): pools with slots 0..B-1 allocated */
    attnrt_state_pool_t      *lin_pool, *gdn_pool;
    attnrt_tensor_t           lq, lk, lv, lout, slopes, lin_state, gv, g, beta, gout, gdn_state, state_indices,
        lin_init, gdn_init, spec, num_accepted;
    int32_t                   h_state_indices[WL_MAX_SEQS], h_spec[WL_MAX_SEQS * (WL_GDN_NUM_SPEC + 1)];
    int32_t                   h_num_accepted[WL_MAX_SEQS];
    uint8_t                   h_init[WL_MAX_SEQS];
    attnrt_batch_host_t       lin_batch;
    attnrt_state_host_t       lin_states, gdn_states, gdn_spec_states;
    attnrt_lightning_args_t   lin;
    attnrt_gated_delta_args_t gdn, gdn_spec;
} wl_t;

/* Opens the shape's device (with its profile option) and builds everything into *out (set first, so a
 * test that fails half-way can still free it); wl_free releases it all and returns -1 when something,
 * attnrt_close included, failed. */
void wl_new(const wl_shape_t *shape, wl_t **out);
int   wl_free(wl_t *w);

/* Bytes of a state pool's storage. */
size_t wl_pool_bytes(const attnrt_state_pool_t *pool, void **data);

#endif /* ALLOC_FAIL_WORKLOAD_H */
