"""State pools, lightning attention and the gated delta rule on the cpu plugin."""
import numpy as np
import pytest

import attnrt
import reference as ref
from batch import poisoned


def fill_pool(pool, rng, slots):
    """Random contents in `slots`; returns the whole pool as the reference sees it (others NaN)."""
    shape = (pool.num_slots,) + pool.slot_shape
    host = np.full(shape, np.nan)
    for s in slots:
        values = rng.standard_normal(pool.slot_shape).astype(np.float32) * 0.5
        pool.write(s, values)
        host[s] = values
    return host


def test_state_pool(ctx, rng):
    with attnrt.StatePool(ctx, [2, 3, 4], num_slots=4) as pool:
        assert pool.usage() == (4, 4)
        a, b = pool.alloc(), pool.alloc()
        assert (a, b) == (0, 1) and pool.usage() == (4, 2)
        t = pool.tensor()
        assert t.dtype == attnrt.float32 and list(t.shape[:t.ndim]) == [4, 2, 3, 4]
        values = rng.standard_normal((2, 3, 4)).astype(np.float32)
        pool.write(a, values)
        assert np.array_equal(pool.read(a), values)
        pool.copy(a, b)
        assert np.array_equal(pool.read(b), values)
        pool.zero(a)
        assert not pool.read(a).any()
        pool.free(a)
        assert pool.alloc() == a
        pool.free(b)
        with pytest.raises(attnrt.Error) as e:  # freeing a free slot names it
            pool.free(b)
        assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and str(b) in e.value.message
        with pytest.raises(attnrt.Error) as e:
            pool.copy(a, 3)  # slot 3 is not allocated
        assert "3" in e.value.message
        pool.alloc(), pool.alloc(), pool.alloc()
        with pytest.raises(attnrt.Error) as e:
            pool.alloc()
        assert e.value.status == attnrt.Status.ERR_OUT_OF_MEMORY


def test_state_pool_bad_shape(ctx):
    with pytest.raises(attnrt.Error) as e:
        attnrt.StatePool(ctx, [2, -3], num_slots=4)
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT and "-3" in e.value.message


def lightning_case(ctx, rng, H=2, Dk=8, Dv=6):
    q_lens = [3, 1, 2, 4]
    qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    T_ = int(qsl[-1])
    pool = attnrt.StatePool(ctx, [H, Dk, Dv], num_slots=6)
    slots = [pool.alloc() for _ in range(5)]
    state_indices = np.array([slots[3], slots[1], -1, slots[4]], np.int32)  # request 2 is padding
    has_initial = np.array([1, 0, 0, 1], np.uint8)
    return pool, slots, qsl, T_, state_indices, has_initial


def test_lightning(ctx, rng):
    H, Dk, Dv = 2, 8, 6
    pool, slots, qsl, T_, state_indices, has_initial = lightning_case(ctx, rng, H, Dk, Dv)
    before = fill_pool(pool, rng, slots)
    q, k = (rng.standard_normal((T_, H, Dk), dtype=np.float32) * 0.5 for _ in range(2))
    v = rng.standard_normal((T_, H, Dv), dtype=np.float32)
    slopes = rng.uniform(0.05, 1.0, H).astype(np.float32)
    op = attnrt.Lightning(ctx)
    op.plan(qsl, state_indices, has_initial, pool=pool, num_heads=H, head_dim_k=Dk, head_dim_v=Dv)
    out = op.run(q, k, v, slopes, query_start_loc=qsl, state_indices=state_indices, has_initial_state=has_initial,
                 out=poisoned((T_, H, Dv), "f32"))
    want, want_pool = ref.lightning(q, k, v, slopes, qsl, state_indices, has_initial, np.nan_to_num(before))
    ref.assert_close(out, want)
    for s in slots:  # written slots hold the final states; the others are untouched
        ref.assert_close(pool.read(s), want_pool[s])


