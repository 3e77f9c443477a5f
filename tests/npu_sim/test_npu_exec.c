/* test_npu_exec.c — execution on NPU-legal configurations (the conformance suite's block sizes are all
 * below the RBLN ranges, so it sees these paths only as refusals): flash over several partitions with
 * decode rows on partition edges and a prefill whose chunks must split at a partition, naive over its
 * single block, sinks forcing flash, FP8, sliding windows, non-causal rows, HND caches, both profiles
 * and both front ends, all against the float64 reference; and the refusals plan gives with the
 * vendor's words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "npu_fixture.h"

static void expect_pass(const npu_case_t *c, const char *what)
{
    npu_result_t r;
    const int rc = npu_run_case(c, &r);
    if (rc != 0) fprintf(stderr, "%s: %s\n", what, r.message);
    assert_int_equal(rc, 0);
    const double tol = npu_case_tolerance(c);
    if (!(r.rel_err <= tol) || !(r.max_row_err <= 10 * tol))
        fprintf(stderr, "%s: relative error %.3g (worst row %.3g), tolerance %.3g\n", what, r.rel_err, r.max_row_err, tol);
    assert_true(r.rel_err <= tol);
    assert_true(r.max_row_err <= 10 * tol);
    assert_int_equal(r.stats.op, ATTNRT_OP_PAGED_ATTENTION);
    assert_int_equal(r.stats.simulated, 1);
    assert_true(r.stats.time_us > 0);
}

static void expect_refused(const npu_case_t *c, const char *needle)
{
    npu_result_t r;
    assert_int_not_equal(npu_run_case(c, &r), 0);
    if (r.status != ATTNRT_ERR_UNSUPPORTED || !strstr(r.message, needle))
        fprintf(stderr, "expected UNSUPPORTED with \"%s\", got %d: %s\n", needle, r.status, r.message);
    assert_int_equal(r.status, ATTNRT_ERR_UNSUPPORTED);
    assert_non_null(strstr(r.message, needle));
}

static void batch(npu_case_t *c, const char *spec)
{
    c->num_seqs = 0;
    int q, kv, n;
    while (sscanf(spec, " %d/%d%n", &q, &kv, &n) == 2) {
        c->q_lens[c->num_seqs] = q;
        c->kv_lens[c->num_seqs++] = kv;
        spec += n;
    }
}

static void flash_mixed_batch_across_partitions(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c); /* rebel100, vLLM path, block 512 */
    c.cols = 4;            /* max_model_len 2048: flash, 4 partitions */
    /* decode at 1, on both sides of the partition edges, at the end; a prefill of 700 from 300 (its chunks
     * of 512 must split at 512 and 1024); a prefill of the whole 2048 */
    batch(&c, "1/1 1/512 1/513 1/1025 1/2048 700/1000 2048/2048");
    expect_pass(&c, "flash mixed");
    npu_case_defaults(&c);
    c.cols = 3;
    c.q_dtype = c.kv_dtype = ATTNRT_BF16;
    c.hq = 8;
    c.hkv = 1;
    c.dqk = c.dv = 128;
    c.hnd = 1;
    batch(&c, "1/700 33/1500 1/1");
    expect_pass(&c, "flash bf16 MQA HND");
}

static void naive_single_block(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c);
    c.block_size = 1024;
    c.cols = 1; /* block_size == max_model_len: naive */
    batch(&c, "1/300 600/600 1/1024 5/900");
    expect_pass(&c, "naive");
    npu_result_t r;
    assert_int_equal(npu_run_case(&c, &r), 0);
    assert_int_equal(r.stats.launches, 1 + 2 + 1); /* the decode group; 600 tokens in chunks of 512; 5 tokens */
}

static void sinks_force_flash_on_one_block(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c);
    c.cols = 1;
    c.sinks = 1;
    c.q_dtype = c.kv_dtype = ATTNRT_BF16;
    batch(&c, "1/40 100/100 1/512");
    expect_pass(&c, "sinks");
}

