#!/usr/bin/env bash
# bench/h200/run_ops.sh — the MLA, lightning and gated-delta ops of the cuda plugin on a lent GPU (H100 / H200), in ONE
# call (~3-5 minutes): attnrt-conform --plugin cuda (the full default set: every op, must be 0 failed), the MLA cases
# again on the CUDA-core kernel (ATTNRT_CUDA_KERNELS=simt) and on the mma.sync one (ATTNRT_CUDA_KERNELS=sm80: an 8.0
# device's kernels), the graph-capture proof of these runs, compute-sanitizer on a few cases, then the decode rows of
# attnrt-bench with the device copy ceiling measured in the same run (interleaved with the op's runs):
#   MLA decode 576/512, block 64, Hq 128, B 64 x ctx 4096 (bf16 and fp8 latent; sparse top-2048), and the issue row on
#   the mma.sync kernel; lightning and GDN decode, Dk = Dv = 128, B 64-256, H 16-32 (bytes = the f32 state read +
#   written); then the same shapes timed every way bench/h200/linear_timing.c knows (where a single call's fixed cost
#   goes), and one attention decode row (B 64 x 4096) with both of attnrt-bench's timings.
# attnrt-bench's rows carry two timings (--timing both): queued (the headline: the op on a created stream behind a
# device copy, as a step of an engine's stream) and the single NULL-stream call.
#
# MLA_NCU=1 adds ncu hardware counters of one MLA tensor-core launch and its SASS counts (~20 s).
# MLA_NCU_SRC=1 adds ncu source counters of one wgmma MLA launch (stall samples per SASS line, exported as
# CSV: ncu-mla-src-sass.csv, ncu-mla-src-cuda.csv; the kernels carry -lineinfo). MLA_SAN=0 skips the sanitizers.
# MLA_ONLY=1 keeps the conformance runs, the graph capture, the MLA rows and the MLA sanitizer cases and
# skips the lightning / GDN ones (an MLA iteration in ~2 minutes).
# Run from the repository root:   BUILD_DIR=build-cuda-ops bash bench/h200/run_ops.sh
# The build is carried (meson setup build-cuda-ops -Dtests=disabled --buildtype=release -Dcuda=enabled);
# results go to $OUT (./out-h200-ops when OUT is not set): run_ops.log, conform-cuda.txt,
# conform-cuda-mla-simt.txt, conform-cuda-mla-sm80.txt, graph-capture-ops.txt, bench_ops.jsonl,
# linear_timing.jsonl, sanitizer.txt, matmul.json (the bf16 matmul ceiling, bench/h200/peer_matmul.py).
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT"
OUT=${OUT:-$ROOT/out-h200-ops}
BUILD=${BUILD_DIR:-$ROOT/build-cuda-ops}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run_ops.log") 2>&1
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 ))s] $*"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv || true
export ATTNRT_PLUGIN_PATH="$BUILD/plugins/cuda:$BUILD/plugins/cpu"
unset ATTNRT_PLUGIN ATTNRT_DEVICE ATTNRT_CUDA_KERNELS
ATTNRT_PLUGIN=cuda "$BUILD/tools/attnrt-info" 2>&1 | head -12 || true

step "attnrt-conform --plugin cuda (full default set)"
timeout 300 "$BUILD/tools/attnrt-conform" --plugin cuda -v > "$OUT/conform-cuda.txt" 2>&1
echo "exit $?"
grep -E "FAIL" "$OUT/conform-cuda.txt" | head -40
grep -E "^ *(mla|lin|gdn|sweep12)" "$OUT/conform-cuda.txt" | head -80
tail -3 "$OUT/conform-cuda.txt"

step "attnrt-conform --plugin cuda --filter mla with ATTNRT_CUDA_KERNELS=simt (MLA on the CUDA-core kernel only)"
ATTNRT_CUDA_KERNELS=simt timeout 120 "$BUILD/tools/attnrt-conform" --plugin cuda --filter mla > "$OUT/conform-cuda-mla-simt.txt" 2>&1
echo "exit $?"
grep -E "FAIL" "$OUT/conform-cuda-mla-simt.txt" | head -20
tail -1 "$OUT/conform-cuda-mla-simt.txt"

