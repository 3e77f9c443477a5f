"""The ops with torch CUDA tensors on torch's current stream, and a torch.cuda.graph capture of a decode step
(kv_write + attention with a capacity plan) replayed with three new batches, checked against torch's SDPA.

Skipped only where torch or a CUDA device is absent; with both, libattnrt must have a cuda device
(ATTNRT_PLUGIN_PATH naming the cuda plugin's folder, or an install that has it), else the tests fail."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import attnrt  # noqa: E402
import reference as ref  # noqa: E402
from batch import make_batch  # noqa: E402

DEV = torch.device("cuda", torch.cuda.current_device())


@pytest.fixture(scope="module")
def cuda_ctx():
    names = [d.name for d in attnrt.devices()]
    name = "cuda:%d" % DEV.index
    assert name in names, "libattnrt has no %s (devices: %s; plugins: %s)" % (
        name, names, [(p.name, p.reason) for p in attnrt.plugins()])
    with attnrt.open(name) as ctx:
        yield ctx


@pytest.fixture
def gen():
    g = torch.Generator(device=DEV)
    seed = int(np.random.SeedSequence().entropy % (1 << 31))
    print("seed", seed)
    g.manual_seed(seed)
    return g


def randn(gen, *shape, dtype=torch.bfloat16, scale=1.0):
    return (torch.randn(shape, generator=gen, device=DEV, dtype=torch.float32) * scale).to(dtype)


def f64(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def to_dev(a):
    return torch.from_numpy(np.ascontiguousarray(a)).to(DEV)


def poisoned(*shape, dtype=torch.bfloat16):
    return torch.full(shape, float("nan"), device=DEV, dtype=dtype)


KIND = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}


# ---- paged attention, kv_write, merge, cascade ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_paged_attention_on_current_stream(cuda_ctx, gen, dtype):
    """The default: torch's current stream (here the default stream); no synchronisation in the package."""
    rng = np.random.default_rng(int(torch.randint(0, 1 << 30, (1,), generator=gen, device=DEV).item()))
    b = make_batch(rng, [7, 1, 3, 1], [40, 129, 3, 17], 16)
    Hq, Hkv, D = 8, 2, 128
    kc, vc = randn(gen, b.num_blocks, 16, Hkv, D, dtype=dtype), randn(gen, b.num_blocks, 16, Hkv, D, dtype=dtype)
    q = randn(gen, b.tokens, Hq, D, dtype=dtype)
    sinks = randn(gen, Hq, dtype=torch.float32)
    out, lse = poisoned(b.tokens, Hq, D, dtype=dtype), poisoned(b.tokens, Hq, dtype=torch.float32)
    attn = attnrt.PagedAttention(cuda_ctx)
    attn.plan(b.query_start_loc, b.seq_lens, b.block_table, num_q_heads=Hq, num_kv_heads=Hkv, head_dim=D,
              block_size=16, num_blocks=b.num_blocks, q_dtype=dtype, causal=True, sliding_window_left=33,
              softcap=20.0, sinks=True, return_lse=True)
    attn.run(q, kc, vc, block_table=to_dev(b.block_table), query_start_loc=to_dev(b.query_start_loc),
             seq_lens=to_dev(b.seq_lens), out=out, lse=lse, sinks=sinks)
    torch.cuda.current_stream().synchronize()
    want, want_lse = ref.paged_attention(f64(q), f64(kc), f64(vc), b.block_table, b.query_start_loc, b.seq_lens,
                                         causal=True, window_left=33, softcap=20.0, sinks=f64(sinks))
    ref.assert_close(f64(out), want, KIND[dtype])
    ref.assert_close(f64(lse), want_lse, KIND[dtype])


