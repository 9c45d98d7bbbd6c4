#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The ABI gate's own test: abi/check_abi.py must fail on every incompatible
change and pass the compatible ones.

Builds the miniature library gate.c once as the baseline (abidw, as
`check_abi.py baseline` does for cuabi), then once per change in CHANGES
(a -D flag of gate.h), and runs `check_abi.py check` on each against the
baseline. Each change is one that an audit found the gate letting through,
or one the ABI policy (docs/abi.md) allows.

usage: check_abi_gate.py C_COMPILER
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHECK_ABI = os.path.join(ROOT, "abi", "check_abi.py")
SKIPPED = 77

# (macro, must the gate accept it?, what it is)
CHANGES = [
    (None, True, "no change"),
    ("GATE_FIELD_WIDER", False, "a struct field int -> long"),
    ("GATE_FIELDS_SWAPPED", False, "two struct fields swapped"),
    ("GATE_SIZE_T_TO_UNSIGNED", False, "a size_t parameter -> unsigned int"),
    ("GATE_SIZE_T_TO_UINT32", False, "a size_t parameter -> uint32_t"),
    ("GATE_RETURN_WIDER", False, "a uint32_t return value -> uint64_t"),
    ("GATE_PARAMETER_ADDED", False, "a parameter added"),
    ("GATE_FUNCTION_REMOVED", False, "a function removed"),
    ("GATE_FUNCTION_ADDED", True, "a function added"),
    ("GATE_ENUMERATOR_ADDED", True, "an enumerator added at the end"),
    ("GATE_PARAMETER_RENAMED", True, "a parameter renamed"),
]


def build(cc, workdir, macro):
    name = (macro or "baseline").lower()
    out = os.path.join(workdir, "lib%s.so" % name)
    command = [cc, "-std=c11", "-g", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
               "-Wl,--version-script=" + os.path.join(HERE, "gate.map"),
               "-o", out, os.path.join(HERE, "gate.c")]
    if macro:
        command.insert(1, "-D" + macro)
    subprocess.run(command, check=True)
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cc = sys.argv[1]
    missing = [t for t in ("abidw", "abidiff") if shutil.which(t) is None]
    if missing:
        print("skipped: %s not installed (Debian package abigail-tools)" % ", ".join(missing))
        return SKIPPED
    wrong = []
    with tempfile.TemporaryDirectory() as workdir:
        baseline = os.path.join(workdir, "gate.abi")
        subprocess.run([sys.executable, CHECK_ABI, "baseline", build(cc, workdir, None), HERE,
                        "--baseline", baseline], check=True, capture_output=True)
        for macro, compatible, what in CHANGES:
            library = build(cc, workdir, macro)
            result = subprocess.run([sys.executable, CHECK_ABI, "check", library, HERE,
                                     "--baseline", baseline], capture_output=True, text=True)
            passed = result.returncode == 0
            verdict = "passes" if passed else "fails"
            print("%-40s %s (%s)" % (what, verdict, "right" if passed == compatible else "WRONG"))
            if passed != compatible or result.returncode not in (0, 1):
                wrong.append(what)
                sys.stdout.write(result.stdout + result.stderr)
    if wrong:
        print("the ABI gate misjudged: " + "; ".join(wrong))
    print("%d passed, %d failed" % (not wrong, bool(wrong)))  # for ./test's totals
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
