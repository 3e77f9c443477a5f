#!/usr/bin/env bash
# The install, as a user gets it: `meson install` of this build into a temporary folder, the prefix MOVED
# to another path, then with no environment (no ATTNRT_*, no LD_LIBRARY_PATH): the moved attnrt-info lists
# cpu:0; a C program built through pkg-config, one built through CMake's find_package and one from a Meson
# project that uses libattnrt as a subproject each run kv_write and attention on cpu:0 and check them;
# examples/vendor_plugin is built against the moved prefix and checked by the moved attnrt-conform.
# Nothing under the moved prefix may name the build or source folder.
#
# usage: run.sh BUILD_DIR SOURCE_DIR PREFIX BINDIR LIBDIR MESON CMAKE PKG_CONFIG CC
# (tests/install/meson.build passes them: the build's install locations and the tools it found)
set -euo pipefail
if [ $# -ne 9 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR PREFIX BINDIR LIBDIR MESON CMAKE PKG_CONFIG CC" >&2
  exit 2
fi
build=$(realpath "$1") src=$(realpath "$2") prefix=$3 bindir=$4 libdir=$5
meson=$6 cmake=$7 pkg_config=$8 cc=$9
here="$src/tests/install"

fail() { echo "install test: FAILED: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }

case "$bindir$libdir" in
  /*) echo "install test: skipped: bindir ($bindir) and libdir ($libdir) must lie inside the prefix to move it"
      exit 77 ;;
esac
for tool in "$meson" "$cmake" "$pkg_config" "$cc"; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/install-deps.sh installs cmake and pkg-config)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/attnrt-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
work=$(realpath "$work")

# Programs run with nothing but a PATH holding the tools; no ATTNRT_*, no LD_LIBRARY_PATH.
tool_path=/usr/bin:/bin
for tool in "$meson" "$cmake" "$pkg_config" "$cc"; do
  tool_path="$(dirname "$(command -v "$tool")"):$tool_path"
done
clean() { env -i PATH="$tool_path" HOME="$work" LC_ALL=C "$@"; }

step "meson install --destdir, then move the prefix"
"$meson" install -C "$build" --no-rebuild --destdir "$work/destdir" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "meson install"; }
[ -d "$work/destdir$prefix" ] || fail "meson install put nothing under $work/destdir$prefix"
mkdir "$work/elsewhere"
mv "$work/destdir$prefix" "$work/elsewhere/attnrt"
rm -rf "$work/destdir"
P="$work/elsewhere/attnrt"
lib="$P/$libdir"
plugins="$lib/attnrt/plugins"
echo "prefix $prefix moved to $P"
for f in "$P/$bindir/attnrt-info" "$P/$bindir/attnrt-conform" "$lib/libattnrt.so" "$plugins/attnrt_cpu.so" \
         "$lib/pkgconfig/attnrt.pc" "$lib/pkgconfig/attnrt-plugin.pc" "$lib/cmake/attnrt/attnrtConfig.cmake" \
         "$lib/cmake/attnrt/attnrtConfigVersion.cmake" "$P/include/attnrt/attnrt.h" "$P/include/attnrt/attnrt_plugin.h"; do
  [ -e "$f" ] || fail "not installed: ${f#"$P"/}"
done

step "no build or source path under the prefix"
# One exception: nvcc's -lineinfo records the folder it compiled the cuda kernels from (nvcc has no prefix
# map), so attnrt_cuda.so may name <build>/../plugins/cuda/kernels, and nothing else.
nvcc_lineinfo="$build/../plugins/cuda/kernels"
while read -r hit; do
  [ -n "$hit" ] || continue
  if [ "$(basename "$hit")" = attnrt_cuda.so ] &&
     ! strings -a "$hit" | grep -F -e "$build" -e "$src" | grep -qvxF "$nvcc_lineinfo"; then
    echo "note: ${hit#"$P"/}: its kernels' line info names $nvcc_lineinfo (nvcc -lineinfo)"
    continue
  fi
  fail "${hit#"$P"/} names $build or $src: $(strings -a "$hit" | grep -F -m 3 -e "$build" -e "$src" | tr '\n' ' ')"
done < <(grep -rlF -e "$build" -e "$src" "$P" || true)
for pc in attnrt attnrt-plugin; do
  # shellcheck disable=SC2016 # a literal ${pcfiledir}
  grep -q '^prefix=${pcfiledir}/' "$lib/pkgconfig/$pc.pc" || fail "$pc.pc: prefix is not relative to \${pcfiledir}"
done
echo "ok"

step "the moved attnrt-info finds cpu:0 in the moved prefix"
clean "$P/$bindir/attnrt-info" >"$work/info.txt" 2>&1 || { cat "$work/info.txt" >&2; fail "attnrt-info failed"; }
grep -q 'cpu:0.*usable' "$work/info.txt" || { cat "$work/info.txt" >&2; fail "attnrt-info: no usable cpu:0"; }
grep -qF "path: $plugins/attnrt_cpu.so" "$work/info.txt" ||
  { cat "$work/info.txt" >&2; fail "attnrt-info: the cpu plugin is not the one in $plugins"; }
grep -E 'cpu:0|path:' "$work/info.txt"

step "C consumer through pkg-config"
pc() { clean PKG_CONFIG_PATH="$lib/pkgconfig" "$pkg_config" "$@"; }
version=$(pc --modversion attnrt)
flags=$(pc --cflags --libs attnrt)
echo "pkg-config attnrt $version: $flags"
[ -z "$(pc --libs attnrt-plugin)" ] || fail "pkg-config --libs attnrt-plugin is not empty: a plugin links nothing"
mkdir "$work/pc"
# shellcheck disable=SC2086 # pkg-config's flags are words
clean "$cc" -std=c11 -Wall -Wextra -Werror -o "$work/pc/consumer" "$here/consumer.c" $flags -lm -Wl,-rpath,"$lib"
# shellcheck disable=SC2046
clean "$cc" -std=c11 -Wall -Wextra -Werror -fPIC -shared -o "$work/pc/plugin_headers.so" "$here/plugin_headers.c" \
  $(pc --cflags attnrt-plugin)
clean "$work/pc/consumer" "$plugins" | tee "$work/pc/out.txt"
grep -qF "libattnrt $version " "$work/pc/out.txt" ||
  fail "pkg-config says version $version, the library says: $(head -1 "$work/pc/out.txt")"

step "C consumer through CMake's find_package(attnrt)"
cmake_run() {
  clean "$cmake" -S "$here/cmake_consumer" -B "$work/cmake-$1" -DCMAKE_PREFIX_PATH="$P" \
    -DATTNRT_WANT_VERSION="$2" >"$work/cmake-$1.log" 2>&1
}
cmake_run build "$version" || { cat "$work/cmake-build.log" >&2; fail "cmake configure"; }
grep 'attnrt .* from' "$work/cmake-build.log"
clean "$cmake" --build "$work/cmake-build" >"$work/cmake-make.log" 2>&1 || { cat "$work/cmake-make.log" >&2; fail "cmake --build"; }
[ "$(cat "$work/cmake-build/attnrt_plugin_dir.txt")" = "$plugins" ] ||
  fail "attnrt_PLUGIN_DIR is $(cat "$work/cmake-build/attnrt_plugin_dir.txt"), not $plugins"
clean "$work/cmake-build/attnrt_consumer" "$plugins"
next_major=$(( ${version%%.*} + 1 )).0
if cmake_run too-new "$next_major"; then fail "find_package(attnrt $next_major) accepted version $version"; fi
grep -q "attnrtConfig.cmake, version: $version" "$work/cmake-too-new.log" || { cat "$work/cmake-too-new.log" >&2; fail "find_package(attnrt $next_major) failed for another reason"; }
echo "find_package(attnrt $next_major): refused, as it should be"

step "Meson project with libattnrt as a subproject (plain dependency('attnrt'))"
mkdir -p "$work/meson/subprojects"
cp "$here/subproject_consumer/meson.build" "$here/consumer.c" "$here/plugin_headers.c" "$work/meson/"
ln -s "$src" "$work/meson/subprojects/attnrt"
clean "$meson" setup "$work/meson-build" "$work/meson" >"$work/meson-setup.log" 2>&1 ||
  { cat "$work/meson-setup.log" >&2; fail "meson setup of the subproject consumer"; }
grep 'attnrt plugins:' "$work/meson-setup.log"
# only the consumer's targets: the dependency brings the plugins with it
clean "$meson" compile -C "$work/meson-build" attnrt_consumer plugin_headers >"$work/meson-compile.log" 2>&1 ||
  { cat "$work/meson-compile.log" >&2; fail "meson compile of the subproject consumer"; }
clean "$work/meson-build/attnrt_consumer" "$work/meson-build/subprojects/attnrt/plugins/cpu"

step "examples/vendor_plugin against the moved prefix, checked by the moved attnrt-conform"
vendor="$src/examples/vendor_plugin"
if [ ! -f "$vendor/meson.build" ]; then
  echo "skipped: $vendor/meson.build does not exist"
else
  [ -f "$vendor/min_passed.txt" ] || fail "$vendor/min_passed.txt is missing (the --min-passed OP=N for attnrt-conform)"
  min_passed=()
  while read -r line; do
    line=${line%%#*}
    for word in $line; do min_passed+=(--min-passed "$word"); done
  done <"$vendor/min_passed.txt"
  [ ${#min_passed[@]} -gt 0 ] || fail "$vendor/min_passed.txt names no OP=N"
  clean PKG_CONFIG_PATH="$lib/pkgconfig" "$meson" setup "$work/vendor-build" "$vendor" >"$work/vendor-setup.log" 2>&1 ||
    { cat "$work/vendor-setup.log" >&2; fail "meson setup of examples/vendor_plugin"; }
  clean "$meson" compile -C "$work/vendor-build" >"$work/vendor-compile.log" 2>&1 ||
    { cat "$work/vendor-compile.log" >&2; fail "meson compile of examples/vendor_plugin"; }
  mapfile -t built < <(find "$work/vendor-build" -name 'attnrt_*.so' -type f)
  [ ${#built[@]} -eq 1 ] || fail "examples/vendor_plugin built ${#built[@]} attnrt_*.so files, not one: ${built[*]}"
  if readelf -d "${built[0]}" | grep -q 'NEEDED.*libattnrt'; then fail "${built[0]} links libattnrt"; fi
  echo "attnrt-conform --plugin ${built[0]} ${min_passed[*]}"
  clean "$P/$bindir/attnrt-conform" --plugin "${built[0]}" "${min_passed[@]}" >"$work/conform.txt" 2>&1 ||
    { cat "$work/conform.txt" >&2; fail "attnrt-conform on the vendor plugin"; }
  tail -n 3 "$work/conform.txt"
fi

echo
echo "install test: ok"
