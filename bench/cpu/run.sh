#!/usr/bin/env bash
# bench/cpu/run.sh — the cpu plugin's performance figures on this machine, in one call:
# every figure's attnrt-bench command (and long_prefill for the 64K prefill), each started only once the
# machine has been >= IDLE_PCT % idle over 2 s (/proc/stat), then one markdown table on stdout:
#   | figure | command | result | fraction | target | met? |
# and the raw JSON of each run under $OUT (default ./out-cpu-bench).
#
#   meson setup build --buildtype=release && ninja -C build && bash bench/cpu/run.sh
#   BUILD=/tmp/b7 THREADS=2 IDLE_PCT=90 WAIT_MAX=900 bash bench/cpu/run.sh
#
# Fractions are against the ceilings attnrt-bench measures in the same run (memory read bandwidth, fp32
# FMA peak, and for decode the paged read of the op's own blocks, all sampled between the op's timed
# runs): median, and in brackets the ceiling's p90.
# Exit status: 0 when every target is met, 1 otherwise (2: the build is missing or not a release build).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
THREADS=${THREADS:-2}
IDLE_PCT=${IDLE_PCT:-90}
WAIT_MAX=${WAIT_MAX:-900}  # seconds to wait for an idle machine before each figure; then it runs anyway, marked
OUT=${OUT:-$ROOT/out-cpu-bench}
BENCH=$BUILD/tools/attnrt-bench
LONG=$BUILD/examples/long_prefill
mkdir -p "$OUT"

if [ ! -x "$BENCH" ] || [ ! -x "$LONG" ]; then
    echo "run.sh: $BENCH or $LONG is missing: meson setup $BUILD --buildtype=release && ninja -C $BUILD" >&2
    exit 2
fi
buildtype=$(meson introspect "$BUILD" --buildoptions 2>/dev/null |
            python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"))' 2>/dev/null)
if [ "$buildtype" != "release" ]; then
    echo "run.sh: $BUILD is a '$buildtype' build; the figures are taken with --buildtype=release" >&2
    exit 2
fi

# Percent of the CPU time idle over the next 2 s, from /proc/stat (idle + iowait over all).
idle_pct() {
    local a b
    read -r -a a < <(grep '^cpu ' /proc/stat)
    sleep 2
    read -r -a b < <(grep '^cpu ' /proc/stat)
    local tot=0 idle i
    for i in 1 2 3 4 5 6 7 8; do tot=$((tot + b[i] - a[i])); done
    idle=$((b[4] - a[4] + b[5] - a[5]))
    echo $((tot > 0 ? 100 * idle / tot : 0))
}

# Waits until idle_pct >= IDLE_PCT (at most WAIT_MAX s); sets START_NOTE to what was seen.
wait_idle() {
    local t0 p
    t0=$(date +%s)
    while :; do
        p=$(idle_pct)
        if [ "$p" -ge "$IDLE_PCT" ]; then
            START_NOTE="idle ${p}%, load $(cut -d' ' -f1 /proc/loadavg)"
            return
        fi
        if [ $(($(date +%s) - t0)) -ge "$WAIT_MAX" ]; then
            START_NOTE="BUSY: idle ${p}% after ${WAIT_MAX} s, load $(cut -d' ' -f1 /proc/loadavg)"
            return
        fi
    done
}

rows=()
all_met=1
row() { # figure command result fraction target met
    rows+=("| $1 | \`$2\` | $3 | $4 | $5 | $6 |")
    [ "$6" = "yes" ] || all_met=0
}

# Runs one attnrt-bench figure; $1 name, $2 file tag, rest the bench arguments. Leaves the JSON in $OUT/$2.json.
bench() {
    local name=$1 tag=$2
    shift 2
    wait_idle
    echo "[$(date -u +%H:%M:%S)] $name ($START_NOTE): attnrt-bench $*" >&2
    if ! "$BENCH" --threads "$THREADS" "$@" --json > "$OUT/$tag.json" 2> "$OUT/$tag.err"; then
        echo "run.sh: attnrt-bench $* failed: $(cat "$OUT/$tag.err")" >&2
        return 1
    fi
    python3 - "$OUT/$tag.json" "$START_NOTE" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
j["start"] = sys.argv[2]
json.dump(j, open(sys.argv[1], "w"), indent=1)
EOF
}

# A field of a bench JSON, by a Python expression over j.
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$OUT/$1.json"; }

CMD="attnrt-bench --threads $THREADS"

# One table row from one attnrt-bench run: $1 figure, $2 JSON tag, $3 target, $4 result and $5 fraction
# (Python expressions over the JSON j), $6 the target's test (a Python bool over j), then the arguments.
figure() {
    local name=$1 tag=$2 target=$3 res=$4 frac=$5 test=$6
    shift 6
    if bench "$name" "$tag" "$@"; then
        row "$name" "$CMD $*" "$(field "$tag" "$res")" "$(field "$tag" "$frac")" "$target" \
            "$(field "$tag" "'yes' if $test else 'no'")"
    else
        row "$name" "$CMD $*" "failed" "-" "$target" "no"
    fi
}

# ---- decode at memory speed: >= 90 % of the memory-read ceiling ---------------------------------
# Block 16 (vLLM's default) and 256: scattered blocks of a few KiB read slower than a long stream even
# with plain loads, so each row also gives the fraction of the paged-read ceiling (the op's own blocks,
# read in its order with the same loads and threads, measured in the same run).
for kv in f16 bf16; do
    for bs in 16 256; do
        for b in 1 8; do
            figure "decode $kv KV, ctx 32768, B $b, block $bs" "decode-$kv-bs$bs-b$b" ">= 90% of read BW" \
                '"%.3f ms, %.1f GB/s (%s)" % (j["time_ms"]["median"], j["gb_per_s"], j["start"])' \
                '"%.1f%% (%.1f%%) of %.1f GB/s; paged read: %.1f%% of %.1f GB/s" % (100*j["fraction_of_mem"], 100*j["fraction_of_mem_p90"], j["mem_gb_per_s"]["median"], 100*j.get("fraction_of_paged_read", 0), j.get("paged_read_gb_per_s", {}).get("median", 0))' \
                'j["fraction_of_mem"] >= 0.90' \
                --op decode --dtype $kv --kv-dtype $kv --batch $b --ctx 32768 --block-size $bs
        done
    done
done

# ---- prefill near the FMA peak: >= 65 %, and bf16 KV not slower than f32 ------------------------
for kv in f32 bf16; do
    figure "prefill 512 over 4096 keys, $kv KV" "prefill-$kv" ">= 65% of FMA peak" \
        '"%.2f ms, %.1f GFLOP/s (%s)" % (j["time_ms"]["median"], j["gflop_per_s"], j["start"])' \
        '"%.1f%% (%.1f%%) of %.1f GFLOP/s" % (100*j["fraction_of_fma"], 100*j["fraction_of_fma_p90"], j["fma_gflop_per_s"]["median"])' \
        'j["fraction_of_fma"] >= 0.65' \
        --op prefill --dtype $kv --kv-dtype $kv --batch 1 --new-tokens 512 --ctx 4096
done
if [ -f "$OUT/prefill-f32.json" ] && [ -f "$OUT/prefill-bf16.json" ]; then
    ratio=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); print("%.3f" % (b["time_ms"]["median"]/a["time_ms"]["median"]))' \
            "$OUT/prefill-f32.json" "$OUT/prefill-bf16.json")
    met=$(python3 -c "print('yes' if $ratio <= 1.0 else 'no')")
    row "prefill: bf16 KV time / f32 KV time" "the two rows above" "$ratio" "-" "<= 1" "$met"
