#!/usr/bin/env python3
"""bench_smoke.py ATTNRT_BENCH — attnrt-bench on the cpu plugin, a few ops at small shapes, --json: each
run exits 0 and reports a positive time, bytes and FLOPs; decode also reports the memory-read and
paged-read ceilings with their fractions, prefill and decode the FMA ceiling, mixed its parts, MLA
its shape's value columns and top-k. A
broken option must exit non-zero. Not a performance test: the figures are only checked for sanity."""
import json
import subprocess
import sys

BENCH = sys.argv[1]
COMMON = ["--plugin", "cpu", "--iters", "2", "--warmup", "1", "--json", "--heads", "8", "--kv-heads", "2"]


def run(*args):
    p = subprocess.run([BENCH, *COMMON, *args], capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        sys.exit(f"attnrt-bench {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return json.loads(p.stdout)


def positive(doc, *keys):
    for k in keys:
        v = doc
        for part in k.split("."):
            v = v[part]
        if not (isinstance(v, (int, float)) and v > 0):
            sys.exit(f"{doc['op']}: {k} = {v!r}, expected > 0")


dec = run("--op", "decode", "--batch", "2", "--ctx", "4096", "--dtype", "bf16", "--kv-dtype", "bf16")
positive(dec, "time_ms.median", "bytes", "flops", "gb_per_s", "mem_gb_per_s.median", "fraction_of_mem",
         "paged_read_gb_per_s.median", "fraction_of_paged_read", "fraction_of_fma")
if "paged read" not in dec["paged_read_ceiling"]:
    sys.exit(f"decode: unexpected paged_read_ceiling {dec['paged_read_ceiling']!r}")
# an odd head size: blocks that are not whole 256-byte multiples get no paged ceiling, and no crash
odd = run("--op", "decode", "--batch", "1", "--ctx", "300", "--head-dim", "72", "--block-size", "1", "--dtype", "f16",
          "--kv-dtype", "f16")
positive(odd, "time_ms.median", "gb_per_s")
if "fraction_of_paged_read" in odd:
    sys.exit("decode D 72, block 1: 144-byte blocks must not get the paged-read ceiling (its loads are aligned)")
pre = run("--op", "prefill", "--batch", "1", "--new-tokens", "64", "--ctx", "256")
positive(pre, "time_ms.median", "gflop_per_s", "fraction_of_fma")
if "fraction_of_paged_read" in pre:
    sys.exit("prefill must not report the decode-only paged-read ceiling")
mix = run("--op", "mixed", "--batch", "2", "--ctx", "512", "--new-tokens", "32", "--prefill-ctx", "128")
positive(mix, "time_ms.median", "part_decode_ms.median", "part_prefill_ms.median", "mixed_over_parts")
# MLA sparse: the JSON shape names the value columns and the top-k, so a table can tell the rows apart
mla = run("--op", "mla_decode", "--batch", "1", "--ctx", "256", "--heads", "16", "--kv-heads", "1", "--head-dim", "576",
          "--v-dim", "512", "--block-size", "64", "--topk", "128")
positive(mla, "time_ms.median", "bytes", "flops", "shape.v_dim", "shape.topk")
if (mla["shape"]["v_dim"], mla["shape"]["topk"]) != (512, 128):
    sys.exit(f"mla_decode: shape {mla['shape']!r}, expected v_dim 512 and topk 128")

bad = subprocess.run([BENCH, "--op", "no-such-op"], capture_output=True, text=True, timeout=60)
if bad.returncode == 0:
    sys.exit("attnrt-bench --op no-such-op exited 0")
print("attnrt-bench smoke: decode, odd decode, prefill, mixed and a bad option behave")