def test_kv_write_bf16_and_fp8(cuda_ctx, gen):
    nb, bs, Hkv, D, T_ = 8, 16, 2, 64, 20
    slots = torch.randperm(nb * bs, generator=gen, device=DEV)[:T_].to(torch.int64)
    slots[3] = -1
    key, value = randn(gen, T_, Hkv, D), randn(gen, T_, Hkv, D)
    kc, vc = poisoned(nb, bs, Hkv, D), poisoned(nb, bs, Hkv, D)
    attnrt.kv_write(cuda_ctx, key, value, slots, kc, vc)
    keep = slots >= 0
    s = slots[keep]
    assert torch.equal(kc.view(-1, Hkv, D)[s], key[keep]) and torch.equal(vc.view(-1, Hkv, D)[s], value[keep])
    assert torch.isnan(kc).sum().item() == (nb * bs - len(s)) * Hkv * D
    # fp8: a torch.float8_e4m3fn cache (its bytes exported) and a uint8 one, both read as kv_cache_dtype
    scale = torch.tensor([0.05], device=DEV)
    k8 = torch.full((nb, bs, Hkv, D), 0x7F, device=DEV, dtype=torch.uint8).view(torch.float8_e4m3fn)
    v8 = torch.full((nb, bs, Hkv, D), 0x7F, device=DEV, dtype=torch.uint8)
    attnrt.kv_write(cuda_ctx, key, value, slots, k8, v8, key_scale=scale, value_scale=scale, kv_cache_dtype="fp8_e4m3")
    torch.cuda.current_stream().synchronize()
    rows = s.cpu().numpy()
    for cache, x in ((k8.view(torch.uint8), key), (v8, value)):
        got = ref.from_fp8(cache.cpu().numpy(), "fp8_e4m3").reshape(-1, Hkv, D) * 0.05
        want = f64(x[keep])
        assert np.all(np.abs(got[rows] - want) <= ref.quantize_error_bound(want / 0.05, "fp8_e4m3") * 0.05)
        assert np.isnan(np.delete(got, rows, axis=0)).all()  # the rest still holds the NaN code


def test_fp8_torch_dtype_cache(cuda_ctx, gen):
    """A torch.float8_e4m3fn cache is read as fp8 without an override (its bytes are exported as uint8)."""
    bs, Hq, Hkv, D = 16, 4, 1, 64
    rng = np.random.default_rng(7)
    b = make_batch(rng, [2, 1], [30, 12], bs)
    kc = (randn(gen, b.num_blocks, bs, Hkv, D, dtype=torch.float32) * 10).to(torch.float8_e4m3fn)
    vc = (randn(gen, b.num_blocks, bs, Hkv, D, dtype=torch.float32) * 10).to(torch.float8_e4m3fn)
    scale = torch.tensor([0.1], device=DEV)
    q = randn(gen, b.tokens, Hq, D)
    attn = attnrt.PagedAttention(cuda_ctx)
    attn.plan(b.query_start_loc, b.seq_lens, b.block_table, num_q_heads=Hq, num_kv_heads=Hkv, head_dim=D,
              block_size=bs, num_blocks=b.num_blocks, q_dtype="bf16", kv_dtype="fp8_e4m3", causal=True,
              kv_scale="tensor")
    out = attn.run(q, kc, vc, block_table=to_dev(b.block_table), query_start_loc=to_dev(b.query_start_loc),
                   seq_lens=to_dev(b.seq_lens), k_scale=scale, v_scale=scale)
    assert out.dtype == torch.bfloat16 and out.device == DEV
    want, _ = ref.paged_attention(f64(q), f64(kc) * 0.1, f64(vc) * 0.1, b.block_table, b.query_start_loc, b.seq_lens,
                                  causal=True)
    ref.assert_close(f64(out), want, "bf16")


