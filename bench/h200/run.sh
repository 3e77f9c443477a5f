#!/usr/bin/env bash
# bench/h200/run.sh — everything the cuda plugin's paged attention needs from a lent GPU (H100 / H200), in ONE call
# (~5-8 minutes): nvidia-smi; attnrt-info; attnrt-conform --plugin cuda (the full default set; the attention cases again
# with every case on a stream (--streams: mixed batches' overlapped launches) and with the kernel set of a compute
# capability 8.0 device (ATTNRT_CUDA_KERNELS=sm80: the FA2 prefill kernel, the cp.async / bulk decode forms, the
# mma.sync paths a Hopper card otherwise skips); on failure again with every attention on the SIMT kernel, to tell a
# tensor-core bug from the rest); every kernel-table row on a call its rule serves against the cpu plugin
# (tests/cuda/cuda_kernel_coverage.c); ATTNRT_CUDA_FATBIN_DIR's refusal of an unreadable fatbin; the graph-capture proof;
# mixed batches against their parts; the issue's shapes through attnrt-bench (or bench/h200/attn_timing.c when
# attnrt-bench is not built); PyTorch's SDPA (flash, cuDNN) on the same shapes with dense KV; a table in $OUT/h200.md.
# Which kernel each shape takes: docs/backends/cuda.md's kernel map (tests/cuda/test_cuda_kernel_select.c checks it).
#
# Run from the repository root:   bash bench/h200/run.sh      (BUILD_DIR=build-cuda-perf bash ... for another
# carried build folder; default build-cuda)
# It uses ./$BUILD_DIR when its binaries run on this machine; otherwise it builds there
# (meson setup -Dtests=disabled; nvcc, gcc, meson and ninja are on the device image, cmocka is not).
# Results go to $OUT (the device tool's output folder; ./out-h200 when OUT is not set).
# Knobs for short calls (defaults: everything): ROWS=REGEX times only the shapes whose id matches;
# AB_ENV=NAME=VALUE times the fp8 decode rows once more with that variable set (ids ending _ab) and runs
# the attention conformance cases once more under it (e.g. ATTNRT_CUDA_FATBIN_DIR=DIR: a kernel change's fatbins
# against the embedded ones); several settings separated by ';' each get their own pass (ids ending _ab, _ab2, ...),
# and one setting may set several variables separated by ','. PEER=0 skips the PyTorch peer rows. SHAPES=FILE times
# the shapes of FILE (same columns as the list below) instead of the issue's; EXTRAS=0 skips the ncu and sanitizer
# steps (NCU=0 the ncu step alone: the sanitizers fit a 600 s call then); CONFORM=0 the conformance passes (a survey's
# or an A/B's call: the full call proves the build).
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT"
OUT=${OUT:-$ROOT/out-h200}
mkdir -p "$OUT/bench"
LOG=$OUT/run.log
exec > >(tee -a "$LOG") 2>&1
T0=$(date +%s)
BUDGET=${BUDGET:-460} # seconds; optional steps are skipped past it
elapsed() { echo $(( $(date +%s) - T0 )); }
step() { echo; echo "=== [$(elapsed)s] $*"; }
summary=()
note() { local m="$*"; summary+=("${m:0:220}"); echo ">>> $m"; }

step "machine"
nvidia-smi || true
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv || true
uname -a; nproc; command -v nvcc && nvcc --version | tail -2

step "build"
BUILD=$ROOT/${BUILD_DIR:-build-cuda}
usable() { # the carried build's tools run here and its cuda plugin loads (dlopen, symbols, probe)
    [ -x "$1/tools/attnrt-info" ] && [ -x "$1/tools/attnrt-conform" ] && [ -f "$1/plugins/cuda/attnrt_cuda.so" ] &&
        "$1/tools/attnrt-info" --help > /dev/null 2>&1 &&
        ATTNRT_PLUGIN_PATH="$1/plugins/cuda" ATTNRT_PLUGIN=cuda "$1/tools/attnrt-info" > "$OUT/usable-check.txt" 2>&1
}
if usable "$BUILD"; then
    note "build: using the carried $BUILD"
