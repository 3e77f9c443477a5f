#!/usr/bin/env python3
"""lin_summary.py FILE... — one line per attnrt-bench JSON row of the linear decode ops (and attention
decode): op, shape, queued time and % of the copy ceiling, the single call beside it. A line may be a
bare attnrt-bench JSON object or {"tag": ..., "j": {...}}."""
import json
import sys

for path in sys.argv[1:]:
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        tag, j = (d.get("tag", ""), d["j"]) if "j" in d else ("", d)
        if not str(j.get("op", "")).endswith("decode") or "mla" in j.get("op", ""):
            continue
        sh = j.get("shape", {})
        q, s = j.get("time_ms", {}).get("median", 0) * 1e3, j.get("single_call_ms", {}).get("median", 0) * 1e3
        print("%-8s %-17s B %4d x H %3d  queued %8.2f us %5.1f %%   single %8.2f us %5.1f %%   ceiling %4.0f GB/s" % (
            tag, j["op"], sh.get("batch", 0), sh.get("heads", 0), q, 100 * j.get("fraction_of_mem", 0), s,
            100 * j.get("fraction_of_mem_single_call", 0), j.get("mem_gb_per_s", {}).get("median", 0)))
