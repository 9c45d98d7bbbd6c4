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
