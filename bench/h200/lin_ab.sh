#!/usr/bin/env bash
# bench/h200/lin_ab.sh — an A/B of linear decode variants against the default in one call (after
# run_ops.sh or alone): ATTNRT_CUDA_LINEAR=v for each v of $LIN_AB (a list; default general). Session 6
# ran it on a warp-column GDN decode kernel, GDN barrier / norm variants (removed) and the batched small
# loads (now the default). Interleaved attnrt-bench rows of each op of $LIN_AB_OP (a list) at the four
# issue shapes (B 64 x H 16 $LIN_AB_REPS64 times, the others $LIN_AB_REPS times), then per variant
# attnrt-conform ($LIN_AB_FILTER, default the full set), racecheck / memcheck of $LIN_AB_SAN and graph
# capture under it. Results: $OUT/lin_ab.log, $OUT/lin_ab.jsonl (rows tagged by the knob).
#   LIN_AB=general LIN_AB_OP="gdn_decode lightning_decode" OUT=$OUT BUILD_DIR=build-cuda bash bench/h200/lin_ab.sh
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT"
OUT=${OUT:-$ROOT/out-lin-ab}
BUILD=${BUILD_DIR:-$ROOT/build-cuda}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
mkdir -p "$OUT"
exec > >(tee -a "$OUT/lin_ab.log") 2>&1
export ATTNRT_PLUGIN_PATH="$BUILD/plugins/cuda:$BUILD/plugins/cpu"
unset ATTNRT_PLUGIN ATTNRT_DEVICE ATTNRT_CUDA_KERNELS ATTNRT_CUDA_SPLITS ATTNRT_CUDA_LINEAR
VARS=${LIN_AB:-general}
OP=${LIN_AB_OP:-gdn_decode}
REPS=${LIN_AB_REPS:-2}
REPS64=${LIN_AB_REPS64:-$REPS}
SAN=${LIN_AB_SAN:-"gdn-decode-many gdn-decode-d100 gdn-decode-d128-nonorm"} # racecheck + memcheck under each variant
echo "=== attnrt-bench $OP, default vs ATTNRT_CUDA_LINEAR in {$VARS} (interleaved)"
for rep in $(seq 1 "$REPS64"); do
    for bh in "64 16" "64 32" "256 16" "256 32"; do
        [ "$bh" != "64 16" ] && [ "$rep" -gt "$REPS" ] && continue
        set -- $bh
        for op in $OP; do
            kvh=$2; [ "$op" = gdn_decode ] && kvh=$(( $2 / 2 ))
            for v in default $VARS; do
                lv=$v; [ "$v" = default ] && lv=auto
                ATTNRT_CUDA_LINEAR=$lv timeout 60 "$BUILD/tools/attnrt-bench" --plugin cuda --iters 30 --warmup 5 --op "$op" --batch $1 --heads $2 \
                    --kv-heads $kvh --head-dim 128 --dtype bf16 --json 2>/dev/null | tr -d '\n' | sed "s/^/{\"tag\": \"$v\", \"j\": /; s/\$/}\n/" >> "$OUT/lin_ab.jsonl"
            done
        done
    done
done
python3 bench/h200/lin_summary.py "$OUT/lin_ab.jsonl" | sort -s -k2,2 -k4,4n -k7,7n
for V in $VARS; do
    echo "=== conformance with ATTNRT_CUDA_LINEAR=$V ${LIN_AB_FILTER:+--filter $LIN_AB_FILTER}"
    ATTNRT_CUDA_LINEAR=$V timeout 120 "$BUILD/tools/attnrt-conform" --plugin cuda ${LIN_AB_FILTER:+--filter "$LIN_AB_FILTER"} > "$OUT/conform-ab-$V.txt" 2>&1
    echo "exit $?: $(tail -1 "$OUT/conform-ab-$V.txt")"; grep FAIL "$OUT/conform-ab-$V.txt" | head -10
    if command -v compute-sanitizer > /dev/null 2>&1; then
        for f in $SAN; do
            ATTNRT_CUDA_LINEAR=$V timeout 60 compute-sanitizer --tool racecheck "$BUILD/tools/attnrt-conform" --plugin cuda \
                --cases 0 --filter $f 2>&1 | grep -E "SUMMARY|passed" | tr '\n' ' ' | sed "s/^/racecheck $f: /"; echo
            ATTNRT_CUDA_LINEAR=$V timeout 60 compute-sanitizer --tool memcheck --report-api-errors no "$BUILD/tools/attnrt-conform" \
                --plugin cuda --cases 0 --filter $f 2>&1 | grep -E "SUMMARY|passed" | tr '\n' ' ' | sed "s/^/memcheck $f: /"; echo
        done
    fi
    G=/tmp/attnrt-h200/cuda_graph_capture_ops12 # built by run_ops.sh
    [ -x "$G" ] && { ATTNRT_CUDA_LINEAR=$V timeout 60 "$G" > "$OUT/graph-ab-$V.txt" 2>&1; echo "graph capture under $V: exit $? $(grep -cE 'PASS' "$OUT/graph-ab-$V.txt") PASS lines, $(grep -cE 'FAIL' "$OUT/graph-ab-$V.txt") FAIL"; }
done
