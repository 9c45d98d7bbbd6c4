#!/usr/bin/env bash
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
