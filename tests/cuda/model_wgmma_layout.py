#!/usr/bin/env python3
"""model_wgmma_layout.py -- a desk check of plugins/cuda/kernels/attn_prefill_sm90a.cuh that needs no GPU.

Emulates the wgmma prefill kernel's shared memory and matrix work for one K/V tile, element by element:
  - the stores: Q by (row, chunk) and K / V by the copy threads' (chunk, first row + i x RPP) mapping,
    at the kernel's swizzled offsets (64-element column blocks of 128-byte rows, chunk c ^ (r & 7));
  - wgmma's reads through the kernel's descriptors (start address, leading / stride byte offsets), by the
    PTX ISA's canonical layouts with the 128-byte swizzle (byte-address bits 4-6 XOR bits 7-9):
        K-major:  ((8, m), (T, 2k)) : ((8T, SBO), (1, T))       T = 8 sixteen-bit elements
        MN-major: ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO))
  - the accumulator fragment layout of m64nNk16 (warp w: rows 16 w + g and + 8, column 8 n + 2 t4 + e
    in register 4 n + 2 r + e) and its reuse as the A fragments of P (register (n & 1) x 2 + r of k-step
    n / 2, as the kernel packs them).
Checks S = Q K^T for both warpgroups and O = P V (P = S, no softmax: only the layouts are checked)
against plain products, at D 64 / 128 / 256 with the kernel's tile sizes.
Run: python3 tests/cuda/model_wgmma_layout.py (plain Python, a few seconds). Keep the formulas in step
with the kernel when it changes.
"""
import random
random.seed(3)

ROWS, NT = 128, 256


def bn_of(d):
    """CK_PFW_BN (plugins/cuda/cuda_prefill_wg_cfg.h)."""
    return 128 if d == 64 else 64


def swz(rows, r, c):
    """The kernel's swz: byte offset of 16-byte chunk c of row r in a tile of `rows` rows."""
    return (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4)


def swizzle128(addr):
    return addr ^ (((addr >> 7) & 7) << 4)


def desc(start, lbo, sbo):
    """The kernel's ck_wg_desc fields (16-byte units, 14 bits each)."""
    return ((start & 0x3FFFF) >> 4, (lbo >> 4) & 0x3FFF, (sbo >> 4) & 0x3FFF)


def kmajor_addr(dsc, mn, k):
    """Byte address of element (mn, k) of a K-major operand (16-bit elements), 128-byte swizzle."""
    start, _lbo, sbo = dsc
    i0, i1 = mn % 8, mn // 8
    j0, j1 = k % 8, k // 8
    assert j1 < 2
    off = 2 * (i0 * 64 + j0 + j1 * 8) + i1 * (sbo << 4)
    return swizzle128((start << 4) + off)