step "attnrt-conform --plugin cuda --filter mla with ATTNRT_CUDA_KERNELS=sm80 (the mma.sync MLA kernel, not wgmma)"
ATTNRT_CUDA_KERNELS=sm80 timeout 120 "$BUILD/tools/attnrt-conform" --plugin cuda --filter mla > "$OUT/conform-cuda-mla-sm80.txt" 2>&1
echo "exit $?"
grep -E "FAIL" "$OUT/conform-cuda-mla-sm80.txt" | head -20
tail -1 "$OUT/conform-cuda-mla-sm80.txt"

step "graph capture of the MLA, lightning and GDN runs (tests/cuda/cuda_graph_capture_ops.c, built here with gcc)"
GRAPH_OPS=/tmp/attnrt-h200/cuda_graph_capture_ops
mkdir -p /tmp/attnrt-h200
if gcc -O2 -std=c11 -D_GNU_SOURCE -I"$ROOT/runtime/include" -I"$ROOT/abi" -I"$ROOT/runtime/src" -I"$ROOT/plugins/cuda" \
        -I/usr/local/cuda/include tests/cuda/cuda_graph_capture_ops.c -L"$BUILD/runtime" -Wl,-rpath,"$BUILD/runtime" \
        -lattnrt -ldl -lm -o "$GRAPH_OPS" 2> "$OUT/graph-ops.build.txt"; then
    timeout 120 "$GRAPH_OPS" 2>&1 | tee "$OUT/graph-capture-ops.txt"
    echo "exit ${PIPESTATUS[0]}"
else
    echo "cuda_graph_capture_ops: build failed"; cat "$OUT/graph-ops.build.txt"
fi

step "matmul ceiling: PyTorch bf16 matmul (cuBLAS) 8192^3, for the MLA rows' TFLOP/s (bench/h200/peer_matmul.py)"
timeout 60 python3 bench/h200/peer_matmul.py "$OUT/matmul.json" 2>&1 | tail -2

B=("$BUILD/tools/attnrt-bench" --plugin cuda --iters 30 --warmup 5)
row() { # one bench row: text to the log, JSON to bench_ops.jsonl
    echo "--- attnrt-bench $*"
    timeout 60 "${B[@]}" "$@" 2>&1 | tail -8
    timeout 60 "${B[@]}" "$@" --json 2>/dev/null | tr -d '\n' >> "$OUT/bench_ops.jsonl"
    echo >> "$OUT/bench_ops.jsonl"
}
step "bench: MLA decode (576/512, block 64, Hq 128)"
MLA=(--op mla_decode --heads 128 --kv-heads 1 --head-dim 576 --v-dim 512 --block-size 64 --dtype bf16)
row "${MLA[@]}" --batch 64 --ctx 4096
row "${MLA[@]}" --batch 64 --ctx 4096 --kv-dtype fp8_e4m3
row "${MLA[@]}" --batch 64 --ctx 4096 --topk 2048
row "${MLA[@]}" --batch 4 --ctx 32768
row "${MLA[@]}" --batch 64 --ctx 4096 --heads 16
# the issue row on the mma.sync kernel (ATTNRT_CUDA_KERNELS=sm80: what an 8.0 device runs), in the same call
for kv in bf16 fp8_e4m3; do
    echo "--- ATTNRT_CUDA_KERNELS=sm80 attnrt-bench ${MLA[*]} --batch 64 --ctx 4096 --kv-dtype $kv"
    ATTNRT_CUDA_KERNELS=sm80 timeout 60 "${B[@]}" "${MLA[@]}" --batch 64 --ctx 4096 --kv-dtype "$kv" 2>&1 | tail -8