else
    echo "carried $BUILD missing or not runnable here; building on the device"
    BUILD=/tmp/attnrt-build-cuda
    rm -rf "$BUILD"
    if meson setup "$BUILD" -Dtests=disabled -Dbuildtype=release -Dcuda=enabled > "$OUT/build.log" 2>&1 &&
        ninja -C "$BUILD" >> "$OUT/build.log" 2>&1; then
        note "build: rebuilt on the device in $(elapsed)s"
    else
        tail -30 "$OUT/build.log"
        note "build: FAILED (see build.log)"
    fi
fi
export ATTNRT_PLUGIN_PATH="$BUILD/plugins/cuda:$BUILD/plugins/cpu"
unset ATTNRT_PLUGIN ATTNRT_DEVICE ATTNRT_CUDA_KERNELS

# Helper programs are compiled here against the build's libattnrt (gcc is on the device image).
CCFLAGS=(-O2 -std=c11 -D_GNU_SOURCE -I"$ROOT/runtime/include" -I"$ROOT/abi" -L"$BUILD/runtime" -Wl,-rpath,"$BUILD/runtime")
mkdir -p /tmp/attnrt-h200
gcc "${CCFLAGS[@]}" bench/h200/attn_timing.c -lattnrt -lm -o /tmp/attnrt-h200/attn_timing 2> "$OUT/attn_timing.build.txt" ||
    note "attn_timing: build failed (see attn_timing.build.txt)"
GRAPH=/tmp/attnrt-h200/cuda_graph_capture
if ! gcc "${CCFLAGS[@]}" -I"$ROOT/runtime/src" -I"$ROOT/plugins/cuda" -I/usr/local/cuda/include \
        tests/cuda/cuda_graph_capture.c -lattnrt -ldl -lm -o "$GRAPH" 2> "$OUT/graph.build.txt"; then
    GRAPH=$BUILD/tests/cuda/cuda_graph_capture # the carried one, if any
    [ -x "$GRAPH" ] || GRAPH=""
fi

step "attnrt-info"
"$BUILD/tools/attnrt-info" 2>&1 | tee "$OUT/attnrt-info.txt"
"$BUILD/tools/attnrt-info" --json > "$OUT/attnrt-info.json" 2>&1 || true

