#!/usr/bin/env python3
"""timeline.py — reads the decode kernels' timeline lines (plugins/cuda/kernels/attn_decode_timeline.cuh:
`TL <block> 0 <SM> <start> <end> <first data> <half> <loop end> [<request> <loop start> <last warp's first data>
<last warp's loop end> [<item in> <request in> <first block id in> <Q in>]]`, ns on the global timer) from
attnrt-bench's output and prints, for each launch, where its blocks spend their time (p10 / median / p90 in us) and
which blocks wait longest for their first data (a mark a kernel does not reach, e.g. Q in the wide-group kernels, is 0).

    ATTNRT_CUDA_FATBIN_DIR=<dir with the timeline decode fatbin> attnrt-bench --plugin cuda --op decode ... \
        --iters 3 --warmup 1 > tl.txt
    python3 bench/h200/timeline.py tl.txt

The first launch in a file is the warm-up (cold caches, first use of the module): read the later ones.
"""
import collections
import statistics
import sys

LATE_US = 6.0  # a block is late if its first data comes this much after the median block's


def launches(path):
    """The TL rows of a file, grouped by launch: a new launch starts 20 us after the last start, once every
    block before it has ended."""
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("TL "):
                fields = [int(x) for x in line.split()[1:]]
                r = dict(blk=fields[0], sm=fields[2], start=fields[3], end=fields[4], first=fields[5], half=fields[6],
                         loop_end=fields[7])
                if len(fields) >= 12:
                    r.update(request=fields[8], loop_start=fields[9], first_last=fields[10], loop_end_last=fields[11])
                if len(fields) >= 16:
                    r.update(item_in=fields[12], request_in=fields[13], table_in=fields[14], q_in=fields[15])
                rows.append(r)
    rows.sort(key=lambda r: r["start"])
    out, cur, cur_end = [], [], 0
    for r in rows:
        if cur and r["start"] - cur[-1]["start"] > 20000 and r["start"] > cur_end:
            out.append(cur)
            cur, cur_end = [], 0
        cur.append(r)
        cur_end = max(cur_end, r["end"])
    if cur:
        out.append(cur)
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def q(xs):
    return "%.1f / %.1f / %.1f" % (pct(xs, 0.1), statistics.median(xs), pct(xs, 0.9))


def report(name, i, run):
    t0 = min(r["start"] for r in run)
    us = lambda ns: ns / 1e3
    span = us(max(r["end"] for r in run) - t0)
    per_sm = collections.Counter(r["sm"] for r in run)
    print("%s launch %d: %d blocks on %d SMs (%d-%d a SM), span %.1f us" %
          (name, i, len(run), len(per_sm), min(per_sm.values()), max(per_sm.values()), span))
    waves = [("first wave", [r for r in run if us(r["start"] - t0) < 5.0]),
             ("later starts", [r for r in run if us(r["start"] - t0) >= 5.0])]
    for label, rs in waves:
        if not rs:
            continue
        print("  %-12s %4d: start %s | to first data %s | first half %s | second half %s | after the loop %s | end %s" % (
            label, len(rs), q([us(r["start"] - t0) for r in rs]), q([us(r["first"] - r["start"]) for r in rs]),
            q([us(r["half"] - r["first"]) for r in rs]), q([us(r["loop_end"] - r["half"]) for r in rs]),
            q([us(r["end"] - r["loop_end"]) for r in rs]), q([us(r["end"] - t0) for r in rs])))
        if "request" in rs[0]:
            print("  %-12s       warp 0: request read %s | loop start %s | first data %s | loop end %s; "
                  "the last warp: first data %s | loop end %s (from the block's start)" % (
                      "", q([us(r["request"] - r["start"]) for r in rs]), q([us(r["loop_start"] - r["start"]) for r in rs]),
                      q([us(r["first"] - r["start"]) for r in rs]), q([us(r["loop_end"] - r["start"]) for r in rs]),
                      q([us(r["first_last"] - r["start"]) for r in rs]), q([us(r["loop_end_last"] - r["start"]) for r in rs])))
        if "item_in" in rs[0]:
            print("  %-12s       warp 0's loads in: item %s | request %s | first block id %s | Q %s" % (
                "", q([us(r["item_in"] - r["start"]) for r in rs]), q([us(r["request_in"] - r["start"]) for r in rs]),
                q([us(r["table_in"] - r["start"]) for r in rs]), q([us(r["q_in"] - r["start"]) for r in rs])))
    first = waves[0][1]
    med = statistics.median(us(r["first"] - r["start"]) for r in first)
    late = [r for r in first if us(r["first"] - r["start"]) > med + LATE_US]
    if late:
        sms = sorted(set(r["sm"] for r in late))
        print("  late first data: %d blocks on %d SMs (%s), first data at %.1f-%.1f us against the others' %.1f-%.1f; "
              "they end at %s against %s" % (
                  len(late), len(sms), " ".join(str(s) for s in sms), us(min(r["first"] for r in late) - t0),
                  us(max(r["first"] for r in late) - t0),
                  us(min(r["first"] for r in first if r not in late) - t0),
                  us(max(r["first"] for r in first if r not in late) - t0),
                  q([us(r["end"] - t0) for r in late]), q([us(r["end"] - t0) for r in first if r not in late])))
        if "item_in" in late[0]:
            keys = ("item_in", "request_in", "table_in", "q_in", "loop_start", "first")
            print("  late blocks' chain (us from the launch: item, request, first block id, Q, loop start, first data): "
                  "%s against the others' %s" % (
                      " ".join("%.1f" % statistics.median(us(r[k] - t0) for r in late) for k in keys),
                      " ".join("%.1f" % statistics.median(us(r[k] - t0) for r in first if r not in late) for k in keys)))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    for path in sys.argv[1:]:
        for i, run in enumerate(launches(path)):
            report(path, i, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
