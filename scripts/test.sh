#!/usr/bin/env bash
# The whole test suite: a warnings-as-errors build and its tests, then the same under ASan + UBSan, then
# the threaded tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

[ -f build-ci/build.ninja ] || meson setup build-ci -Dwerror=true -Dtests=enabled
ninja -C build-ci
meson test -C build-ci --print-errorlogs

# The sanitizer build takes the cuda plugin's kernel images from build-ci (just built from the same
# sources; nvcc's flags do not depend on the host build type) instead of compiling them a second time.
[ -f build-asan/build.ninja ] || meson setup build-asan -Dwerror=true -Dtests=enabled \
  -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dfatbins_from="$PWD/build-ci"
ninja -C build-asan
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-asan --print-errorlogs

# ThreadSanitizer on the threaded tests (suite 'threads'; the cuda plugin is not built here).
[ -f build-tsan/build.ninja ] || meson setup build-tsan -Dwerror=true -Dtests=enabled -Dcuda=disabled \
  -Db_sanitize=thread
ninja -C build-tsan
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  meson test -C build-tsan --suite threads --print-errorlogs
# The libFuzzer target over plan + run (tests/fuzz), built with clang, runtime and plugins instrumented
# under ASan + UBSan: one seeded minute from the committed corpus (suite 'fuzz'). Only the target and the
# cpu plugin it runs on are built here.
[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dwerror=true -Dtests=enabled -Dcuda=disabled \
  -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link
ninja -C build-fuzz tests/fuzz/attnrt-fuzz plugins/cpu/attnrt_cpu.so
meson test -C build-fuzz --no-rebuild --suite fuzz --print-errorlogs
echo "test.sh: all tests passed (plain, ASan+UBSan, ThreadSanitizer and fuzz builds)"
