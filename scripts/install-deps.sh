#!/usr/bin/env bash
# Installs what the build and the tests need on Debian 12 (run as root); does nothing when all is present.
set -euo pipefail
# libdlpack-dev: <dlpack/dlpack.h>, which the runtime build requires (attnrt_dlpack.h includes it);
# python3-pytest, python3-numpy: the Python package's tests (suite 'python'); cmake and pkg-config: the
# install test's consumers (suite 'install')
packages=(meson ninja-build gcc pkg-config cmake libcmocka-dev libdlpack-dev valgrind python3 python3-pytest python3-numpy clang
          libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