def test_lightning_refuses_unallocated_slot(ctx, rng):
    pool, slots, qsl, T_, state_indices, has_initial = lightning_case(ctx, rng)
    pool.free(slots[1])
    with pytest.raises(attnrt.Error) as e:
        attnrt.Lightning(ctx).plan(qsl, state_indices, has_initial, pool=pool, num_heads=2, head_dim_k=8,
                                   head_dim_v=6)
    assert e.value.status == attnrt.Status.ERR_INVALID_ARGUMENT
    assert "state_indices" in e.value.message and str(slots[1]) in e.value.message


@pytest.mark.parametrize("l2norm,gate_dtype,HV", [(False, "f32", 2), (True, "f32", 4)])
def test_gated_delta(ctx, rng, l2norm, gate_dtype, HV):
    H, Dk, Dv = 2, 8, 6
    q_lens = [3, 1, 2]
    qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    T_ = int(qsl[-1])
    pool = attnrt.StatePool(ctx, [HV, Dk, Dv], num_slots=4)
    slots = [pool.alloc() for _ in range(3)]
    before = fill_pool(pool, rng, slots)
    state_indices = np.array([slots[2], slots[0], slots[1]], np.int32)
    has_initial = np.array([1, 1, 0], np.uint8)
    q, k = (rng.standard_normal((T_, H, Dk), dtype=np.float32) * 0.5 for _ in range(2))
    v = rng.standard_normal((T_, HV, Dv), dtype=np.float32)
    g = -rng.uniform(0.01, 1.0, (T_, HV)).astype(np.float32)
    beta = rng.uniform(0.1, 0.9, (T_, HV)).astype(np.float32)
    op = attnrt.GatedDelta(ctx)
    op.plan(qsl, state_indices, has_initial, pool=pool, num_heads=H, num_v_heads=HV, head_dim_k=Dk, head_dim_v=Dv,
            use_l2norm=l2norm, gate_dtype=gate_dtype, scale=0.3)
    out = op.run(q, k, v, g, beta, query_start_loc=qsl, state_indices=state_indices, has_initial_state=has_initial,
                 out=poisoned((T_, HV, Dv), "f32"))
    want, want_pool = ref.gated_delta(q, k, v, g, beta, qsl, state_indices, has_initial, np.nan_to_num(before),
                                      scale=0.3, use_l2norm=l2norm)
    ref.assert_close(out, want)
    for s in slots:
        ref.assert_close(pool.read(s), want_pool[s])


def test_gated_delta_speculative(ctx, rng):
    """Speculative decoding: each request starts from spec_state_indices[b][num_accepted - 1] and writes the
    state after its token t to spec_state_indices[b][t]."""
    H, Dk, Dv = 2, 8, 4
    q_lens = [3, 2]
    qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    T_ = int(qsl[-1])
    pool = attnrt.StatePool(ctx, [H, Dk, Dv], num_slots=7)
    slots = [pool.alloc() for _ in range(6)]
    before = fill_pool(pool, rng, slots)
    spec = np.array([slots[0:3], slots[3:6]], np.int32)
    accepted = np.array([2, 1], np.int32)
    state_indices = np.array([-1, -1], np.int32)
    has_initial = np.array([1, 1], np.uint8)
    q, k = (rng.standard_normal((T_, H, Dk), dtype=np.float32) * 0.5 for _ in range(2))
    v = rng.standard_normal((T_, H, Dv), dtype=np.float32)
    g = -rng.uniform(0.01, 1.0, (T_, H)).astype(np.float32)
    beta = rng.uniform(0.1, 0.9, (T_, H)).astype(np.float32)
    op = attnrt.GatedDelta(ctx)
    op.plan(qsl, state_indices, has_initial, pool=pool, num_heads=H, head_dim_k=Dk, head_dim_v=Dv,
            spec_state_indices=spec, num_accepted=accepted)
    out = op.run(q, k, v, g, beta, query_start_loc=qsl, state_indices=state_indices, has_initial_state=has_initial,
                 spec_state_indices=spec, num_accepted=accepted, out=poisoned((T_, H, Dv), "f32"))
    want, want_pool = ref.gated_delta(q, k, v, g, beta, qsl, state_indices, has_initial, np.nan_to_num(before),
                                      spec_state_indices=spec, num_accepted=accepted)
    ref.assert_close(out, want)
    for s in slots:
        ref.assert_close(pool.read(s), want_pool[s])
