"""MLA (dense and sparse) on the cpu plugin against the float64 reference."""
import numpy as np
import pytest

import attnrt
import reference as ref
from batch import make_batch, poisoned

KV_DIM, V_DIM, BS = 72, 64, 16


def mla_case(rng, q_lens=(3, 1, 2), seq_lens=(40, 17, 2), heads=4):
    b = make_batch(rng, q_lens, seq_lens, BS)
    cache = rng.standard_normal((b.num_blocks, BS, 1, KV_DIM), dtype=np.float32)
    q = rng.standard_normal((b.tokens, heads, KV_DIM), dtype=np.float32)
    return b, cache, q


@pytest.mark.parametrize("causal,sinks", [(True, False), (False, True)])
def test_mla_dense(ctx, rng, causal, sinks):
    heads = 4
    b, cache, q = mla_case(rng, heads=heads)
    scale = 0.11
    sinks_v = rng.standard_normal(heads).astype(np.float32) if sinks else None
    out = poisoned((b.tokens, heads, V_DIM), "f32")
    lse = np.full((b.tokens, heads), np.nan, np.float32)
    mla = attnrt.MLA(ctx)
    mla.plan(b.query_start_loc, b.seq_lens, b.block_table, num_heads=heads, kv_dim=KV_DIM, v_dim=V_DIM, block_size=BS,
             num_blocks=b.num_blocks, scale=scale, causal=causal, return_lse=True, sinks=sinks)
    got_out, got_lse = mla.run(q, cache, block_table=b.block_table, query_start_loc=b.query_start_loc,
                               seq_lens=b.seq_lens, out=out, lse=lse, sinks=sinks_v)
    assert got_out is out and got_lse is lse
    want, want_lse = ref.mla(q, cache, b.block_table, b.query_start_loc, b.seq_lens, V_DIM, scale, causal=causal,
                             sinks=sinks_v)
    ref.assert_close(out, want)
    ref.assert_close(lse, want_lse)


def test_mla_sparse(ctx, rng):
    heads, topk = 2, 6
    b, cache, q = mla_case(rng, heads=heads)
    req = np.repeat(np.arange(len(b.seq_lens)), np.diff(b.query_start_loc))
    indices = np.stack([rng.integers(0, b.seq_lens[r], topk) for r in req]).astype(np.int32)
    indices[0, -2:] = -1  # unused
    indices[1, 1] = indices[1, 0]  # a repeat counts once per occurrence
    scale = 0.09
    mla = attnrt.MLA(ctx)
    mla.plan(b.query_start_loc, b.seq_lens, b.block_table, num_heads=heads, kv_dim=KV_DIM, v_dim=V_DIM, block_size=BS,
             num_blocks=b.num_blocks, scale=scale, indices=indices)
    out = mla.run(q, cache, block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens,
                  indices=indices, out=poisoned((b.tokens, heads, V_DIM), "f32"))
    want, _ = ref.mla(q, cache, b.block_table, b.query_start_loc, b.seq_lens, V_DIM, scale, indices=indices)
    ref.assert_close(out, want)


def test_mla_sparse_plan_checks_indices(ctx, rng):
    b, cache, q = mla_case(rng, heads=2)
    indices = np.zeros((b.tokens, 4), np.int32)
    indices[3, 2] = 900  # request 1 has 17 keys
    with pytest.raises(attnrt.Error) as e:
        attnrt.MLA(ctx).plan(b.query_start_loc, b.seq_lens, b.block_table, num_heads=2, kv_dim=KV_DIM, v_dim=V_DIM,
                             block_size=BS, num_blocks=b.num_blocks, scale=0.1, indices=indices)
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT
    assert "indices" in e.value.message and "900" in e.value.message


def test_mla_needs_scale_and_matching_indices(ctx, rng):
    b, cache, q = mla_case(rng, heads=2)
    mla = attnrt.MLA(ctx)
    with pytest.raises(attnrt.Error) as e:
        mla.plan(b.query_start_loc, b.seq_lens, b.block_table, num_heads=2, kv_dim=KV_DIM, v_dim=V_DIM, block_size=BS,
                 num_blocks=b.num_blocks, scale=0.0)
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "scale" in e.value.message
    mla.plan(b.query_start_loc, b.seq_lens, b.block_table, num_heads=2, kv_dim=KV_DIM, v_dim=V_DIM, block_size=BS,
             num_blocks=b.num_blocks, scale=0.1)
    with pytest.raises(attnrt.Error, match="dense"):
        mla.run(q, cache, block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens,
                indices=np.zeros((b.tokens, 2), np.int32))
