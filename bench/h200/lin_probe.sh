#!/usr/bin/env bash
# bench/h200/lin_probe.sh — session 6's probe of the small linear decode step (B 64 x H 16) in ONE call
# (kept as the record of calls 1-2; the ATTNRT_CUDA_LIN_HINT knob it sweeps is gone from the plugin since,
# so its hint rows now all time the kept kernels: docs/dev/cuda-linear.md, session 6):
# conformance (full set; lin / gdn on the general kernel), attnrt-bench rows (queued and single) of both
# decode ops at the four issue shapes under the L2-policy knob ATTNRT_CUDA_LIN_HINT (PROBE_HINTS), the
# copy peer of the step (linear_timing's peer_queued: a device copy of the state's bytes, queued the same
# way), and ncu of the B 64 x H 16 kernel (DRAM bytes, duration, waves, SM activity) with the copy's
# dirty L2 left in place (--cache-control none) and with L2 flushed first (all).
#   OUT=$OUT BUILD_DIR=build-cuda bash bench/h200/lin_probe.sh
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT"
OUT=${OUT:-$ROOT/out-lin-probe}
BUILD=${BUILD_DIR:-$ROOT/build-cuda}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
mkdir -p "$OUT"
exec > >(tee -a "$OUT/lin_probe.log") 2>&1
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
export ATTNRT_PLUGIN_PATH="$BUILD/plugins/cuda:$BUILD/plugins/cpu"
unset ATTNRT_PLUGIN ATTNRT_DEVICE ATTNRT_CUDA_KERNELS ATTNRT_CUDA_SPLITS ATTNRT_CUDA_LINEAR ATTNRT_CUDA_LIN_HINT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true

step "attnrt-conform --plugin cuda (full default set)"
timeout 200 "$BUILD/tools/attnrt-conform" --plugin cuda -v > "$OUT/conform-cuda.txt" 2>&1
echo "exit $?"; grep -E "FAIL" "$OUT/conform-cuda.txt" | head -20; tail -1 "$OUT/conform-cuda.txt"
for f in lin gdn; do
    ATTNRT_CUDA_LINEAR=general timeout 60 "$BUILD/tools/attnrt-conform" --plugin cuda --filter "$f" > "$OUT/conform-$f-general.txt" 2>&1
    echo "exit $? (general $f): $(tail -1 "$OUT/conform-$f-general.txt")"
    grep -E "FAIL" "$OUT/conform-$f-general.txt" | head -10
done
for h in ${CONFORM_HINTS:-}; do for f in lin gdn; do
    ATTNRT_CUDA_LIN_HINT=$h timeout 60 "$BUILD/tools/attnrt-conform" --plugin cuda --filter $f > "$OUT/conform-hint.txt" 2>&1
    echo "exit $? (hint $h $f): $(tail -1 "$OUT/conform-hint.txt")"
done; done

B=("$BUILD/tools/attnrt-bench" --plugin cuda --iters 30 --warmup 5 --json)
row() { # hint op batch heads
    local kvh=$4; [ "$2" = gdn_decode ] && kvh=$(( $4 / 2 ))
    ATTNRT_CUDA_LIN_HINT=$1 timeout 60 "${B[@]}" --op "$2" --batch "$3" --heads "$4" --kv-heads "$kvh" --head-dim 128 \
        --dtype bf16 2>/dev/null | tr -d '\n' | sed "s/^/{\"hint\": $1, \"j\": /; s/\$/}\n/" >> "$OUT/probe.jsonl"
    python3 - "$OUT/probe.jsonl" "$1 $2 $3x$4" <<'PY'
import json,sys
l=open(sys.argv[1]).read().strip().split('\n')[-1]
try:
    j=json.loads(l)['j']
    print('hint %-22s queued %.2f us %.1f%%  single %.2f us %.1f%%  mem %.0f GB/s' % (sys.argv[2], j['time_ms']['median']*1e3,
          100*j['fraction_of_mem'], j['single_call_ms']['median']*1e3, 100*j['fraction_of_mem_single_call'], j['mem_gb_per_s']['median']))
except Exception as e: print('parse', sys.argv[2], e, l[:200])
PY
}
step "attnrt-bench rows under ATTNRT_CUDA_LIN_HINT"
for h in ${PROBE_HINTS:-0 1 3 4 7}; do
    for op in lightning_decode gdn_decode; do row $h $op 64 16; done
done
for h in ${WIDE_HINTS:-0 3}; do
    for bh in "64 32" "256 16" "256 32"; do set -- $bh
        for op in lightning_decode gdn_decode; do row $h $op $1 $2; done
    done
done

step "linear_timing (peer_queued: the state's bytes as one device copy, queued the same way)"
LT=/tmp/lin_timing
gcc -O2 -std=c11 -D_GNU_SOURCE -Iruntime/include -Iabi bench/h200/linear_timing.c -L"$BUILD/runtime" \
    -Wl,-rpath,"$BUILD/runtime" -lattnrt -lm -o "$LT" && for op in lightning_decode gdn_decode; do
    for bh in ${LT_SHAPES:-"64 16" "64 32"}; do set -- $bh
        kvh=$2; [ "$op" = gdn_decode ] && kvh=$(( $2 / 2 ))
        timeout 60 "$LT" --plugin cuda --op $op --batch $1 --heads $2 --kv-heads $kvh --head-dim 128 --json >> "$OUT/linear_timing.jsonl"
    done
done

if command -v ncu > /dev/null 2>&1; then
    step "ncu: B 64 x H 16 decode kernels, queued behind the 128 MiB copy (application replay)"
    M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__waves_per_multiprocessor,sm__cycles_active.avg,sm__cycles_elapsed.avg,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
    for cfg in ${NCU_CFGS:-"none:0:lightning" "all:0:lightning" "none:0:gdn" "all:0:gdn"}; do
        cfg=${cfg//:/ }
        set -- $cfg
        op=lightning_decode; kvh=16; [ $3 = gdn ] && op=gdn_decode && kvh=8
        ATTNRT_CUDA_LIN_HINT=$2 timeout 90 ncu --clock-control none --cache-control $1 --replay-mode application \
            -k "regex:ck_lin_$3_decode" -c 1 --metrics $M "$BUILD/tools/attnrt-bench" --plugin cuda --op $op --batch 64 \
            --heads 16 --kv-heads $kvh --head-dim 128 --dtype bf16 --iters 1 --warmup 0 --timing queued --no-ceiling \
            > "$OUT/ncu.tmp" 2>&1
        echo "--- ncu $3 cache-control $1 hint $2 (exit $?)"
        grep -E "^ +(gpu__|dram__|launch__|sm__|lts__)" "$OUT/ncu.tmp"
        cat "$OUT/ncu.tmp" >> "$OUT/ncu.txt"; rm -f "$OUT/ncu.tmp"
    done
fi
step "done"
