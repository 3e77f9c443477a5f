#!/usr/bin/env python3
"""model_mla_wgmma_layout.py -- a desk check of plugins/cuda/kernels/mla_sm90a.cu that needs no GPU.

Emulates the wgmma MLA kernel's shared memory and matrix work for one 64-key latent tile (576 dims),
element by element, with the canonical-layout formulas of model_wgmma_layout.py (the prefill kernel's
check, which these reuse):
  - the stores: Q by (row, chunk) and the tile by warpgroup 1's copy mapping (thread wt: chunk wt % 8 of
    each 64-column block of rows wt / 8 + 16 i), at the kernel's swizzled offsets;
  - S = Q C^T through the kernel's descriptors (36 k-steps; Q and the tile 64 rows, 8 KB a column block);
  - P (= S here: layouts only) packed into warpgroup 0's A fragments, stored to the tile's rope block at
    slot k2 x 128 + wt and read back by warpgroup 1's twin thread;
  - O = P V for both warpgroups: V MN-major from column block 4 x wg, 4 k-steps of m64n256k16;
  - that the P slots lie inside the rope block (dims 512 .. 575) and nothing else.
Run: python3 tests/cuda/model_mla_wgmma_layout.py (plain Python, ~20 s). Keep it in step with the kernel.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_wgmma_layout import desc, kmajor_addr, mnmajor_addr  # noqa: E402

random.seed(5)
ROWS, BN, D, DV = 64, 64, 576, 512
CB = BN * 128                # a 64-column block
TILE = (D // 64) * CB        # a latent tile
ROPE = (DV // 64) * CB       # the rope block


def swz(r, c):
    return (c >> 3) * CB + r * 128 + (((c & 7) ^ (r & 7)) << 4)


def main():
    base = 1024 * 3
    sQ, sK = base, base + ROWS * D * 2
    st = 1
    kb = sK + st * TILE
    mem = {}
    Q = [[random.randint(-2, 2) for _ in range(D)] for _ in range(ROWS)]
    C = [[random.randint(-2, 2) for _ in range(D)] for _ in range(BN)]
    for r in range(ROWS):
        for ch in range(D // 8):
            for e in range(8):
                mem[sQ + swz(r, ch) + 2 * e] = Q[r][8 * ch + e]
    for wt in range(128):  # warpgroup 1's copy threads
        c8, r0 = wt & 7, wt >> 3
        dst = (r0 * 128) + ((c8 ^ (r0 & 7)) << 4)
        for i in range(BN // 16):
            row = r0 + 16 * i
            for cb in range(D // 64):
                for e in range(8):
                    a = kb + dst + cb * CB + i * 16 * 128 + 2 * e
                    assert a not in mem
                    mem[a] = C[row][8 * (cb * 8 + c8) + e]
    assert len(mem) == ROWS * D + BN * D, "every element stored once, no overlap"

    S = [[0] * BN for _ in range(ROWS)]
    for kk in range(D // 16):
        ofs = (kk >> 2) * CB + (kk & 3) * 32
        da, db = desc(sQ + ofs, 16, 1024), desc(kb + ofs, 16, 1024)
        for m in range(ROWS):
            qa = [mem[kmajor_addr(da, m, k)] for k in range(16)]
            for n in range(BN):
                S[m][n] += sum(qa[k] * mem[kmajor_addr(db, n, k)] for k in range(16))
    for m in range(ROWS):
        for n in range(BN):
            assert S[m][n] == sum(Q[m][k] * C[n][k] for k in range(D)), (m, n)

    # warpgroup 0's A fragments of P, stored to the rope block at slot k2 x 128 + wt
    rope = {}
    for wt in range(128):
        w, lane = wt >> 5, wt & 31
        g, t4 = lane >> 2, lane & 3
        pa = [[None] * 4 for _ in range(BN // 16)]
        for r in range(2):
            for n in range(BN // 8):
                pa[n >> 1][(n & 1) * 2 + r] = (S[16 * w + g + 8 * r][8 * n + 2 * t4], S[16 * w + g + 8 * r][8 * n + 2 * t4 + 1])
        for k2 in range(BN // 16):
            a = kb + ROPE + (k2 * 128 + wt) * 16
            assert kb + ROPE <= a and a + 16 <= kb + ROPE + CB, "P slot inside the rope block"
            rope[a] = pa[k2]
    for wg in range(2):
        O = [[0] * 256 for _ in range(ROWS)]
        vb = kb + wg * 4 * CB
        for k2 in range(BN // 16):
            dv = desc(vb + k2 * 2048, CB, 1024)
            A = [[None] * 16 for _ in range(ROWS)]
            for wt in range(128):
                w, lane = wt >> 5, wt & 31
                g, t4 = lane >> 2, lane & 3
                frag = rope[kb + ROPE + (k2 * 128 + wt) * 16]  # the twin's slot (warpgroup 1 reads it back)
                for reg, (r, c) in enumerate([(g, 2 * t4), (g + 8, 2 * t4), (g, 2 * t4 + 8), (g + 8, 2 * t4 + 8)]):
                    A[16 * w + r][c], A[16 * w + r][c + 1] = frag[reg]
            for m in range(ROWS):
                for n in range(256):
                    O[m][n] += sum(A[m][k] * mem[mnmajor_addr(dv, n, k)] for k in range(16))
        for m in range(ROWS):
            for n in range(256):
                want = sum(S[m][j] * C[j][wg * 256 + n] for j in range(BN))
                assert O[m][n] == want, (wg, m, n)
        print(f"warpgroup {wg}: O[:, {wg * 256}:{wg * 256 + 256}] = P V matches")
    print("S = Q C^T matches; MLA wgmma layouts check")


if __name__ == "__main__":
    main()
