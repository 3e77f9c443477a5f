#!/usr/bin/env python3
"""gen_wgmma_sm90a.py -- writes wgmma_sm90a.cuh, the inline-PTX wrappers of the Hopper warpgroup MMA
(wgmma.mma_async, sm_90a) that the wgmma prefill kernel (attn_prefill_sm90a.cuh) uses.

Each wrapper names every f32 accumulator register of the m64nNk16 shape as its own asm operand (N / 2
of them a thread), which is too long to write by hand without mistakes; hence this script, which writes
each operand list once (a macro) and each wrapper through one of two body macros. Run it after
changing the shapes below and commit its output: `python3 gen_wgmma_sm90a.py > wgmma_sm90a.cuh`;
`gen_wgmma_sm90a.py --check wgmma_sm90a.cuh` (meson test `wgmma-header-current`) fails when they differ.

  ck_wg_ss<T, N>(d, desc_a, desc_b, acc): D (+)= A B, A and B from shared memory (descriptors), B
      K-major (no transpose): S = Q K^T with K stored one key a row.
  ck_wg_rs<T, N>(d, a, desc_b): D += A B, A from registers (four 32-bit registers of two 16-bit
      values, the m16n8k16 A layout per warp), B from shared memory MN-major (imm-trans-b 1): O += P V
      with V stored one key a row.
  ck_wg_ss_e4m3<B_E4M3, N>(d, desc_a, desc_b, acc): m64nNk32, A e4m3 and B e4m3 (B_E4M3) or e5m2, both
      from shared memory K-major (fp8 operands have no transpose): S = Q K^T on an fp8 cache's raw key
      rows, Q in e4m3 terms (attn_prefill_ws_sm90a.cuh).
"""
import sys

SS_N = (64, 128, 192)   # keys a tile (S = Q K^T; 192: D 64's long-item form)
RS_N = (64, 128, 256)   # head dims (O += P V)
TYPES = (("__half", "f16"), ("__nv_bfloat16", "bf16"))
SS8_N = (64, 128)       # keys a tile (S = Q K^T over an fp8 cache)
B8_TYPES = (("true", "e4m3"), ("false", "e5m2"))


def regs(first, count):
    return ", ".join(f"%{first + i}" for i in range(count))


def outs(count):
    return ", ".join(f'"+f"(d[{i}])' for i in range(count))


def macro(head, body):
    """A multi-line #define: its lines padded to one width, each but the last ending in a backslash."""
    lines = [head] + body
    width = max(len(line) for line in lines) + 1
    return "\n".join(line.ljust(width) + "\\" for line in lines[:-1]) + "\n" + lines[-1]


def asm_body(operands, ins):
    """The wrapper's body: one wgmma with the predicate set from the last input."""
    return ["    {",
            '        asm volatile("{\\n"',
            '                     ".reg .pred p;\\n"',
            '                     "setp.ne.b32 p, %" #PACC ", 0;\\n"',
            f'                     "wgmma.mma_async.sync.aligned.m64n" #N SHAPE " {{" CK_WG_R##ND "}}, {operands}, p, " IMMS ";\\n"',
            '                     "}\\n"',
            "                     : CK_WG_O##ND",
            f"                     : {ins});",
            "    }"]


