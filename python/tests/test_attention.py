"""Paged attention and KV writes on the cpu plugin against the float64 reference."""
import numpy as np
import pytest

import attnrt
import reference as ref
from batch import make_batch, poisoned, storage, values

MIXED = dict(q_lens=[5, 1, 3, 1], seq_lens=[37, 20, 3, 64])  # prefill, decode, a whole prompt, decode


def cache_arrays(rng, num_blocks, block_size, heads, dim, layout):
    """A random cache of logical shape [nb, bs, H, D]; HND is a strided view of [nb, H, bs, D] memory."""
    if layout == "HND":
        return rng.standard_normal((num_blocks, heads, block_size, dim), dtype=np.float32).transpose(0, 2, 1, 3)
    return rng.standard_normal((num_blocks, block_size, heads, dim), dtype=np.float32)


def check_attention(ctx, rng, *, q_lens, seq_lens, Hq=8, Hkv=2, D=32, Dv=None, bs=16, kind="f32", out_kind=None,
                    layout="NHD", causal=True, window_left=0, window_right=0, softcap=0.0, sinks=False, alibi=False,
                    lse=False, scale=0.0):
    Dv = Dv or D
    out_kind = out_kind or kind
    b = make_batch(rng, q_lens, seq_lens, bs)
    kc, kc64 = storage(cache_arrays(rng, b.num_blocks, bs, Hkv, D, layout), kind)
    vc, vc64 = storage(cache_arrays(rng, b.num_blocks, bs, Hkv, Dv, layout), kind)
    q, q64 = storage(rng.standard_normal((b.tokens, Hq, D), dtype=np.float32), kind)
    sinks_v = rng.standard_normal(Hq).astype(np.float32) if sinks else None
    alibi_v = rng.uniform(0.01, 0.3, Hq).astype(np.float32) if alibi else None
    out = poisoned((b.tokens, Hq, Dv), out_kind)
    lse_v = np.full((b.tokens, Hq), np.nan, np.float32) if lse else None

    attn = attnrt.PagedAttention(ctx)
    attn.plan(b.query_start_loc, b.seq_lens, b.block_table, num_q_heads=Hq, num_kv_heads=Hkv, head_dim=D,
              head_dim_v=Dv, block_size=bs, num_blocks=b.num_blocks, q_dtype=kind, out_dtype=out_kind,
              kv_layout=layout, causal=causal, scale=scale, softcap=softcap, sliding_window_left=window_left,
              sliding_window_right=window_right, return_lse=lse, sinks=sinks, alibi=alibi)
    result = attn.run(q, kc, vc, block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens,
                      out=out, lse=lse_v, sinks=sinks_v, alibi_slopes=alibi_v)
    want, want_lse = ref.paged_attention(q64, kc64, vc64, b.block_table, b.query_start_loc, b.seq_lens, scale=scale,
                                         softcap=softcap, causal=causal, window_left=window_left,
                                         window_right=window_right, alibi=alibi_v, sinks=sinks_v)
    ref.assert_close(values(out, out_kind), want, kind if kind != "f32" else out_kind)
    if lse:
        assert result[0] is out and result[1] is lse_v
        finite = np.isfinite(want_lse)
        assert np.array_equal(np.isfinite(lse_v), finite)
        ref.assert_close(lse_v[finite], want_lse[finite], "f32" if kind == "f32" else "f16")
    else:
        assert result is out
    attn.close()


def test_gqa_causal_mixed_batch(ctx, rng):
    check_attention(ctx, rng, **MIXED)


def test_non_causal_cross_attention(ctx, rng):
    # causal = 0 allows seq_len < query length (cross-attention): positions go negative, nothing is masked
    check_attention(ctx, rng, q_lens=[6, 2], seq_lens=[4, 30], causal=False)


