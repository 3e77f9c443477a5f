#!/usr/bin/env bash
# bench/h200/prefill.sh — the prefill fast path in ONE device call (~2-3 minutes): conformance of the
# cuda plugin (full set: the wgmma kernel; attention cases again with ATTNRT_CUDA_PREFILL=fa2: the FA2
# kernel, and =mma: the general kernel), the causal prefill rows (B4 x S4096, Hq 32 / Hkv 8,
# D 64 / 128 / 256, bs 16, bf16) on the fast path (wgmma), the FA2 kernel and the general kernel
# (ATTNRT_CUDA_PREFILL=fa2 / mma), PyTorch SDPA on the same shapes, resources and SASS counts of the fast
# kernels, ncu of one D 128 launch, sanitizers on the fast path's directed cases. Run from the repository
# root; BUILD_DIR (build-cuda) must be carried.
# Results: $OUT/prefill.log (the summary) and $OUT/prefill.tgz (everything).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/out-prefill}
W=/tmp/prefill-out
rm -rf "$W" && mkdir -p "$W" "$OUT"
BUILD=$ROOT/${BUILD_DIR:-build-cuda}
export ATTNRT_PLUGIN_PATH="$BUILD/plugins/cuda:$BUILD/plugins/cpu"
LOG=$OUT/prefill.log
exec > >(tee -a "$LOG") 2>&1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader

echo "=== [$(el)s] conformance (cuda, full set)"
timeout 300 "$BUILD/tools/attnrt-conform" --plugin cuda > "$W/conform-cuda.txt" 2>&1
echo "exit $?: $(tail -1 "$W/conform-cuda.txt")"
grep -E "^FAIL|^fail|unsupported " "$W/conform-cuda.txt" | head -20
grep -E "attn-pf|attn-long-prefill|attn-d128-gqa8|attn-d256" "$W/conform-cuda.txt" | cut -c1-150
echo "=== [$(el)s] conformance (cuda, attention cases, ATTNRT_CUDA_PREFILL=fa2: the FA2 kernel on the H200)"
ATTNRT_CUDA_PREFILL=fa2 timeout 200 "$BUILD/tools/attnrt-conform" --plugin cuda --filter attn > "$W/conform-cuda-fa2.txt" 2>&1
echo "exit $?: $(tail -1 "$W/conform-cuda-fa2.txt")"
grep -E "^FAIL|^fail" "$W/conform-cuda-fa2.txt" | head -10
echo "=== [$(el)s] conformance (cuda, attention cases, ATTNRT_CUDA_PREFILL=mma: the general prefill kernel)"
ATTNRT_CUDA_PREFILL=mma timeout 200 "$BUILD/tools/attnrt-conform" --plugin cuda --filter attn > "$W/conform-cuda-mma.txt" 2>&1
echo "exit $?: $(tail -1 "$W/conform-cuda-mma.txt")"
grep -E "^FAIL|^fail" "$W/conform-cuda-mma.txt" | head -10

echo "=== [$(el)s] prefill timings (attnrt-bench, median of 20)"
for d in 128 64 256; do
    for path in ${PATHS:-fast fa2 mma}; do # fast: wgmma on the H200; fa2 / mma: ATTNRT_CUDA_PREFILL
        env_=(); [ $path != fast ] && env_=(ATTNRT_CUDA_PREFILL=$path)
        env "${env_[@]}" timeout 120 "$BUILD/tools/attnrt-bench" --plugin cuda --op prefill --batch 4 --ctx 4096 \
            --new-tokens 4096 --heads 32 --kv-heads 8 --head-dim $d --block-size 16 --dtype bf16 --kv-dtype bf16 \
            --iters 20 --warmup 3 --json > "$W/pre_d${d}_$path.json" 2> "$W/pre_d${d}_$path.err"
        echo "D$d $path exit $?: $(grep -E '"median"|gflop_per_s"' "$W/pre_d${d}_$path.json" | head -2 | tr -s ' ' | tr '\n' ' ')"
    done
done
# ALT=dir: a second build of the plugin (attnrt_cuda.so of a variant), conformance (ALT_FILTER: of those
# cases only) and the same rows
for alt in ${ALT:-}; do
    [ -f "$BUILD/$alt/attnrt_cuda.so" ] || continue
    ATTNRT_PLUGIN_PATH="$BUILD/$alt:$BUILD/plugins/cpu" timeout 300 "$BUILD/tools/attnrt-conform" --plugin cuda \
        ${ALT_FILTER:+--filter "$ALT_FILTER"} > "$W/conform-$alt.txt" 2>&1
    echo "$alt conformance exit $?: $(tail -1 "$W/conform-$alt.txt")"
    grep -E "^FAIL" "$W/conform-$alt.txt" | head -10 | cut -c1-200
    ATTNRT_PLUGIN_PATH="$BUILD/$alt:$BUILD/plugins/cpu" timeout 60 compute-sanitizer --tool memcheck --print-limit 10 \
        "$BUILD/tools/attnrt-conform" --plugin cuda --filter attn-pf > "$W/memcheck-$alt.txt" 2>&1
    echo "$alt memcheck exit $?: $(grep -E 'ERROR SUMMARY' "$W/memcheck-$alt.txt" | tail -1)"
    for d in 128 64 256; do
        ATTNRT_PLUGIN_PATH="$BUILD/$alt:$BUILD/plugins/cpu" timeout 120 "$BUILD/tools/attnrt-bench" --plugin cuda --op prefill \
            --batch 4 --ctx 4096 --new-tokens 4096 --heads 32 --kv-heads 8 --head-dim $d --block-size 16 --dtype bf16 \
            --kv-dtype bf16 --iters 20 --warmup 3 --json > "$W/pre_d${d}_$alt.json" 2>&1
        echo "D$d $alt exit $?: $(grep -E '"median"|gflop_per_s"' "$W/pre_d${d}_$alt.json" | head -2 | tr -s ' ' | tr '\n' ' ')"
    done
