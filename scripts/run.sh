#!/usr/bin/env bash
# The main job: build libattnrt, probe plugins and devices, run the example engine on the best device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release
ninja -C build
build/tools/attnrt-info
if [ -x build/examples/mini_engine ]; then
  build/examples/mini_engine "$@"
fi
