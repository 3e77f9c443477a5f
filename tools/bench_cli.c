/* bench_cli.c — attnrt-bench's command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const char *const op_names[] = {"decode", "prefill", "mixed", "kv_write", "merge",
                                        "mla_decode", "lightning_decode", "gdn_decode"};

const char *bench_op_name(bench_op_t op) { return op_names[op]; }

static void usage(FILE *f, const char *argv0)
{
    fprintf(f,
            "usage: %s [--plugin NAME|PATH] [--device NAME] [--op decode|prefill|mixed|kv_write|merge|\n"
            "          mla_decode|lightning_decode|gdn_decode] [--v-dim N] [--topk N]\n"
            "          [--batch B] [--ctx N] [--new-tokens N] [--prefill-ctx N] [--heads H] [--kv-heads H]\n"
            "          [--head-dim D] [--block-size N] [--dtype T] [--kv-dtype T] [--layout nhd|hnd]\n"
            "          [--blocks shuffled|in-order] [--no-causal] [--iters N] [--warmup N] [--threads N]\n"
            "          [--timing both|queued|single] [--no-ceiling] [--json] [--version] [--help]\n"
            "Times one op on a device and reports it against ceilings measured in the same run: the memory-read\n"
            "bandwidth (cpu: a streaming SIMD read of >= 4x the last-level cache on the same threads; other\n"
            "devices: attnrt_mem_copy_on_device) and the fp32 FMA peak (cpu: register-resident FMAs on all threads).\n"
            "  --op            decode: B requests of 1 token over ctx keys (default)\n"
            "                  prefill: B requests of new-tokens causal tokens whose KV length is ctx\n"
            "                  mixed: B decodes over ctx + one prefill chunk of new-tokens over prefill-ctx,\n"
            "                         also timed apart (the parts)\n"
            "                  kv_write: B x new-tokens tokens into the cache; merge: two states of B x new-tokens rows\n"
            "                  mla_decode: B requests of 1 token, heads query heads over ctx latent rows of\n"
            "                         head-dim (e.g. 576) columns, values the first v-dim (512); --topk N: sparse\n"
            "                  lightning_decode / gdn_decode: B requests of 1 token, heads (value) heads with\n"
            "                         kv-heads key heads (gdn), Dk = head-dim, Dv = v-dim, f32 state slots;\n"
            "                         bytes = the state read + written, plus q, k, v, out\n"
            "  --batch B       requests (default 1)          --ctx N          KV length (default 32768; prefill 4096)\n"
            "  --new-tokens N  prefill tokens (default 512)  --prefill-ctx N  mixed: the chunk's KV length (4096)\n"
            "  --heads H       query heads (32)              --kv-heads H     KV heads (8)\n"
            "  --head-dim D    (128)                         --block-size N   paged-KV block (16)\n"
            "  --dtype T       q/out: f32 f16 bf16 (f32)     --kv-dtype T     cache: f32 f16 bf16 fp8_e4m3 fp8_e5m2 (= dtype)\n"
            "  --blocks O      physical order of a request's KV blocks: shuffled (default; an allocator after\n"
            "                  churn) or in-order (a fresh allocator: each request's blocks adjacent)\n"
            "  --iters N       timed runs (20)               --warmup N       untimed runs first (3)\n"
            "  --threads N     cpu threads: sets ATTNRT_NUM_THREADS; the ceilings use as many (default: all cores)\n"
            "  --timing M      how a run is timed (default both; docs/tools.md):\n"
            "                  queued: on a created stream, enqueued behind a 128 MiB device copy that keeps the\n"
            "                         device busy while the host enqueues (and leaves the cache cold), between\n"
            "                         two events: the op's device time and the gap from the work before it, as\n"
            "                         a step of an engine's stream pays it; the host's time in the call is shown\n"
            "                  single: one call on the NULL stream between two events; the ABI makes it\n"
            "                         synchronous, so it also holds the host launch and the host's wait\n"
            "                  both: queued, and single beside it. Where calls complete before they return (cpu,\n"
            "                         simulated devices) every mode is single\n"
            "Reports the median time (events where the plugin has them, else the synchronised host clock),\n"
            "GB/s of the bytes the op must move (KV read once + q + out), GFLOP/s (2 * Hq * (Dqk + Dv) per kept\n"
            "query-key pair) and their fractions of the ceilings.\n",
            argv0);
}

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *v)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || !end || *end || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

static int parse_dtype(const char *s, attnrt_dtype_t *dt)
{
    const struct { const char *name; attnrt_dtype_t dt; } map[] = { /* not static: the dtypes are compound literals */
        {"f32", ATTNRT_F32}, {"f16", ATTNRT_F16}, {"bf16", ATTNRT_BF16},
        {"fp8_e4m3", ATTNRT_FP8_E4M3}, {"fp8_e5m2", ATTNRT_FP8_E5M2}, {"e4m3", ATTNRT_FP8_E4M3}, {"e5m2", ATTNRT_FP8_E5M2},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i].name)) {
            *dt = map[i].dt;
            return 0;
        }
    return -1;
}

