#!/usr/bin/env python3
"""model_decode_fragments.py -- a desk check of plugins/cuda/kernels/attn_decode.cuh that needs no GPU.

Emulates, byte for byte, what one warp of the decode kernel does with one tile: the swizzled rows in
shared memory, ldmatrix (.x4, with and without .trans) at the kernel's lane addresses, the fp8 pair
widening (cvt of the low / high 16 bits), prmt 0x3120, movmatrix.trans, mma.m16n8k16 with the PTX
fragment layouts, Q^T's B fragments (fp8: K's byte order), and the output dim mapping of the combine.
Checks S^T = K Q^T and O^T = V^T P^T (P = S, no softmax: only the layouts are checked) against plain
products, for fp8 and 16-bit caches at D 64 / 128 / 256 and 8 or 16 rows, and the wide-group form's 32 rows
(NR 4, 16-bit) whose Q^T fragments come from Q's swizzled rows in shared memory by ldmatrix.x4.
Run: python3 tests/cuda/model_decode_fragments.py (plain Python, a few seconds). Keep the formulas in
step with the kernel when it changes.
"""
import random
random.seed(2)

def ldsm(mem, lane_addr, trans):
    """ldmatrix .x4 .b16: lane_addr(l) -> byte address of the 16-byte row lane l supplies. Returns, per
    lane, 4 registers as lists of 4 bytes (byte 0 = lowest)."""
    regs = [[None] * 4 for _ in range(32)]
    for i in range(4):
        rows = [lane_addr(8 * i + r) for r in range(8)]
        M = [[(mem[a + 2 * c], mem[a + 2 * c + 1]) for c in range(8)] for a in rows]  # 8x8 of b16 (2 bytes)
        for t in range(32):
            g, t4 = t >> 2, t & 3
            if not trans:
                regs[t][i] = list(M[g][2 * t4]) + list(M[g][2 * t4 + 1])
            else:
                regs[t][i] = list(M[2 * t4][g]) + list(M[2 * t4 + 1][g])
    return regs

