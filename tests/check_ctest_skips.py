#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The expected-skip budget of one ctest run: what ./test runs must not skip.

Every check that cannot run in a configuration is decided when CMake
configures and registered as a placeholder (label "placeholder"), which
must report Skipped. Every other test must run: a test that skips at run
time means something it needs went missing (a tool, the fake's feature, a
file), and that would otherwise go unnoticed among the passes. The
exceptions, each only where its condition holds: loading.no_driver cannot
stage "no driver" on a machine with a libcuda.so.1 installed, and
loading.secure_mode_ignores_environment needs root.

usage: check_ctest_skips.py BUILD_DIR CTEST_OUTPUT_FILE
"""
import ctypes.util
import json
import os
import re
import subprocess
import sys

RESULT = re.compile(r"(?:Test|MemCheck) +#\d+: (\S+) \.+ *(\*\*\*)?(\w+)")


def system_libcuda():
    return ctypes.util.find_library("cuda") is not None


# Tests that may skip at run time, and when.
RUNTIME_SKIPS = {"loading.no_driver": system_libcuda,
                 "loading.secure_mode_ignores_environment": lambda: os.geteuid() != 0}


def main():
    build, output = sys.argv[1], sys.argv[2]
    listing = json.loads(subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                                        capture_output=True, text=True).stdout)
    placeholders = {t["name"] for t in listing["tests"]
                    for p in t.get("properties", [])
                    if p["name"] == "LABELS" and "placeholder" in p["value"]}
    results = {name: word for name, _, word in RESULT.findall(open(output, errors="replace").read())}
    problems = []
    for name, word in sorted(results.items()):
        skipped = word == "Skipped"
        if name in placeholders and not skipped:
            problems.append("%s is a placeholder but reported %s, not Skipped" % (name, word))
        elif name not in placeholders and skipped:
            allowed = RUNTIME_SKIPS.get(name)
            if allowed is None or not allowed():
                problems.append("%s skipped at run time: only placeholders may skip "
                                "(its output says why)" % name)
    expected = sorted(placeholders & set(results))
    print("expected-skip budget (%s): %d tests, %d placeholders skipped as expected%s"
          % (build, len(results), len(expected), ": " + ", ".join(expected) if expected else ""))
    for p in problems:
        print("  " + p)
    return 1 if problems or not results else 0


if __name__ == "__main__":
    sys.exit(main())
