/* npu_kv_write.c — scatters new K/V rows into the paged caches (plugin_kv_write_token: fp8 caches
 * quantise on write with their per-tensor scale). On the NPU the cache update is fused into the
 * attention kernel (vllm-rbln's "cache update is included into flash attention"); here it is its own
 * op, charged as the bytes it moves plus one launch. Slots outside the cache are skipped whatever the
 * slot mapping holds. */
#include "dtype_convert.h"
#include "npu_cost.h"
#include "npu_ops.h"
#include "plugin_args.h"

attnrt_status_t npu_kv_write(npu_device_t *d, const attnrt_kv_write_args_t *in)
{
    attnrt_kv_write_args_t a;
    plugin_kv_write_t kw;
    attnrt_status_t st = plugin_kv_write_open(d->host.name, in, &a);
    if (st == ATTNRT_OK) st = plugin_kv_write_decode(d->host.name, &a, &kw);
    if (st != ATTNRT_OK) return st;
    int64_t written = 0;
    for (int64_t t = 0; t < kw.num_tokens; t++) written += plugin_kv_write_token(&kw, t);
    const plugin_kv_side_t *k = &kw.side[0], *v = &kw.side[1];
    attnrt_op_stats_t stats;
    npu_cost_begin(&stats, ATTNRT_OP_KV_WRITE);
    npu_cost_kv_write(d->sel.profile, written, kw.num_heads, k->dim, v->dim, (int64_t)dc_kind_size(k->src.kind),
                      (int64_t)dc_kind_size(k->cache.kind), &stats);
    npu_device_record(d, &stats);
    return ATTNRT_OK;
}
