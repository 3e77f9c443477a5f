#!/usr/bin/env python3
"""mla_summary.py OUT_DIR -- the MLA decode rows of one bench/h200/run_ops.sh call against both of the
call's ceilings: the device copy bandwidth (attnrt-bench's, interleaved with each row) and the bf16
matmul rate (bench/h200/peer_matmul.py's matmul.json, same call).

MLA decode at Hq 128 does 242 FLOP a latent byte, above this chip's ridge (matmul rate / copy rate),
so a fraction of the copy ceiling is also a demand on the tensor cores: the last column says what
fraction of the measured matmul rate the row would need to reach 80 % of the copy ceiling."""
import json
import os
import sys


def main():
    out = sys.argv[1]
    try:
        mm = json.load(open(os.path.join(out, "matmul.json"), encoding="utf-8")).get("tflops")
    except (OSError, ValueError):
        mm = None
    print("matmul ceiling (same call): %s" % ("%.0f TFLOP/s" % mm if mm else "not measured"))
    print("| MLA row | median | TFLOP/s | of copy ceiling | of matmul rate | 80 % of copy needs |")
    print("|---|---|---|---|---|---|")
    for line in open(os.path.join(out, "bench_ops.jsonl"), encoding="utf-8"):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("op") != "mla_decode":
            continue
        sh, ms = j.get("shape", {}), j.get("time_ms", {}).get("median")
        ceil = j.get("mem_gb_per_s", {}).get("median")
        if not ms or not ceil:
            continue
        tflops = j["flops"] / (ms * 1e-3) / 1e12
        need = j["flops"] / (j["bytes"] / (0.8 * ceil * 1e9)) / 1e12  # TFLOP/s at 80 % of the copy ceiling
        name = "B %d x %d, Hq %d, %s latent, block %d%s" % (
            sh.get("batch", 0), sh.get("ctx", 0), sh.get("heads", 0), sh.get("kv_dtype", "?"), sh.get("block_size", 0),
            ", sparse top-%d" % sh["topk"] if sh.get("topk") else "")
        print("| %s | %.4f ms | %.0f | %.1f %% | %s | %s |" % (
            name, ms, tflops, 100 * j.get("fraction_of_mem", 0), "%.1f %%" % (100 * tflops / mm) if mm else "-",
            "%.0f TFLOP/s = %.0f %% of matmul" % (need, 100 * need / mm) if mm else "%.0f TFLOP/s" % need))
    return 0


if __name__ == "__main__":
    sys.exit(main())
