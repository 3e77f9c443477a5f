#!/usr/bin/env python3
"""model_attention_blocks.py -- a desk check of the cuda plugin's paged attention that needs no GPU.

A float64 transcription, block by block, of cuda_attention_plan.c (row tiles, decode/prefill
configurations, split-KV by its rounds model), the block logic of the general prefill kernel
(attn_mma.cuh: 4 row warps) and of the decode kernel (attn_decode.cuh: NW = 4, 2 or 8 warps, warp w taking the
key tiles w, w + NW, ...): key ranges, splits (ck_item_keys), per-tile block-table lookups, the interior-tile
mask skip, per-warp online softmax, the warps' combine, partial states, and the split merge (done in the
kernel by a row tile's last block; here after every block, the same arithmetic), checked on random
batches against a direct implementation of docs/semantics.md (causal, windows, cross-attention,
soft-cap, ALiBi, sinks, LSE, GQA, empty rows, odd block sizes). The fragment-level arithmetic is
checked apart (model_mma_fragments.py, model_decode_fragments.py). Run:
python3 tests/cuda/model_attention_blocks.py (about a minute). Keep it in step with the kernels.
"""
import math, random

INF = float('inf')
DECODE_BN, MIN_CHUNK, SPLIT_OVERHEAD, MAX_SPLITS = 64, 2, 2, 64  # cuda_attention_plan.c, CK_MAX_SPLITS

def key_range(pq, S, causal, wl, wr):
    a, b = 0, S - 1
    if wl >= 0 and pq - wl > a: a = pq - wl
    if causal and pq < b: b = pq
    if wr >= 0 and pq + wr < b: b = pq + wr
    return a, b

