#!/usr/bin/env python3
"""Compare a built libcuabi.so.1 with the committed ABI baseline.

  check_abi.py check    LIBRARY INCLUDE_DIR   abidiff against abi/libcuabi.abi
  check_abi.py baseline LIBRARY INCLUDE_DIR   rewrite abi/libcuabi.abi (deliberately!)

abidiff's exit status is a bit field: 1 tool error, 2 usage error, 4 the ABI
changed, 8 the change is incompatible. An incompatible change or a tool error
fails; a compatible change (symbols added) passes with a notice, because
additions belong in a new version node and the baseline is regenerated when
a release is made (abi/README.md). Only types reachable from the public
headers count (--drop-private-types with the headers folder), so internal
structures may change freely. Suppressions, each with its reason, are in
abi/suppressions.abignore.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "libcuabi.abi")
SUPPRESSIONS = os.path.join(HERE, "suppressions.abignore")
SKIPPED = 77


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("check", "baseline"):
        print(__doc__)
        return 2
    action, library, include = sys.argv[1:]
    tool = "abidiff" if action == "check" else "abidw"
    if shutil.which(tool) is None:
        print(f"skipped: {tool} is not installed (Debian package abigail-tools)")
        return SKIPPED
    if action == "baseline":
        command = ["abidw", "--no-corpus-path", "--short-locs", "--headers-dir", include,
                   "--drop-private-types", "--suppressions", SUPPRESSIONS,
                   "--out-file", BASELINE, library]
        print("running:", " ".join(command))
        subprocess.run(command, check=True)
        print(f"wrote {BASELINE}; commit it with a message saying which release it is")
        return 0

    command = ["abidiff", "--hd2", include, "--drop-private-types",
               "--suppressions", SUPPRESSIONS, BASELINE, library]
    print("running:", " ".join(command))
    result = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    status = result.returncode
    if status & 3:
        print(f"abidiff failed to run (status {status})")
        print("0 passed, 1 failed")
        return 1
    if status & 8:
        print("INCOMPATIBLE ABI change against abi/libcuabi.abi (see above): released symbols must "
              "keep their signature and meaning; add new symbols in a new version node instead")
        print("0 passed, 1 failed")
        return 1
    if status & 4:
        print("compatible ABI change (additions): they must be in a new version node of abi.map; "
              "regenerate the baseline when releasing (abi/README.md)")
    else:
        print("ABI identical to abi/libcuabi.abi")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
