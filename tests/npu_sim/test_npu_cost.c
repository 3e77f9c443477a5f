/* test_npu_cost.c — properties of the cost model, read through last_op_stats after real runs: naive
 * decode is flat in position; flash decode grows with ceil(pos / P); a smaller partition moves fewer
 * bytes but pays more overhead; padded decode rows are counted; cost is monotone in batch size and in
 * heads. Then the model's decode example (4K and 32K context, both kernels) printed as a table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "npu_cost.h"
#include "npu_fixture.h"
#include "npu_profile.h"

/* Counters of one decode step: `rows` requests at position pos (seq_len), cost only. */
static attnrt_op_stats_t decode(const char *profile, int block, int cols, int rows, int pos, int hq, int hkv)
{
    npu_case_t c;
    npu_case_defaults(&c);
    c.profile = profile;
    c.block_size = block;
    c.cols = cols;
    c.num_seqs = rows;
    for (int b = 0; b < rows; b++) {
        c.q_lens[b] = 1;
        c.kv_lens[b] = pos;
    }
    c.hq = hq;
    c.hkv = hkv;
    c.skip_reference = 1;
    npu_result_t r;
    if (npu_run_case(&c, &r) != 0) fprintf(stderr, "decode case: %s\n", r.message);
    assert_int_equal(r.status, ATTNRT_OK);
    return r.stats;
}

static void naive_decode_is_flat_in_position(void **state)
{
    (void)state;
    const attnrt_op_stats_t a = decode("rbln-atom", 32768, 1, 1, 1, 2, 1);
    const int pos[] = {2, 4096, 20000, 32768};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        const attnrt_op_stats_t b = decode("rbln-atom", 32768, 1, 1, pos[i], 2, 1);
        assert_true(b.time_us == a.time_us);
        assert_int_equal(b.bytes_moved, a.bytes_moved);
        assert_int_equal(b.partitions, 1);
    }
}

static void flash_decode_grows_with_partitions_touched(void **state)
{
    (void)state;
    const int P = 1024;
    double prev = 0, step = 0;
    for (int parts = 1; parts <= 16; parts++) {
        const attnrt_op_stats_t lo = decode("rbln-rebel100", P, 16, 1, (parts - 1) * P + 1, 2, 1);
        const attnrt_op_stats_t hi = decode("rbln-rebel100", P, 16, 1, parts * P, 2, 1);
        assert_int_equal(lo.partitions, parts); /* ceil(pos / P) */
        assert_int_equal(hi.partitions, parts);
        assert_true(lo.time_us == hi.time_us); /* flat inside a partition */
        assert_true(hi.time_us > prev);        /* one more partition costs more ... */
        if (parts > 2) assert_true(hi.time_us - prev > 0.999 * step && hi.time_us - prev < 1.001 * step);
        if (parts > 1) step = hi.time_us - prev; /* ... and the same each time */
        prev = hi.time_us;
    }
}

static void smaller_partitions_move_fewer_bytes_but_pay_overhead(void **state)
{
    (void)state;
    /* max_model_len 8192 either way; position 5000 */
    const attnrt_op_stats_t small = decode("rbln-rebel100", 1024, 8, 1, 5000, 2, 1);
    const attnrt_op_stats_t big = decode("rbln-rebel100", 4096, 2, 1, 5000, 2, 1);
    assert_true(small.bytes_moved < big.bytes_moved); /* 5 x 1024 tokens read against 2 x 4096 */
    assert_true(small.partitions > big.partitions);
    /* at a position both tile exactly, the bytes match and only the overhead differs */
    const attnrt_op_stats_t s2 = decode("rbln-rebel100", 1024, 8, 1, 4096, 2, 1);
    const attnrt_op_stats_t b2 = decode("rbln-rebel100", 4096, 2, 1, 4096, 2, 1);
    assert_int_equal(s2.bytes_moved, b2.bytes_moved);
    assert_true(s2.time_us > b2.time_us);
    const npu_profile_t *p = npu_profile_find("rbln-rebel100");
    const double extra = (double)(s2.partitions - b2.partitions) * p->partition_overhead_us;
    assert_true(s2.time_us - b2.time_us > 0.999 * extra && s2.time_us - b2.time_us < 1.001 * extra);
}

