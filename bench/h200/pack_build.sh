#!/usr/bin/env bash
# bench/h200/pack_build.sh BUILD TARBALL — the parts of a cuda build a device call needs (runtime, plugins, tools, the
# GPU test programs, the ops tests and the cmocka they link), as one xz tarball small enough to carry: the device has
# nvcc but no cmocka, and the carry limit is 64 MiB. Unpacked, the tree is BUILD's layout under its own name.
set -euo pipefail
BUILD=${1%/} TARBALL=$2
files=(runtime/libattnrt.so* plugins/cuda/attnrt_cuda.so plugins/cpu/attnrt_cpu.so
       tools/attnrt-conform tools/attnrt-bench tools/attnrt-info
       tests/cuda/cuda_graph_capture tests/cuda/cuda_graph_capture_ops tests/cuda/cuda_graph_replay
       tests/cuda/cuda_native_stream tests/cuda/cuda_kernel_coverage
       tests/ops/test_ops_capacity tests/ops/test_ops_concurrent_runs)
cmocka=$(ldconfig -p | awk '/libcmocka.so.0 /{print $NF; exit}')
mkdir -p "$BUILD/lib" && cp -L "$cmocka" "$BUILD/lib/"
(cd "$BUILD/.." && tar -cJf "$OLDPWD/$TARBALL" $(for f in "${files[@]}"; do printf '%s/%s ' "$(basename "$BUILD")" "$f"; done) \
    "$(basename "$BUILD")/lib")
ls -la "$TARBALL"