done
for bs in 1 7 256; do # block sizes on the fast path, D 128
    timeout 120 "$BUILD/tools/attnrt-bench" --plugin cuda --op prefill --batch 4 --ctx 4096 --new-tokens 4096 --heads 32 \
        --kv-heads 8 --head-dim 128 --block-size $bs --dtype bf16 --kv-dtype bf16 --iters 10 --warmup 2 --json > "$W/pre_bs$bs.json" 2>&1
    echo "D128 bs$bs exit $?: $(grep -E '"median"|gflop_per_s"' "$W/pre_bs$bs.json" | head -2 | tr -s ' ' | tr '\n' ' ')"
done

echo "=== [$(el)s] peer: PyTorch SDPA"
timeout 150 python3 bench/h200/peer_sdpa.py "$W/peer.jsonl" pre_d128:prefill:4:4096:4096:32:8:128 \
    pre_d64:prefill:4:4096:4096:32:8:64 pre_d256:prefill:4:4096:4096:32:8:256 > "$W/peer.txt" 2>&1
echo "exit $?"; cat "$W/peer.jsonl" 2>/dev/null | cut -c1-400

echo "=== [$(el)s] resources and SASS of the fast kernels"
FB=$BUILD/plugins/cuda/attnrt_cuda_kernels_attention.fatbin FBW=$BUILD/plugins/cuda/attnrt_cuda_kernels_sm90a.fatbin
cuobjdump -res-usage "$FB" "$FBW" 2>/dev/null | grep -A1 -E "ck_attn_prefill_" > "$W/res.txt"; cat "$W/res.txt"
for f in ck_attn_prefill_bf16_d128 ck_attn_prefill_bf16_d64 ck_attn_prefill_bf16_d256 ck_attn_prefill_wg_bf16_d128 \
         ck_attn_prefill_wg_bf16_d64 ck_attn_prefill_wg_bf16_d256; do
    case $f in *_wg_*) cuobjdump -sass -fun "$f" "$FBW" > "$W/sass-$f.txt" 2>/dev/null ;;
               *) cuobjdump -sass -arch sm_90 -fun "$f" "$FB" > "$W/sass-$f.txt" 2>/dev/null ;; esac
    echo "$f: $(grep -cE '^ +/\*[0-9a-f]{4,}\*/' "$W/sass-$f.txt") instr, HMMA $(grep -c HMMA "$W/sass-$f.txt"), HGMMA $(grep -c HGMMA "$W/sass-$f.txt"), LDSM $(grep -c LDSM "$W/sass-$f.txt"), STL $(grep -c 'STL' "$W/sass-$f.txt"), LDL $(grep -c 'LDL' "$W/sass-$f.txt"), BAR $(grep -c 'BAR' "$W/sass-$f.txt"), WARPGROUP $(grep -c 'WARPGROUP' "$W/sass-$f.txt")"
done

for d in ${NCU_DIMS:-128 256}; do
    echo "=== [$(el)s] ncu: one fast D $d launch"
    timeout 120 ncu --clock-control none -k "regex:ck_attn_prefill" -c 1 --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
        --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_ldsm.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum" \
        "$BUILD/tools/attnrt-bench" --plugin cuda --op prefill --batch 4 --ctx 4096 --new-tokens 4096 --heads 32 --kv-heads 8 \
        --head-dim $d --block-size 16 --dtype bf16 --kv-dtype bf16 --iters 1 --warmup 0 > "$W/ncu-d$d.txt" 2>&1
    echo "exit $?"
    grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occ|Warp Cycles Per Issued|Issued Warp|Executed Instructions  |hmma|ldsm|bank_conflicts|wavefronts|Local Memory Spilling Req" "$W/ncu-d$d.txt" | head -24
    grep -E "issue_stalled_.*ratio" "$W/ncu-d$d.txt" | awk '$NF+0 >= 0.1' | sed -E 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -14
done

echo "=== [$(el)s] sanitizers on the fast path's cases"
timeout 90 compute-sanitizer --tool memcheck --print-limit 10 "$BUILD/tools/attnrt-conform" --plugin cuda --filter attn-pf > "$W/memcheck.txt" 2>&1
echo "memcheck exit $?: $(grep -E 'ERROR SUMMARY' "$W/memcheck.txt" | tail -1) $(tail -1 "$W/memcheck.txt")"
timeout 60 compute-sanitizer --tool racecheck --print-limit 10 "$BUILD/tools/attnrt-conform" --plugin cuda --filter attn-pf-bs1 > "$W/racecheck.txt" 2>&1
echo "racecheck exit $?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$W/racecheck.txt" | tail -1)"
echo "=== [$(el)s] done"
cp "$W/conform-cuda.txt" "$W/conform-cuda-fa2.txt" "$W/conform-cuda-mma.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/prefill.tgz" -C "$W" .
