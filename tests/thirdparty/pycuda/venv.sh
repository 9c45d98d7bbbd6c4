# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by run and prepare_gpu_carry: pycuda_venv PYTHON DIR makes (once) the
# virtual environment PyCUDA is built and tested in, from requirements.txt, and
# remakes it when requirements.txt changes. Prints nothing on success.

pycuda_venv() {
  local python="$1" venv="$2"
  local here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if [ -x "$venv/bin/python" ] && cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
    return 0
  fi
  rm -rf "$venv"
  if ! "$python" -m venv "$venv"; then
    echo "cannot make a virtual environment with $python: install python3-venv" \
         "(Debian) or point PYTHON at a Python that has the venv module" >&2
    return 1
  fi
  if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
       -r "$here/requirements.txt"; then
    echo "pip could not install $here/requirements.txt into $venv: check the" \
         "network connection to pypi.org" >&2
    rm -rf "$venv"
    return 1
  fi
  cp "$here/requirements.txt" "$venv/requirements.txt"
}
