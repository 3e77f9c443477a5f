/* The float64 reference against answers derivable by hand: lightning attention and the gated delta rule (speculative decoding included). */
#include "test_reference.h"

TEST(test_lightning_two_tokens_follow_the_recurrence)
{
    /* H 1, Dk 2, Dv 2, lambda = 1/2. S1 = k1^T v1, o1 = q1 S1; S2 = S1/2 + k2^T v2, o2 = q2 S2. */
    const int32_t qsl[] = {0, 2}, slot[] = {1};
    const uint8_t has_init[] = {0};
    const double slopes[] = {log(2.0)}, q[] = {1, 1, 1, 2}, k[] = {1, 0, 0, 1}, v[] = {2, 3, 4, 5};
    double pool[8] = {7, 7, 7, 7, 5, 5, 5, 5}, out[4];
    poison(out, 4);
    ref_lightning(1, qsl, slot, has_init, 1, 2, 2, slopes, q, k, v, pool, out);
    EXPECT(out, 2, 3, 9, 11.5);
    EXPECT(pool, 7, 7, 7, 7, 1, 1.5, 4, 5); /* slot 0 untouched, slot 1 holds S2 */
}

TEST(test_lightning_starts_from_the_slot_when_it_has_initial_state)
{
    const int32_t qsl[] = {0, 1}, slot[] = {0};
    const uint8_t has_init[] = {1};
    const double slopes[] = {log(2.0)}, q[] = {1, 0}, k[] = {1, 1}, v[] = {1, 2};
    double pool[4] = {1, 0, 0, 1}, out[2];
    poison(out, 2);
    ref_lightning(1, qsl, slot, has_init, 1, 2, 2, slopes, q, k, v, pool, out);
    EXPECT(out, 1.5, 2); /* S = I/2 + [[1,2],[1,2]] */
    EXPECT(pool, 1.5, 2, 1, 2.5);
}

TEST(test_lightning_padding_request_writes_zero_and_keeps_the_pool)
{
    const int32_t qsl[] = {0, 1}, slot[] = {-1};
    const double slopes[] = {0.1}, q[] = {1}, k[] = {1}, v[] = {1};
    double pool[1] = {3.0}, out[1];
    poison(out, 1);
    ref_lightning(1, qsl, slot, NULL, 1, 1, 1, slopes, q, k, v, pool, out);
    assert_true(out[0] == 0.0);
    EXPECT(pool, 3);
}

/* ---------------------------------------------------------------- gated delta rule */

TEST(test_gdn_one_step_follows_the_delta_rule)
{
    /* S0 = [1; 2], e^g = 1/2 -> S = [0.5; 1]; S^T k = 1.5; v' = 0.5 (4 - 1.5) = 1.25;
     * S = [1.75; 2.25]; o = S^T q = 1.75 + 4.5. */
    const int32_t qsl[] = {0, 1}, slot[] = {0};
    const uint8_t has_init[] = {1};
    const double q[] = {1, 2}, k[] = {1, 1}, v[] = {4}, g[] = {log(0.5)}, beta[] = {0.5};
    double pool[2] = {1, 2}, out[1];
    poison(out, 1);
    ref_gated_delta(1, qsl, slot, has_init, 1, 1, 2, 1, 0, 1.0, q, k, v, g, beta, pool, out, NULL, 0, NULL);
    EXPECT(out, 6.25);
    EXPECT(pool, 1.75, 2.25);
}

TEST(test_gdn_l2_normalises_q_and_k_then_scales_q)
{
    /* Zero state: S = k^ (beta v)^T, o = (k^ . q^) beta v with q^ = scale q / |q|. */
    const int32_t qsl[] = {0, 1}, slot[] = {0};
    const uint8_t has_init[] = {0};
    const double q[] = {3, 4}, k[] = {0, 2}, v[] = {2}, g[] = {0.3}, beta[] = {0.5};
    const double nk = sqrt(4.0 + 1e-6), nq = sqrt(25.0 + 1e-6);
    double pool[2] = {9, 9}, out[1];
    poison(out, 1);
    ref_gated_delta(1, qsl, slot, has_init, 1, 1, 2, 1, 1, 0.5, q, k, v, g, beta, pool, out, NULL, 0, NULL);
    EXPECT(out, (8.0 / (nk * nq)) * 0.5 * 0.5 * 2.0);
    EXPECT(pool, 0, 2.0 / nk * 0.5 * 2.0); /* the state never sees the q scale */
}