done
if [ "${MLA_NCU:-0}" = 1 ] && command -v ncu > /dev/null; then # hardware counters of one MLA launch
    step "ncu: one launch of the MLA tensor-core kernel (B 64 x 4096, bf16 latent: wgmma on the H200)"
    timeout 120 ncu --clock-control none -k "regex:ck_mla_(mma|wg)" -c 1 --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
        --section MemoryWorkloadAnalysis --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
        "${B[@]::3}" "${MLA[@]}" --batch 64 --ctx 4096 --iters 1 --warmup 0 > "$OUT/ncu-mla.txt" 2>&1
    echo "exit $?"
    grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occ|Warp Cycles Per Issued|Issued Warp|Executed Instructions  |Grid Size|Shared Memory Configuration Size|Bank" "$OUT/ncu-mla.txt" | head -16
    grep -E "issue_stalled_.*ratio" "$OUT/ncu-mla.txt" | awk '$NF+0 >= 0.2' | sed -E 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -12
    if command -v cuobjdump > /dev/null; then
        cuobjdump -sass -arch sm_90 -fun ck_mla_mma_bf16 "$BUILD/plugins/cuda/attnrt_cuda_kernels_mla.fatbin" > "$OUT/sass-ck_mla_mma_bf16.txt" 2> /dev/null
        echo "sass ck_mla_mma_bf16 (sm_90): $(grep -cE '^ +/\*[0-9a-f]{4,}\*/' "$OUT/sass-ck_mla_mma_bf16.txt") instructions," \
             "$(grep -c HMMA "$OUT/sass-ck_mla_mma_bf16.txt") HMMA, $(grep -c LDSM "$OUT/sass-ck_mla_mma_bf16.txt") LDSM"
        cuobjdump -sass -fun ck_mla_wg_bf16 "$BUILD/plugins/cuda/attnrt_cuda_kernels_sm90a.fatbin" > "$OUT/sass-ck_mla_wg_bf16.txt" 2> /dev/null
        echo "sass ck_mla_wg_bf16 (sm_90a): $(grep -cE '^ +/\*[0-9a-f]{4,}\*/' "$OUT/sass-ck_mla_wg_bf16.txt") instructions," \
             "$(grep -c HGMMA "$OUT/sass-ck_mla_wg_bf16.txt") HGMMA, $(grep -cE 'LDL|STL' "$OUT/sass-ck_mla_wg_bf16.txt") local"
    fi
fi

if [ "${MLA_NCU_SRC:-0}" = 1 ] && command -v ncu > /dev/null; then # where a tile's cycles go, per SASS line
    step "ncu source counters: one launch of the wgmma MLA kernel (B 64 x 4096, bf16): stall samples per SASS line"
    timeout 150 ncu --clock-control none -k "regex:ck_mla_wg" -c 1 --import-source yes --section SourceCounters \
        --section WarpStateStats --section SpeedOfLight -f -o "$OUT/mla-src" \
        "${B[@]::3}" "${MLA[@]}" --batch 64 --ctx 4096 --iters 1 --warmup 0 > "$OUT/ncu-mla-src.log" 2>&1
    echo "exit $?"; tail -3 "$OUT/ncu-mla-src.log"
    ncu --import "$OUT/mla-src.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu-mla-src-sass.csv" 2>&1
    echo "sass page exit $? ($(wc -l < "$OUT/ncu-mla-src-sass.csv") lines)"
    ncu --import "$OUT/mla-src.ncu-rep" --page source --csv --print-source cuda,sass > "$OUT/ncu-mla-src-cuda.csv" 2>&1
    echo "cuda,sass page exit $? ($(wc -l < "$OUT/ncu-mla-src-cuda.csv") lines)"
    ncu --import "$OUT/mla-src.ncu-rep" --page details > "$OUT/ncu-mla-src-details.txt" 2>&1
    grep -E "Duration|Elapsed Cycles|Warp Cycles Per Issued|Issued Warp" "$OUT/ncu-mla-src-details.txt" | head -8
fi

if [ "${MLA_ONLY:-0}" != 1 ]; then
step "bench: lightning decode (Dk = Dv = 128, f32 state)"
for bh in "64 16" "64 32" "256 16" "256 32"; do
    set -- $bh
    row --op lightning_decode --batch "$1" --heads "$2" --kv-heads "$2" --head-dim 128 --dtype bf16
done
step "bench: GDN decode (Dk = Dv = 128, f32 state, HV = 2 H)"
for bh in "64 16" "64 32" "256 16" "256 32"; do
    set -- $bh
    row --op gdn_decode --batch "$1" --heads "$2" --kv-heads $(( $2 / 2 )) --head-dim 128 --dtype bf16
done

step "bench: attention decode B 64 x 4096 (Hq 32 / Hkv 8, D 128, bf16): queued vs single call"
row --op decode --batch 64 --ctx 4096 --heads 32 --kv-heads 8 --head-dim 128 --dtype bf16 --kv-dtype bf16

