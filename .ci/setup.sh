#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building and testing cuabi needs on a fresh Debian 12 machine
# (root): compilers, CMake, libffi, cmocka, valgrind, abigail-tools, PyPy, and
# the Python packages (python3-venv and python3-dev build PyCUDA, whose own
# Python packages tests/thirdparty/pycuda/run installs in a venv). Safe to run
# again: it skips what is already there.
# Sourced or run by ./test, ./run and .ci/run.
set -euo pipefail

CUABI_DEBS=(build-essential clang lld libclang-rt-dev cmake pkg-config libffi-dev libcmocka-dev
            valgrind abigail-tools binutils python3 python3-pip python3-venv python3-dev
            pypy3 pypy3-venv)

missing=()
for pkg in "${CUABI_DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python that runs the tests: python3 on PATH (pyenv's where present).
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import pytest, cffi, pycparser" 2>/dev/null; then
  echo "== installing pytest, cffi, pycparser for $PYTHON"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check pytest cffi pycparser \
    || "$PYTHON" -m pip install --quiet --disable-pip-version-check --break-system-packages pytest cffi pycparser
fi

# ---- the Python suite's checking tools (issue 10), for $PYTHON (CPython; PyPy's venv has none
# and the conftest lets those tests skip there only):
#   hypothesis - the stateful property tests (tests/python/test_properties.py);
#   mypy       - the type check of examples/ and tests/python/data/typed_usage.py
#                (tests/python/test_types.py);
#   numpy      - the misuse corpus's consumers of cuabi's memory (np.frombuffer,
#                np.asarray, np.from_dlpack: tests/python/misuse_corpus.py).
# Pinned so that a new release cannot change what the suite checks.
CUABI_PY_TEST_PKGS=(hypothesis==6.170.15 mypy==2.4.1 numpy==2.4.6)
if ! "$PYTHON" -c "import hypothesis, mypy, numpy" 2>/dev/null; then
  echo "== installing ${CUABI_PY_TEST_PKGS[*]} for $PYTHON"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check "${CUABI_PY_TEST_PKGS[@]}" \
    || "$PYTHON" -m pip install --quiet --disable-pip-version-check --break-system-packages "${CUABI_PY_TEST_PKGS[@]}"
fi

# ---- languages (tests/languages, docs/languages): the toolchains of every language whose
# example CI builds against cuabi. Debian's packages, and Zig from PyPI (Debian 12 has none).
# About 2-3 minutes on a fresh machine; the tests themselves take about a minute.
CUABI_LANGUAGE_DEBS=(golang-go luajit libjna-java default-jdk-headless)
command -v cargo >/dev/null 2>&1 || CUABI_LANGUAGE_DEBS+=(rustc cargo)
# Node.js with its headers (node_api.h, for the Node-API addon); a Node installed from
# elsewhere with its headers beside it is used as it is.
if ! command -v node >/dev/null 2>&1; then
  CUABI_LANGUAGE_DEBS+=(nodejs libnode-dev)
elif [ ! -e "$(dirname "$(readlink -f "$(command -v node)")")/../include/node/node_api.h" ] &&
     [ ! -e /usr/include/node/node_api.h ]; then
  CUABI_LANGUAGE_DEBS+=(libnode-dev)
fi
missing=()
for pkg in "${CUABI_LANGUAGE_DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing the languages' Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Zig 0.13 (its `zig cc` and @cImport); the example is written for this version.
if ! "$PYTHON" -m ziglang version 2>/dev/null | grep -qx 0.13.0; then
  echo "== installing ziglang 0.13.0 for $PYTHON"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check ziglang==0.13.0 \
    || "$PYTHON" -m pip install --quiet --disable-pip-version-check --break-system-packages ziglang==0.13.0
fi

# ---- release tools (tools/build-wheels; issue 12) ---------------------------------
# The wheels are built with zig's clang for an old glibc (PyPI's ziglang: no
# container needed) and checked with auditwheel, abi3audit and twine; aarch64 is
# cross built against an arm64 Debian root and tested under qemu-user.  All of it
# is fetched here, so tools/build-wheels runs offline.  Pinned versions: a new
# zig or auditwheel changes what the checks see, so it is updated on purpose.  This
# zig lives in the release venv, apart from the languages block's 0.13 in $PYTHON.
setup_release_tools() {
  local root venv
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  venv="$root/build/release-venv"
  local debs=(qemu-user python3-dev python3-venv)
  local need=()
  for pkg in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
  done
  if [ "${#need[@]}" -gt 0 ]; then
    echo "== installing Debian packages for the release build: ${need[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
  fi
  local tools=(ziglang==0.17.1 auditwheel==6.8.2 abi3audit==0.0.26 twine==7.0.0 cffi pycparser pytest)
  if [ ! -f "$venv/.complete" ]; then
    echo "== creating $venv (zig, auditwheel, abi3audit, twine)"
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${tools[@]}"
    touch "$venv/.complete"
  fi
  bash "$root/tools/aarch64-sysroot" "$root/build/aarch64-sysroot"
  # cffi and pytest for the test venvs of tools/build-wheels, offline later
  if [ ! -f "$root/build/wheelhouse-x86_64/.complete" ]; then
    "$PYTHON" -m pip download --quiet --disable-pip-version-check -d "$root/build/wheelhouse-x86_64" \
      --only-binary=:all: "cffi>=1.15" pytest
    touch "$root/build/wheelhouse-x86_64/.complete"
  fi
  if [ ! -f "$root/build/wheelhouse-aarch64/.complete" ]; then
    "$PYTHON" -m pip download --quiet --disable-pip-version-check -d "$root/build/wheelhouse-aarch64" \
      --platform manylinux2014_aarch64 --python-version 3.11 --implementation cp \
      --only-binary=:all: "cffi>=1.15" pytest
    touch "$root/build/wheelhouse-aarch64/.complete"
  fi
}
setup_release_tools
