#!/usr/bin/env bash
# bench/h200/run_integration.sh TARBALL — the engine-integration proof on a GPU, in one device call (docs/perf/h200.md,
# "Engine integration"): conformance of the cuda plugin, graph capture, the engine's own stream and events wrapped,
# one capture replayed across batches of a capacity plan, the capacity tests on cuda:0, and the Python package's
# tests with torch CUDA tensors (torch.cuda.graph replayed with new batches against SDPA). Writes $OUT/*.txt.
# TARBALL: bench/h200/pack_build.sh's; PYDEPS (optional): a folder with pytest, used when the device's Python has none.
set -u
TARBALL=$1
OUT=${OUT:-out-integration}
mkdir -p "$OUT"
tar -xJf "$TARBALL"
N=$PWD/$(tar -tJf "$TARBALL" | head -1 | cut -d/ -f1)
export LD_LIBRARY_PATH=$N/runtime:$N/lib
export ATTNRT_PLUGIN_PATH=$N/plugins/cuda:$N/plugins/cpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
step() { # name timeout command...
    local name=$1 limit=$2
    shift 2
    timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
    echo "$name: exit $? | $(grep -E 'PASSED|FAILED|passed|failed' "$OUT/$name.txt" | tail -1)"
}
step graph-replay 120 "$N/tests/cuda/cuda_graph_replay"
step native-stream 60 "$N/tests/cuda/cuda_native_stream"
ATTNRT_DEVICE=cuda:0 step ops-capacity 120 "$N/tests/ops/test_ops_capacity"
python3 -c 'import pytest' 2>/dev/null || export PYTHONPATH=${PYDEPS:-}
(cd python && ATTNRT_LIBRARY=$N/runtime/libattnrt.so \
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_torch_cuda.py > "$OUT/python-torch.txt" 2>&1
 echo "python-torch: exit $? | $(tail -1 "$OUT/python-torch.txt")")
(cd python && ATTNRT_LIBRARY=$N/runtime/libattnrt.so ATTNRT_PLUGIN_PATH=$N/plugins/cpu ATTNRT_DEVICE=cpu:0 \
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests > "$OUT/python-cpu.txt" 2>&1
 echo "python-cpu (device's python/numpy): exit $? | $(tail -1 "$OUT/python-cpu.txt")")
# then the rest, longest last (a call cut short keeps what the steps above wrote)
step graph-capture 60 "$N/tests/cuda/cuda_graph_capture"
step graph-capture-ops 60 "$N/tests/cuda/cuda_graph_capture_ops"
ATTNRT_DEVICE=cuda:0 step ops-concurrent 120 "$N/tests/ops/test_ops_concurrent_runs"
step conform-cuda 200 "$N/tools/attnrt-conform" --plugin cuda