# linear_timing: the same op timed every way (null = attnrt-bench --timing single, queued = its
# headline, stream = 20 back to back, idle / idle_wait / nullop: where the single call's fixed cost goes).
step "lightning / GDN decode timed every way (bench/h200/linear_timing.c)"
LT=/tmp/attnrt-h200/linear_timing
if gcc -O2 -std=c11 -D_GNU_SOURCE -I"$ROOT/runtime/include" -I"$ROOT/abi" bench/h200/linear_timing.c \
        -L"$BUILD/runtime" -Wl,-rpath,"$BUILD/runtime" -lattnrt -lm -o "$LT" 2> "$OUT/linear_timing.build.txt"; then
    for op in lightning_decode gdn_decode; do
        for bh in "64 16" "64 32" "256 16" "256 32"; do
            set -- $bh
            kvh=$2; [ "$op" = gdn_decode ] && kvh=$(( $2 / 2 ))
            args=(--plugin cuda --op "$op" --batch "$1" --heads "$2" --kv-heads "$kvh" --head-dim 128 --dtype bf16)
            timeout 60 "$LT" "${args[@]}" --json >> "$OUT/linear_timing.jsonl" # the lines on stderr, JSON to the file
        done
    done
else
    echo "linear_timing: build failed"; cat "$OUT/linear_timing.build.txt"
fi

if command -v ncu > /dev/null 2>&1 && [ $(( $(date +%s) - T0 )) -lt 240 ]; then
    step "ncu (--clock-control none): one launch of the lightning and GDN decode kernels, B 256 x H 32"
    lprof() { # id kernel-regex bench-args...
        local id=$1 kre=$2; shift 2
        timeout 90 ncu --clock-control none -k "regex:$kre" -c 1 --section SpeedOfLight --section Occupancy \
            --section WarpStateStats --section MemoryWorkloadAnalysis \
            --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
            "$BUILD/tools/attnrt-bench" --plugin cuda "$@" --iters 1 --warmup 0 --timing single > "$OUT/ncu-$id.txt" 2>&1
        echo "--- ncu $id (exit $?)"
        grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Block Limit|Theoretical Occ|Achieved Occ|Warp Cycles Per Issued" "$OUT/ncu-$id.txt" | head -14
        grep -E "issue_stalled_.*ratio" "$OUT/ncu-$id.txt" | awk '$NF+0 >= 0.5' | sed -E 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -8
    }
    lprof lightning ck_lin_lightning --op lightning_decode --batch 256 --heads 32 --kv-heads 32 --head-dim 128 --dtype bf16
    lprof gdn_decode ck_lin_gdn --op gdn_decode --batch 256 --heads 32 --kv-heads 16 --head-dim 128 --dtype bf16
fi
fi # MLA_ONLY

if [ "${MLA_SAN:-1}" = 1 ] && command -v compute-sanitizer > /dev/null 2>&1; then
    step "compute-sanitizer memcheck on MLA, lightning and GDN cases"
    CASES="mla-small-bs7 mla-sparse-e5m2-small mla-d576-e4m3-dense mla-d576-strided-long mla-d576-wg-f16-bs16 mla-sparse-h128 lin-d32v128 gdn-spec3-nonorm gdn-empty lin-decode-d128 gdn-decode-d1 decode-many"
    [ "${MLA_ONLY:-0}" = 1 ] && CASES="mla-small-bs7 mla-d576-e4m3-dense mla-d576-strided-long mla-d576-wg-f16-bs16 mla-sparse-h128"
    for f in $CASES; do # the summary of each, and the first reports ("=========" lines) of each
        timeout 60 compute-sanitizer --tool memcheck --print-limit 10 "$BUILD/tools/attnrt-conform" --plugin cuda \
            --cases 0 --filter "$f" > "$OUT/memcheck.tmp" 2>&1
        tail -4 "$OUT/memcheck.tmp"
        grep -E "^=========" "$OUT/memcheck.tmp" | grep -v "ERROR SUMMARY" | head -6
    done > "$OUT/sanitizer.txt"
    rm -f "$OUT/memcheck.tmp"
    RACE="lin-decode-many gdn-decode-many mla-d576-e5m2-blk-f16 mla-d576-wg-f16-bs16" # linear decode's shared
    [ "${MLA_ONLY:-0}" = 1 ] && RACE="mla-d576-e5m2-blk-f16 mla-d576-wg-f16-bs16"    # reductions; both MLA kernels
    for f in $RACE; do
        echo "racecheck $f" >> "$OUT/sanitizer.txt"
        timeout 120 compute-sanitizer --tool racecheck --print-limit 10 "$BUILD/tools/attnrt-conform" --plugin cuda \
            --cases 0 --filter $f 2>&1 | grep -E "^=========|passed" | head -16 >> "$OUT/sanitizer.txt"
    done
    cat "$OUT/sanitizer.txt"
fi
step "MLA rows against the copy ceiling and the matmul rate of this call (bench/h200/mla_summary.py)"
python3 bench/h200/mla_summary.py "$OUT" 2>&1
step "done"
