#!/usr/bin/env python3
"""table.py OUT_DIR -- the markdown table of one bench/h200/run.sh call, on stdout.

Reads OUT_DIR/shapes.txt (one shape a line: id op batch ctx new_tokens heads kv_heads head_dim
block_size kv_dtype peer), OUT_DIR/bench/<id>.json (attnrt-bench --json or attn_timing --json),
OUT_DIR/peer.jsonl (peer_sdpa.py: calls back to back, and queued behind a copy as attnrt's runs are)
and OUT_DIR/matmul.json (peer_matmul.py). Counts the KV bytes and
FLOPs itself from the shape, the same way for attnrt and the peer, so the columns compare like with like:
  KV bytes = B * ctx * Hkv * 2 * D * bytes(kv dtype)   (each K and V byte read once)
  FLOPs    = 2 * Hq * 2D per kept (query, key) pair      (causal prefill: S(S+1)/2 pairs a request)
"""
import json
import os
import sys

KV_SIZE = {"bf16": 2, "f16": 2, "f32": 4, "fp8_e4m3": 1, "fp8_e5m2": 1}


def load_json(path):
    try:
        text = open(path, encoding="utf-8").read()
        return json.loads(text[text.index("{"): text.rindex("}") + 1])
    except (OSError, ValueError):
        return None


def main():
    out = sys.argv[1]
    shapes = []
    for line in open(os.path.join(out, "shapes.txt"), encoding="utf-8"):
        f = line.split()
        if len(f) not in (11, 12) or f[0].startswith("#"):
            continue
        sid, op = f[0], f[1]
        b, ctx, new, hq, hkv, d, bs = (int(x) for x in f[2:9])
        opts = f[11].replace(",", " ") if len(f) == 12 and f[11] != "-" else ""
        shapes.append(dict(id=sid, op=op, b=b, ctx=ctx, new=new, hq=hq, hkv=hkv, d=d, bs=bs, kv=f[9], peer=f[10] == "1",
                           opts=opts))
    peer = {}
    try:
        for line in open(os.path.join(out, "peer.jsonl"), encoding="utf-8"):
            r = json.loads(line)
            peer[(r["id"], r["backend"])] = r
    except OSError:
        pass

    try:  # the bf16 matmul rate of the same call (peer_matmul.py): the prefill rows' ceiling
        matmul = json.load(open(os.path.join(out, "matmul.json"), encoding="utf-8")).get("tflops")
    except (OSError, ValueError):
        matmul = None
    ceiling = None
    rows = []
    results = {}
    for s in shapes:
        r = load_json(os.path.join(out, "bench", s["id"] + ".json"))
        lq = 1 if s["op"] == "decode" else s["new"]
        kv_bytes = s["b"] * s["ctx"] * s["hkv"] * 2 * s["d"] * KV_SIZE.get(s["kv"], 2)
        pairs = sum(s["ctx"] - lq + i + 1 for i in range(lq)) if s["op"] == "prefill" else lq * s["ctx"]
        flops = 2.0 * s["hq"] * 2 * s["d"] * pairs * s["b"]
        ms = r["time_ms"]["median"] if r and "time_ms" in r else None
        if r and isinstance(r.get("mem_gb_per_s"), dict) and ceiling is None:
            ceiling = r["mem_gb_per_s"].get("median")
        results[s["id"]] = ms
        rows.append((s, ms, kv_bytes, flops))

    def rate(s, ms, kv_bytes, flops):
        if not ms:
            return "-"
        if s["op"] == "decode":
            return "%.2f TB/s" % (kv_bytes / (ms * 1e-3) / 1e12)
        return "%.0f TFLOP/s" % (flops / (ms * 1e-3) / 1e12)

    print("| shape | attnrt cuda | rate | of ceiling (decode: copy, prefill: matmul) | torch flash | rate | torch cuDNN | rate |")
    print("|---|---|---|---|---|---|---|---|")
    for s, ms, kv_bytes, flops in rows:
        name = "%s B%d ctx%d%s Hq%d/Hkv%d D%d bs%d kv %s" % (
            s["op"], s["b"], s["ctx"], (" S%d" % s["new"]) if s["op"] == "prefill" else "", s["hq"], s["hkv"],
            s["d"], s["bs"], s["kv"]) + ((" (%s)" % s["opts"]) if s["opts"] else "")
        frac = "-"
        if ms and ceiling and s["op"] == "decode":
            frac = "%.0f%%" % (100.0 * kv_bytes / (ms * 1e-3) / (ceiling * 1e9))
        elif ms and matmul and s["op"] == "prefill":
            frac = "%.0f%%" % (100.0 * flops / (ms * 1e-3) / (matmul * 1e12))
        cells = [name, "%.3f ms" % ms if ms else "failed", rate(s, ms, kv_bytes, flops), frac]
        for backend in ("flash", "cudnn"):
            p = peer.get((s["id"], backend)) if s["peer"] else None
            if not p:
                cells += ["-", "-"]
            elif "ms" not in p:
                cells += ["error", p.get("error", "")[:60]]
            else:
                note = " (KV expanded)" if "expanded" in p.get("note", "") else ""
                ms_cell, rate_cell = "%.3f ms%s" % (p["ms"], note), rate(s, p["ms"], kv_bytes, flops)
                if p.get("ms_queued"):  # behind the same 128 MiB copy as attnrt's queued runs
                    ms_cell += "; queued %.3f" % p["ms_queued"]
                    rate_cell += "; queued %s" % rate(s, p["ms_queued"], kv_bytes, flops)
                cells += [ms_cell, rate_cell]
        print("| " + " | ".join(cells) + " |")
    print()
    if ceiling:
        print("Copy ceiling (device-to-device copy, bytes read + written, same run): %.0f GB/s." % ceiling)
    if matmul:
        print("Matmul ceiling (PyTorch bf16 matmul 8192^3 on cuBLAS, random data, same run): %.0f TFLOP/s." % matmul)
    # the derived figures
    bsz = [results.get("dec_bs%d" % b) for b in (1, 16, 64, 256)]
    if all(bsz):
        print("Block sizes 1/16/64/256 (B64 ctx4096): slowest / fastest = %.2f (target <= 1.15)." % (max(bsz) / min(bsz)))
    for tag in ("b64_c4096", "b256_c2048", "b16_c32768"):
        bf, f8 = results.get("dec_" + tag), results.get("dec_" + tag + "_fp8")
        bfs, f8s = results.get("dec_" + tag + "_s"), results.get("dec_" + tag + "_fp8_s")
        if bf and f8:
            line = "FP8 e4m3 vs bf16 KV, %s: %.2fx the tokens/s" % (tag, bf / f8)
            if bfs and f8s:
                line += " (%.2fx timed on a stream)" % (bfs / f8s)
            print(line + " (target >= 1.8x).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
