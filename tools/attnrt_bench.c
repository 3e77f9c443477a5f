/* attnrt-bench: times one op on one device against ceilings measured in the same run. A thin main:
 * the logic is in bench_*.c (see bench.h). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int main(int argc, char **argv)
{
    bench_options_t o;
    int rc = bench_parse(argc, argv, &o);
    if (rc != 0) return rc > 0 ? 0 : 2;
    if (o.plugin) setenv("ATTNRT_PLUGIN", o.plugin, 1);
    char threads[16];
    if (o.threads) { /* before the plugin opens its device: its pool reads it */
        snprintf(threads, sizeof threads, "%d", o.threads);
        setenv("ATTNRT_NUM_THREADS", threads, 1);
    }
    attnrt_context_t *ctx = NULL;
    if (attnrt_open(o.device, &ctx) != ATTNRT_OK) {
        fprintf(stderr, "attnrt-bench: cannot open a device: %s\n", attnrt_last_error());
        return 1;
    }
    uint32_t idx = 0;
    attnrt_device_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    if (attnrt_device_find(attnrt_context_device_name(ctx), &idx) == ATTNRT_OK) attnrt_device_get_properties(idx, &props);
    const int is_cpu = props.device_type == ATTNRT_DEVICE_TYPE_CPU;
    /* queued timing needs calls that return before their work is done: not the cpu (synchronous) or a
       simulated / unknown device (its calls complete at once, its times come from a cost model) */
    o.async_device = props.device_type == ATTNRT_DEVICE_TYPE_CUDA || props.device_type == ATTNRT_DEVICE_TYPE_ROCM ||
                     props.device_type == ATTNRT_DEVICE_TYPE_ONEAPI;
    if (!o.threads) { /* the plugin's default: the cores of this process, or ATTNRT_NUM_THREADS */
        const char *env = getenv("ATTNRT_NUM_THREADS");
        cpu_set_t set;
        o.threads = env && atoi(env) > 0 ? atoi(env)
                    : sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)props.compute_units;
    }

    bench_ceiling_t ceiling;
    bench_ceiling_t *c = NULL;
    if (!o.no_ceiling) {
        if (bench_ceiling_open(ctx, is_cpu, o.threads, &ceiling) == 0) c = &ceiling;
        else fprintf(stderr, "attnrt-bench: no ceiling measured; reporting the op alone\n");
    }
    bench_result_t r;
    rc = bench_run(ctx, &o, c, &r);
    if (rc == 0) bench_report(&o, ctx, c, &r);
    if (c) c->destroy(c);
    attnrt_close(ctx);
    attnrt_shutdown();
    return rc == 0 ? 0 : 1;
}
