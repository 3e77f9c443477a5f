/* The bad-input tests of the op API: every group on the cpu plugin, then a clean shutdown. */
#include <stdio.h>
#include <stdlib.h>

#include "ops_entries.h"
#include "ops_fixture.h"

int main(void)
{
    /* Before any libattnrt call: exactly the build tree's cpu plugin. */
    setenv("ATTNRT_PLUGIN", "cpu", 1);
    int failed = 0;
    failed += ops_run_tensor_tests();
    failed += ops_run_kv_write_tests();
    failed += ops_run_attention_plan_tests();
    failed += ops_run_attention_batch_tests();
    failed += ops_run_attention_run_tests();
    failed += ops_run_merge_tests();
    failed += ops_run_cascade_tests();
    /* state pools, MLA, lightning, gated delta, device options */
    failed += ops_run_state_pool_tests();
    failed += ops_run_mla_plan_tests();
    failed += ops_run_mla_run_tests();
    failed += ops_run_lightning_tests();
    failed += ops_run_gated_delta_tests();
    failed += ops_run_linear_run_tests();
    failed += ops_run_options_tests();
    /* tensor layouts, on every op entry */
    failed += ops_run_stride_tests();
    failed += ops_run_aliasing_tests();
    failed += ops_run_huge_shape_tests();
    failed += ops_run_dtype_name_tests();
    /* Every context was closed by the teardowns, so the runtime shuts down cleanly. */
    attnrt_status_t st = attnrt_shutdown();
    if (st != ATTNRT_OK) {
        fprintf(stderr, "attnrt_shutdown returned %s: %s\n", attnrt_status_name(st), attnrt_last_error());
        failed++;
    }
    return failed ? 1 : 0;
}
