/* plugin_query.h — the capability query a paged-attention call amounts to, rebuilt from its args, so a
 * plugin's plan refuses exactly what its op_supported refuses. */
#ifndef ATTNRT_PLUGIN_QUERY_H
#define ATTNRT_PLUGIN_QUERY_H

#include <string.h>

#include "attnrt_plugin.h"

/* Op, dtypes, head sizes, block size and head counts; features are left 0 for the caller to add. */
static inline void plugin_attention_query(const attnrt_attention_args_t *a, attnrt_op_query_t *q)
{
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_PAGED_ATTENTION;
    q->q_dtype = a->query->dtype;
    q->kv_dtype = a->key_cache->dtype;
    q->head_dim_qk = (uint32_t)a->query->shape[2];
    q->head_dim_v = (uint32_t)a->value_cache->shape[3];
    q->block_size = (uint32_t)a->key_cache->shape[1];
    q->num_q_heads = (uint32_t)a->query->shape[1];
    q->num_kv_heads = (uint32_t)a->key_cache->shape[2];
}

#endif /* ATTNRT_PLUGIN_QUERY_H */