@pytest.mark.parametrize("left,right,causal", [(8, 0, True), (5, 3, False), (1, 0, True)])
def test_sliding_window(ctx, rng, left, right, causal):
    check_attention(ctx, rng, **MIXED, window_left=left, window_right=right, causal=causal)


def test_softcap_sinks_lse(ctx, rng):
    check_attention(ctx, rng, **MIXED, softcap=5.0, sinks=True, lse=True, scale=0.3)


def test_alibi_mqa(ctx, rng):
    check_attention(ctx, rng, **MIXED, Hq=4, Hkv=1, alibi=True)


def test_hnd_cache_and_value_dim(ctx, rng):
    check_attention(ctx, rng, **MIXED, layout="HND", D=64, Dv=32)


@pytest.mark.parametrize("kind,out_kind", [("f16", "f16"), ("bf16", "bf16"), ("bf16", "f32")])
def test_half_precision(ctx, rng, kind, out_kind):
    # bf16 travels as uint16 arrays: the plan's dtype reinterprets them (numpy has no bf16)
    check_attention(ctx, rng, **MIXED, kind=kind, out_kind=out_kind, D=64)


def test_outputs_allocated_like_query(ctx, rng):
    b = make_batch(rng, [3, 1], [9, 17], 16)
    kc = rng.standard_normal((b.num_blocks, 16, 2, 32), dtype=np.float32)
    vc = rng.standard_normal((b.num_blocks, 16, 2, 32), dtype=np.float32)
    q = rng.standard_normal((b.tokens, 4, 32), dtype=np.float32)
    attn = attnrt.PagedAttention(ctx)
    attn.plan(b.query_start_loc, b.seq_lens, b.block_table, num_q_heads=4, num_kv_heads=2, head_dim=32,
              block_size=16, num_blocks=b.num_blocks, causal=True, return_lse=True)
    out, lse = attn.run(q, kc, vc, block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens)
    want, want_lse = ref.paged_attention(q, kc, vc, b.block_table, b.query_start_loc, b.seq_lens, causal=True)
    assert out.dtype == np.float32 and out.shape == (b.tokens, 4, 32) and lse.shape == (b.tokens, 4)
    ref.assert_close(out, want)
    ref.assert_close(lse, want_lse)


def test_strided_query_gets_its_own_plan(ctx, rng):
    """A query sliced out of a fused qkv has other strides than the compact plan: the run plans it once and
    reuses that plan for every layer of that layout (layers alternate here)."""
    b = make_batch(rng, MIXED["q_lens"], MIXED["seq_lens"], 16)
    Hq, Hkv, D = 4, 2, 32
    attn = attnrt.PagedAttention(ctx)
    attn.plan(b.query_start_loc, b.seq_lens, b.block_table, num_q_heads=Hq, num_kv_heads=Hkv, head_dim=D,
              block_size=16, num_blocks=b.num_blocks, causal=True)
    for layer in range(4):
        kc = rng.standard_normal((b.num_blocks, 16, Hkv, D), dtype=np.float32)
        vc = rng.standard_normal((b.num_blocks, 16, Hkv, D), dtype=np.float32)
        if layer % 2:
            qkv = rng.standard_normal((b.tokens, (Hq + 2 * Hkv) * D), dtype=np.float32)
            q = qkv[:, :Hq * D].reshape(b.tokens, Hq, D)
            assert not q.flags.c_contiguous
        else:
            q = rng.standard_normal((b.tokens, Hq, D), dtype=np.float32)
        out = attn.run(q, kc, vc, block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens,
                       out=poisoned((b.tokens, Hq, D), "f32"))
        want, _ = ref.paged_attention(q, kc, vc, b.block_table, b.query_start_loc, b.seq_lens, causal=True)
        ref.assert_close(out, want)
    assert len(attn._plans) == 2


