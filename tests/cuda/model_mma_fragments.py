#!/usr/bin/env python3
"""model_mma_fragments.py -- a desk check of plugins/cuda/kernels/attn_mma.cuh that needs no GPU.

Emulates ldmatrix (.x4, with and without .trans) and mma.m16n8k16 with the fragment layouts of the PTX
ISA, drives them with the kernel's own lane-address formulas (Q, K, V tiles in padded shared-memory
rows) and checks S = Q K^T and O = P V, P taken from S's accumulator layout, against plain products.
Run: python3 tests/cuda/model_mma_fragments.py (plain Python, a few seconds). Keep the formulas in
step with the kernel when it changes.
"""
import random
random.seed(1)

def ldmatrix_x4(smem, addr_of_lane, trans):
    # addr_of_lane(l) -> (row, col) of the 16-byte row lane l supplies; matrix i from lanes 8i..8i+7
    regs = [[None]*4 for _ in range(32)]
    for i in range(4):
        rows = [addr_of_lane(8*i + r) for r in range(8)]      # row r of matrix i
        M = [[smem[rr][cc + c] for c in range(8)] for (rr, cc) in rows]
        for t in range(32):
            if not trans:
                regs[t][i] = (M[t//4][2*(t%4)], M[t//4][2*(t%4)+1])
            else:
                regs[t][i] = (M[2*(t%4)][t//4], M[2*(t%4)+1][t//4])
    return regs

def mma(C, A, B0, B1):
    # C[lane] = [c0..c3]; A[lane] = 4 pairs; B0/B1[lane] = pair. Rebuild matrices per the PTX layout.
    Am = [[0.0]*16 for _ in range(16)]; Bm = [[0.0]*8 for _ in range(16)]
    for l in range(32):
        g, t = l >> 2, l & 3
        for reg, (r, c) in enumerate([(g, 2*t), (g+8, 2*t), (g, 2*t+8), (g+8, 2*t+8)]):
            Am[r][c], Am[r][c+1] = A[l][reg]
        Bm[2*t][g], Bm[2*t+1][g] = B0[l]
        Bm[2*t+8][g], Bm[2*t+9][g] = B1[l]
    for l in range(32):
        g, t = l >> 2, l & 3
        for e, (r, c) in enumerate([(g, 2*t), (g, 2*t+1), (g+8, 2*t), (g+8, 2*t+1)]):
            C[l][e] += sum(Am[r][k]*Bm[k][c] for k in range(16))

def run(D, BN, WN, wn, dqk, dv):
    KPW = BN // WN; NTS = KPW // 8; NTO = D // 8
    LD = D + 8
    Q = [[random.uniform(-1,1) if c < dqk else 0.0 for c in range(LD)] for r in range(16)]
    K = [[random.uniform(-1,1) if c < dqk else 0.0 for c in range(LD)] for r in range(BN)]
    V = [[random.uniform(-1,1) if c < D else 0.0 for c in range(LD)] for r in range(BN)]
    s = [[[0.0]*4 for _ in range(32)] for n in range(NTS)]
    for kk in range(D // 16):
        if kk*16 >= dqk: continue
        af = ldmatrix_x4(Q, lambda l: ((l & 15), kk*16 + (l >> 4)*8), False)
        for np_ in range(NTS // 2):
            bf = ldmatrix_x4(K, lambda l: (wn*KPW + np_*16 + (l & 7) + (l >> 4)*8, kk*16 + ((l >> 3) & 1)*8), False)
            mma(s[2*np_], af, [bf[l][0] for l in range(32)], [bf[l][1] for l in range(32)])
            mma(s[2*np_+1], af, [bf[l][2] for l in range(32)], [bf[l][3] for l in range(32)])
    # check S against Q K^T for this warp's keys
    err = 0.0
    for l in range(32):
        g, t4 = l >> 2, l & 3
        for n in range(NTS):
            for e in range(4):
                r = g + 8*(e >> 1); j = wn*KPW + n*8 + 2*t4 + (e & 1)
                ref = sum(Q[r][d]*K[j][d] for d in range(dqk))
                err = max(err, abs(ref - s[n][l][e]))
    # P = S as is (no softmax needed to check the layout), O = P V
    o = [[[0.0]*4 for _ in range(32)] for n in range(NTO)]
    for k2 in range(KPW // 16):
        pa = [[(s[2*k2][l][0], s[2*k2][l][1]), (s[2*k2][l][2], s[2*k2][l][3]),
               (s[2*k2+1][l][0], s[2*k2+1][l][1]), (s[2*k2+1][l][2], s[2*k2+1][l][3])] for l in range(32)]
        for np_ in range(D // 16):
            if np_*16 >= dv: continue
            bf = ldmatrix_x4(V, lambda l: (wn*KPW + k2*16 + (l & 7) + ((l >> 3) & 1)*8, np_*16 + (l >> 4)*8), True)
            mma(o[2*np_], pa, [bf[l][0] for l in range(32)], [bf[l][1] for l in range(32)])
            mma(o[2*np_+1], pa, [bf[l][2] for l in range(32)], [bf[l][3] for l in range(32)])
    err_o = 0.0
    for l in range(32):
        g, t4 = l >> 2, l & 3
        for n in range(NTO):
            for e in range(4):
                r = g + 8*(e >> 1); c = n*8 + 2*t4 + (e & 1)
                if c >= dv: continue
                ref = 0.0
                for j in range(KPW):
                    key = wn*KPW + j
                    sref = sum(Q[r][d]*K[key][d] for d in range(dqk))
                    ref += sref * V[key][c]
                err_o = max(err_o, abs(ref - o[n][l][e]))
    print(f"D={D} BN={BN} WN={WN} wn={wn} dqk={dqk} dv={dv}: max|S-ref|={err:.2e} max|O-ref|={err_o:.2e}")
    assert err < 1e-9 and err_o < 1e-9

run(64, 64, 4, 2, 48, 64)
run(64, 64, 1, 0, 64, 40)
run(128, 32, 1, 0, 96, 128)