def mma(C, A, B0, B1):
    """C[lane] += A B: A[lane] = 4 registers of 2 values, B0 / B1[lane] = 2 values (PTX m16n8k16)."""
    Am = [[None] * 16 for _ in range(16)]; Bm = [[None] * 8 for _ in range(16)]
    for l in range(32):
        g, t = l >> 2, l & 3
        for reg, (r, c) in enumerate([(g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8)]):
            Am[r][c], Am[r][c + 1] = A[l][reg]
        Bm[2 * t][g], Bm[2 * t + 1][g] = B0[l]
        Bm[2 * t + 8][g], Bm[2 * t + 9][g] = B1[l]
    for l in range(32):
        g, t = l >> 2, l & 3
        for e, (r, c) in enumerate([(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]):
            C[l][e] += sum(Am[r][k] * Bm[k][c] for k in range(16))

def movmatrix_trans(vals):
    """vals[lane] = (x, y): row g, cols 2t4, 2t4+1 of an 8x8 matrix; returns the transpose's fragments."""
    M = [[None] * 8 for _ in range(8)]
    for l in range(32):
        g, t = l >> 2, l & 3
        M[g][2 * t], M[g][2 * t + 1] = vals[l]
    return [(M[2 * (l & 3)][l >> 2], M[2 * (l & 3) + 1][l >> 2]) for l in range(32)]

def prmt3120(b):
    return [b[0], b[2], b[1], b[3]]

def run(fp8, D, KPW, NR, dqk, dv):
    WIDE = NR == 4  # attn_decode.cuh's WIDE: Q^T from shared memory
    ES = 1 if fp8 else 2
    ROWB = D * ES; CPR = ROWB // 16; MT = KPW // 16; MO = D // 16
    sw = (lambda r: r & 7) if CPR >= 8 else (lambda r: (r >> 1) & 3)
    # element values: fp8 byte codes map through a random table (the cvt); 16-bit elements are their own
    # 2-byte codes (an element index into a value table)
    table = [random.uniform(-1, 1) for _ in range(256)]
    kel = [[random.randrange(256) if d < dqk else 0 for d in range(D)] for _ in range(KPW)]
    vel = [[random.randrange(256) if d < dv else 0 for d in range(D)] for _ in range(KPW)]
    val = lambda code: table[code] if code else 0.0
    q = [[random.uniform(-1, 1) if d < dqk else 0.0 for d in range(D)] for _ in range(8 * NR)]
    # shared memory: K rows then V rows, chunk ch of row r at chunk ch ^ sw(r); a 16-bit element is
    # stored as (code, 0) so a lane's pair of bytes names the element
    mem = [0] * (2 * KPW * ROWB)
    for base, el in ((0, kel), (KPW * ROWB, vel)):
        for r in range(KPW):
            for d in range(D):
                byte = d * ES
                ch, off = byte // 16, byte % 16
                a = base + r * ROWB + ((ch ^ sw(r)) * 16) + off
                mem[a] = el[r][d]
    def pair(b0, b1):  # two bytes of a register half -> the two values a cvt (fp8) or the half (16-bit) gives
        return (val(b0), val(b1))
    # Q^T B fragments: row nr*8+g, k-step kk: fp8 dims 4t4..4t4+3, else 2t4, 2t4+1, 2t4+8, 2t4+9
    qf = {}
    for nr in range(NR):
        for kk in range(MO):
            qf[nr, kk] = [None] * 32
            for l in range(32):
                g, t4 = l >> 2, l & 3
                ds = [kk * 16 + (4 * t4 + e if fp8 else 2 * t4 + (e & 1) + (e >> 1) * 8) for e in range(4)]
                qf[nr, kk][l] = ((q[nr * 8 + g][ds[0]], q[nr * 8 + g][ds[1]]), (q[nr * 8 + g][ds[2]], q[nr * 8 + g][ds[3]]))
    if WIDE:  # Q's rows in shared memory: element (row, d) as its 2-byte index, chunk c of row r at c ^ (r & 7)
        qmem = [0] * (8 * NR * ROWB)
        for r in range(8 * NR):
            for d in range(D):
                a = r * ROWB + (((d * 2 // 16) ^ (r & 7)) * 16) + (d * 2) % 16
                qmem[a], qmem[a + 1] = (r * D + d) & 255, (r * D + d) >> 8
        qel = lambda b0, b1: q[(b0 | b1 << 8) // D][(b0 | b1 << 8) % D]
        qrow = lambda l: (l >> 4) * 8 + (l & 7)
        for cp in range(CPR // 2):
            for pr in range(NR // 2):
                r4 = ldsm(qmem, lambda l: (pr * 16 + qrow(l)) * ROWB + (((cp * 2 + ((l >> 3) & 1)) ^ (qrow(l) & 7)) * 16), False)
                for h in range(2):  # n-tile 2 pr + h: registers 2h (dims 0-7 of the k-step), 2h + 1 (dims 8-15)
                    qf[2 * pr + h, cp] = [((qel(*r4[l][2 * h][0:2]), qel(*r4[l][2 * h][2:4])),
                                           (qel(*r4[l][2 * h + 1][0:2]), qel(*r4[l][2 * h + 1][2:4]))) for l in range(32)]
    s = {(mt, nr): [[0.0] * 4 for _ in range(32)] for mt in range(MT) for nr in range(NR)}
    for mt in range(MT):
        def kaddr(l, cp):
            krow = mt * 16 + (l & 7) + ((l >> 3) & 1) * 8
            return krow * ROWB + (((cp * 2 + (l >> 4)) ^ sw(krow)) * 16)
        for cp in range(CPR // 2):
            kr = ldsm(mem, lambda l: kaddr(l, cp), False)
            if fp8:
                for h in range(2):
                    A = [[pair(*kr[l][2 * h][0:2]), pair(*kr[l][2 * h + 1][0:2]), pair(*kr[l][2 * h][2:4]),
                          pair(*kr[l][2 * h + 1][2:4])] for l in range(32)]
                    for nr in range(NR):
                        mma(s[mt, nr], A, [qf[nr, cp * 2 + h][l][0] for l in range(32)], [qf[nr, cp * 2 + h][l][1] for l in range(32)])
            else:  # 16-bit: each register is two elements (code, 0)
                A = [[(val(kr[l][i][0]), val(kr[l][i][2])) for i in range(4)] for l in range(32)]
                for nr in range(NR):
                    mma(s[mt, nr], A, [qf[nr, cp][l][0] for l in range(32)], [qf[nr, cp][l][1] for l in range(32)])
    err = 0.0
    for (mt, nr), acc in s.items():
        for l in range(32):
            g, t4 = l >> 2, l & 3
            for e in range(4):
                key = mt * 16 + g + 8 * (e >> 1); row = nr * 8 + 2 * t4 + (e & 1)
                ref = sum(q[row][d] * val(kel[key][d]) for d in range(D))
                err = max(err, abs(ref - acc[l][e]))
    # O^T += V^T P^T with P = S
    o = {(m, nr): [[0.0] * 4 for _ in range(32)] for m in range(MO) for nr in range(NR)}
    vbase = KPW * ROWB
    for mt in range(MT):
        pb = {}
        for nr in range(NR):
            pb[nr, 0] = movmatrix_trans([(s[mt, nr][l][0], s[mt, nr][l][1]) for l in range(32)])
            pb[nr, 1] = movmatrix_trans([(s[mt, nr][l][2], s[mt, nr][l][3]) for l in range(32)])
        if fp8:
            def vaddr(l, cp):
                vrow = mt * 16 + (l & 7) + ((l >> 3) & 1) * 8
                return vbase + vrow * ROWB + (((cp * 2 + (l >> 4)) ^ sw(vrow)) * 16)
            for cp in range(CPR // 2):
                vr = ldsm(mem, lambda l: vaddr(l, cp), True)
                for h in range(2):
                    A = []
                    for l in range(32):
                        p0 = prmt3120(vr[l][2 * h]); p1 = prmt3120(vr[l][2 * h + 1])
                        A.append([pair(*p0[0:2]), pair(*p0[2:4]), pair(*p1[0:2]), pair(*p1[2:4])])
                    for nr in range(NR):
                        mma(o[cp * 2 + h, nr], A, pb[nr, 0], pb[nr, 1])
        else:
            def vaddr(l, m):
                vrow = mt * 16 + (l & 7) + (l >> 4) * 8
                return vbase + vrow * ROWB + (((m * 2 + ((l >> 3) & 1)) ^ sw(vrow)) * 16)
            for m in range(MO):
                vr = ldsm(mem, lambda l: vaddr(l, m), True)
                A = [[(val(vr[l][i][0]), val(vr[l][i][2])) for i in range(4)] for l in range(32)]
                for nr in range(NR):
                    mma(o[m, nr], A, pb[nr, 0], pb[nr, 1])
    err_o = 0.0
    for (m, nr), acc in o.items():
        for l in range(32):
            g, t4 = l >> 2, l & 3
            for c in range(2):
                row = nr * 8 + 2 * t4 + c
                for h in range(2):
                    d = m * 16 + 2 * g + h if fp8 else m * 16 + g + 8 * h  # the combine's mapping
                    if d >= dv: continue
                    ref = 0.0
                    for mt in range(MT):
                        for k in range(16):
                            key = mt * 16 + k
                            sk = sum(q[row][dd] * val(kel[key][dd]) for dd in range(D))
                            ref += sk * val(vel[key][d])
                    err_o = max(err_o, abs(ref - acc[l][2 * h + c]))
    return err, err_o

if __name__ == "__main__":
    worst = 0.0
    for fp8, D, KPW, NR, dqk, dv in [(True, 128, 32, 1, 128, 128), (True, 64, 32, 2, 64, 48), (True, 256, 16, 1, 192, 256),
                                     (False, 128, 16, 2, 128, 128), (False, 64, 32, 1, 64, 64), (False, 256, 16, 1, 256, 200),
                                     (False, 128, 16, 4, 96, 128), (False, 64, 32, 4, 64, 64)]:
        e, eo = run(fp8, D, KPW, NR, dqk, dv)
        print(f"fp8={fp8} D={D} KPW={KPW} NR={NR}: S err {e:.2e}, O err {eo:.2e}")
        worst = max(worst, e, eo)
    print("PASS" if worst < 1e-9 else "FAIL")
