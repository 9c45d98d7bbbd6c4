#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare a built libcuabi.so.1 with the committed ABI baseline.

  check_abi.py check    LIBRARY INCLUDE_DIR [--baseline FILE] [--suppressions FILE]
  check_abi.py baseline LIBRARY INCLUDE_DIR   rewrite abi/libcuabi.abi (deliberately!)

The verdict is read from abidiff's change summary, not from its exit status
alone: abidiff 2.x sets only bit 4 ("the ABI changed") for a changed struct
layout or a changed parameter, and bit 8 ("incompatible") only for a removed
symbol, so the status cannot tell an addition from a breaking change. Any
removed or changed function or variable, and any removed ELF symbol, fails;
added ones pass with a notice (they belong in a new version node of abi.map).
A change summary that cannot be read fails too, as does abidiff itself
failing.

The comparison covers every exported function and variable and every type
reachable from them, wherever the type is declared: size_t or uint32_t in a
parameter counts as much as a struct of include/cuabi/. (abidiff's
--headers-dir/--drop-private-types would drop the system typedefs and with
them a size_t parameter turned into uint32_t; they are not used here.)
libabigail's default suppression file is not read (--no-default-suppression);
abi/suppressions.abignore is, and abi/README.md lists each of its entries
with its reason.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "libcuabi.abi")
SUPPRESSIONS = os.path.join(HERE, "suppressions.abignore")
SKIPPED = 77

# "Functions changes summary: 0 Removed, 1 Changed (2 filtered out), 0 Added functions"
_SUMMARY = re.compile(
    r"^(Functions|Variables) changes summary: (\d+) Removed(?: \(\d+ filtered out\))?, "
    r"(\d+) Changed(?: \(\d+ filtered out\))?, (\d+) Added", re.M)
# "Function symbols changes summary: 0 Removed, 1 Added function symbol not referenced by debug info"
_SYMBOLS = re.compile(
    r"^(Function|Variable) symbols changes summary: (\d+) Removed(?: \(\d+ filtered out\))?, "
    r"(\d+) Added", re.M)


def verdict(status, report):
    """(ok, message) for one abidiff run: its exit status and its text."""
    if status & 3:
        return False, f"abidiff failed to run (status {status})"
    summaries = _SUMMARY.findall(report)
    if status == 0 and not summaries:
        return True, "ABI identical to the baseline"
    kinds = {kind for kind, *_ in summaries}
    if kinds != {"Functions", "Variables"}:
        return False, (f"abidiff reported a change (status {status}) but its change summary "
                       "could not be read; treat it as incompatible until this script "
                       "understands the report above")
    removed = sum(int(r) for _, r, _, _ in summaries)
    changed = sum(int(c) for _, _, c, _ in summaries)
    added = sum(int(a) for _, _, _, a in summaries)
    for _, r, a in _SYMBOLS.findall(report):
        removed += int(r)
        added += int(a)
    if removed or changed or status & 8:
        return False, (f"INCOMPATIBLE ABI change: {removed} removed, {changed} changed "
                       "(see above); released symbols keep their signature and the layout of "
                       "every type they reach; add new symbols in a new version node instead")
    if added:
        return True, (f"compatible ABI change: {added} added; new symbols must be in a new "
                      "version node of abi.map; regenerate the baseline when releasing "
                      "(abi/README.md)")
    return True, "ABI identical to the baseline (only changes abidiff files as harmless)"


def abidiff_command(baseline, library, suppressions):
    return ["abidiff", "--no-default-suppression", "--suppressions", suppressions,
            baseline, library]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("check", "baseline"))
    parser.add_argument("library")
    parser.add_argument("include")
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--suppressions", default=SUPPRESSIONS)
    args = parser.parse_args()
    tool = "abidiff" if args.action == "check" else "abidw"
    if shutil.which(tool) is None:
        print(f"skipped: {tool} is not installed (Debian package abigail-tools)")
        return SKIPPED
    if args.action == "baseline":
        command = ["abidw", "--no-corpus-path", "--short-locs", "--headers-dir", args.include,
                   "--drop-private-types", "--suppressions", args.suppressions,
                   "--out-file", args.baseline, args.library]
        print("running:", " ".join(command))
        subprocess.run(command, check=True)
        print(f"wrote {args.baseline}; commit it with a message saying which release it is")
        return 0

    command = abidiff_command(args.baseline, args.library, args.suppressions)
    print("running:", " ".join(command))
    result = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    ok, message = verdict(result.returncode, result.stdout)
    print(message)
    print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
