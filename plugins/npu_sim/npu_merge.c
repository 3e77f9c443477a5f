/* npu_merge.c — n-way merge of partial states (o_i, lse_i), docs/semantics.md "Merging partial states":
 * the same online-softmax merge the flash kernel applies between KV partitions, offered as an op
 * (plugin_merge_row), charged by the cost model. */
#include "dtype_convert.h"
#include "npu_cost.h"
#include "npu_ops.h"
#include "plugin_args.h"
#include "plugin_softmax.h"

attnrt_status_t npu_merge_states(npu_device_t *d, const attnrt_merge_args_t *in)
{
    attnrt_merge_args_t a;
    attnrt_status_t st = plugin_merge_open(d->host.name, in, &a);
    if (st != ATTNRT_OK) return st;
    const int64_t T = a.out->shape[0], H = a.out->shape[1], D = a.out->shape[2];
    const int64_t state_bytes = (int64_t)dc_kind_size(dc_kind_of(a.states[a.num_states - 1]->dtype));
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++) plugin_merge_row(&a, t, h, D);
    attnrt_op_stats_t stats;
    npu_cost_begin(&stats, ATTNRT_OP_MERGE_STATES);
    npu_cost_merge(d->sel.profile, a.num_states, T, H, D, state_bytes, (int64_t)dc_kind_size(dc_kind_of(a.out->dtype)),
                   &stats);
    npu_device_record(d, &stats);
    return ATTNRT_OK;
}