def test_explicit_streams(cuda_ctx, gen):
    """stream= a torch.cuda.Stream, and an attnrt Stream (torch orders its pending work before ours through
    the DLPack stream argument)."""
    rng = np.random.default_rng(3)
    b = make_batch(rng, [4, 1], [20, 70], 16)
    Hq, Hkv, D = 4, 4, 64
    kc, vc = randn(gen, b.num_blocks, 16, Hkv, D), randn(gen, b.num_blocks, 16, Hkv, D)
    q = randn(gen, b.tokens, Hq, D)
    meta = dict(block_table=to_dev(b.block_table), query_start_loc=to_dev(b.query_start_loc),
                seq_lens=to_dev(b.seq_lens))
    attn = attnrt.PagedAttention(cuda_ctx)
    attn.plan(b.query_start_loc, b.seq_lens, b.block_table, num_q_heads=Hq, num_kv_heads=Hkv, head_dim=D,
              block_size=16, num_blocks=b.num_blocks, q_dtype="bf16", causal=True)
    want, _ = ref.paged_attention(f64(q), f64(kc), f64(vc), b.block_table, b.query_start_loc, b.seq_lens, causal=True)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    out = poisoned(b.tokens, Hq, D)
    with torch.cuda.stream(side):
        attn.run(q, kc, vc, out=out, **meta)  # torch's current stream is `side` here
    torch.cuda.current_stream().wait_stream(side)
    ref.assert_close(f64(out), want, "bf16")

    out2 = poisoned(b.tokens, Hq, D)
    attn.run(q, kc, vc, out=out2, stream=side, **meta)
    side.synchronize()
    ref.assert_close(f64(out2), want, "bf16")

    own = cuda_ctx.stream()
    assert own.native != 0
    out3 = poisoned(b.tokens, Hq, D)
    attn.run(q, kc, vc, out=out3, stream=own, **meta)
    done = own.record()
    done.synchronize()
    ref.assert_close(f64(out3), want, "bf16")
    # an engine's event: our stream waits for torch's work recorded in it
    ev = torch.cuda.Event()
    ev.record()
    wrapped = cuda_ctx.wrap_event(ev.cuda_event)
    own.wait(wrapped)
    assert wrapped.native == ev.cuda_event
    own.synchronize()
    wrapped.close()
    own.close()


def test_merge_and_cascade(cuda_ctx, gen):
    T_, H, D = 9, 4, 64
    states = [randn(gen, T_, H, D, dtype=torch.float32) for _ in range(3)]
    lses = [randn(gen, T_, H, dtype=torch.float32) for _ in range(3)]
    out, out_lse = attnrt.merge_states(cuda_ctx, states, lses, return_lse=True)
    want, want_lse = ref.merge_states([f64(s) for s in states], [f64(s) for s in lses])
    ref.assert_close(f64(out), want)
    ref.assert_close(f64(out_lse), want_lse)

    rng = np.random.default_rng(11)
    bs, Hq, Hkv = 16, 4, 2
    b = make_batch(rng, [3, 1], [5, 9], bs, spare_blocks=0)
    prefix_table = np.arange(b.num_blocks, b.num_blocks + 3, dtype=np.int32)
    prefix_lens = np.array([40, 40], np.int32)
    nb = b.num_blocks + 3
    kc, vc = randn(gen, nb, bs, Hkv, D), randn(gen, nb, bs, Hkv, D)
    q = randn(gen, b.tokens, Hq, D)
    cascade = attnrt.Cascade(cuda_ctx)
    cascade.plan(b.query_start_loc, b.seq_lens, b.block_table, prefix_lens, prefix_table, num_q_heads=Hq,
                 num_kv_heads=Hkv, head_dim=D, block_size=bs, num_blocks=nb, q_dtype="bf16", causal=True)
    out = cascade.run(q, kc, vc, block_table=to_dev(b.block_table), query_start_loc=to_dev(b.query_start_loc),
                      seq_lens=to_dev(b.seq_lens), prefix_block_table=to_dev(prefix_table),
                      prefix_seq_lens=to_dev(prefix_lens))
    shared = np.broadcast_to(prefix_table, (2, 3))
    want, _ = ref.paged_attention(f64(q), f64(kc), f64(vc), b.block_table, b.query_start_loc, b.seq_lens, causal=True,
                                  prefix=(shared, prefix_lens))
    ref.assert_close(f64(out), want, "bf16")


# ---- MLA, lightning, gated delta --------------------------------------------------------------------------

def test_mla(cuda_ctx, gen):
    rng = np.random.default_rng(5)
    b = make_batch(rng, [4, 1], [33, 100], 64)
    H, kv_dim, v_dim = 16, 576, 512
    cache = randn(gen, b.num_blocks, 64, 1, kv_dim)
    q = randn(gen, b.tokens, H, kv_dim)
    mla = attnrt.MLA(cuda_ctx)
    scale = 1 / 192 ** 0.5
    mla.plan(b.query_start_loc, b.seq_lens, b.block_table, num_heads=H, kv_dim=kv_dim, v_dim=v_dim, block_size=64,
             num_blocks=b.num_blocks, scale=scale, q_dtype="bf16", causal=True)
    out = mla.run(q, cache, block_table=to_dev(b.block_table), query_start_loc=to_dev(b.query_start_loc),
                  seq_lens=to_dev(b.seq_lens))
    want, _ = ref.mla(f64(q), f64(cache), b.block_table, b.query_start_loc, b.seq_lens, v_dim, scale, causal=True)
    ref.assert_close(f64(out), want, "bf16")


