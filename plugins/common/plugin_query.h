/* plugin_query.h — the capability query an op call amounts to, rebuilt from its args, so that a
 * plugin's plan refuses exactly what its op_supported refuses (plugin_caps.h). Only shapes and dtypes
 * are read; the args are borrowed for the call, *q is the caller's. */
#ifndef ATTNRT_PLUGIN_QUERY_H
#define ATTNRT_PLUGIN_QUERY_H

#include <string.h>

#include "attnrt_plugin.h"

/* A size as a query field: sizes past 2^32 - 1 read as the largest (which every limit refuses). */
static inline uint32_t plugin_query_dim(int64_t n) { return (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n); }

static inline void plugin_query_init(attnrt_op_query_t *q, uint32_t op)
{
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = op;
}

/* Paged attention: dtypes, head sizes, block size and head counts; features are left 0 for the caller to add. */
static inline void plugin_attention_query(const attnrt_attention_args_t *a, attnrt_op_query_t *q)
{
    plugin_query_init(q, ATTNRT_OP_PAGED_ATTENTION);
    q->q_dtype = a->query->dtype;
    q->kv_dtype = a->key_cache->dtype;
    q->head_dim_qk = (uint32_t)a->query->shape[2];
    q->head_dim_v = (uint32_t)a->value_cache->shape[3];
    q->block_size = (uint32_t)a->key_cache->shape[1];
    q->num_q_heads = (uint32_t)a->query->shape[1];
    q->num_kv_heads = (uint32_t)a->key_cache->shape[2];
}

/* MLA over a latent of kv_dim D whose value is its first Dv columns: one latent head; sparse with
 * indices, causal as asked. */
static inline void plugin_mla_query(const attnrt_mla_args_t *a, int64_t D, int64_t Dv, attnrt_op_query_t *q)
{
    plugin_query_init(q, ATTNRT_OP_MLA);
    q->q_dtype = a->query->dtype;
    q->kv_dtype = a->kv_cache->dtype;
    q->head_dim_qk = plugin_query_dim(D);
    q->head_dim_v = plugin_query_dim(Dv);
    q->num_kv_heads = 1;
    q->features = (a->indices ? ATTNRT_FEATURE_SPARSE : 0u) | (a->causal ? ATTNRT_FEATURE_CAUSAL : 0u);
}

/* Lightning / gated delta (`op`): the query's and the state pool's dtypes, head dims Dk / Dv and the H
 * query heads. */
static inline void plugin_linear_query(uint32_t op, const attnrt_tensor_t *query, const attnrt_tensor_t *state,
                                       int64_t H, int64_t Dk, int64_t Dv, attnrt_op_query_t *q)
{
    plugin_query_init(q, op);
    q->q_dtype = query->dtype;
    q->kv_dtype = state->dtype;
    q->head_dim_qk = plugin_query_dim(Dk);
    q->head_dim_v = plugin_query_dim(Dv);
    q->num_q_heads = plugin_query_dim(H);
}

#endif /* ATTNRT_PLUGIN_QUERY_H */
