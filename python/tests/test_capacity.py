"""Capacity plans: plan once for a capacity, then update + run three different batches in the same (fixed)
tensors, as a replayed CUDA graph would; each checked against the float64 reference."""
import numpy as np
import pytest

import attnrt
import reference as ref

MAX_SEQS, MAX_BLOCKS, MAX_TOKENS, BS = 4, 4, 16, 16
HQ, HKV, D = 4, 2, 32
NUM_BLOCKS = MAX_SEQS * MAX_BLOCKS + 2

BATCHES = [  # (query lengths, sequence lengths): decode-only, mixed prefill + decode, a partial batch
    ([1, 1, 1, 1], [17, 5, 64, 33]),
    ([9, 1], [9, 40]),
    ([3, 1, 6], [20, 2, 50]),
]


class FixedTensors:
    """The device tensors a graph would capture: allocated once at the capacity's shapes, written in place."""

    def __init__(self, rng):
        self.q = np.empty((MAX_TOKENS, HQ, D), np.float32)
        self.k_cache = np.empty((NUM_BLOCKS, BS, HKV, D), np.float32)
        self.v_cache = np.empty((NUM_BLOCKS, BS, HKV, D), np.float32)
        self.block_table = np.zeros((MAX_SEQS, MAX_BLOCKS), np.int32)
        self.query_start_loc = np.zeros(MAX_SEQS + 1, np.int32)
        self.seq_lens = np.zeros(MAX_SEQS, np.int32)
        self.out = np.empty((MAX_TOKENS, HQ, D), np.float32)
        self.lse = np.empty((MAX_TOKENS, HQ), np.float32)
        self.rng = rng

    def write_batch(self, q_lens, seq_lens):
        """Writes a batch in place, padded as vLLM pads: query_start_loc repeats its last value, seq_lens 0."""
        rng, B = self.rng, len(q_lens)
        qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
        self.query_start_loc[:B + 1] = qsl
        self.query_start_loc[B + 1:] = qsl[-1]
        self.seq_lens[:] = 0
        self.seq_lens[:B] = seq_lens
        self.block_table[:] = 0
        perm = rng.permutation(NUM_BLOCKS).astype(np.int32)
        for b, s in enumerate(seq_lens):
            n = -(-s // BS)
            self.block_table[b, :n] = perm[b * MAX_BLOCKS:b * MAX_BLOCKS + n]
        self.q[:] = rng.standard_normal(self.q.shape, dtype=np.float32)
        self.k_cache[:] = rng.standard_normal(self.k_cache.shape, dtype=np.float32)
        self.v_cache[:] = rng.standard_normal(self.v_cache.shape, dtype=np.float32)
        self.out[:] = np.nan
        self.lse[:] = np.nan
        return qsl

    def host_batch(self, B):
        return self.query_start_loc[:B + 1].copy(), self.seq_lens[:B].copy(), self.block_table[:B].copy()


def plan_capacity(ctx, **extra):
    attn = attnrt.PagedAttention(ctx)
    attn.plan_capacity(max_seqs=MAX_SEQS, max_blocks_per_seq=MAX_BLOCKS, max_tokens=MAX_TOKENS, num_q_heads=HQ,
                       num_kv_heads=HKV, head_dim=D, block_size=BS, num_blocks=NUM_BLOCKS, causal=True,
                       return_lse=True, **extra)
    return attn


def test_capacity_plan_three_batches(ctx, rng):
    fixed = FixedTensors(rng)
    attn = plan_capacity(ctx, sliding_window_left=24)
    for q_lens, seq_lens in BATCHES:
        qsl = fixed.write_batch(q_lens, seq_lens)
        attn.update(*fixed.host_batch(len(q_lens)))
        attn.run(fixed.q, fixed.k_cache, fixed.v_cache, block_table=fixed.block_table,
                 query_start_loc=fixed.query_start_loc, seq_lens=fixed.seq_lens, out=fixed.out, lse=fixed.lse)
        tokens = int(qsl[-1])
        want, want_lse = ref.paged_attention(fixed.q, fixed.k_cache, fixed.v_cache, fixed.block_table, qsl,
                                             seq_lens, causal=True, window_left=24)
        ref.assert_close(fixed.out[:tokens], want[:tokens])
        ref.assert_close(fixed.lse[:tokens], want_lse[:tokens])
        assert np.isnan(fixed.out[tokens:]).all(), "rows past the batch's tokens must stay unwritten"
    assert len(attn._plans) == 1


def test_capacity_plan_per_layout(ctx, rng):
    """Layers whose query is a strided view get their own capacity plan at their first run; update() then
    updates every plan."""
    fixed = FixedTensors(rng)
    attn = plan_capacity(ctx)
    qkv = np.empty((MAX_TOKENS, (HQ + 2 * HKV) * D), np.float32)
    strided_q = qkv[:, :HQ * D].reshape(MAX_TOKENS, HQ, D)
    for q_lens, seq_lens in BATCHES:
        qsl = fixed.write_batch(q_lens, seq_lens)
        attn.update(*fixed.host_batch(len(q_lens)))
        tokens = int(qsl[-1])
        for q in (fixed.q, strided_q):
            q[:] = rng.standard_normal(q.shape, dtype=np.float32)
            fixed.out[:] = np.nan
            attn.run(q, fixed.k_cache, fixed.v_cache, block_table=fixed.block_table,
                     query_start_loc=fixed.query_start_loc, seq_lens=fixed.seq_lens, out=fixed.out, lse=fixed.lse)
            want, _ = ref.paged_attention(q, fixed.k_cache, fixed.v_cache, fixed.block_table, qsl, seq_lens,
                                          causal=True)
            ref.assert_close(fixed.out[:tokens], want[:tokens])
    assert len(attn._plans) == 2


def test_capacity_refuses_batch_beyond_it(ctx):
    attn = plan_capacity(ctx)
    too_many = MAX_SEQS + 1
    with pytest.raises(attnrt.Error) as e:
        attn.update(np.arange(too_many + 1, dtype=np.int32), np.ones(too_many, np.int32),
                    np.zeros((too_many, MAX_BLOCKS), np.int32))
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and str(too_many) in e.value.message
    with pytest.raises(attnrt.Error) as e:  # more tokens than max_tokens
        attn.update([0, MAX_TOKENS + 1], [MAX_TOKENS + 1], [[0, 1]])
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and str(MAX_TOKENS + 1) in e.value.message