def test_lightning_and_gated_delta(cuda_ctx, gen):
    H, Dk, Dv = 2, 64, 64
    qsl = np.array([0, 3, 4, 9], np.int32)
    T_ = int(qsl[-1])
    idx = np.array([2, 0, 1], np.int32)
    init = np.array([1, 0, 1], np.uint8)
    pool = attnrt.StatePool(cuda_ctx, [H, Dk, Dv], num_slots=4)
    slots = [pool.alloc() for _ in range(3)]
    before = np.zeros((4, H, Dk, Dv))
    for s in slots:
        before[s] = (np.random.default_rng(s).standard_normal((H, Dk, Dv)) * 0.1).astype(np.float32)
        pool.write(s, before[s])
    q, k = randn(gen, T_, H, Dk, dtype=torch.float32, scale=0.2), randn(gen, T_, H, Dk, dtype=torch.float32, scale=0.2)
    v = randn(gen, T_, H, Dv, dtype=torch.float32)
    slopes = torch.tensor([0.1, 0.7], device=DEV)
    meta = dict(query_start_loc=to_dev(qsl), state_indices=to_dev(idx), has_initial_state=to_dev(init))
    op = attnrt.Lightning(cuda_ctx)
    op.plan(qsl, idx, init, pool=pool, num_heads=H, head_dim_k=Dk, head_dim_v=Dv)
    out = op.run(q, k, v, slopes, **meta)
    torch.cuda.current_stream().synchronize()  # the pool is read back on the context's default stream
    want, want_pool = ref.lightning(f64(q), f64(k), f64(v), f64(slopes), qsl, idx, init, before)
    ref.assert_close(f64(out), want)
    for s in slots:
        ref.assert_close(pool.read(s), want_pool[s])

    for s in slots:
        pool.write(s, before[s])
    g = -torch.rand(T_, H, generator=gen, device=DEV)
    beta = torch.rand(T_, H, generator=gen, device=DEV)
    gdn = attnrt.GatedDelta(cuda_ctx)
    gdn.plan(qsl, idx, init, pool=pool, num_heads=H, head_dim_k=Dk, head_dim_v=Dv, use_l2norm=True)
    out = gdn.run(q, k, v, g, beta, **meta)
    torch.cuda.current_stream().synchronize()
    want, want_pool = ref.gated_delta(f64(q), f64(k), f64(v), f64(g), f64(beta), qsl, idx, init, before,
                                      use_l2norm=True)
    ref.assert_close(f64(out), want)
    for s in slots:
        ref.assert_close(pool.read(s), want_pool[s])


# ---- graph capture of a decode step, replayed across batches ---------------------------------------------

MAX_SEQS, MAX_BLOCKS, BS, HQ, HKV, D = 8, 8, 16, 8, 2, 128
NUM_BLOCKS = MAX_SEQS * MAX_BLOCKS