def mnmajor_addr(dsc, mn, k):
    """Byte address of element (mn, k) of an MN-major operand (16-bit elements), 128-byte swizzle."""
    start, lbo, sbo = dsc
    n0, n1, n2 = mn % 8, (mn // 8) % 8, mn // 64
    k0, k1 = k % 8, k // 8
    off = 2 * (n0 + n1 * 8 + k0 * 64) + n2 * (lbo << 4) + k1 * (sbo << 4)
    return swizzle128((start << 4) + off)


def check(d):
    bn = bn_of(d)
    cpr, rpp = d // 8, NT // (d // 8)
    base = 1024 * 5  # any 1024-aligned start
    q_bytes, kv_bytes = ROWS * d * 2, bn * d * 2
    sQ, sK, sV = base, base + q_bytes, base + q_bytes + 2 * kv_bytes
    st = 1  # the second stage, to exercise its offset
    mem = {}
    Q = [[random.randint(-4, 4) for _ in range(d)] for _ in range(ROWS)]
    K = [[random.randint(-4, 4) for _ in range(d)] for _ in range(bn)]
    V = [[random.randint(-4, 4) for _ in range(d)] for _ in range(bn)]
    for r in range(ROWS):  # the Q loop: (row, chunk) -> sQ0 + swz(ROWS, r, c)
        for c in range(cpr):
            for e in range(8):
                mem[sQ + swz(ROWS, r, c) + 2 * e] = Q[r][8 * c + e]
    for tid in range(NT):  # the copy threads: chunk tid % CPR of rows tid / CPR + i x RPP
        cp_c, cp_r0 = tid % cpr, tid // cpr
        cp_dst = swz(bn, cp_r0, cp_c)
        for i in range(bn // rpp):
            row = cp_r0 + i * rpp
            for e in range(8):
                mem[sK + st * kv_bytes + cp_dst + i * rpp * 128 + 2 * e] = K[row][8 * cp_c + e]
                mem[sV + st * kv_bytes + cp_dst + i * rpp * 128 + 2 * e] = V[row][8 * cp_c + e]
    assert len(mem) == ROWS * d + 2 * bn * d, "every element stored once, no overlap"
    kb, vb = sK + st * kv_bytes, sV + st * kv_bytes
    for wg in range(2):
        q_wg = sQ + wg * 64 * 128
        # S = Q K^T: D / 16 k-steps
        S = [[0] * bn for _ in range(64)]
        for kk in range(d // 16):
            cofs, kofs = kk >> 2, (kk & 3) * 32
            da = desc(q_wg + cofs * ROWS * 128 + kofs, 16, 1024)
            db = desc(kb + cofs * bn * 128 + kofs, 16, 1024)
            for mrow in range(64):
                for n in range(bn):
                    S[mrow][n] += sum(mem[kmajor_addr(da, mrow, k)] * mem[kmajor_addr(db, n, k)] for k in range(16))
        for mrow in range(64):
            for n in range(bn):
                want = sum(Q[64 * wg + mrow][k] * K[n][k] for k in range(d))
                assert S[mrow][n] == want, (d, wg, mrow, n, S[mrow][n], want)
        # accumulator registers per thread, then P's A fragments
        regs = {}
        for w in range(4):
            for lane in range(32):
                g, t4 = lane >> 2, lane & 3
                x = [None] * (bn // 2)
                for n in range(bn // 8):
                    for r in range(2):
                        for e in range(2):
                            x[4 * n + 2 * r + e] = S[16 * w + g + 8 * r][8 * n + 2 * t4 + e]
                pa = [[None] * 4 for _ in range(bn // 16)]
                for r in range(2):
                    for n in range(bn // 8):
                        pa[n >> 1][(n & 1) * 2 + r] = (x[4 * n + 2 * r], x[4 * n + 2 * r + 1])
                regs[(w, lane)] = pa
        # O = P V: A fragment (m16n8k16 layout a warp) of k-step k2, B MN-major
        O = [[0] * d for _ in range(64)]
        for k2 in range(bn // 16):
            dv = desc(vb + k2 * 2048, bn * 128, 1024)
            A = [[None] * 16 for _ in range(64)]
            for w in range(4):
                for lane in range(32):
                    g, t4 = lane >> 2, lane & 3
                    for reg, (r, c) in enumerate([(g, 2 * t4), (g + 8, 2 * t4), (g, 2 * t4 + 8), (g + 8, 2 * t4 + 8)]):
                        A[16 * w + r][c], A[16 * w + r][c + 1] = regs[(w, lane)][k2][reg]
            for mrow in range(64):
                for n in range(d):
                    O[mrow][n] += sum(A[mrow][k] * mem[mnmajor_addr(dv, n, k)] for k in range(16))
        for mrow in range(64):
            for n in range(d):
                want = sum(S[mrow][j] * V[j][n] for j in range(bn))
                assert O[mrow][n] == want, (d, wg, mrow, n)
    print(f"D {d}: BN {bn}, S = Q K^T and O = P V match for both warpgroups")


if __name__ == "__main__":
    for d in (64, 128, 256):
        check(d)
    print("all layouts check")
