#!/usr/bin/env bash
# bench/h200/ncu_stalls.sh — how the warps of one decode launch stall, spread over the SM sub-partitions (min / avg /
# max of each counter: a set of late SMs shows as a max far above the average), for the issue's decode rows:
#   OUT=DIR BUILD_DIR=build-cuda bash bench/h200/ncu_stalls.sh [ROW ...]     ROW: "B CTX KV", e.g. "64 4096 fp8_e4m3"
# ncu cannot list a counter a unit here (--print-metric-instances prints none for these), hence the spread.
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=$ROOT/${BUILD_DIR:-build-cuda}
OUT=${OUT:-$ROOT/out-h200}
mkdir -p "$OUT"
export ATTNRT_PLUGIN_PATH="$BUILD/plugins/cuda:$BUILD/plugins/cpu"
[ $# -gt 0 ] || set -- "64 4096 fp8_e4m3" "64 4096 bf16" "64 1024 fp8_e4m3" "256 2048 fp8_e4m3"
M=""
for n in no_instruction imc_miss long_scoreboard wait branch_resolving; do
    M="$M,smsp__warps_issue_stalled_$n.min,smsp__warps_issue_stalled_$n.avg,smsp__warps_issue_stalled_$n.max"
done
for n in smsp__warps_active smsp__inst_executed sm__cycles_active sm__ctas_launched; do M="$M,$n.min,$n.avg,$n.max"; done
for row in "$@"; do
    read -r b ctx kv <<< "$row"
    f="$OUT/ncu-stalls-b$b-c$ctx-$kv.txt"
    timeout 150 ncu --clock-control none --cache-control none -k "regex:^ck_attn_mma_decode" --launch-skip 1 -c 1 --metrics "${M#,}" \
        "$BUILD/tools/attnrt-bench" --plugin cuda --op decode --batch "$b" --ctx "$ctx" --heads 32 --kv-heads 8 --head-dim 128 \
        --block-size 16 --dtype bf16 --kv-dtype "$kv" --no-ceiling --iters 1 --warmup 1 --timing single > "$f" 2>&1
    echo "--- ncu stalls $row (exit $?)"
    grep -E "^  ck_|\.(min|avg|max) " "$f"
done