static void padded_decode_rows_are_counted(void **state)
{
    (void)state;
    const int64_t padded[] = {0, 0, 0, 1, 0, 3, 2, 1, 0, 7};
    for (int rows = 1; rows <= 9; rows++) {
        const attnrt_op_stats_t s = decode("rbln-rebel100", 512, 1, rows, 100, 2, 1);
        assert_int_equal(s.padded_rows, padded[rows]);
        assert_int_equal(s.padding_tokens, padded[rows]);
        assert_int_equal(s.launches, 1);
    }
}

static void cost_is_monotone_in_batch_size(void **state)
{
    (void)state;
    double naive_prev = 0, flash_prev = 0;
    for (int rows = 1; rows <= 9; rows++) {
        const attnrt_op_stats_t n = decode("rbln-rebel100", 1024, 1, rows, 700, 2, 1);
        const attnrt_op_stats_t f = decode("rbln-rebel100", 512, 2, rows, 700, 2, 1);
        assert_true(n.time_us >= naive_prev);
        assert_true(f.time_us >= flash_prev);
        naive_prev = n.time_us;
        flash_prev = f.time_us;
    }
}

static void cost_is_monotone_in_heads(void **state)
{
    (void)state;
    double prev = 0;
    for (int hq = 1; hq <= 8; hq *= 2) { /* query heads over one KV head */
        const attnrt_op_stats_t s = decode("rbln-rebel100", 512, 2, 2, 700, hq, 1);
        assert_true(s.time_us > prev);
        prev = s.time_us;
    }
    prev = 0;
    for (int hkv = 1; hkv <= 4; hkv *= 2) { /* KV heads, 2 query heads each: more bytes */
        const attnrt_op_stats_t s = decode("rbln-rebel100", 512, 2, 2, 700, 2 * hkv, hkv);
        assert_true(s.time_us > prev);
        prev = s.time_us;
    }
}

/* The example of the report and the docs, from the same functions the plan calls: one decode row,
 * Llama-3-8B-like heads (32 query, 8 KV, D 128, f16 cache). */
static void decode_example_table(void **state)
{
    (void)state;
    struct { const char *profile; npu_kernel_t kernel; int64_t partition; const char *what; } rows[] = {
        {"rbln-atom", NPU_KERNEL_NAIVE, 32768, "naive, block 32768"},
        {"rbln-atom", NPU_KERNEL_FLASH, 16384, "flash, P 16384 (default)"},
        {"rbln-atom", NPU_KERNEL_FLASH, 1024, "flash, P 1024"},
        {"rbln-rebel100", NPU_KERNEL_NAIVE, 16384, "naive, block 16384 (32K impossible)"},
        {"rbln-rebel100", NPU_KERNEL_FLASH, 8192, "flash, P 8192 (default)"},
        {"rbln-rebel100", NPU_KERNEL_FLASH, 1024, "flash, P 1024"},
    };
    printf("decode, 1 row, Hq 32 / Hkv 8 / D 128, f16 KV\n%-14s %-38s %6s %10s %12s %6s\n", "profile", "kernel", "pos",
           "time_us", "bytes", "parts");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int64_t pos = 4096; pos <= 32768; pos *= 8) {
            if (rows[i].kernel == NPU_KERNEL_NAIVE && pos > rows[i].partition) continue;
            const npu_profile_t *p = npu_profile_find(rows[i].profile);
            npu_cost_shape_t sh = {rows[i].kernel, 32, 8, 128, 128, 2, 2, 2, rows[i].partition, 0, 0, 0};
            attnrt_op_stats_t s;
            npu_cost_begin(&s, ATTNRT_OP_PAGED_ATTENTION);
            const int64_t lo = 0, hi = pos;
            npu_cost_decode(p, &sh, &lo, &hi, 1, &s);
            printf("%-14s %-38s %6lld %10.1f %12llu %6llu\n", rows[i].profile, rows[i].what, (long long)pos, s.time_us,
                   (unsigned long long)s.bytes_moved, (unsigned long long)s.partitions);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(naive_decode_is_flat_in_position),
        cmocka_unit_test(flash_decode_grows_with_partitions_touched),
        cmocka_unit_test(smaller_partitions_move_fewer_bytes_but_pay_overhead),
        cmocka_unit_test(padded_decode_rows_are_counted),
        cmocka_unit_test(cost_is_monotone_in_batch_size),
        cmocka_unit_test(cost_is_monotone_in_heads),
        cmocka_unit_test(decode_example_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
