"""A float64 reference of docs/semantics.md in numpy, plus the dtype helpers the tests need (bf16 and fp8
values stored as uint16 / uint8, since numpy has neither)."""
import numpy as np

# Relative L2 tolerances of docs/semantics.md, keyed on the least precise dtype in play.
TOLERANCE = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2, "fp8": 1e-2}


def rel_l2(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.all(np.isfinite(got)), "non-finite values in the result (a NaN-poisoned row left unwritten?)"
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def assert_close(got, want, kind="f32"):
    err = rel_l2(got, want)
    assert err <= TOLERANCE[kind], "relative L2 error %.3g > %g (%s)" % (err, TOLERANCE[kind], kind)


# ---- dtypes ------------------------------------------------------------------------------------------

def to_bf16_bits(x):
    """float32 -> bf16 bits (uint16), round to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def from_bf16_bits(b):
    return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _fp8_table(exp_bits, man_bits, bias, fn):
    """Every fp8 code's value (NaN where the code is NaN)."""
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    e = (codes >> man_bits) & ((1 << exp_bits) - 1)
    m = codes & ((1 << man_bits) - 1)
    normal = (1 + m / (1 << man_bits)) * np.exp2(e.astype(np.float64) - bias)
    sub = (m / (1 << man_bits)) * np.exp2(1.0 - bias)
    v = sign * np.where(e == 0, sub, normal)
    if fn:  # e4m3fn: only S.1111.111 is NaN, no infinities
        v[(codes & 0x7F) == 0x7F] = np.nan
    else:  # e5m2: IEEE-like
        top = e == (1 << exp_bits) - 1
        v[top & (m == 0)] = sign[top & (m == 0)] * np.inf
        v[top & (m != 0)] = np.nan
    return v


FP8_VALUES = {"fp8_e4m3": _fp8_table(4, 3, 7, True), "fp8_e5m2": _fp8_table(5, 2, 15, False)}
FP8_MAX = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0}
FP8_NAN = {"fp8_e4m3": 0x7F, "fp8_e5m2": 0x7F}


def from_fp8(codes, kind):
    return FP8_VALUES[kind][np.asarray(codes, np.uint8)]


def quantize_error_bound(x, kind):
    """The largest |dequantised - x| saturating round-to-nearest can give, elementwise (x already / scale)."""
    man = 3 if kind == "fp8_e4m3" else 2
    min_normal = 2.0 ** (-6 if kind == "fp8_e4m3" else -14)
    a = np.minimum(np.abs(x), FP8_MAX[kind])
    return np.maximum(a * 2.0 ** -(man + 1), min_normal * 2.0 ** -(man + 1)) * 1.0001


# ---- KV cache ------------------------------------------------------------------------------------------