IFS=';' read -r -a AB_LIST <<< "${AB_ENV:-}"
ab_sfx() { [ "$1" -eq 0 ] && echo _ab || echo "_ab$(($1 + 1))"; }
# CONFORM=0 (short A/B or survey calls): no conformance passes (the full call runs them; ~2.5 minutes of device time)
rc=0
if [ "${CONFORM:-1}" = 1 ]; then
    step "attnrt-conform --plugin cuda (full default set)"
    timeout 300 "$BUILD/tools/attnrt-conform" --plugin cuda > "$OUT/conform-cuda.txt" 2>&1
    rc=$?
    grep -E "FAIL|fail" "$OUT/conform-cuda.txt" | head -40
    tail -3 "$OUT/conform-cuda.txt"
    note "conform cuda (auto kernels): exit $rc; $(tail -1 "$OUT/conform-cuda.txt")"
    # The attention cases once more with the settings NAME=VALUE ... into $OUT/FILE, a line in the summary (WHAT), the run's
    # exit status into rc on failure: conform_attn FILE WHAT [--streams] NAME=VALUE ...
    conform_attn() {
        local f="$OUT/$1" what=$2 rc_c flags=()
        shift 2
        [ "${1:-}" = --streams ] && flags=(--streams) && shift
        env "$@" timeout 200 "$BUILD/tools/attnrt-conform" --plugin cuda --filter attn "${flags[@]}" > "$f" 2>&1
        rc_c=$?
        grep -E "^FAIL" "$f" | head -20
        note "conform cuda ($what, attention cases): exit $rc_c; $(tail -1 "$f")"
        [ $rc_c -ne 0 ] && rc=$rc_c
        return 0
    }
    # every case on a stream: a mixed batch's decode kernel then starts in its prefill kernel's tail (a programmatic
    # dependent launch; on the NULL stream the launches stay plain)
    conform_attn "conform-cuda-streams.txt" "--streams: every case on a stream, mixed batches overlapped" --streams
    # the kernels a compute capability 8.0 device loads (no sm_90a fatbin, no tensor copies): what this card skips
    conform_attn "conform-cuda-sm80.txt" "ATTNRT_CUDA_KERNELS=sm80: an 8.0 device's kernels" ATTNRT_CUDA_KERNELS=sm80
    for i in "${!AB_LIST[@]}"; do # the A/B's other side(s)
        ab=${AB_LIST[$i]}
        conform_attn "conform-cuda$(ab_sfx "$i").txt" "$ab" ${ab//,/ }
    done
    if [ "$rc" -ne 0 ] && [ "$(elapsed)" -lt "$BUDGET" ]; then # diagnosis only: when the default kernels fail
        step "attnrt-conform --plugin cuda with ATTNRT_CUDA_KERNELS=simt (every attention on the SIMT kernel)"
        ATTNRT_CUDA_KERNELS=simt timeout 240 "$BUILD/tools/attnrt-conform" --plugin cuda --filter attn > "$OUT/conform-cuda-simt.txt" 2>&1
        rc=$?
        grep -E "FAIL" "$OUT/conform-cuda-simt.txt" | head -20
        note "conform cuda (simt, attention cases): exit $rc; $(tail -1 "$OUT/conform-cuda-simt.txt")"
    fi
else
    note "conformance: skipped (CONFORM=0)"
fi

step "ATTNRT_CUDA_FATBIN_DIR: an unreadable fatbin must fail the device's open with a message (docs/backends/cuda.md)"
mkdir -p /tmp/attnrt-badfatbin && : > /tmp/attnrt-badfatbin/attnrt_cuda_kernels_sm90a.fatbin
ATTNRT_CUDA_FATBIN_DIR=/tmp/attnrt-badfatbin ATTNRT_PLUGIN_PATH="$BUILD/plugins/cuda" "$BUILD/tools/attnrt-info" > "$OUT/fatbin-dir-bad.txt" 2>&1
if grep -q "ATTNRT_CUDA_FATBIN_DIR: cannot read /tmp/attnrt-badfatbin/attnrt_cuda_kernels_sm90a.fatbin" "$OUT/fatbin-dir-bad.txt"; then
    note "fatbin dir, unreadable file: refused with its message (PASSED)"
else
    note "fatbin dir, unreadable file: FAILED (no refusal message; see fatbin-dir-bad.txt)"
fi

step "graph capture (Driver API capture of kv_write + attention_run, replay, bit-exact)"
if [ -n "$GRAPH" ]; then
    timeout 120 "$GRAPH" 2>&1 | tee "$OUT/graph-capture.txt"
    note "graph capture: exit ${PIPESTATUS[0]}; $(tail -1 "$OUT/graph-capture.txt")"
else
    note "graph capture: could not build the program (see graph.build.txt)"
fi

if [ "${CONFORM:-1}" = 1 ]; then
    step "kernel coverage: each kernel-table row on a call its rule serves, against the cpu plugin"
    COVER=/tmp/attnrt-h200/cuda_kernel_coverage
    if gcc "${CCFLAGS[@]}" -I"$ROOT/plugins/cuda" -I/usr/local/cuda/include tests/cuda/cuda_kernel_coverage.c -lattnrt -lm \
            -o "$COVER" 2> "$OUT/coverage.build.txt"; then
        timeout 300 "$COVER" 2>&1 | tee "$OUT/kernel-coverage.txt"
        note "kernel coverage: exit ${PIPESTATUS[0]}; $(tail -1 "$OUT/kernel-coverage.txt")"
    else
        note "kernel coverage: could not build the program (see coverage.build.txt)"
    fi
fi

step "attention timings"
# id op batch ctx new_tokens heads kv_heads head_dim block_size kv_dtype peer [extra attnrt-bench words, ',' for ' ']
cat > "$OUT/shapes.txt" << 'EOF'
dec_b64_c4096        decode  64  4096 1    32 8 128 16  bf16     1
dec_b64_c4096_rerun  decode  64  4096 1    32 8 128 16  bf16     0
dec_b256_c2048       decode  256 2048 1    32 8 128 16  bf16     1
dec_b16_c32768       decode  16  32768 1   32 8 128 16  bf16     1
dec_bs1              decode  64  4096 1    32 8 128 1   bf16     0
dec_bs16             decode  64  4096 1    32 8 128 16  bf16     0
dec_bs64             decode  64  4096 1    32 8 128 64  bf16     0
dec_bs256            decode  64  4096 1    32 8 128 256 bf16     0
dec_b64_inorder      decode  64  4096 1    32 8 128 16  bf16     0 --blocks,in-order
dec_b64_hnd          decode  64  4096 1    32 8 128 16  bf16     0 --layout,hnd
dec_b64_c4096_fp8    decode  64  4096 1    32 8 128 16  fp8_e4m3 0
dec_b256_c2048_fp8   decode  256 2048 1    32 8 128 16  fp8_e4m3 0
dec_b16_c32768_fp8   decode  16  32768 1   32 8 128 16  fp8_e4m3 0
dec_b64_fp8_hnd      decode  64  4096 1    32 8 128 16  fp8_e4m3 0 --layout,hnd
dec_b64_c4096_s      decode  64  4096 1    32 8 128 16  bf16     0 stream
dec_b256_c2048_s     decode  256 2048 1    32 8 128 16  bf16     0 stream
dec_b16_c32768_s     decode  16  32768 1   32 8 128 16  bf16     0 stream
dec_b64_c4096_fp8_s  decode  64  4096 1    32 8 128 16  fp8_e4m3 0 stream
dec_b256_c2048_fp8_s decode  256 2048 1    32 8 128 16  fp8_e4m3 0 stream
dec_b16_c32768_fp8_s decode  16  32768 1   32 8 128 16  fp8_e4m3 0 stream
pre_d128             prefill 4   4096 4096 32 8 128 16  bf16     1
pre_d64              prefill 4   4096 4096 32 8 64  16  bf16     1
pre_d256             prefill 4   4096 4096 32 8 256 16  bf16     1
pre_d128_fp8         prefill 4   4096 4096 32 8 128 16  fp8_e4m3 0
pre_d64_fp8          prefill 4   4096 4096 32 8 64  16  fp8_e4m3 0
pre_d256_fp8         prefill 4   4096 4096 32 8 256 16  fp8_e4m3 0
EOF
if [ -n "${SHAPES:-}" ]; then grep -vE '^(#|$)' "$SHAPES" > "$OUT/shapes.txt"; fi
for i in "${!AB_LIST[@]}"; do
    for id in dec_b64_c4096_fp8 dec_b256_c2048_fp8 dec_b16_c32768_fp8; do
        grep -E "^$id " "$OUT/shapes.txt" | awk -v e="env:${AB_LIST[$i]}" -v x="$(ab_sfx "$i")" '{ $1 = $1 x; print $0, e }' >> "$OUT/shapes.txt"
    done
done
if [ -n "${ROWS:-}" ]; then grep -E "^(${ROWS})" "$OUT/shapes.txt" > "$OUT/shapes.sel" && mv "$OUT/shapes.sel" "$OUT/shapes.txt"; fi
if [ -x "$BUILD/tools/attnrt-bench" ]; then TIMER=("$BUILD/tools/attnrt-bench" --plugin cuda); else TIMER=(/tmp/attnrt-h200/attn_timing --plugin cuda); fi
note "timer: ${TIMER[0]}"
while read -r id op b ctx new hq hkv d bs kv peer extra; do
    [ -z "$id" ] && continue
    if [ "$(elapsed)" -ge "$BUDGET" ]; then note "timing $id: skipped (time budget)"; continue; fi
    args=(--op "$op" --batch "$b" --ctx "$ctx" --heads "$hq" --kv-heads "$hkv" --head-dim "$d" --block-size "$bs"
          --dtype bf16 --kv-dtype "$kv" --iters 20 --warmup 3 --json)
    [ "$op" = prefill ] && args+=(--new-tokens "$new")
    timer=("${TIMER[@]}")
    if [ "${extra#env:}" != "${extra:-}" ]; then # env:NAME=VALUE[,NAME=VALUE]: the row runs with them set
        vars=${extra#env:}
        timer=(env ${vars//,/ } "${TIMER[@]}")
    elif [ "${extra:-}" = stream ]; then # attn_timing: events on a created stream, no host sync inside the region
        timer=(/tmp/attnrt-h200/attn_timing --plugin cuda)
    elif [ -n "${extra:-}" ]; then
        args+=(${extra//,/ })
    fi
    echo "$ ${timer[*]} ${args[*]}" | tee "$OUT/bench/$id.cmd"
    timeout 90 "${timer[@]}" "${args[@]}" > "$OUT/bench/$id.json" 2> "$OUT/bench/$id.err"
    rc=$?
    if [ $rc -ne 0 ] && [ "${timer[0]}" != /tmp/attnrt-h200/attn_timing ] && [ -x /tmp/attnrt-h200/attn_timing ]; then
        note "timing $id: ${timer[0]##*/} exit $rc ($(tail -1 "$OUT/bench/$id.err")); retrying with attn_timing"
        timeout 90 /tmp/attnrt-h200/attn_timing --plugin cuda "${args[@]}" > "$OUT/bench/$id.json" 2>> "$OUT/bench/$id.err"
        rc=$?
    fi
    [ $rc -ne 0 ] && { note "timing $id: exit $rc: $(tail -2 "$OUT/bench/$id.err" | tr '\n' ' ')"; }
    grep -E '"median"|gb_per_s"|gflop_per_s"' "$OUT/bench/$id.json" | head -3 | tr -s ' ' | tr '\n' ' '; echo
done < "$OUT/shapes.txt"

step "mixed batches: decodes + one prefill chunk in one run, and each part alone (attnrt-bench --op mixed)"
# the two launches of a mixed run overlap on a created stream (docs/backends/cuda.md): mixed / parts below 1 is that
for m in "64 4096 2048 2048 bf16" "64 4096 2048 2048 fp8_e4m3" "16 2048 256 2048 bf16" "32 8192 8192 8192 bf16"; do
    read -r b c n p kv <<< "$m"
    id=mix_b${b}_c${c}_n${n}_$kv
    if [ "$(elapsed)" -ge "$BUDGET" ] || [ ! -x "$BUILD/tools/attnrt-bench" ]; then note "timing $id: skipped"; continue; fi
    "$BUILD/tools/attnrt-bench" --plugin cuda --op mixed --batch "$b" --ctx "$c" --new-tokens "$n" --prefill-ctx "$p" \
        --heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16 --kv-dtype "$kv" --timing queued --iters 20 \
        --warmup 3 --no-ceiling --json > "$OUT/bench/$id.json" 2> "$OUT/bench/$id.err"
    note "$id: exit $?; $(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("mixed %.4f ms, parts %.4f + %.4f ms, mixed / parts %.3f" % (r["time_ms"]["median"], r["part_decode_ms"]["median"], r["part_prefill_ms"]["median"], r["mixed_over_parts"]))' "$OUT/bench/$id.json" 2>&1 | tail -1)"
done

step "peer: PyTorch scaled_dot_product_attention (flash, cuDNN), dense KV"
if [ "${PEER:-1}" = 1 ] && [ "$(elapsed)" -lt "$((BUDGET + 60))" ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
    specs=()
    while read -r id op b ctx new hq hkv d bs kv peer extra; do
        [ "$peer" = 1 ] && specs+=("$id:$op:$b:$ctx:$new:$hq:$hkv:$d")
    done < "$OUT/shapes.txt"
    rm -f "$OUT/peer.jsonl"
    timeout 150 python3 bench/h200/peer_sdpa.py "$OUT/peer.jsonl" "${specs[@]}" > "$OUT/peer.txt" 2>&1
    note "peer: exit $?; $(head -1 "$OUT/peer.txt")"
    timeout 60 python3 bench/h200/peer_matmul.py "$OUT/matmul.json" > "$OUT/matmul.txt" 2>&1 # prefill's ceiling
    note "$(tail -1 "$OUT/matmul.txt")"
else
    note "peer: skipped (no torch with CUDA, or out of time)"
fi

if [ "${EXTRAS:-1}" = 1 ] && [ "${NCU:-1}" = 1 ] && [ "$(elapsed)" -lt "$BUDGET" ] && command -v ncu > /dev/null &&
    [ -x "$BUILD/tools/attnrt-bench" ]; then
    step "ncu (hardware counters, --clock-control none): one launch of each tensor-core kernel of three shapes"
    prof() { # id kernel-regex bench-args...
        local id=$1 kre=$2; shift 2
        timeout 90 ncu --clock-control none -k "regex:$kre" -c 1 --section SpeedOfLight --section Occupancy \
            --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
            --section InstructionStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
            "$BUILD/tools/attnrt-bench" --plugin cuda "$@" --iters 1 --warmup 0 > "$OUT/ncu-$id.txt" 2>&1
        echo "--- ncu $id (exit $?)"
        grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Theoretical Occ|Achieved Occ|Warp Cycles Per Issued|Issued Warp|Executed Instructions  |Grid Size" "$OUT/ncu-$id.txt" | head -14
        grep -E "issue_stalled_.*ratio" "$OUT/ncu-$id.txt" | awk '$NF+0 >= 0.2' | sed -E 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -12
    }
    common=(--heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16)
    prof dec_bf16 ck_attn_mma_decode --op decode --batch 64 --ctx 4096 "${common[@]}" --kv-dtype bf16
    prof dec_fp8 ck_attn_mma_decode --op decode --batch 64 --ctx 4096 "${common[@]}" --kv-dtype fp8_e4m3
    if [ "${NCU_SOURCE:-1}" = 1 ] && [ "$(elapsed)" -lt "$BUDGET" ]; then
        # per-SASS-instruction warp-state samples of the bf16 decode kernel (where its warps wait), from a
        # saved report (-lineinfo builds); the CSV is kept in results.tgz
        timeout 90 ncu --clock-control none -k "regex:ck_attn_mma_decode" -c 1 --section WarpStateStats --section SourceCounters \
            -o "$OUT/ncu-dec_bf16-src" "$BUILD/tools/attnrt-bench" --plugin cuda --op decode --batch 64 --ctx 4096 "${common[@]}" \
            --kv-dtype bf16 --iters 1 --warmup 0 > "$OUT/ncu-dec_bf16-src.log" 2>&1 &&
            timeout 60 ncu --import "$OUT/ncu-dec_bf16-src.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu-dec_bf16-sass.csv" 2>&1
        echo "--- ncu source page (exit $?): $(wc -l < "$OUT/ncu-dec_bf16-sass.csv" 2> /dev/null) lines"
    fi
    prof pre_d128 "ck_attn_(mma_)?prefill" --op prefill --batch 4 --ctx 4096 --new-tokens 4096 "${common[@]}" --kv-dtype bf16
    if command -v cuobjdump > /dev/null; then
        for fb in attention decode; do
            cuobjdump -res-usage "$BUILD/plugins/cuda/attnrt_cuda_kernels_$fb.fatbin" 2> /dev/null | grep -A1 -E "attn_(mma_)?(decode|prefill)_bf16_((kv16|fp8)_)?d128"
        done > "$OUT/ncu-resources.txt"
        for f in ck_attn_mma_decode_bf16_kv16_d128 ck_attn_prefill_bf16_d128 ck_attn_mma_decode_bf16_fp8_d128; do
            fb=attention; case $f in *_decode_*) fb=decode ;; esac
            cuobjdump -sass -arch sm_90 -fun "$f" "$BUILD/plugins/cuda/attnrt_cuda_kernels_$fb.fatbin" > "$OUT/sass-$f.txt" 2> /dev/null
            n=$(grep -cE "^ +/\*[0-9a-f]{4,}\*/" "$OUT/sass-$f.txt")
            echo "sass $f (sm_90): $n instructions" | tee -a "$OUT/ncu-resources.txt"
        done
        cat "$OUT/ncu-resources.txt"
    fi
fi

if [ "${EXTRAS:-1}" = 1 ] && [ "$(elapsed)" -lt "$BUDGET" ] && command -v compute-sanitizer > /dev/null; then
    step "compute-sanitizer (memcheck, racecheck) on a few conformance cases"
    # sanitize TOOL CASE TAG WHAT [NAME=VALUE ...]: compute-sanitizer --tool TOOL on conformance case CASE under the
    # settings into $OUT/sanitizer-TOOL-CASE[-TAG].txt, its summary line (WHAT) in the summary
    # (--streams first among the settings: the case on a stream of its own)
    sanitize() {
        local tool=$1 f=$2 tag=$3 what=$4 file flags=()
        shift 4
        [ "${1:-}" = --streams ] && flags=(--streams) && shift
        file="$OUT/sanitizer-$tool-$f${tag:+-$tag}.txt"
        env "$@" timeout 60 compute-sanitizer --tool "$tool" --print-limit 20 "$BUILD/tools/attnrt-conform" --plugin cuda \
            --filter "$f" --cases 0 "${flags[@]}" > "$file" 2>&1
        note "$tool ($f${what:+, $what}): exit $?; $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$file" | tail -1)"
    }
    sanitize memcheck attn-d128-gqa8 "" ""
    sanitize racecheck attn-long-decode "" ""
    for tool in memcheck racecheck; do
        # the decode kernel's tensor-copy form (sm_90: boxes landing on mbarriers, absent rows zeroed), on the D 64
        # cases, a bf16 D 128 one with splits and head groups, the D 256 one, and fp8 D 128 in 8-row boxes (block 24)
        for f in attn-dec-d64-tma attn-dec-mqa32 attn-dec-d256-tma attn-dec-e4m3-bs24; do
            sanitize $tool $f "" "tensor copies"
        done
        # the persistent prefill kernel (tensor copies into Q slots and K / V rings on mbarriers, two consumer warpgroups
        # in turns): a block size of 48 in HND, D 256 with a window and sinks, non-causal D 64, a group of 3 heads (Q boxes
        # of 126 rows); its fp8-cache forms (fp8 rows landing in their ring stage's upper half at D 128 / 256, in a staging
        # slot at D 64, widened by the producer; K read by e4m3 products), D 64's 192-key tiles
        for f in attn-pf-wg-bs48-hnd attn-pf-wg-d256-window attn-pf-noncausal attn-pf-ws-g3 attn-pf-ws-e4m3 \
            attn-pf-ws-e5m2-d64-hnd attn-pf-ws-e4m3-d256 attn-pf-ws-e5m2-kd attn-pf-ws-e4m3-d256-kd attn-pf-ws-d64-n192 \
            attn-pf-ws-f16-n192; do
            sanitize $tool $f ws "persistent prefill"
        done
        # a mixed batch on a stream (its decode kernel launched to overlap the prefill kernel; the prefill's blocks
        # taking items as they are ready)
        sanitize $tool attn-pf-ws-e4m3 streams "mixed batch on a stream" --streams
        sanitize $tool attn-pf-ws-g3 streams "mixed batch on a stream" --streams
        # wide groups (32-row tiles or the persistent kernel's decode form), fp8 in 2-warp blocks, 16-bit D 128 in
        # 8-warp blocks (the long requests' ~64 splits), pure decode on the persistent kernel in key splits (partials,
        # the last split's merge in the consumers)
        for f in attn-dec-wide-g24 attn-dec-wide-g64-d64 attn-dec-e4m3-w2 attn-dec-max-splits attn-dec-ws-mqa \
            attn-dec-ws-g64-d64 attn-dec-ws-g256-d256; do
            sanitize $tool $f "" "the plan's decode kernel"
        done
    done
fi

step "table"
{
    echo "# libattnrt cuda plugin on the H200 — $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "Command: \`bash bench/h200/run.sh\` (one call); GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)."
    echo "attnrt timer: \`${TIMER[*]}\` (median of 20 event-timed runs after 3 warm-ups); peer: bench/h200/peer_sdpa.py."
    echo
    python3 bench/h200/table.py "$OUT" 2>&1
    echo
    echo "Conformance: $(tail -1 "$OUT/conform-cuda.txt" 2>/dev/null || echo "skipped (CONFORM=0)") (report: conform-cuda.txt)."
    echo "Graph capture: $(tail -1 "$OUT/graph-capture.txt" 2>/dev/null)."
} > "$OUT/h200.md"
cat "$OUT/h200.md"

step "summary ($(elapsed)s)"
for s in "${summary[@]}"; do echo "  $s"; done
# The device tool brings back at most 8 files: everything in one archive, plus the table and the report.
( cd "$OUT" && tar czf /tmp/attnrt-h200-results.tgz --exclude=results.tgz . && mv /tmp/attnrt-h200-results.tgz results.tgz &&
  find . -type f ! -name results.tgz ! -name h200.md ! -name conform-cuda.txt ! -name conform-cuda-sm80.txt ! -name conform-cuda-streams.txt ! -name kernel-coverage.txt ! -name run.log -delete &&
  find . -mindepth 1 -type d -empty -delete ) 2> /dev/null || true