fi

# ---- mixed batch: within 10 % of the sum of its parts --------------------------------------------
tag=mixed-bf16
args="--op mixed --dtype bf16 --kv-dtype bf16 --batch 8 --ctx 32768 --new-tokens 512 --prefill-ctx 4096"
if bench "mixed" "$tag" $args; then
    res=$(field "$tag" '"%.2f ms; parts %.2f + %.2f ms (%s)" % (j["time_ms"]["median"], j["part_decode_ms"]["median"], j["part_prefill_ms"]["median"], j["start"])')
    frac=$(field "$tag" '"mixed / sum = %.3f" % j["mixed_over_parts"]')
    met=$(field "$tag" '"yes" if j["mixed_over_parts"] <= 1.10 else "no"')
    row "mixed: 8 decodes (ctx 32768) + 512-token chunk (4096 keys), bf16" "$CMD $args" "$res" "$frac" "<= 1.10" "$met"
else
    row "mixed" "$CMD $args" "failed" "-" "<= 1.10" "no"
fi

# ---- 64K causal prefill: peak memory within a few hundred MB of the tensors ---------------------
wait_idle
echo "[$(date -u +%H:%M:%S)] long_prefill ($START_NOTE)" >&2
if ATTNRT_NUM_THREADS=$THREADS "$LONG" --tokens 65536 --max-extra-mb 256 > "$OUT/long-prefill.txt" 2>&1; then lp_ok=1; else lp_ok=0; fi
res=$(python3 - "$OUT/long-prefill.txt" "$START_NOTE" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
m1 = re.search(r": ([0-9.]+) s, ([0-9.]+) GFLOP/s", t)
m2 = re.search(r"tensors ([0-9.]+) MiB, peak memory above them ([-0-9.]+) MiB", t)
if m1 and m2:
    print("%s s, %s GFLOP/s; tensors %s MiB, peak above them %s MiB (%s)" % (m1.group(1), m1.group(2), m2.group(1), m2.group(2), sys.argv[2]))
else:
    print("failed: " + t.strip().replace("\n", " ")[:200])
EOF
)
row "64K-token causal prefill, 1 head, D 128, f32" "ATTNRT_NUM_THREADS=$THREADS long_prefill --tokens 65536 --max-extra-mb 256" \
    "$res" "-" "peak <= tensors + 256 MiB" "$([ $lp_ok = 1 ] && echo yes || echo no)"

# ---- the table ----------------------------------------------------------------------------------
{
    echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs," \
         "$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); $(uname -sr); build $BUILD ($buildtype);" \
         "$THREADS threads; $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "| figure | command | result | fraction of ceiling: median (p90) | target | met? |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
} | tee "$OUT/table.md"
[ $all_met = 1 ]
