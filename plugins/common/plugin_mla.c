/* plugin_mla.c — see plugin_mla.h. */
#include "plugin_mla.h"

#include <math.h>
#include <string.h>

#include "plugin_check.h"
#include "plugin_error.h"
#include "plugin_query.h"

#define ANY PLUGIN_ANY_DIM

static const char OP[] = "mla";

/* Every tensor's shape against the others; fills m's sizes. */
static attnrt_status_t check_shapes(const char *who, const attnrt_mla_args_t *a, int64_t B, plugin_mla_t *m)
{
    attnrt_status_t st;
    if ((st = plugin_check_shape(a->query, who, OP, "query", 3, (const int64_t[]){ANY, ANY, ANY}, 1))) return st;
    const int64_t T = a->query->shape[0], Hq = a->query->shape[1], D = a->query->shape[2];
    if ((st = plugin_check_shape(a->kv_cache, who, OP, "kv_cache", 4, (const int64_t[]){ANY, ANY, 1, D}, 1))) return st;
    const int64_t NB = a->kv_cache->shape[0], BS = a->kv_cache->shape[1];
    if ((st = plugin_check_shape(a->out, who, OP, "out", 3, (const int64_t[]){T, Hq, ANY}, 1))) return st;
    const int64_t Dv = a->out->shape[2];
    if (D < 1 || Dv < 1 || Dv > D || BS < 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla: kv_dim %lld, v_dim %lld, block_size %lld: need "
                           "1 <= v_dim <= kv_dim and block_size >= 1", who, (long long)D, (long long)Dv, (long long)BS);
    if (a->block_table &&
        (st = plugin_check_shape(a->block_table, who, OP, "block_table", 2, (const int64_t[]){B, ANY}, 0)))
        return st;
    if (a->query_start_loc &&
        (st = plugin_check_shape(a->query_start_loc, who, OP, "query_start_loc", 1, (const int64_t[]){B + 1}, 0)))
        return st;
    if (a->seq_lens && (st = plugin_check_shape(a->seq_lens, who, OP, "seq_lens", 1, (const int64_t[]){B}, 0)))
        return st;
    if (a->lse && (st = plugin_check_shape(a->lse, who, OP, "lse", 2, (const int64_t[]){T, Hq}, 0))) return st;
    if (a->sinks && (st = plugin_check_shape(a->sinks, who, OP, "sinks", 1, (const int64_t[]){Hq}, 0))) return st;
    if (a->indices && (st = plugin_check_shape(a->indices, who, OP, "indices", 2, (const int64_t[]){T, ANY}, 0)))
        return st;
    *m = (plugin_mla_t){.T = T, .B = B, .Hq = Hq, .D = D, .Dv = Dv, .num_blocks = NB, .block_size = BS};
    return ATTNRT_OK;
}

/* Every tensor's dtype; the fp8 scale's shape. */
static attnrt_status_t check_dtypes(const char *who, const attnrt_mla_args_t *a, int64_t NB)
{
    attnrt_status_t st;
    if ((st = plugin_check_act(a->query, who, OP, "query"))) return st;
    if ((st = plugin_check_out_kind(dc_kind_of(a->query->dtype), dc_kind_of(a->out->dtype), who, OP))) return st;
    const struct { const attnrt_tensor_t *t; const char *name; int is_f32; } typed[] = {
        {a->block_table, "block_table", 0}, {a->query_start_loc, "query_start_loc", 0}, {a->seq_lens, "seq_lens", 0},
        {a->indices, "indices", 0},         {a->lse, "lse", 1},                         {a->sinks, "sinks", 1},
    };
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        if (!typed[i].t) continue;
        const uint8_t code = typed[i].is_f32 ? ATTNRT_DTYPE_CODE_FLOAT : ATTNRT_DTYPE_CODE_INT;
        st = plugin_check_dtype(typed[i].t, who, OP, typed[i].name, code, 32, typed[i].is_f32 ? "f32" : "int32");
        if (st) return st;
    }
    if (plugin_kind_is_fp8(dc_kind_of(a->kv_cache->dtype)) && a->kv_scale) {
        if ((st = plugin_check_dtype(a->kv_scale, who, OP, "kv_scale", ATTNRT_DTYPE_CODE_FLOAT, 32, "f32"))) return st;
        const int per_tensor = a->kv_scale->ndim == 1 && a->kv_scale->shape[0] == 1;
        const int per_block = a->kv_scale->ndim == 2 && a->kv_scale->shape[0] == NB && a->kv_scale->shape[1] == 1;
        if (!per_tensor && !per_block)
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s mla: kv_scale must be [1] or [num_blocks = %lld, 1]", who,
                               (long long)NB);
    }
    return ATTNRT_OK;
}

attnrt_status_t plugin_mla_decode(const char *who, const plugin_op_rules_t *rules, const void *ctx,
                                  const attnrt_mla_args_t *a, int64_t B, int run, plugin_mla_t *m)
{
    memset(m, 0, sizeof *m);
    if (!a->query || !a->kv_cache || !a->out || (run && (!a->block_table || !a->query_start_loc || !a->seq_lens)))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla: query, kv_cache and out are required%s", who,
                           run ? ", and block_table, query_start_loc and seq_lens at run" : "");
    attnrt_status_t st = check_shapes(who, a, B, m);
    if (st == ATTNRT_OK) st = check_dtypes(who, a, m->num_blocks);
    if (st != ATTNRT_OK) return st;
    if (!(a->scale > 0.0f) || isinf(a->scale))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla: scale %g must be finite and > 0 (the model's "
                           "1/sqrt(qk_head_dim) * mscale)", who, (double)a->scale);
    attnrt_op_query_t q;
    plugin_mla_query(a, m->D, m->Dv, &q);
    char reason[PLUGIN_REASON_MAX];
    if (plugin_op_check(rules, ctx, &q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s mla: %s", who, reason);
    if (run && B > 0 &&
        (!a->query->data || !a->kv_cache->data || !a->out->data || !a->block_table->data ||
         !a->query_start_loc->data || !a->seq_lens->data || (a->indices && !a->indices->data)))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla run: a required tensor has no data", who);

    m->topk = a->indices ? a->indices->shape[1] : 0;
    m->sparse = a->indices != NULL;
    m->causal = a->causal != 0;
    m->scale = a->scale;
    m->bt_cols = a->block_table ? a->block_table->shape[1] : 0;
    m->q = plugin_view_of(a->query);
    m->out = plugin_view_of(a->out);
    m->kv = plugin_view_of(a->kv_cache);
    m->lse = plugin_view_of(a->lse);
    m->sinks = plugin_view_of(a->sinks);
    m->block_table = plugin_view_of(a->block_table);
    m->qsl = plugin_view_of(a->query_start_loc);
    m->seq_lens = plugin_view_of(a->seq_lens);
    m->indices = plugin_view_of(a->indices);
    if (plugin_kind_is_fp8(m->kv.kind) && a->kv_scale && a->kv_scale->data) {
        m->kv_scale = a->kv_scale->data;
        m->kv_scale_st = a->kv_scale->ndim == 2 ? a->kv_scale->strides[0] : 0;
    }
    return ATTNRT_OK;
}