def sdpa_decode(q, k_cache, v_cache, block_table, seq_lens):
    """One decode token a request: torch's SDPA over each request's keys (GQA expanded), in float32."""
    outs = []
    for b, n in enumerate(seq_lens):
        pos = torch.arange(int(n), device=DEV)
        blocks = block_table[b, pos // BS].long()
        k = k_cache[blocks, pos % BS].float().repeat_interleave(HQ // HKV, dim=1)  # [n, Hq, D]
        v = v_cache[blocks, pos % BS].float().repeat_interleave(HQ // HKV, dim=1)
        o = F.scaled_dot_product_attention(q[b].float()[:, None, :], k.transpose(0, 1), v.transpose(0, 1))
        outs.append(o[:, 0, :])
    return torch.stack(outs)


def test_graph_capture_decode_replayed_across_batches(cuda_ctx, gen):
    """Capture kv_write + paged attention of a decode step once; replay it for three batches of other sizes
    and lengths: new block tables, lengths and tokens written into the captured tensors, update() before
    each replay."""
    kc, vc = randn(gen, NUM_BLOCKS, BS, HKV, D), randn(gen, NUM_BLOCKS, BS, HKV, D)
    q = torch.zeros(MAX_SEQS, HQ, D, device=DEV, dtype=torch.bfloat16)
    k_new = torch.zeros(MAX_SEQS, HKV, D, device=DEV, dtype=torch.bfloat16)
    v_new = torch.zeros_like(k_new)
    slots = torch.full((MAX_SEQS,), -1, device=DEV, dtype=torch.int64)
    block_table = torch.zeros(MAX_SEQS, MAX_BLOCKS, device=DEV, dtype=torch.int32)
    qsl = torch.zeros(MAX_SEQS + 1, device=DEV, dtype=torch.int32)
    seq_lens = torch.zeros(MAX_SEQS, device=DEV, dtype=torch.int32)
    out = torch.zeros(MAX_SEQS, HQ, D, device=DEV, dtype=torch.bfloat16)

    attn = attnrt.PagedAttention(cuda_ctx)
    attn.plan_capacity(max_seqs=MAX_SEQS, max_blocks_per_seq=MAX_BLOCKS, max_tokens=MAX_SEQS, num_q_heads=HQ,
                       num_kv_heads=HKV, head_dim=D, block_size=BS, num_blocks=NUM_BLOCKS, q_dtype="bf16",
                       causal=True)
    rng = np.random.default_rng(int(torch.randint(0, 1 << 30, (1,), generator=gen, device=DEV).item()))

    def set_batch(lens):
        """Writes a decode batch of len(lens) requests into the captured tensors; returns its host metadata."""
        B = len(lens)
        host_qsl = np.concatenate([np.arange(B + 1), np.full(MAX_SEQS - B, B)]).astype(np.int32)
        host_lens = np.zeros(MAX_SEQS, np.int32)
        host_lens[:B] = lens
        table = np.zeros((MAX_SEQS, MAX_BLOCKS), np.int32)
        perm = rng.permutation(NUM_BLOCKS)
        host_slots = np.full(MAX_SEQS, -1, np.int64)
        for b, n in enumerate(lens):
            used = -(-n // BS)
            table[b, :used] = perm[b * MAX_BLOCKS:b * MAX_BLOCKS + used]
            host_slots[b] = table[b, (n - 1) // BS] * BS + (n - 1) % BS  # the new token's row
        qsl.copy_(to_dev(host_qsl))
        seq_lens.copy_(to_dev(host_lens))
        block_table.copy_(to_dev(table))
        slots.copy_(to_dev(host_slots))
        q.copy_(randn(gen, MAX_SEQS, HQ, D))
        k_new.copy_(randn(gen, MAX_SEQS, HKV, D))
        v_new.copy_(randn(gen, MAX_SEQS, HKV, D))
        out.fill_(float("nan"))
        return host_qsl[:B + 1], host_lens[:B], table[:B]

    def step():
        attnrt.kv_write(cuda_ctx, k_new, v_new, slots, kc, vc)
        attn.run(q, kc, vc, block_table=block_table, query_start_loc=qsl, seq_lens=seq_lens, out=out)

    capture_stream = torch.cuda.Stream()
    capture_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(capture_stream):  # warm-up: plans, wrappers and the workspace exist before capture
        attn.update(*set_batch([5, 77, 128]))
        step()
    torch.cuda.current_stream().wait_stream(capture_stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture_stream):
        step()

    for lens in ([1, 16, 17, 100, 128, 3, 64, 90], [40, 2], [127, 33, 33, 1, 9]):  # full, small, mixed sizes
        host = set_batch(lens)
        attn.update(*host)  # on torch's current stream, ahead of the replay
        graph.replay()
        torch.cuda.current_stream().synchronize()
        B = len(lens)
        want = sdpa_decode(q, kc, vc, block_table, lens)
        got = out[:B].float()
        err = (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()
        assert err < 1e-2, "batch %s: relative L2 error %.3g against SDPA" % (lens, err)
        assert torch.isnan(out[B:].float()).all(), "rows past the batch must stay unwritten"
        new_k = kc.view(-1, HKV, D)[slots[:B]]
        assert torch.equal(new_k, k_new[:B]), "kv_write in the graph wrote this batch's keys"