def reference(c):
    out = {}
    for b in range(c['B']):
        L = c['qsl'][b+1] - c['qsl'][b]; S = c['S'][b]
        for i in range(L):
            t = c['qsl'][b] + i; pq = S - L + i
            for h in range(c['Hq']):
                kvh = h // (c['Hq'] // c['Hkv'])
                lo, hi = key_range(pq, S, c['causal'], c['wl'], c['wr'])
                sc = []
                for pk in range(max(lo,0), hi+1):
                    blk = c['bt'][b][pk // c['bs']]; row = pk % c['bs']
                    k = c['K'][blk][row][kvh]; v = c['V'][blk][row][kvh]
                    x = c['scale'] * sum(c['q'][t][h][d]*k[d] for d in range(c['dqk']))
                    if c['softcap'] > 0: x = c['softcap'] * math.tanh(x / c['softcap'])
                    if c['alibi']: x -= c['alibi'][h] * abs(pq - pk)
                    sc.append((x, v))
                if not sc:
                    out[(t,h)] = ([0.0]*c['dv'], -INF); continue
                m = max(x for x,_ in sc); l = sum(math.exp(x-m) for x,_ in sc)
                den = l + (math.exp(c['sinks'][h] - m) if c['sinks'] else 0.0)
                o = [sum(math.exp(x-m)*v[d] for x,v in sc)/den for d in range(c['dv'])]
                out[(t,h)] = (o, m + math.log(l))
    return out

def build_items(c, sm_count=4, occupancy=2):
    G = c['Hq'] // c['Hkv']; tiles = []
    for b in range(c['B']):
        L = c['qsl'][b+1]-c['qsl'][b]; S = c['S'][b]
        if L <= 0: continue
        cfg = 'dec' if L*G <= 16 else 'pre'
        rows = 16 if cfg == 'dec' else 64
        hc_full = min(G, rows)
        for h in range(c['Hkv']):
            hf = 0
            while hf < G:
                hc = min(G - hf, hc_full); tpt = rows // hc
                i0 = 0
                while i0 < L:
                    nt = min(L - i0, tpt)
                    lo, _ = key_range(S-L+i0, S, c['causal'], c['wl'], c['wr'])
                    _, hi = key_range(S-L+i0+nt-1, S, c['causal'], c['wl'], c['wr'])
                    tiles.append(dict(seq=b, kvh=h, q_first=i0, head_first=hf, head_count=hc, split=0, ns=1, part=-1,
                                      cfg=cfg, keys=hi-lo+1 if hi >= lo else 0))
                    i0 += tpt
                hf += hc_full
    # cuda_attention_plan.c's rounds model: blocks run in rounds of `resident`, a block costs its key
    # tiles + SPLIT_OVERHEAD; the chunk that cuts the longest decode tile into 1 .. MAX_SPLITS pieces
    # (at least MIN_CHUNK tiles) with the least ceil(blocks / resident) x (min(chunk, longest) + 2) wins
    resident = sm_count*occupancy
    kts = [(t['keys']+DECODE_BN-1)//DECODE_BN for t in tiles if t['cfg']=='dec']
    longest = max(kts, default=0)
    chunk_tiles, best, prev = max(longest, MIN_CHUNK), None, None
    for cut in range(1, MAX_SPLITS + 1):
        if longest <= 0: break
        ch = max(-(-longest // cut), MIN_CHUNK)
        if ch == prev: continue
        prev = ch
        blocks = sum(max(1, min(-(-kt // ch), MAX_SPLITS)) for kt in kts)
        cost = -(-blocks // resident) * (min(ch, longest) + SPLIT_OVERHEAD)
        if best is None or cost < best: best, chunk_tiles = cost, ch
        if ch == MIN_CHUNK: break
    if c.get('force_chunk'): chunk_tiles = c['force_chunk']
    parts = 0; items_pre, items_dec, groups = [], [], []
    for t in tiles:
        if t['cfg'] == 'pre': items_pre.append(t); continue
        ns = ((t['keys']+DECODE_BN-1)//DECODE_BN + chunk_tiles - 1)//chunk_tiles
        ns = max(1, min(ns, MAX_SPLITS)); t['ns'] = ns
        if ns > 1: t['part'] = parts; parts += ns; groups.append(t)
        for s in range(ns):
            d = dict(t); d['split'] = s; items_dec.append(d)
    return items_pre, items_dec, groups, parts

def block(c, it, WM, WN, BN, out, part_o, part_lse):
    ROWS = 16*WM; KPW = BN // WN
    b = it['seq']; T = c['T']
    q_begin = min(max(c['qsl'][b],0),T); q_end = min(max(c['qsl'][b+1], q_begin), T)
    L = q_end - q_begin; S = min(max(c['S'][b], 0), c['bt_cols']*c['bs'])
    hc = it['head_count']; ntok = min(ROWS // hc, L - it['q_first'])
    if ntok <= 0: return
    nrows = ntok*hc; kvh = it['kvh']; G = c['Hq']//c['Hkv']; hbase = kvh*G + it['head_first']
    tok0 = q_begin + it['q_first']; pq0 = S - L + it['q_first']
    lo, _ = key_range(pq0, S, c['causal'], c['wl'], c['wr'])
    _, hi = key_range(pq0+ntok-1, S, c['causal'], c['wl'], c['wr'])
    kbeg, kend = lo, hi
    if it['ns'] > 1:
        nkeys = hi-lo+1 if hi >= lo else 0
        chunk = ((nkeys + it['ns'] - 1)//it['ns'] + BN - 1)//BN*BN
        kbeg = lo + it['split']*chunk; kend = min(hi, kbeg + chunk - 1)
    n_tiles = (kend - kbeg + BN)//BN if kend >= kbeg else 0
    rlo, rhi, rpq, slope = [0]*ROWS, [0]*ROWS, [0]*ROWS, [0.0]*ROWS
    for row in range(ROWS):
        rpq[row] = pq0 + row // hc
        rlo[row], rhi[row] = key_range(rpq[row], S, c['causal'], c['wl'], c['wr'])
        if row >= nrows: rlo[row], rhi[row] = 1, 0
        slope[row] = c['alibi'][hbase + row % hc] if c['alibi'] else 0.0
    def qv(r, d):
        if r < nrows and d < c['dqk']: return c['q'][tok0 + r//hc][hbase + r%hc][d]
        return 0.0
    all_lo, _ = key_range(pq0+ntok-1, S, c['causal'], c['wl'], c['wr'])
    _, all_hi = key_range(pq0, S, c['causal'], c['wl'], c['wr'])
    # per warp (wn) state for each row: m, l, acc
    m = [[-INF]*ROWS for _ in range(WN)]; l = [[0.0]*ROWS for _ in range(WN)]
    acc = [[[0.0]*c['dv'] for _ in range(ROWS)] for _ in range(WN)]
    def meta(k0):
        ko = []
        for j in range(BN):
            key = k0 + j; entry = None
            if key <= kend:
                lb = key // c['bs']; blk = c['bt'][b][lb]
                if 0 <= blk < c['nblocks']: entry = (blk, key - lb*c['bs'])
            ko.append(entry)
        return ko
    nxt = meta(kbeg) if n_tiles > 0 else None
    absent = any(e is None for e in nxt) if n_tiles > 0 else False
    for kt in range(n_tiles):
        k0 = kbeg + kt*BN; cur = nxt
        interior = (not absent) and k0 >= all_lo and k0 + BN - 1 <= all_hi
        if kt + 1 < n_tiles:
            nxt = meta(k0 + BN); absent = any(e is None for e in nxt)
        Kt = [c['K'][e[0]][e[1]][kvh] if e else [0.0]*c['dqk'] for e in cur]
        Vt = [c['V'][e[0]][e[1]][kvh] if e else [0.0]*c['dv'] for e in cur]
        for wn in range(WN):
            for row in range(ROWS):
                xs = []
                for jj in range(KPW):
                    j = wn*KPW + jj; key = k0 + j
                    x = sum(qv(row, d)*Kt[j][d] for d in range(c['dqk'])) * c['scale']
                    if c['softcap'] > 0: x = c['softcap']*math.tanh(x/c['softcap'])
                    if c['alibi']: x -= slope[row]*abs(rpq[row]-key)
                    if not interior and not (cur[j] is not None and rlo[row] <= key <= rhi[row]): x = -INF
                    xs.append(x)
                mx = max(xs); m_new = max(m[wn][row], mx); m_use = 0.0 if m_new == -INF else m_new
                alpha = math.exp(m[wn][row] - m_use) if m[wn][row] != -INF else 0.0
                m[wn][row] = m_new
                ps = [math.exp(x - m_use) if x != -INF else 0.0 for x in xs]
                l[wn][row] = l[wn][row]*alpha + sum(ps)
                for d in range(c['dv']):
                    acc[wn][row][d] = acc[wn][row][d]*alpha + sum(ps[jj]*Vt[wn*KPW+jj][d] for jj in range(KPW))
    def emit(row, cc, o_sum, mm, lsum):
        if it['ns'] > 1:
            pi = it['part'] + it['split']
            part_o[(pi*ROWS + row)*c['dv'] + cc] = o_sum/lsum if lsum > 0 else 0.0; return
        tok = tok0 + row//hc; h = hbase + row%hc; val = 0.0
        if lsum > 0:
            den = lsum + (math.exp(c['sinks'][h] - mm) if c['sinks'] else 0.0); val = o_sum/den
        out.setdefault((tok,h), [[None]*c['dv'], None])[0][cc] = val
    def emit_lse(row, mm, lsum):
        lse = mm + math.log(lsum) if lsum > 0 else -INF
        if it['ns'] > 1: part_lse[(it['part']+it['split'])*ROWS + row] = lse; return
        tok = tok0 + row//hc; h = hbase + row%hc
        out.setdefault((tok,h), [[None]*c['dv'], None])[1] = lse
    for row in range(nrows):
        mm = max(m[w][row] for w in range(WN)); lt = 0.0; o = [0.0]*c['dv']
        if mm != -INF:
            for w in range(WN):
                if m[w][row] == -INF: continue
                f = math.exp(m[w][row]-mm); lt += l[w][row]*f
                for d in range(c['dv']): o[d] += acc[w][row][d]*f
        for d in range(c['dv']): emit(row, d, o[d], mm, lt)
        emit_lse(row, mm, lt)

def split_merge(c, it, out, part_o, part_lse):
    R = 16; b = it['seq']; T = c['T']
    q_begin = min(max(c['qsl'][b],0),T); q_end = min(max(c['qsl'][b+1], q_begin), T)
    hc = it['head_count']; ns = min(it['ns'], 64)
    ntok = min(R//hc, q_end - q_begin - it['q_first'])
    if ntok <= 0: return
    nrows = ntok*hc; G = c['Hq']//c['Hkv']; hbase = it['kvh']*G + it['head_first']; tok0 = q_begin + it['q_first']
    for row in range(nrows):
        tok = tok0 + row//hc; h = hbase + row%hc
        ls = [part_lse[(it['part']+s)*R + row] for s in range(ns)]
        m = max(ls); lse = -INF; post = 0.0
        if m != -INF:
            ssum = sum(math.exp(x - m) for x in ls); lse = m + math.log(ssum)
            den = ssum + (math.exp(c['sinks'][h]-m) if c['sinks'] else 0.0); post = 1.0/den
        w = [math.exp(x-m)*post if m != -INF else 0.0 for x in ls]
        o = [sum(w[s]*part_o[((it['part']+s)*R + row)*c['dv'] + d] for s in range(ns) if w[s] != 0.0) for d in range(c['dv'])]
        out[(tok,h)] = [o, lse]

def random_case(rng):
    c = {}
    c['Hkv'] = rng.choice([1, 2]); G = rng.choice([1, 3, 4, 8]); c['Hq'] = c['Hkv']*G
    c['dqk'] = rng.choice([8, 16]); c['dv'] = rng.choice([8, 16])
    c['bs'] = rng.choice([1, 3, 16]); c['causal'] = rng.random() < 0.7
    c['wl'] = rng.choice([-1, -1, 0, 5, 40]); c['wr'] = rng.choice([-1, 0, 3]) if not c['causal'] else -1
    c['softcap'] = rng.choice([0, 0, 2.0]); c['scale'] = 0.3
    c['alibi'] = [rng.uniform(0, 0.3) for _ in range(c['Hq'])] if rng.random() < 0.3 else None
    c['sinks'] = [rng.uniform(-1, 2) for _ in range(c['Hq'])] if rng.random() < 0.3 else None
    B = rng.randint(1, 4); c['B'] = B
    qlens, S = [], []
    for b in range(B):
        kind = rng.randint(0, 3)
        if kind == 0: q, s = 1, rng.randint(1, 300)
        elif kind == 1: q = rng.randint(1, 40); s = q + rng.randint(0, 100)
        elif kind == 2: q, s = 0, rng.randint(0, 20)
        else:
            q = rng.randint(1, 6); s = (q + rng.randint(0, 20)) if c['causal'] else rng.randint(0, 20)
        qlens.append(q); S.append(s)
    c['qsl'] = [0]
    for q in qlens: c['qsl'].append(c['qsl'][-1] + q)
    c['T'] = c['qsl'][-1]; c['S'] = S
    maxb = max((s + c['bs'] - 1)//c['bs'] for s in S) + 1
    c['bt_cols'] = maxb
    c['nblocks'] = B*maxb + 3
    perm = list(range(c['nblocks'])); rng.shuffle(perm)
    c['bt'] = [[perm[b*maxb + j] for j in range(maxb)] for b in range(B)]
    c['K'] = [[[[rng.uniform(-1,1) for _ in range(c['dqk'])] for _ in range(c['Hkv'])] for _ in range(c['bs'])] for _ in range(c['nblocks'])]
    c['V'] = [[[[rng.uniform(-1,1) for _ in range(c['dv'])] for _ in range(c['Hkv'])] for _ in range(c['bs'])] for _ in range(c['nblocks'])]
    c['q'] = [[[rng.uniform(-1,1) for _ in range(c['dqk'])] for _ in range(c['Hq'])] for _ in range(c['T'])]
    c['force_chunk'] = rng.choice([None, 1, 2])
    return c

def run_case(c, BN_pre=16, BN_dec=16, WN_dec=4):
    ref = reference(c)
    pre, dec, groups, parts = build_items(c)
    out = {}; part_o = [float('nan')]*(parts*16*c['dv']); part_lse = [float('nan')]*(parts*16)
    for it in pre: block(c, it, 4, 1, BN_pre, out, part_o, part_lse)
    for it in dec: block(c, it, 1, WN_dec, BN_dec, out, part_o, part_lse)
    for g in groups: split_merge(c, g, out, part_o, part_lse)
    worst = 0.0
    for key, (o, lse) in ref.items():
        if key not in out: raise AssertionError(f"row {key} never written")
        got_o, got_lse = out[key]
        for d in range(c['dv']):
            if got_o[d] is None or math.isnan(got_o[d]): raise AssertionError(f"row {key} col {d} unwritten/NaN")
            worst = max(worst, abs(got_o[d] - o[d]))
        if (lse == -INF) != (got_lse == -INF) or (lse != -INF and abs(lse - got_lse) > 1e-9):
            raise AssertionError(f"row {key}: lse {got_lse} vs {lse}")
    assert worst < 1e-9, worst
    return len(pre), len(dec), len(groups)

rng = random.Random(7)
stats = [0, 0, 0]
for n in range(300):
    c = random_case(rng)
    # small BN so that tiles, splits and partial tiles happen at these sizes (kernel: 64 / 32)
    # decode blocks of 4 warps, 2 (`_w2`) and 8 (`_t_w8`: twice the block tile, the split grid of NW x KPW keys)
    WN, BN = rng.choice([(4, 16), (2, 16), (8, 32)])
    p, d, g = run_case(c, BN_pre=rng.choice([16, 32]), BN_dec=BN, WN_dec=WN)
    stats[0] += p; stats[1] += d; stats[2] += g
print("300 random cases OK; items prefill %d decode %d split groups %d" % tuple(stats))