# Every wrapper is one of two bodies (CK_WG_SS_DEF: A and B from shared memory; CK_WG_RS_DEF: A from registers), its
# operand lists macros of their own (CK_WG_R<nd>: the accumulator registers, CK_WG_O<nd>: the asm outputs), and the
# wrappers are instantiated by pairs of types, so that the header holds each long line once.
def bodies():
    ss = macro("#define CK_WG_SS_DEF(NAME, TARGS, N, ND, SHAPE, IMMS, PA, PB, PACC)",
               ["    template <> __device__ __forceinline__ void NAME<TARGS, N>(float (&d)[ND], uint64_t da, uint64_t db, int acc)"]
               + asm_body('%" #PA ", %" #PB "', '"l"(da), "l"(db), "r"(acc)'))
    rs = macro("#define CK_WG_RS_DEF(TARGS, N, ND, SHAPE, IMMS, PA, PB, PACC)",
               ["    template <> __device__ __forceinline__ void ck_wg_rs<TARGS, N>(float (&d)[ND], const uint32_t a[4], uint64_t db)"]
               + asm_body('{" PA "}, %" #PB "', '"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1)'))
    pairs = []
    for kind, name, targs, shapes, imms in (
            ("SS", "ck_wg_ss", [c for c, _ in TYPES], [f"k16.f32.{p}.{p}" for _, p in TYPES], "1, 1, 0, 0"),
            ("RS", None, [c for c, _ in TYPES], [f"k16.f32.{p}.{p}" for _, p in TYPES], "1, 1, 1"),
            ("SS8", "ck_wg_ss_e4m3", [f for f, _ in B8_TYPES], [f"k32.f32.e4m3.{b}" for _, b in B8_TYPES], "1, 1")):
        body = "SS" if kind != "RS" else "RS"
        calls = [f"CK_WG_{body}_DEF({name + ', ' if name else ''}{t}, N, ND, \"{sh}\", \"{imms}\", PA, PB, PACC)"
                 for t, sh in zip(targs, shapes)]
        pairs.append(macro(f"#define CK_WG_{kind}_PAIR(N, ND, PA, PB, PACC)", ["    " + c for c in calls]))
    return ("/* the bodies: D (+)= A B, A and B from shared memory (descriptors; IMMS: the scale and transpose immediates) or\n"
            " * A from registers (the m16n8k16 A layout per warp) and B MN-major; ND accumulators a thread, operand numbers PA,\n"
            " * PB, PACC after them; then each for both types (16-bit A and B; fp8: B e4m3 or e5m2) */\n"
            + "\n".join([ss, rs] + pairs) + "\n")


def ss(n):
    nd = n // 2
    return f"CK_WG_SS_PAIR({n}, {nd}, {nd}, {nd + 1}, {nd + 2})"


def ss8(n):
    nd = n // 2
    return f"CK_WG_SS8_PAIR({n}, {nd}, {nd}, {nd + 1}, {nd + 2})"


def rs(n):
    nd = n // 2
    return f'CK_WG_RS_PAIR({n}, {nd}, "{regs(nd, 4)}", {nd + 4}, {nd + 5})'


def main() -> int:
    out = [
        "/* wgmma_sm90a.cuh — generated by gen_wgmma_sm90a.py (see there); do not edit. Hopper warpgroup MMA",
        " * wrappers (sm_90a only): m64nNk16 with 16-bit A and B, m64nNk32 with fp8 A and B; f32 accumulators. */",
        "#ifndef ATTNRT_WGMMA_SM90A_CUH",
        "#define ATTNRT_WGMMA_SM90A_CUH",
        "",
        "#include <cuda_bf16.h>",
        "#include <cuda_fp16.h>",
        "#include <stdint.h>",
        "",
        "template <typename T, int N> __device__ __forceinline__ void ck_wg_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int acc);",
        "template <typename T, int N> __device__ __forceinline__ void ck_wg_rs(float (&d)[N / 2], const uint32_t a[4], uint64_t db);",
        "template <bool B_E4M3, int N>",
        "__device__ __forceinline__ void ck_wg_ss_e4m3(float (&d)[N / 2], uint64_t da, uint64_t db, int acc);",
        "",
    ]
    counts = sorted({n // 2 for n in SS_N + RS_N + SS8_N})
    out.append("/* the operand lists: CK_WG_R<nd> the accumulator registers %0 .., CK_WG_O<nd> the asm outputs */")
    for nd in counts:
        out.append(f'#define CK_WG_R{nd} "{regs(0, nd)}"')
        out.append(f"#define CK_WG_O{nd} {outs(nd)}")
    out.append("")
    out.append(bodies())
    out += [ss(n) for n in SS_N] + [rs(n) for n in RS_N] + [ss8(n) for n in SS8_N]
    out.append("")
    out.append("#endif /* ATTNRT_WGMMA_SM90A_CUH */")
    text = "\n".join(out) + "\n"
    if len(sys.argv) == 3 and sys.argv[1] == "--check":  # the build's test: is the committed header current?
        with open(sys.argv[2], encoding="utf-8") as f:
            if f.read() != text:
                print(f"{sys.argv[2]} differs from what gen_wgmma_sm90a.py writes: regenerate it", file=sys.stderr)
                return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
