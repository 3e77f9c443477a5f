/* The float64 reference against answers derivable by hand: MLA, dense and sparse. */
#include "test_reference.h"

/* Like `single`: one request, block_size 1, identity table, scale 1, dense, not causal. */
typedef struct single_mla {
    int32_t qsl[2], seq_len, table[MAXK];
    ref_mla_problem p;
} single_mla;

static ref_mla_problem *mla_init(single_mla *s, int q_len, int seq_len, int hq, int kv_dim, int v_dim,
                                 const double *q, const double *c, double *out, double *lse)
{
    int i;
    s->qsl[0] = 0;
    s->qsl[1] = q_len;
    s->seq_len = seq_len;
    for (i = 0; i < MAXK; i++)
        s->table[i] = i;
    s->p = (ref_mla_problem){.num_seqs = 1, .query_start_loc = s->qsl, .seq_lens = &s->seq_len,
        .num_q_heads = hq, .kv_dim = kv_dim, .v_dim = v_dim, .q = q, .kv_cache = c, .num_blocks = MAXK,
        .block_size = 1, .block_table = s->table, .max_blocks_per_seq = MAXK, .scale = 1.0, .out = out,
        .lse = lse};
    poison(out, (size_t)q_len * hq * v_dim);
    if (lse)
        poison(lse, (size_t)q_len * hq);
    return &s->p;
}

TEST(test_mla_one_key_outputs_its_first_v_dim_columns)
{
    const double q[] = {1, 0, 0, 1}, c[] = {1, 2, 3, 4};
    double out[2], lse[1];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 1, 1, 1, 4, 2, q, c, out, lse);
    p->scale = 0.5;
    ref_mla(p);
    EXPECT(out, 1, 2);
    EXPECT(lse, 2.5);
}

TEST(test_mla_score_includes_the_rope_columns)
{
    const double q[] = {0, 0, 1}, c[] = {5, 0, log(2.0), 7, 0, 0};
    double out[1], lse[1];
    single_mla s;
    ref_mla(mla_init(&s, 1, 2, 1, 3, 1, q, c, out, lse));
    EXPECT(out, 17.0 / 3.0); /* weights 2/3, 1/3 */
    EXPECT(lse, log(3.0));
}

TEST(test_mla_dense_causal_is_bottom_right_aligned)
{
    const double q[] = {0, 0, 0, 0}, c[] = {1, 9, 2, 9, 6, 9};
    double out[2];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 2, 3, 1, 2, 1, q, c, out, NULL);
    p->causal = 1;
    ref_mla(p);
    EXPECT(out, 1.5, 3);
}

TEST(test_mla_sparse_attends_only_to_listed_positions)
{
    const double q[] = {0, 0}, c[] = {1, 0, 2, 0, 4, 0, 8, 0};
    const int32_t idx[] = {3, -1, 1, 7}; /* -1 unused; 7 is past seq_len and never exists */
    double out[1];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 1, 4, 1, 2, 1, q, c, out, NULL);
    p->indices = idx;
    p->topk = 4;
    ref_mla(p);
    EXPECT(out, 5);
}

TEST(test_mla_sparse_row_without_indices_gives_zero_and_neg_inf_lse)
{
    const double q[] = {1, 1}, c[] = {1, 2}, sink[] = {0.0};
    const int32_t idx[] = {-1, -1};
    double out[1], lse[1];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 1, 1, 1, 2, 1, q, c, out, lse);
    p->indices = idx;
    p->topk = 2;
    p->sinks = sink;
    ref_mla(p);
    assert_true(out[0] == 0.0);
    IS_NEG_INF(lse[0]);
}

TEST(test_mla_sink_joins_denominator_once)
{
    const double q[] = {1, 0}, c[] = {2, 5}, sink[] = {1.0};
    double out[1], lse[1];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 1, 1, 1, 2, 1, q, c, out, lse);
    p->sinks = sink;
    ref_mla(p);
    EXPECT(out, 2.0 * exp(2.0) / (exp(1.0) + exp(2.0)));
    EXPECT(lse, 2);
}

int ref_test_mla(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mla_one_key_outputs_its_first_v_dim_columns),
        cmocka_unit_test(test_mla_score_includes_the_rope_columns),
        cmocka_unit_test(test_mla_dense_causal_is_bottom_right_aligned),
        cmocka_unit_test(test_mla_sparse_attends_only_to_listed_positions),
        cmocka_unit_test(test_mla_sparse_row_without_indices_gives_zero_and_neg_inf_lse),
        cmocka_unit_test(test_mla_sink_joins_denominator_once),
    };
    return cmocka_run_group_tests_name("reference: MLA", tests, NULL, NULL);
}
