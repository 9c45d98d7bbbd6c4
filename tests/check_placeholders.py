#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every placeholder test (label "placeholder": a check that cannot run in
this configuration) reports Skipped: run as ctest registered it, it exits
with its SKIP_RETURN_CODE (77) and says "skipped: <why>".

usage: check_placeholders.py CTEST BUILD_DIR
"""
import json
import os
import subprocess
import sys


def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


def main():
    ctest, build = sys.argv[1], sys.argv[2]
    listing = subprocess.run([ctest, "--show-only=json-v1"], cwd=build, check=True,
                             capture_output=True, text=True).stdout
    problems, checked = [], 0
    for test in json.loads(listing)["tests"]:
        props = properties(test)
        if "placeholder" not in props.get("LABELS", []):
            continue
        checked += 1
        env = dict(os.environ)
        env.update(v.split("=", 1) for v in props.get("ENVIRONMENT", []))
        run = subprocess.run(test["command"], cwd=props.get("WORKING_DIRECTORY", build), env=env,
                             capture_output=True, text=True)
        expected = props.get("SKIP_RETURN_CODE")
        print("%s: exit %d, %s" % (test["name"], run.returncode, run.stdout.strip()))
        if expected != 77 or run.returncode != 77:
            problems.append("%s exits %d (SKIP_RETURN_CODE %r): ctest reports it %s, not Skipped"
                            % (test["name"], run.returncode, expected,
                               "Passed" if run.returncode == 0 else "Failed"))
        elif not run.stdout.startswith("skipped: "):
            problems.append("%s does not say why it is skipped" % test["name"])
    if checked == 0:
        problems.append("no placeholder tests found, though CMake registered this check "
                        "because there are some")
    for p in problems:
        print(p)
    print("%d passed, %d failed" % (0 if problems else 1, 1 if problems else 0))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
