#!/usr/bin/env python3
"""model_prefill_ws_q.py -- a desk check of the warp-specialized prefill kernel's Q slots and staged epilogue
(plugins/cuda/kernels/attn_prefill_ws_sm90a.cuh, attn_prefill_sm90a.cuh's ck_pfw_store_staged, the host's encode_q_map
in cuda_attention.c) that needs no GPU.

  - Q by tensor copies: the host encodes Q [tokens][Hq][D] with boxes of 64 columns x hc heads x 128 / hc tokens and the
    128-byte swizzle; the kernel issues one box a column block at slot + cb x ROWS x 128 and reads row r, chunk c at
    swz(ROWS, r, c). Emulates the copy engine's writes (a box lands dense, 128-byte lines in box order, 16-byte chunk c of
    line L at c ^ (L & 7); elements past the tensor's tokens land as zeros) and checks that every live row r of an item
    reads Q[tok0 + r / hc][hbase + r % hc], and that the bytes the boxes write are the count the kernel expects on the
    slot's mbarrier (CB x hc x (ROWS / hc) x 128), for every group size 1 .. 128 and items at the tensor's end.
  - the epilogue: thread (warp w, lane 4 g + t4) writes columns 8 n + 2 t4, + 1 of rows 16 w + g, + 8 as one 32-bit word at
    swz(ROWS, row, n) + 4 t4; then 16-byte chunk c of a row is read whole. Checks that each chunk holds its row's 8 columns
    in order and that a warp's 32-bit stores hit 32 different banks.
  - a row's token by (row x ceil(2^16 / hc)) >> 16 (the epilogue's division-free form), for every row < 128, hc <= 128.
  - the fp8 form's widening (the producer's `widen`): fp8 rows land as the copy engine writes them (column blocks of
    min(D, 128) bytes a row, 16-byte chunk f of row r at f ^ (r & 7) with the 128-byte swizzle, f ^ ((r >> 1) & 3) with
    the 64-byte one; at D 128 / 256 in the upper half of the ring stage itself), thread t of 64 reads chunk t % FC of each
    block of rows t / FC + RS k through the kernel's base-plus-constant addresses and writes two f16 chunks a block. Checks that every fp8 chunk is read once
    and its 16 values reach the f16 chunks the consumers' descriptors read (swz) in order, and, in place, that a store
    overwrites only landed bytes of its own row, whose every chunk its warp has read in the same group before the stores.
  - shared memory and registers: the kernel's layout (Q slots, rings, mbarriers, item descriptions, counts, flags, row
    ranges) within ck_pfs_smem_bytes and the H200's 227 KB a block, and the setmaxnreg split within the launch's registers,
    read from plugins/cuda/cuda_prefill_wg_cfg.h so that a change there is checked here.
  - the `_kd` form's Q split (ck_pfs_q_to_e4m3): x = q qmul, hi = e4m3(x), lo = e4m3(x - hi) with round-to-nearest-even e4m3
    (emulated), for every bf16 significand at every exponent from the rows' largest (|x| in [2^7, 2^8)) down to 2^-20:
    hi + lo == x exactly where |x| >= 2^-2, else within 2^-10 (half e4m3's smallest subnormal), and |hi| <= 448; and its
    layout: thread wt's chunk i = wt + 128 k (row i / 8 FCB, column block (i / 8) % FCB, chunk i % 8) reads the two bf16
    chunks holding its 16 columns and writes them where ck_pfs_issue_s_e4m3's descriptors read term t's k-step kk (32
    bytes of row r at term t's column block kk / 4, logical chunks 2 (kk % 4), + 1, swizzled), every chunk once.
Run: python3 tests/cuda/model_prefill_ws_q.py (plain Python, ~1 s; also a `meson test` unit test).
"""
import math
import os
import random
import re
import sys

random.seed(5)
ROWS = 128
HERE = os.path.dirname(os.path.abspath(__file__))
CFG = os.path.join(HERE, '..', '..', 'plugins', 'cuda', 'cuda_prefill_wg_cfg.h')


def cfg_macros():
    """The #defines of cuda_prefill_wg_cfg.h as Python callables / values (the C ternaries rewritten)."""
    text = open(CFG).read()
    out = {}
    for m in re.finditer(r'^#define (CK_PFS_\w+)(\((\w)\))?\s+(.+?)\s*(/\*.*)?$', text, re.M):
        name, arg, body = m.group(1), m.group(3), m.group(4)
        py = re.sub(r'\(([^()?]+)\)\s*==\s*(\d+)\s*\?\s*(\d+)\s*:\s*(\d+)', r'(\3 if \1 == \2 else \4)', body)
        out[name] = eval('lambda %s: %s' % (arg, py)) if arg else eval(py)
    return out