TEST(test_gdn_value_head_i_uses_key_head_i_over_group)
{
    /* H 2, HV 4, Dk = Dv = 1, zero state, beta 1, g 0: o = k q v per value head. */
    const int32_t qsl[] = {0, 1}, slot[] = {0};
    const uint8_t has_init[] = {0};
    const double q[] = {1, 3}, k[] = {1, 2}, v[] = {1, 1, 1, 1}, g[] = {0, 0, 0, 0}, beta[] = {1, 1, 1, 1};
    double pool[4], out[4];
    poison(out, 4);
    ref_gated_delta(1, qsl, slot, has_init, 2, 4, 1, 1, 0, 1.0, q, k, v, g, beta, pool, out, NULL, 0, NULL);
    EXPECT(out, 1, 1, 6, 6);
}

TEST(test_gdn_spec_decoding_reads_last_accepted_slot_and_writes_each_position)
{
    /* Slots [4, 5, 6], 2 accepted -> start from slot 5 (S = 2). Dk = Dv = 1, g 0, beta 1/2, k = q = 1:
     * S <- (S + v) / 2, o = S. Token 0: S = 3 -> slot 4; token 1: S = 5 -> slot 5. */
    const int32_t qsl[] = {0, 2}, slot[] = {0}, spec[] = {4, 5, 6}, accepted[] = {2};
    const uint8_t has_init[] = {1};
    const double q[] = {1, 1}, k[] = {1, 1}, v[] = {4, 7}, g[] = {0, 0}, beta[] = {0.5, 0.5};
    double pool[7] = {11, 0, 0, 0, 1000, 2, 77}, out[2];
    poison(out, 2);
    ref_gated_delta(1, qsl, slot, has_init, 1, 1, 1, 1, 0, 1.0, q, k, v, g, beta, pool, out, spec, 2,
                    accepted);
    EXPECT(out, 3, 5);
    EXPECT(pool, 11, 0, 0, 0, 3, 5, 77); /* state_indices (slot 0) ignored, slot 6 untouched */
}

TEST(test_gdn_padding_request_writes_zero_and_keeps_the_pool)
{
    const int32_t qsl[] = {0, 1}, slot[] = {-1};
    const double q[] = {1}, k[] = {1}, v[] = {1}, g[] = {0}, beta[] = {1};
    double pool[1] = {3.0}, out[1];
    poison(out, 1);
    ref_gated_delta(1, qsl, slot, NULL, 1, 1, 1, 1, 0, 1.0, q, k, v, g, beta, pool, out, NULL, 0, NULL);
    assert_true(out[0] == 0.0);
    EXPECT(pool, 3);
}

int ref_test_linear(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lightning_two_tokens_follow_the_recurrence),
        cmocka_unit_test(test_lightning_starts_from_the_slot_when_it_has_initial_state),
        cmocka_unit_test(test_lightning_padding_request_writes_zero_and_keeps_the_pool),
        cmocka_unit_test(test_gdn_one_step_follows_the_delta_rule),
        cmocka_unit_test(test_gdn_l2_normalises_q_and_k_then_scales_q),
        cmocka_unit_test(test_gdn_value_head_i_uses_key_head_i_over_group),
        cmocka_unit_test(test_gdn_spec_decoding_reads_last_accepted_slot_and_writes_each_position),
        cmocka_unit_test(test_gdn_padding_request_writes_zero_and_keeps_the_pool),
    };
    return cmocka_run_group_tests_name("reference: lightning, gated delta", tests, NULL, NULL);
}