int bench_parse(int argc, char **argv, bench_options_t *o)
{
    memset(o, 0, sizeof *o);
    o->op = BENCH_DECODE;
    o->batch = 1;
    o->ctx = -1;
    o->new_tokens = 512;
    o->prefill_ctx = 4096;
    o->heads = 32;
    o->kv_heads = 8;
    o->head_dim = 128;
    o->block_size = 16;
    o->dtype = ATTNRT_F32;
    o->iters = 20;
    o->warmup = 3;
    o->causal = 1;
    o->shuffled = 1;
    int kv_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout, argv[0]);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("attnrt-bench: libattnrt %s\n", attnrt_version_string());
            return 1;
        }
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--no-causal")) { o->causal = 0; continue; }
        if (!strcmp(a, "--no-ceiling")) { o->no_ceiling = 1; continue; }
        const char *eq = strchr(a, '=');
        char name[32];
        const char *v;
        if (eq && eq - a < (long)sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            v = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: unknown option or missing value: %s (see --help)\n", argv[0], a);
                return -1;
            }
            v = argv[++i];
        }
        int64_t n = 0;
        int ok = 0;
        if (!strcmp(name, "--plugin")) o->plugin = v, ok = 1;
        else if (!strcmp(name, "--device")) o->device = v, ok = 1;
        else if (!strcmp(name, "--op")) {
            for (int k = 0; k < (int)(sizeof op_names / sizeof op_names[0]); k++)
                if (!strcmp(v, op_names[k])) o->op = (bench_op_t)k, ok = 1;
        } else if (!strcmp(name, "--dtype")) ok = parse_dtype(v, &o->dtype) == 0;
        else if (!strcmp(name, "--kv-dtype")) ok = parse_dtype(v, &o->kv_dtype) == 0, kv_set = 1;
        else if (!strcmp(name, "--blocks")) {
            if (!strcmp(v, "shuffled") || !strcmp(v, "in-order")) o->shuffled = !strcmp(v, "shuffled"), ok = 1;
        } else if (!strcmp(name, "--timing")) {
            const char *modes[] = {"both", "queued", "single"};
            for (int k = 0; k < 3; k++)
                if (!strcmp(v, modes[k])) o->timing = (bench_timing_t)k, ok = 1;
        } else if (!strcmp(name, "--layout")) {
            if (!strcmp(v, "nhd") || !strcmp(v, "hnd")) o->hnd = !strcmp(v, "hnd"), ok = 1;
        } else {
            static const struct { const char *name; int64_t lo, hi; size_t off; int is_int; } nums[] = {
                {"--batch", 1, 1 << 20, offsetof(bench_options_t, batch), 0},
                {"--ctx", 1, INT32_MAX, offsetof(bench_options_t, ctx), 0},
                {"--new-tokens", 1, INT32_MAX, offsetof(bench_options_t, new_tokens), 0},
                {"--prefill-ctx", 1, INT32_MAX, offsetof(bench_options_t, prefill_ctx), 0},
                {"--heads", 1, 4096, offsetof(bench_options_t, heads), 0},
                {"--kv-heads", 1, 4096, offsetof(bench_options_t, kv_heads), 0},
                {"--head-dim", 1, 1024, offsetof(bench_options_t, head_dim), 0},
                {"--block-size", 1, 4096, offsetof(bench_options_t, block_size), 0},
                {"--v-dim", 1, 4096, offsetof(bench_options_t, v_dim), 0},
                {"--topk", 0, 1 << 20, offsetof(bench_options_t, topk), 0},
                {"--iters", 1, 100000, offsetof(bench_options_t, iters), 1},
                {"--warmup", 0, 100000, offsetof(bench_options_t, warmup), 1},
                {"--threads", 1, 1024, offsetof(bench_options_t, threads), 1},
            };
            for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
                if (strcmp(name, nums[k].name)) continue;
                if (parse_int(v, nums[k].lo, nums[k].hi, &n) != 0) break;
                if (nums[k].is_int)
                    *(int *)(void *)((char *)o + nums[k].off) = (int)n;
                else
                    *(int64_t *)(void *)((char *)o + nums[k].off) = n;
                ok = 1;
            }
        }
        if (!ok) {
            fprintf(stderr, "%s: unknown option %s, or bad value '%s' for it (see --help)\n", argv[0], name, v);
            return -1;
        }
    }
    if (!kv_set) o->kv_dtype = o->dtype;
    if (o->ctx < 0) o->ctx = o->op == BENCH_PREFILL ? 4096 : 32768;
    if (o->op == BENCH_PREFILL && o->ctx < o->new_tokens) o->ctx = o->new_tokens;
    if (o->op == BENCH_MIXED && o->prefill_ctx < o->new_tokens) o->prefill_ctx = o->new_tokens;
    if (o->heads % o->kv_heads) {
        fprintf(stderr, "%s: --heads %lld is not a multiple of --kv-heads %lld\n", argv[0], (long long)o->heads,
                (long long)o->kv_heads);
        return -1;
    }
    return 0;
}
