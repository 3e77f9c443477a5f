/* A program that uses an installed libattnrt the way an engine does, built by tests/install/run.sh through
 * pkg-config, CMake's find_package and a Meson subproject. It opens cpu:0, writes fresh random K/V into a
 * NaN-poisoned paged cache (attnrt_kv_write), runs one decode step of paged attention into a poisoned
 * output, and checks both against plain C (the cache bit for bit, the attention against a float64
 * softmax). With a folder argument, the cpu plugin must also have been loaded from that folder.
 * Exit 0 and one "consumer: ok" line on success; otherwise the reason on stderr and exit 1. */
#define _XOPEN_SOURCE 700 /* realpath, getpid */
#include <attnrt.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TOKENS = 7, HQ = 4, HKV = 2, D = 16, BLOCK = 4, NUM_BLOCKS = 4, BLOCKS_PER_SEQ = 2 };

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        attnrt_status_t st_ = (call);                                                                        \
        if (st_ != ATTNRT_OK) {                                                                              \
            fprintf(stderr, "consumer: %s: %s: %s\n", #call, attnrt_status_name(st_), attnrt_last_error());   \
            return 1;                                                                                        \
        }                                                                                                    \
    } while (0)

static float uniform(void) { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }

/* The cpu:0 plugin's file must lie in `folder` (both with symbolic links resolved). */
static int check_plugin_folder(const char *folder)
{
    uint32_t dev, plugin;
    attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
    CHECK(attnrt_device_find("cpu:0", &dev));
    CHECK(attnrt_device_get_plugin(dev, &plugin));
    CHECK(attnrt_plugin_get_info(plugin, &info));
    char want[PATH_MAX], got[PATH_MAX];
    if (!realpath(folder, want) || !realpath(info.path, got)) {
        fprintf(stderr, "consumer: cannot resolve %s or %s\n", folder, info.path);
        return 1;
    }
    size_t n = strlen(want);
    if (strncmp(got, want, n) != 0 || got[n] != '/' || strchr(got + n + 1, '/')) {
        fprintf(stderr, "consumer: cpu:0's plugin is %s, not from %s\n", got, want);
        return 1;
    }
    printf("consumer: cpu:0 from %s\n", got);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2) {
        fprintf(stderr, "usage: %s [PLUGIN_FOLDER]\n", argv[0]);
        return 2;
    }
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    srand(seed);
    printf("consumer: libattnrt %s, seed %u\n", attnrt_version_string(), seed);

    attnrt_context_t *ctx;
    CHECK(attnrt_open("cpu:0", &ctx));
    if (argc == 2 && check_plugin_folder(argv[1])) return 1;

    /* one sequence of TOKENS keys in blocks 3 and 1; the query is its last token */
    static float k[TOKENS][HKV][D], v[TOKENS][HKV][D], q[HQ][D], out[HQ][D];
    static float kc[NUM_BLOCKS][BLOCK][HKV][D], vc[NUM_BLOCKS][BLOCK][HKV][D];
    const int32_t table[BLOCKS_PER_SEQ] = {3, 1}, qsl[2] = {0, 1}, seq_len = TOKENS;
    int64_t slots[TOKENS];
    for (int t = 0; t < TOKENS; t++) {
        slots[t] = (int64_t)table[t / BLOCK] * BLOCK + t % BLOCK;
        for (int h = 0; h < HKV; h++)
            for (int d = 0; d < D; d++) k[t][h][d] = uniform(), v[t][h][d] = uniform();
    }
    for (int h = 0; h < HQ; h++)
        for (int d = 0; d < D; d++) q[h][d] = uniform();

    /* device buffers: the caches and the output poisoned with NaN */
    size_t kv_bytes = sizeof k, cache_bytes = sizeof kc;
    void *dk, *dv, *dkc, *dvc, *dslots, *dq, *dout, *dtable, *dqsl, *dlens;
    CHECK(attnrt_mem_alloc(ctx, kv_bytes, &dk));
    CHECK(attnrt_mem_alloc(ctx, kv_bytes, &dv));
    CHECK(attnrt_mem_alloc(ctx, cache_bytes, &dkc));
    CHECK(attnrt_mem_alloc(ctx, cache_bytes, &dvc));
    CHECK(attnrt_mem_alloc(ctx, sizeof slots, &dslots));
    CHECK(attnrt_mem_alloc(ctx, sizeof q, &dq));
    CHECK(attnrt_mem_alloc(ctx, sizeof out, &dout));
    CHECK(attnrt_mem_alloc(ctx, sizeof table, &dtable));
    CHECK(attnrt_mem_alloc(ctx, sizeof qsl, &dqsl));
    CHECK(attnrt_mem_alloc(ctx, sizeof seq_len, &dlens));
    CHECK(attnrt_mem_set(ctx, dkc, 0xff, cache_bytes, NULL));
    CHECK(attnrt_mem_set(ctx, dvc, 0xff, cache_bytes, NULL));
    CHECK(attnrt_mem_set(ctx, dout, 0xff, sizeof out, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, dk, k, kv_bytes, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, dv, v, kv_bytes, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, dslots, slots, sizeof slots, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, dq, q, sizeof q, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, dtable, table, sizeof table, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, dqsl, qsl, sizeof qsl, NULL));
    CHECK(attnrt_mem_copy_to_device(ctx, dlens, &seq_len, sizeof seq_len, NULL));

    const int64_t kv_shape[3] = {TOKENS, HKV, D}, cache_shape[4] = {NUM_BLOCKS, BLOCK, HKV, D};
    const int64_t q_shape[3] = {1, HQ, D}, table_shape[2] = {1, BLOCKS_PER_SEQ}, qsl_shape[1] = {2};
    const int64_t lens_shape[1] = {1}, slots_shape[1] = {TOKENS};
    attnrt_tensor_t tk, tv, tkc, tvc, tslots, tq, tout, ttable, tqsl, tlens;
    CHECK(attnrt_tensor_init(&tk, dk, ATTNRT_F32, 3, kv_shape));
    CHECK(attnrt_tensor_init(&tv, dv, ATTNRT_F32, 3, kv_shape));
    CHECK(attnrt_tensor_init(&tkc, dkc, ATTNRT_F32, 4, cache_shape));
    CHECK(attnrt_tensor_init(&tvc, dvc, ATTNRT_F32, 4, cache_shape));
    CHECK(attnrt_tensor_init(&tslots, dslots, ATTNRT_I64, 1, slots_shape));
    CHECK(attnrt_tensor_init(&tq, dq, ATTNRT_F32, 3, q_shape));
    CHECK(attnrt_tensor_init(&tout, dout, ATTNRT_F32, 3, q_shape));
    CHECK(attnrt_tensor_init(&ttable, dtable, ATTNRT_I32, 2, table_shape));
    CHECK(attnrt_tensor_init(&tqsl, dqsl, ATTNRT_I32, 1, qsl_shape));
    CHECK(attnrt_tensor_init(&tlens, dlens, ATTNRT_I32, 1, lens_shape));

    attnrt_kv_write_args_t kvw = ATTNRT_KV_WRITE_ARGS_INIT;
    kvw.key = &tk, kvw.value = &tv, kvw.slot_mapping = &tslots, kvw.key_cache = &tkc, kvw.value_cache = &tvc;
    CHECK(attnrt_kv_write(ctx, &kvw, NULL));

    attnrt_attention_args_t attn = ATTNRT_ATTENTION_ARGS_INIT;
    attn.query = &tq, attn.key_cache = &tkc, attn.value_cache = &tvc, attn.block_table = &ttable;
    attn.query_start_loc = &tqsl, attn.seq_lens = &tlens, attn.out = &tout, attn.causal = 1;
    attnrt_batch_host_t batch = ATTNRT_BATCH_HOST_INIT;
    batch.num_seqs = 1, batch.query_start_loc = qsl, batch.seq_lens = &seq_len, batch.block_table = table;
    batch.block_table_stride = BLOCKS_PER_SEQ;
    attnrt_plan_t *plan;
    CHECK(attnrt_attention_plan(ctx, &attn, &batch, &plan));
    size_t ws_bytes;
    void *ws = NULL;
    CHECK(attnrt_plan_workspace_size(plan, &ws_bytes));
    if (ws_bytes) CHECK(attnrt_mem_alloc(ctx, ws_bytes, &ws));
    CHECK(attnrt_attention_run(plan, &attn, ws, ws_bytes, NULL));
    CHECK(attnrt_mem_copy_to_host(ctx, kc, dkc, cache_bytes, NULL));
    CHECK(attnrt_mem_copy_to_host(ctx, vc, dvc, cache_bytes, NULL));
    CHECK(attnrt_mem_copy_to_host(ctx, out, dout, sizeof out, NULL));

    int bad = 0;
    for (int t = 0; t < TOKENS; t++) {
        int b = table[t / BLOCK], r = t % BLOCK;
        if (memcmp(kc[b][r], k[t], sizeof k[t]) || memcmp(vc[b][r], v[t], sizeof v[t])) {
            fprintf(stderr, "consumer: kv_write: token %d is not in block %d row %d\n", t, b, r);
            bad = 1;
        }
    }
    /* float64 reference: the query at the last position sees every key (GQA: 2 query heads a KV head) */
    double max_err = 0.0;
    for (int h = 0; h < HQ; h++) {
        int g = h / (HQ / HKV);
        double logit[TOKENS], mx = -INFINITY, sum = 0.0;
        for (int t = 0; t < TOKENS; t++) {
            double dot = 0.0;
            for (int d = 0; d < D; d++) dot += (double)q[h][d] * k[t][g][d];
            logit[t] = dot / sqrt((double)D);
            mx = fmax(mx, logit[t]);
        }
        for (int t = 0; t < TOKENS; t++) sum += (logit[t] = exp(logit[t] - mx));
        for (int d = 0; d < D; d++) {
            double want = 0.0;
            for (int t = 0; t < TOKENS; t++) want += logit[t] / sum * v[t][g][d];
            double err = fabs((double)out[h][d] - want);
            if (!(err <= 1e-5 + 1e-4 * fabs(want))) { /* NaN (poison left) fails too */
                if (!bad) fprintf(stderr, "consumer: attention: head %d dim %d: %g, want %g\n", h, d, out[h][d], want);
                bad = 1;
            }
            if (err > max_err) max_err = err;
        }
    }

    if (ws) CHECK(attnrt_mem_free(ctx, ws));
    CHECK(attnrt_plan_destroy(plan));
    void *bufs[] = {dk, dv, dkc, dvc, dslots, dq, dout, dtable, dqsl, dlens};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) CHECK(attnrt_mem_free(ctx, bufs[i]));
    CHECK(attnrt_close(ctx));
    CHECK(attnrt_shutdown());
    if (bad) return 1;
    printf("consumer: ok (kv_write exact, attention max error %.2g against float64)\n", max_err);
    return 0;
}