def swz(rows, r, c):
    """The kernel's swz: byte offset of 16-byte chunk c of row r in a tile of `rows` rows."""
    return (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4)


def check_q_boxes(fails):
    for D in (64, 128, 256):
        cb_n = D // 64
        for hc in list(range(1, 17)) + [24, 28, 32, 48, 64, 96, 128]:
            hq, ntok_box = hc * 2, ROWS // hc
            tokens = 3 * ntok_box + 5
            q = [[[random.randrange(1, 1 << 16) for _ in range(D)] for _ in range(hq)] for _ in range(tokens)]
            for tok0, hbase in ((0, 0), (tokens - 2, hc), (ntok_box + 1, 0)):
                slot = {}  # byte offset -> 16-bit value
                written = 0
                for cb in range(cb_n):  # one box a column block
                    for t in range(ntok_box):
                        for h in range(hc):
                            line = t * hc + h
                            for x in range(64):
                                tok = tok0 + t
                                v = q[tok][hbase + h][cb * 64 + x] if tok < tokens else 0
                                chunk, within = x // 8, (x % 8) * 2
                                slot[cb * ROWS * 128 + line * 128 + ((chunk ^ (line & 7)) << 4) + within] = v
                                written += 2
                if written != cb_n * hc * (ROWS // hc) * 128:
                    fails.append('D %d hc %d: boxes write %d bytes, the kernel expects %d'
                                 % (D, hc, written, cb_n * hc * (ROWS // hc) * 128))
                nrows = min(ntok_box, tokens - tok0) * hc
                for r in range(nrows):
                    for c in range(D // 8):
                        for e in range(8):
                            got = slot.get(swz(ROWS, r, c) + 2 * e)
                            want = q[tok0 + r // hc][hbase + r % hc][c * 8 + e]
                            if got != want:
                                fails.append('D %d hc %d tok0 %d: row %d col %d reads %s, Q holds %d'
                                             % (D, hc, tok0, r, c * 8 + e, got, want))
                                break


def check_epilogue(fails):
    for D in (64, 128, 256):
        words = {}
        for w in range(8):  # consumer warps: rows 16 w .. 16 w + 15
            for n in range(D // 8):
                for rr in range(2):
                    banks = set()
                    for lane in range(32):
                        g, t4 = lane >> 2, lane & 3
                        row = 16 * w + g + 8 * rr
                        at = swz(ROWS, row, n) + 4 * t4
                        words[at] = (row, 8 * n + 2 * t4)
                        banks.add((at // 4) % 32)
                    if len(banks) != 32:
                        fails.append('D %d warp %d n %d: the staging stores hit %d banks' % (D, w, n, len(banks)))
        for row in range(ROWS):
            for c in range(D // 8):
                base = swz(ROWS, row, c)
                for k in range(4):
                    if words.get(base + 4 * k) != (row, 8 * c + 2 * k):
                        fails.append('D %d row %d chunk %d word %d holds %s' % (D, row, c, k, words.get(base + 4 * k)))


def check_division(fails):
    for hc in range(1, ROWS + 1):
        inv = (65536 + hc - 1) // hc
        for row in range(ROWS):
            if (row * inv) >> 16 != row // hc:
                fails.append('row %d hc %d: %d != %d' % (row, hc, (row * inv) >> 16, row // hc))


def check_budgets(fails, m):
    kst, vst, threads = m['CK_PFS_KST'], m['CK_PFS_VST'], m['CK_PFS_THREADS']
    launch = m['CK_PFS_LAUNCH_REGS']
    if launch * threads > 65536 or launch != (65536 // threads) // 8 * 8:
        fails.append('CK_PFS_LAUNCH_REGS %d is not what ptxas gives %d threads' % (launch, threads))
    splits = [(m['CK_PFS_PRODUCER_REGS'], m['CK_PFS_CONSUMER_REGS'])]  # the 16-bit form; the fp8 form's by head size
    splits += [(m['CK_PFS_PRODUCER_REGS_FP8'](D), m['CK_PFS_CONSUMER_REGS_FP8'](D)) for D in (64, 128, 256)]
    for prod, cons in splits:
        if prod + 2 * cons > 3 * launch or prod % 8 or cons % 8 or not 24 <= prod <= 256 or not 24 <= cons <= 256:
            fails.append('setmaxnreg %d / %d / %d outside the launch allocation of %d' % (prod, cons, cons, launch))
    desc = 112  # sizeof(ck_pf_block_t), static_assert in the kernel
    for D, fp8 in ((64, 0), (128, 0), (256, 0), (64, 1), (128, 1), (256, 1)):
        bn, qst = m['CK_PFS_BN'](D), m['CK_PFS_QST'](D)
        land = m['CK_PFS_FP8_LAND'](D) if fp8 else 0
        staging = fp8 * (D == 64)                     # fp8 at D 64: a staging slot a ring (D 128 / 256 land in the ring)
        st = kst + vst
        # the kernel's layout from its 1024-aligned base (attn_prefill_ws: sQ0, sK0, sV0, sS0, bar0, tail, ...)
        end = (qst * ROWS + st * bn) * D * 2          # Q slots, K ring, V ring
        end += staging * 2 * bn * D                   # fp8 staging slots (K, V)
        end += 8 * (2 * st + 2 * qst) + 16 * land     # mbarriers (fp8: the landing slots', K and V)
        end += 8 * qst                                # mbarriers: each slot's item published
        end += qst * desc + st * 32                   # item descriptions, key counts
        end += 4 * ((st + 1) & ~1)                    # absent flags
        end += qst * ROWS * 8                         # row ranges
        end += qst * 16                               # key splits
        end += fp8 * 32                               # fp8: the consumer warps' Q exponents
        host = (1024 + (qst * ROWS + st * bn) * D * 2 + 16 * (st + qst) + 8 * qst + desc * qst + 32 * st + 4 * ((st + 1) & ~1)
                + qst * ROWS * 8 + qst * 16 + (staging * 2 * bn * D + 16 * land + 32 if fp8 else 0))  # ck_pfs_smem_bytes
        if 1023 + end > host:
            fails.append('D %d fp8 %d: the layout needs %d bytes after alignment, the host asks %d' % (D, fp8, 1023 + end, host))
        if host > 227 * 1024:
            fails.append('D %d fp8 %d: %d bytes of shared memory exceed 227 KB a block' % (D, fp8, host))


def check_fp8_widen(fails, m):
    for D in (64, 128, 256):
        bn, inplace = m['CK_PFS_BN'](D), D >= 128
        LB = min(D, 128)                 # a landed row's bytes a column block (the maps' boxes)
        FCB, FC, CB = D // LB, LB // 16, D // 64
        RS, U = 64 // FC, 2 if FCB > 1 else 4
        land = (CB - FCB) * bn * 128 if inplace else 1 << 20  # the landing slot's base within the stage's address space
        landed = {}  # byte address -> (row, fp8 column) as the copy engine writes a tile of bn rows
        for r in range(bn):
            for b in range(D):
                x, f, sw = b // LB, (b % LB) >> 4, (r & 7) if LB == 128 else ((r >> 1) & 3)
                landed[land + x * bn * LB + r * LB + ((f ^ sw) << 4) + (b & 15)] = (r, b)
        f16 = {}      # byte address -> (row, column) the widening wrote (2 bytes a column: its low byte's address)
        reads = {}    # (row, column block, chunk) -> times read
        for t in range(64):
            r0, fc = t // FC, t % FC
            src = land + r0 * LB + ((fc ^ ((r0 & 7) if LB == 128 else ((r0 >> 1) & 3))) << 4)
            dst = [[0, 0] for _ in range(FCB)]
            for x in range(FCB):
                for e in range(2):
                    c = 16 * x + 2 * fc + e
                    dst[x][e] = (c >> 3) * bn * 128 + r0 * 128 + (((c & 7) ^ (r0 & 7)) << 4)
            for k0 in range(0, bn // RS, U):
                # the rows this thread's warp reads in the group (all before any of the group's writes)
                rows_read = {(32 * (t // 32) + tt) // FC + RS * (k0 + uu) for uu in range(U) for tt in range(0, 32, FC)}
                for u in range(U):
                    r = r0 + RS * (k0 + u)
                    for x in range(FCB):
                        at = src + x * bn * LB + (k0 + u) * RS * LB
                        vals = [landed.get(at + i) for i in range(16)]
                        if vals != [(r, LB * x + 16 * fc + i) for i in range(16)]:
                            fails.append('fp8 D %d: thread %d reads %s, not row %d block %d chunk %d' % (D, t, vals[:2], r, x, fc))
                            return
                        reads[(r, x, fc)] = reads.get((r, x, fc), 0) + 1
                        for e in range(2):
                            c, w = 16 * x + 2 * fc + e, dst[x][e] + (k0 + u) * RS * 128
                            if w != swz(bn, r, c):
                                fails.append('fp8 D %d: row %d chunk %d written at %d, read by the products at %d' % (D, r, c, w, swz(bn, r, c)))
                                return
                            for i in range(8):
                                f16[w + 2 * i] = (r, 8 * c + i)
                            if inplace:  # a store over landed bytes: its own row's only, read in this group
                                for i in range(16):
                                    hit = landed.get(w + i)
                                    if hit is not None and (hit[0] != r or hit[0] not in rows_read):
                                        fails.append("fp8 D %d: row %d's store overwrites row %d's landed bytes" % (D, r, hit[0]))
                                        return
        if sorted(reads) != [(r, x, f) for r in range(bn) for x in range(FCB) for f in range(FC)] or set(reads.values()) != {1}:
            fails.append('fp8 D %d: not every fp8 chunk read exactly once' % D)
        if sorted(f16.values()) != [(r, c) for r in range(bn) for c in range(D)]:
            fails.append('fp8 D %d: the f16 tile is not every (row, column) once' % D)


def e4m3_rne(x):
    """x rounded to the nearest e4m3 value, ties to even (finite x within e4m3's range: the kernel's satfinite never
    saturates what it converts). e4m3: 3 fraction bits, exponents -6 .. 8, subnormals in steps of 2^-9."""
    if x == 0.0:
        return 0.0
    a = abs(x)
    e = max(math.frexp(a)[1] - 1, -6)  # the binade's exponent (subnormals share -6's step)
    step = 2.0 ** (e - 3)
    q = a / step
    n = math.floor(q)
    if q - n > 0.5 or (q - n == 0.5 and n % 2 == 1):
        n += 1
    return math.copysign(n * step, x)


def check_q_split_e4m3(fails):
    # exactness: every bf16 significand (8 bits) at exponents 7 .. -20 of the scaled Q
    for e in range(7, -21, -1):
        for m in range(128, 256):
            for sign in (1.0, -1.0):
                x = sign * m * 2.0 ** (e - 7)
                hi = e4m3_rne(x)
                lo = e4m3_rne(x - hi)
                if abs(hi) > 448.0:
                    fails.append('q split: hi %r of %r saturates' % (hi, x))
                err = abs(hi + lo - x)
                if (abs(x) >= 0.25 and err != 0.0) or err > 2.0 ** -10:
                    fails.append('q split: %r -> %r + %r (error %g)' % (x, hi, lo, err))
    # layout: where the split writes term t's bytes for row r is where the S descriptors read them
    for D in (128, 256):
        FCB, NC = D // 128, 4 * (D // 128)
        written = {}
        for wt in range(128):
            for k in range(NC):
                i = wt + 128 * k
                c, x, r = i & 7, (i >> 3) % FCB, i // (8 * FCB)
                # reads: bf16 column block 2x + c / 4, chunks 2 (c % 4) + h: columns 128 x + 16 c + 8 h .. + 7
                cols = []
                for h in range(2):
                    ch = 2 * (c & 3) + h
                    cb = 2 * x + (c >> 2)
                    cols += [64 * cb + 8 * ch + j for j in range(8)]
                if cols != list(range(128 * x + 16 * c, 128 * x + 16 * c + 16)):
                    fails.append('q split D %d: chunk %d reads columns %s' % (D, i, cols[:3]))
                for t in range(2):
                    at = (t * FCB + x) * 128 * 128 + r * 128 + ((c ^ (r & 7)) << 4)  # ROWS = 128, q_wg's offset 0
                    if at in written:
                        fails.append('q split D %d: chunk %d written twice' % (D, i))
                    written[at] = (t, r, cols)
        for t in range(2):
            for r in range(64):
                for kk in range(D // 32):
                    cofs, kofs = kk >> 2, (kk & 3) * 32
                    for h in range(2):  # the 32 bytes a k-step reads: logical chunks kofs / 16 + h of the row
                        lc = kofs // 16 + h
                        at = (t * FCB + cofs) * 128 * 128 + r * 128 + ((lc ^ (r & 7)) << 4)
                        want = list(range(32 * kk + 16 * h, 32 * kk + 16 * h + 16))
                        if written.get(at) != (t, r, want):
                            fails.append('q split D %d: term %d row %d k-step %d reads %s' % (D, t, r, kk, written.get(at)))


def main():
    fails = []
    m = cfg_macros()
    for name in ('CK_PFS_KST', 'CK_PFS_VST', 'CK_PFS_BN', 'CK_PFS_QST', 'CK_PFS_FP8_LAND', 'CK_PFS_THREADS', 'CK_PFS_LAUNCH_REGS',
                 'CK_PFS_PRODUCER_REGS', 'CK_PFS_CONSUMER_REGS'):
        if name not in m:
            fails.append('%s not found in %s' % (name, CFG))
    if not fails:
        check_budgets(fails, m)
        check_fp8_widen(fails, m)
    check_q_boxes(fails)
    check_q_split_e4m3(fails)
    check_epilogue(fails)
    check_division(fails)
    for f in fails[:20]:
        print('FAIL', f)
    print('%d failures' % len(fails) if fails else
          'ok: Q boxes, the e4m3 Q split, staged epilogue, division, fp8 widening, shared memory and registers')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
