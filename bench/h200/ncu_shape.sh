#!/usr/bin/env bash
# bench/h200/ncu_shape.sh — one launch of each kernel attnrt-bench runs for a shape, under ncu (hardware
# counters, clocks as they are), with the summary lines on stdout and the report in $OUT/ncu-ID.txt:
#   OUT=DIR BUILD_DIR=build-cuda bash bench/h200/ncu_shape.sh ID attnrt-bench-args...
# e.g. ... ncu_shape.sh b1_long --op decode --batch 1 --ctx 131072 --dtype bf16 --kv-dtype fp8_e4m3
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=$ROOT/${BUILD_DIR:-build-cuda}
OUT=${OUT:-$ROOT/out-h200}
id=$1
shift
mkdir -p "$OUT"
export ATTNRT_PLUGIN_PATH="$BUILD/plugins/cuda:$BUILD/plugins/cpu"
timeout 120 ncu --clock-control none -k "regex:^ck_" -c 6 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    "$BUILD/tools/attnrt-bench" --plugin cuda "$@" --iters 1 --warmup 0 --timing single > "$OUT/ncu-$id.txt" 2>&1
echo "--- ncu $id (exit $?): $*"
grep -E "^  ck_|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occ|Grid Size|Block Size" "$OUT/ncu-$id.txt" | head -40