static void fp8_with_flash_and_refused_with_naive(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c);
    c.cols = 3;
    c.kv_dtype = ATTNRT_FP8_E4M3;
    batch(&c, "1/1200 64/600");
    expect_pass(&c, "fp8 e4m3 flash");
    c.kv_dtype = ATTNRT_FP8_E5M2;
    expect_pass(&c, "fp8 e5m2 flash");
    c.cols = 1;
    batch(&c, "1/100");
    expect_refused(&c, "Naive Attention does not support FP8 KV cache.");
}

static void sliding_window(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c);
    c.cols = 4;
    c.window_left = 99; /* window of 100 keys */
    batch(&c, "1/1 1/100 1/101 1/1500 300/800");
    expect_pass(&c, "sliding window");
    c.window_left = 40000;
    expect_refused(&c, "Sliding window size (40001) must be less than 32767 - prefill_chunk_size (32255)");
}

static void non_causal_rows(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c);
    c.cols = 2;
    c.causal = 0;
    batch(&c, "5/700 3/0 7/7");
    expect_pass(&c, "non-causal");
}

static void atom_and_the_compiled_front_end(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c);
    c.profile = "rbln-atom";
    c.block_size = 1024;
    c.cols = 1;
    batch(&c, "1/1000 200/200");
    expect_pass(&c, "atom naive");
    c.block_size = 512;
    expect_refused(&c, "block_size (512) must be a power of two within the supported range for ATOM (1024-32768 tokens)");
    /* the compiled path: a power-of-two block under max_model_len is Flash with partition = block ... */
    c.front_end = "compiled";
    c.block_size = 2048;
    c.cols = 2;
    batch(&c, "1/2000 130/1600 1/4096");
    expect_pass(&c, "atom compiled 2048");
    /* ... a block that is no power of two is refused, as the page requires on both paths ... */
    c.block_size = 1536;
    batch(&c, "1/2000 130/1600");
    expect_refused(&c, "block_size (1536) must be a power of two within the supported range for ATOM");
    /* ... and one under the Flash range with optimum-rbln's words */
    c.block_size = 512;
    c.cols = 4;
    batch(&c, "1/100");
    expect_refused(&c, "`kvcache_partition_len` (512) is out of the supported range for 'flash_attn' (1024 <= "
                       "`kvcache_partition_len` <= 32768). Please provide a valid value within this range.");
}

static void refusals_in_the_vendors_words(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c);
    c.block_size = 256;
    expect_refused(&c, "block_size (256) must be a power of two within the supported range for Rebel100 (512-16384 tokens)");
    npu_case_defaults(&c);
    c.dqk = c.dv = 112;
    expect_refused(&c, "Head size 112 is not supported by PagedAttention.");
    npu_case_defaults(&c);
    c.softcap = 30.0f;
    expect_refused(&c, "RBLN Attention Backend does not support logits soft cap.");
    npu_case_defaults(&c);
    c.lse = 1;
    expect_refused(&c, "no log-sum-exp");
}

static void counters_follow_the_partitions(void **state)
{
    (void)state;
    npu_case_t c;
    npu_case_defaults(&c);
    c.cols = 4;
    batch(&c, "1/1025 1/512 1/1"); /* 3 + 1 + 1 partitions, one padded row (bucket 4) */
    npu_result_t r;
    assert_int_equal(npu_run_case(&c, &r), 0);
    assert_int_equal(r.stats.partitions, 5);
    assert_int_equal(r.stats.padded_rows, 1);
    assert_int_equal(r.stats.launches, 1);
    batch(&c, "700/1000"); /* chunks [300,512) [512,1000): the partition splits the second 512 */
    assert_int_equal(npu_run_case(&c, &r), 0);
    assert_int_equal(r.stats.launches, 2);
    assert_int_equal(r.stats.padding_tokens, (512 - 212) + (512 - 488));
    assert_int_equal(r.stats.partitions, 1 + 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flash_mixed_batch_across_partitions),
        cmocka_unit_test(naive_single_block),
        cmocka_unit_test(sinks_force_flash_on_one_block),
        cmocka_unit_test(fp8_with_flash_and_refused_with_naive),
        cmocka_unit_test(sliding_window),
        cmocka_unit_test(non_causal_rows),
        cmocka_unit_test(atom_and_the_compiled_front_end),
        cmocka_unit_test(refusals_in_the_vendors_words),
        cmocka_unit_test(counters_follow_the_partitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
