#!/usr/bin/env bash
# bench/h200/compare_builds.sh BASE_BUILD NEW_BUILD — proves a refactor changed nothing on the GPU, in one
# device call: attnrt-conform --plugin cuda for each build, then every bench row on both builds interleaved
# (base, new, base, new) so clock drift hits both alike. Output: $OUT/compare.txt (a table of medians).
# ROWS=REGEX keeps only the rows whose arguments match; CONFORM=0 skips the conformance runs (a short call).
set -u
BASE=$(cd "$1" && pwd) NEW=$(cd "$2" && pwd)
OUT=${OUT:-out-compare}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/compare.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
for b in "$BASE" "$NEW"; do
    [ "${CONFORM:-1}" = 0 ] && break
    tag=$(basename "$b")
    ATTNRT_PLUGIN_PATH="$b/plugins/cuda" timeout 300 "$b/tools/attnrt-conform" --plugin cuda \
        > "$OUT/conform-$tag.txt" 2>&1
    echo "conform $tag: exit $? $(grep -E 'passed|failed' "$OUT/conform-$tag.txt" | tail -1)"
done
rows=(
  "--op decode --batch 64 --ctx 4096 --heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16"
  "--op decode --batch 256 --ctx 2048 --heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16"
  "--op decode --batch 16 --ctx 32768 --heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16"
  "--op decode --batch 64 --ctx 4096 --heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16 --kv-dtype fp8_e4m3"
  "--op decode --batch 16 --ctx 32768 --heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16 --kv-dtype fp8_e4m3"
  "--op decode --batch 64 --ctx 4096 --heads 32 --kv-heads 8 --head-dim 64 --block-size 16 --dtype bf16"
  "--op prefill --batch 4 --ctx 4096 --new-tokens 4096 --heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16"
  "--op prefill --batch 4 --ctx 4096 --new-tokens 4096 --heads 32 --kv-heads 8 --head-dim 64 --block-size 16 --dtype bf16"
  "--op prefill --batch 4 --ctx 4096 --new-tokens 4096 --heads 32 --kv-heads 8 --head-dim 256 --block-size 16 --dtype bf16"
  "--op prefill --batch 4 --ctx 4096 --new-tokens 4096 --heads 32 --kv-heads 8 --head-dim 128 --block-size 16 --dtype bf16 --kv-dtype fp8_e4m3"
  "--op mla_decode --heads 128 --kv-heads 1 --head-dim 576 --v-dim 512 --block-size 64 --dtype bf16 --batch 64 --ctx 4096"
  "--op mla_decode --heads 128 --kv-heads 1 --head-dim 576 --v-dim 512 --block-size 64 --dtype bf16 --batch 64 --ctx 4096 --topk 2048"
  "--op lightning_decode --batch 256 --heads 32 --kv-heads 32 --head-dim 128 --dtype bf16"
  "--op gdn_decode --batch 256 --heads 32 --kv-heads 16 --head-dim 128 --dtype bf16"
)
med() { python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["time_ms"]["median"])' "$1" 2>/dev/null; }
printf '%-118s %10s %10s %7s\n' "attnrt-bench --plugin cuda --iters 30 --warmup 5" base_ms new_ms new/base > "$OUT/compare.txt"
for r in "${rows[@]}"; do
    [ -n "${ROWS:-}" ] && ! [[ $r =~ $ROWS ]] && continue
    for pass in 1 2; do
        for b in "$BASE" "$NEW"; do
            tag=$(basename "$b")
            ATTNRT_PLUGIN_PATH="$b/plugins/cuda" timeout 60 "$b/tools/attnrt-bench" --plugin cuda --iters 30 --warmup 5 $r --json \
                > "$OUT/row-$tag-$pass.json" 2> "$OUT/row-$tag-$pass.err"
        done
    done
    b1=$(med "$OUT/row-$(basename "$BASE")-2.json"); n1=$(med "$OUT/row-$(basename "$NEW")-2.json")
    ratio=$(awk -v a="${b1:-0}" -v b="${n1:-0}" 'BEGIN { if (a > 0) printf "%.3f", b / a; else print "-" }')
    printf '%-118s %10s %10s %7s\n' "$r" "${b1:--}" "${n1:--}" "$ratio" | tee -a "$OUT/compare.txt"
done