# ---- KV write --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["f32", "f16"])
def test_kv_write(ctx, rng, kind):
    nb, bs, Hkv, D = 6, 8, 2, 16
    T_ = 11
    slots = rng.choice(nb * bs, T_, replace=False).astype(np.int64)
    slots[[2, 7]] = -1  # padding rows are skipped
    key, key64 = storage(rng.standard_normal((T_, Hkv, D), dtype=np.float32), kind)
    value, value64 = storage(rng.standard_normal((T_, Hkv, D), dtype=np.float32), kind)
    kc = poisoned((nb, bs, Hkv, D), kind)
    vc = poisoned((nb, bs, Hkv, D), kind)
    attnrt.kv_write(ctx, key, value, slots, kc, vc, slot_mapping_host=slots)
    want_k, want_v = ref.kv_write(np.full(kc.shape, np.nan), np.full(vc.shape, np.nan), key64, value64, slots)
    written = ~np.isnan(want_k)
    assert np.array_equal(~np.isnan(values(kc, kind)), written)  # nothing else touched
    assert np.array_equal(values(kc, kind)[written], want_k[written])
    assert np.array_equal(values(vc, kind)[written], want_v[written])


@pytest.mark.parametrize("fp8", ["fp8_e4m3", "fp8_e5m2"])
def test_fp8_cache_write_then_attention(ctx, rng, fp8):
    """fp8 caches stored as uint8: kv_write quantises (stored = sat(x / scale)), attention dequantises; the
    reference is fed the same dequantised values."""
    bs, Hq, Hkv, D = 16, 4, 2, 32
    b = make_batch(rng, [4, 1], [30, 18], bs)
    tokens = sum(int(s) for s in b.seq_lens)
    slots = np.concatenate([
        b.block_table[r][np.arange(int(s)) // bs] * bs + np.arange(int(s)) % bs for r, s in enumerate(b.seq_lens)])
    k_new = rng.standard_normal((tokens, Hkv, D), dtype=np.float32) * 3
    v_new = rng.standard_normal((tokens, Hkv, D), dtype=np.float32) * 3
    scale_k = np.array([0.05], np.float32)
    scale_v = np.array([0.02], np.float32)
    kc = np.full((b.num_blocks, bs, Hkv, D), ref.FP8_NAN[fp8], np.uint8)
    vc = np.full((b.num_blocks, bs, Hkv, D), ref.FP8_NAN[fp8], np.uint8)
    attnrt.kv_write(ctx, k_new, v_new, slots.astype(np.int64), kc, vc, key_scale=scale_k, value_scale=scale_v,
                    kv_cache_dtype=fp8)
    k_deq = ref.from_fp8(kc, fp8) * np.float64(scale_k[0])
    v_deq = ref.from_fp8(vc, fp8) * np.float64(scale_v[0])
    bound_k = ref.quantize_error_bound(k_new / np.float64(scale_k[0]), fp8) * np.float64(scale_k[0])
    bs_ = slots // bs, slots % bs
    assert np.all(np.abs(k_deq[bs_] - k_new) <= bound_k)
    assert np.all(np.isfinite(v_deq[bs_]))

    q = rng.standard_normal((b.tokens, Hq, D), dtype=np.float32)
    out = poisoned((b.tokens, Hq, D), "f32")
    attn = attnrt.PagedAttention(ctx)
    attn.plan(b.query_start_loc, b.seq_lens, b.block_table, num_q_heads=Hq, num_kv_heads=Hkv, head_dim=D,
              block_size=bs, num_blocks=b.num_blocks, q_dtype="f32", kv_dtype=fp8, causal=True, kv_scale="tensor")
    attn.run(q, kc, vc, block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens, out=out,
             k_scale=scale_k, v_scale=scale_v)
    want, _ = ref.paged_attention(q, np.nan_to_num(k_deq), np.nan_to_num(v_deq), b.block_table, b.query_start_loc,
                                  b.seq_lens, causal=True)
    ref.assert_close(out, want, "fp8")


# ---- bad arguments -----------------------------------------------------------------------------------------

def plan_args(b, **over):
    opts = dict(num_q_heads=4, num_kv_heads=2, head_dim=32, block_size=16, num_blocks=b.num_blocks, causal=True)
    opts.update(over)
    return opts


def test_plan_refuses_block_outside_cache(ctx, rng):
    b = make_batch(rng, [2, 1], [20, 5], 16)
    b.block_table[1, 0] = b.num_blocks + 4
    attn = attnrt.PagedAttention(ctx)
    with pytest.raises(attnrt.Error) as e:
        attn.plan(b.query_start_loc, b.seq_lens, b.block_table, **plan_args(b))
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT
    assert "block_table" in e.value.message and str(b.num_blocks + 4) in e.value.message
    assert str(e.value).startswith("ATTNRT_ERR_INVALID_ARGUMENT: ")


def test_plan_refuses_heads_that_do_not_divide(ctx, rng):
    b = make_batch(rng, [2], [20], 16)
    with pytest.raises(attnrt.Error) as e:
        attnrt.PagedAttention(ctx).plan(b.query_start_loc, b.seq_lens, b.block_table,
                                        **plan_args(b, num_q_heads=5, num_kv_heads=2))
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "5" in e.value.message


def test_run_refuses_wrong_dtype_and_shape(ctx, rng):
    b = make_batch(rng, [2, 1], [20, 5], 16)
    attn = attnrt.PagedAttention(ctx)
    attn.plan(b.query_start_loc, b.seq_lens, b.block_table, **plan_args(b))
    kc = np.zeros((b.num_blocks, 16, 2, 32), np.float32)
    q = np.zeros((b.tokens, 4, 32), np.float32)
    meta = dict(block_table=b.block_table, query_start_loc=b.query_start_loc, seq_lens=b.seq_lens)
    with pytest.raises(attnrt.Error) as e:  # an f64 query: a dtype libattnrt does not take
        attn.run(q.astype(np.float64), kc, kc, **meta)
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "query" in e.value.message
    with pytest.raises(attnrt.Error) as e:  # caches of different head dims
        attn.run(q, kc, kc[..., :16], **meta)
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "value_cache" in e.value.message
    with pytest.raises(attnrt.Error) as e:  # a block table of int64
        attn.run(q, kc, kc, **dict(meta, block_table=b.block_table.astype(np.int64)))
    assert "block_table" in e.value.message


def test_run_before_plan_and_after_close(ctx):
    attn = attnrt.PagedAttention(ctx)
    z = np.zeros((1, 1, 8), np.float32)
    with pytest.raises(attnrt.Error, match="before plan"):
        attn.run(z, z, z, block_table=z, query_start_loc=z, seq_lens=z)
    with pytest.raises(attnrt.Error, match="plan_capacity"):
        attn.update([0, 1], [1], [[0]])


def test_not_a_tensor(ctx):
    with pytest.raises(TypeError, match="__dlpack__"):
        attnrt.kv_write(ctx, [1.0], [1.0], [0], [1.0], [1.0])


def test_kv_write_refuses_slot_outside_cache(ctx, rng):
    kc = np.zeros((2, 4, 1, 8), np.float32)
    key = np.ones((2, 1, 8), np.float32)
    slots = np.array([3, 8], np.int64)
    with pytest.raises(attnrt.Error) as e:
        attnrt.kv_write(ctx, key, key, slots, kc, kc.copy(), slot_mapping_host=slots)
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "8" in e.value.message
    assert not kc.any()  # nothing written


def test_dtype_override_must_keep_the_size(ctx):
    kc = np.zeros((2, 4, 1, 8), np.float32)
    key = np.ones((1, 1, 8), np.float32)
    with pytest.raises(attnrt.Error, match="element sizes differ"):
        attnrt.kv_write(ctx, key, key, np.zeros(1, np.int64), kc, kc, kv_cache_dtype="fp8_e4m3")