def gather_keys(cache, block_table_row, seq_len):
    """Rows 0..seq_len-1 of one request from a paged cache [nb, bs, H, D] -> [seq_len, H, D]."""
    bs = cache.shape[1]
    pos = np.arange(seq_len)
    return cache[np.asarray(block_table_row)[pos // bs], pos % bs]


def kv_write(key_cache, value_cache, key, value, slots):
    kc, vc = key_cache.copy(), value_cache.copy()
    bs = kc.shape[1]
    for t, s in enumerate(slots):
        if 0 <= s < kc.shape[0] * bs:
            kc[s // bs, s % bs] = key[t]
            vc[s // bs, s % bs] = value[t]
    return kc, vc


# ---- attention -------------------------------------------------------------------------------------------

def _softmax_rows(s, keep, sinks):
    """softmax over kept keys of s [H, K] with an optional sink logit per head; (weights, lse) with lse of
    the kept keys only, -inf and zero weights where nothing is kept."""
    H = s.shape[0]
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=1) if s.shape[1] else np.full(H, -np.inf)
    any_kept = np.isfinite(m)
    m_safe = np.where(any_kept, m, 0.0)
    e = np.where(keep, np.exp(s - m_safe[:, None]), 0.0)
    total = e.sum(axis=1)
    lse = np.where(any_kept, m_safe + np.log(np.where(any_kept, total, 1.0)), -np.inf)
    denom = total.copy()
    if sinks is not None:
        denom = denom + np.where(any_kept, np.exp(np.asarray(sinks, np.float64) - m_safe), 0.0)
    w = e / np.where(denom > 0, denom, 1.0)[:, None]
    return w, lse


def paged_attention(q, key_cache, value_cache, block_table, query_start_loc, seq_lens, *, scale=0.0, softcap=0.0,
                    causal=False, window_left=0, window_right=0, alibi=None, sinks=None, num_seqs=None,
                    prefix=None):
    """out [T, Hq, Dv] and lse [T, Hq] in float64 (rows of requests past num_seqs: NaN).

    prefix: (prefix_block_table [B, P], prefix_seq_lens [B]): cascade, the prefix keys visible to every query
    without a mask, suffix positions counted after it."""
    q = np.asarray(q, np.float64)
    kc = np.asarray(key_cache, np.float64)
    vc = np.asarray(value_cache, np.float64)
    T, Hq, D = q.shape
    Hkv, Dv = kc.shape[2], vc.shape[3]
    group = Hq // Hkv
    scale = scale or 1.0 / np.sqrt(D)
    B = len(seq_lens) if num_seqs is None else num_seqs
    out = np.full((T, Hq, Dv), np.nan)
    lse = np.full((T, Hq), np.nan)
    for b in range(B):
        start, end, S = int(query_start_loc[b]), int(query_start_loc[b + 1]), int(seq_lens[b])
        L = end - start
        K = gather_keys(kc, block_table[b], S)
        V = gather_keys(vc, block_table[b], S)
        P = 0
        if prefix is not None:
            P = int(prefix[1][b])
            K = np.concatenate([gather_keys(kc, prefix[0][b], P), K])
            V = np.concatenate([gather_keys(vc, prefix[0][b], P), V])
        Kq = np.repeat(K, group, axis=1)  # [P + S, Hq, D]
        Vq = np.repeat(V, group, axis=1)
        pk = np.arange(S)
        for i in range(L):
            t = start + i
            pq = S - L + i
            s = scale * np.einsum("hd,khd->hk", q[t], Kq)
            if softcap:
                s = softcap * np.tanh(s / softcap)
            if alibi is not None:
                s[:, P:] -= np.asarray(alibi, np.float64)[:, None] * np.abs(pq - pk)[None, :]
            keep = np.ones(S, bool)
            if causal:
                keep &= pk <= pq
            if window_left:
                keep &= pk > pq - window_left
            if window_right:
                keep &= pk < pq + window_right
            keep = np.concatenate([np.ones(P, bool), keep])
            w, row_lse = _softmax_rows(s, np.broadcast_to(keep, s.shape), sinks)
            out[t] = np.einsum("hk,khd->hd", w, Vq)
            lse[t] = row_lse
    return out, lse


def merge_states(states, lses, sinks=None):
    o = np.stack([np.asarray(s, np.float64) for s in states])  # [n, T, H, D]
    s = np.stack([np.asarray(x, np.float64) for x in lses])  # [n, T, H]
    m = s.max(axis=0)
    finite = np.isfinite(m)
    m_safe = np.where(finite, m, 0.0)
    w = np.where(np.isfinite(s), np.exp(s - m_safe), 0.0)
    total = w.sum(axis=0)
    out = (w[..., None] * o).sum(axis=0) / np.where(total > 0, total, 1.0)[..., None]
    lse = np.where(finite, m_safe + np.log(np.where(finite, total, 1.0)), -np.inf)
    if sinks is not None:
        factor = np.where(finite, 1.0 / (1.0 + np.exp(np.asarray(sinks, np.float64)[None, :] - lse)), 1.0)
        out = out * factor[..., None]
    return out, lse


# ---- MLA -----------------------------------------------------------------------------------------------------

def mla(q, kv_cache, block_table, query_start_loc, seq_lens, v_dim, scale, causal=False, indices=None, sinks=None):
    q = np.asarray(q, np.float64)
    c = np.asarray(kv_cache, np.float64)
    T, H, _ = q.shape
    out = np.full((T, H, v_dim), np.nan)
    lse = np.full((T, H), np.nan)
    for b in range(len(seq_lens)):
        start, end, S = int(query_start_loc[b]), int(query_start_loc[b + 1]), int(seq_lens[b])
        rows = gather_keys(c, block_table[b], S)[:, 0, :]  # [S, kv_dim]
        L = end - start
        for i in range(L):
            t = start + i
            if indices is not None:
                idx = [int(k) for k in indices[t] if 0 <= k < S]  # repeats count once per occurrence
                K = rows[idx] if idx else np.zeros((0, rows.shape[1]))
                keep = np.ones(len(idx), bool)
            else:
                K = rows
                keep = np.arange(S) <= S - L + i if causal else np.ones(S, bool)
            s = scale * (q[t] @ K.T)  # [H, K]
            w, row_lse = _softmax_rows(s, np.broadcast_to(keep, s.shape), sinks)
            out[t] = w @ K[:, :v_dim]
            lse[t] = row_lse
    return out, lse


# ---- linear attention and gated delta ----------------------------------------------------------------------

def lightning(q, k, v, slopes, query_start_loc, state_indices, has_initial_state, pool):
    """(out [T, H, Dv], new pool) from pool [slots, H, Dk, Dv] float64."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    pool = np.array(pool, np.float64)
    decay = np.exp(-np.asarray(slopes, np.float64))[:, None, None]
    out = np.zeros((q.shape[0], q.shape[1], v.shape[2]))
    for b in range(len(state_indices)):
        slot = int(state_indices[b])
        if slot < 0:
            continue
        S = pool[slot].copy() if has_initial_state[b] else np.zeros(pool.shape[1:])
        for t in range(int(query_start_loc[b]), int(query_start_loc[b + 1])):
            S = decay * S + np.einsum("hk,hv->hkv", k[t], v[t])
            out[t] = np.einsum("hk,hkv->hv", q[t], S)
        pool[slot] = S
    return out, pool


def gated_delta(q, k, v, g, beta, query_start_loc, state_indices, has_initial_state, pool, scale=0.0,
                use_l2norm=False, spec_state_indices=None, num_accepted=None):
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    pool = np.array(pool, np.float64)
    T, H, Dk = q.shape
    HV = v.shape[1]
    if use_l2norm:
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    q = q * (scale or Dk ** -0.5)
    head = np.arange(HV) // (HV // H)
    out = np.zeros((T, HV, v.shape[2]))
    for b in range(len(has_initial_state)):
        if spec_state_indices is not None:
            if spec_state_indices[b][0] < 0:
                continue
            src = int(spec_state_indices[b][int(num_accepted[b]) - 1])
        else:
            src = int(state_indices[b])
            if src < 0:
                continue
        S = pool[src].copy() if has_initial_state[b] else np.zeros(pool.shape[1:])  # [HV, Dk, Dv]
        for n, t in enumerate(range(int(query_start_loc[b]), int(query_start_loc[b + 1]))):
            kt, qt = k[t][head], q[t][head]  # [HV, Dk]
            S = np.exp(g[t])[:, None, None] * S
            vp = beta[t][:, None] * (v[t] - np.einsum("hkv,hk->hv", S, kt))
            S = S + np.einsum("hk,hv->hkv", kt, vp)
            out[t] = np.einsum("hkv,hk->hv", S, qt)
            if spec_state_indices is not None:
                pool[int(spec_state_indices[b][n])] = S
        if spec_state_indices is None:
            pool[src] = S
    return out, pool
