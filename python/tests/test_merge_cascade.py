"""Merging partial states and cascade (shared-prefix) attention on the cpu plugin."""
import numpy as np
import pytest

import attnrt
import reference as ref
from batch import make_batch, poisoned


@pytest.mark.parametrize("n,sinks", [(1, False), (3, False), (2, True)])
def test_merge_states(ctx, rng, n, sinks):
    T_, H, D = 7, 4, 16
    states = [rng.standard_normal((T_, H, D), dtype=np.float32) for _ in range(n)]
    lses = [rng.standard_normal((T_, H), dtype=np.float32) * 3 for _ in range(n)]
    lses[0][2, 1] = -np.inf  # an empty state merges as the neutral element
    if n == 1:
        lses[0][3, :] = -np.inf  # only empty states: (0, -inf)
    sinks_v = rng.standard_normal(H).astype(np.float32) if sinks else None
    out = poisoned((T_, H, D), "f32")
    out_lse = np.full((T_, H), np.nan, np.float32)
    got = attnrt.merge_states(ctx, states, lses, out, out_lse, sinks=sinks_v)
    assert got[0] is out and got[1] is out_lse
    want, want_lse = ref.merge_states(states, lses, sinks_v)
    ref.assert_close(out, want)
    finite = np.isfinite(want_lse)
    assert np.array_equal(np.isfinite(out_lse), finite)
    ref.assert_close(out_lse[finite], want_lse[finite])


def test_merge_allocates_outputs(ctx, rng):
    states = [rng.standard_normal((3, 2, 8), dtype=np.float32) for _ in range(2)]
    lses = [rng.standard_normal((3, 2), dtype=np.float32) for _ in range(2)]
    out = attnrt.merge_states(ctx, states, lses)
    assert isinstance(out, np.ndarray) and out.shape == (3, 2, 8)
    ref.assert_close(out, ref.merge_states(states, lses)[0])
    out, out_lse = attnrt.merge_states(ctx, states, lses, return_lse=True)
    ref.assert_close(out_lse, ref.merge_states(states, lses)[1])


def test_merge_bad_arguments(ctx, rng):
    s = rng.standard_normal((3, 2, 8), dtype=np.float32)
    with pytest.raises(attnrt.Error, match="as many lses"):
        attnrt.merge_states(ctx, [s, s], [np.zeros((3, 2), np.float32)])
    with pytest.raises(attnrt.Error) as e:  # an lse of the wrong shape
        attnrt.merge_states(ctx, [s], [np.zeros((3, 3), np.float32)], poisoned((3, 2, 8), "f32"))
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "lses" in e.value.message


@pytest.mark.parametrize("causal,sinks", [(True, False), (False, True)])
def test_cascade_shared_prefix(ctx, rng, causal, sinks):
    """Every request attends to one shared prefix (a 1-D prefix block table) and to its own suffix."""
    bs, Hq, Hkv, D = 16, 4, 2, 32
    prefix_len = 40
    b = make_batch(rng, [4, 1, 2], [9, 30, 2], bs, spare_blocks=0)
    prefix_blocks = -(-prefix_len // bs)
    num_blocks = b.num_blocks + prefix_blocks
    prefix_table = np.arange(b.num_blocks, num_blocks, dtype=np.int32)  # blocks after the suffixes'
    prefix_lens = np.full(len(b.seq_lens), prefix_len, np.int32)
    kc = rng.standard_normal((num_blocks, bs, Hkv, D), dtype=np.float32)
    vc = rng.standard_normal((num_blocks, bs, Hkv, D), dtype=np.float32)
    q = rng.standard_normal((b.tokens, Hq, D), dtype=np.float32)
    sinks_v = rng.standard_normal(Hq).astype(np.float32) if sinks else None
    out = poisoned((b.tokens, Hq, D), "f32")
    lse = np.full((b.tokens, Hq), np.nan, np.float32)

    cascade = attnrt.Cascade(ctx)
    cascade.plan(b.query_start_loc, b.seq_lens, b.block_table, prefix_lens, prefix_table, num_q_heads=Hq,
                 num_kv_heads=Hkv, head_dim=D, block_size=bs, num_blocks=num_blocks, causal=causal, sinks=sinks,
                 return_lse=True)
    cascade.run(q, kc, vc, block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens,
                prefix_block_table=prefix_table, prefix_seq_lens=prefix_lens, out=out, lse=lse, sinks=sinks_v)
    shared = np.broadcast_to(prefix_table, (len(b.seq_lens), prefix_blocks))
    want, want_lse = ref.paged_attention(q, kc, vc, b.block_table, b.query_start_loc, b.seq_lens, causal=causal,
                                         sinks=sinks_v, prefix=(shared, prefix_lens))
    ref.assert_close(out, want)
    ref.assert_close(lse, want_lse)
    assert cascade.workspace_size > 0  # the partial states live in the workspace the object allocated


def test_cascade_refuses_sliding_window(ctx, rng):
    b = make_batch(rng, [2], [9], 16)
    with pytest.raises(attnrt.Error) as e:
        attnrt.Cascade(ctx).plan(b.query_start_loc, b.seq_lens, b.block_table, [16], [b.num_blocks - 1],
                                 num_q_heads=2, num_kv_heads=1, head_dim=16, block_size=16, num_blocks=b.num_blocks,
                                 causal=True, sliding_window_left=4)
    assert e.value.status in (attnrt.Status.ERR_INVALID_ARGUMENT, attnrt.Status.ERR_UNSUPPORTED)
    assert "window" in e.value.message


def test_cascade_with_given_workspace(ctx, rng):
    bs, H, D = 16, 2, 16
    b = make_batch(rng, [2, 1], [5, 7], bs, spare_blocks=0)
    nb = b.num_blocks + 1
    prefix_table, prefix_lens = np.array([b.num_blocks], np.int32), np.array([12, 12], np.int32)
    kc = rng.standard_normal((nb, bs, H, D), dtype=np.float32)
    vc = rng.standard_normal((nb, bs, H, D), dtype=np.float32)
    q = rng.standard_normal((b.tokens, H, D), dtype=np.float32)
    opts = dict(num_q_heads=H, num_kv_heads=H, head_dim=D, block_size=bs, num_blocks=nb, causal=True)
    run = dict(block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens,
               prefix_block_table=prefix_table, prefix_seq_lens=prefix_lens)
    probe = attnrt.Cascade(ctx)
    probe.plan(b.query_start_loc, b.seq_lens, b.block_table, prefix_lens, prefix_table, **opts)
    need = probe.workspace_size
    small = attnrt.Cascade(ctx, workspace=ctx.alloc(need - 1))
    small.plan(b.query_start_loc, b.seq_lens, b.block_table, prefix_lens, prefix_table, **opts)
    with pytest.raises(attnrt.Error, match="workspace"):
        small.run(q, kc, vc, **run)
    given = attnrt.Cascade(ctx, workspace=np.empty(need, np.uint8))  # host memory is the cpu device's
    given.plan(b.query_start_loc, b.seq_lens, b.block_table, prefix_lens, prefix_table, **opts)
    out = given.run(q, kc, vc, **run)
    shared = np.broadcast_to(prefix_table, (2, 1))
    want, _ = ref.paged_attention(q, kc, vc, b.block_table, b.query_start_loc, b.seq_lens, causal=True,
                                  prefix=(shared, prefix_lens))
    ref.assert_close(out, want)
