#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_test_script.sh ROOT - ./test's python_tests step fails when pytest
# collects no tests (status 5) as for any other non-zero status, and passes
# on 0. Runs the function as ./test defines it, with a stand-in for Python
# that exits with a chosen status.
set -uo pipefail
ROOT="$1"
definition=$(sed -n '/^python_tests() {/,/^}/p' "$ROOT/test")
if [ -z "$definition" ]; then
  echo "./test defines no python_tests function"; echo "0 passed, 1 failed"; exit 1
fi
status_of() {  # the exit status of python_tests when "Python" exits with $1
  ( step() { :; }; log() { cat >/dev/null; }; eval "$definition"
    python_tests "stand-in" "" sh -c "exit $1" ) >/dev/null 2>&1
  echo $?
}
failed=0
for case in "0 0" "5 nonzero" "1 nonzero"; do
  set -- $case
  got=$(status_of "$1")
  if { [ "$2" = 0 ] && [ "$got" != 0 ]; } || { [ "$2" = nonzero ] && [ "$got" = 0 ]; }; then
    echo "pytest status $1: python_tests ended with $got, expected $2"; failed=1
  else
    echo "pytest status $1: python_tests ended with $got (right)"
  fi
done
echo "$((1 - failed)) passed, $failed failed"
exit "$failed"
