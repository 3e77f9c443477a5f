/* test_ops_struct_sizes: the struct_size rules at the public boundary (older, smaller structs read with
 * their missing fields as zero; newer, larger ones accepted only with a zero tail) and "zero means
 * default" (every ATTNRT_*_INIT plus the required fields computes the plain op), on the cpu plugin. */
#include <stdio.h>
#include <stdlib.h>

#include "struct_sizes_util.h"

int main(void)
{
    /* Before any libattnrt call: exactly the build tree's cpu plugin. */
    setenv("ATTNRT_PLUGIN", "cpu", 1);
    sz_seed_init();
    int failed = 0;
    failed += sz_run_older_tests();
    failed += sz_run_newer_tests();
    failed += sz_run_zero_default_tests();
    attnrt_status_t st = attnrt_shutdown();
    if (st != ATTNRT_OK) {
        fprintf(stderr, "attnrt_shutdown returned %s: %s\n", attnrt_status_name(st), attnrt_last_error());
        failed++;
    }
    return failed ? 1 : 0;
}
