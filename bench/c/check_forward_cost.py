#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The callgrind check: a cuabi forwarder may cost at most LIMIT instructions
more than calling the driver function through a pointer.

Runs `forward_cost each` under callgrind twice (N and 2N calls of every
entry point of its MEASURED table, forwarder and direct pointer each in a
function of its own), on the fake driver in record mode, and takes each
function's inclusive count from callgrind_annotate. The slope
(Ir(2N) - Ir(N)) / N per call cancels the fixed costs (start-up, first
resolution). Prints the per-call counts and fails if, for any entry point,
forwarder - direct > its limit: LIMIT, plus STACK_EXTRA for cuLaunchKernel,
whose five stack arguments gcc reloads and stores back around the slot test
(about 16 instructions; tests/check_forwarder_code.py bounds every
forwarder's code statically). Instruction counts do not depend on the
machine's load, so the check is repeatable.

usage: check_forward_cost.py FORWARD_COST_BINARY [--limit 10] [--calls 20000]
(CUABI_LIBCUDA must name the fake driver, build/tests/libfakecuda.so)
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIPPED = 77
# Extra instructions allowed for forwarders with arguments on the stack.
STACK_EXTRA = {"cuLaunchKernel": 16}


def instructions(binary, calls, workdir):
    """{function name: inclusive instruction count} of every bench_* function."""
    out = os.path.join(workdir, "callgrind.%d" % calls)
    env = dict(os.environ, FAKECUDA_MODE="record")
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                    "--toggle-collect=bench_*", binary, "each", str(calls)],
                   check=True, capture_output=True, text=True, env=env)
    report = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                            check=True, capture_output=True, text=True).stdout
    counts = {}
    for count, name in re.findall(r"^\s*([\d,]+) .*?:(bench_\w+)", report, re.M):
        counts[name] = int(count.replace(",", ""))
    if not counts:
        raise RuntimeError("no bench_* functions in callgrind's report of %s" % out)
    return counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            print("skipped: %s is not installed" % tool)
            return SKIPPED
    n = args.calls
    with tempfile.TemporaryDirectory() as workdir:
        small = instructions(args.binary, n, workdir)
        large = instructions(args.binary, 2 * n, workdir)
    per_call = {name: (large[name] - small.get(name, 0)) / n for name in large}
    entries = sorted({name.split("_", 2)[2] for name in per_call})
    failed, worst = [], (None, float("-inf"))
    for entry in entries:
        forwarded = per_call.get("bench_cuabi_" + entry)
        direct = per_call.get("bench_direct_" + entry)
        if forwarded is None or direct is None:
            failed.append(entry)
            print("%s: not measured" % entry)
            continue
        overhead = forwarded - direct
        limit = args.limit + STACK_EXTRA.get(entry, 0)
        print("%-28s forwarded %7.2f, direct %7.2f: overhead %5.2f instructions (limit %g)"
              % (entry, forwarded, direct, overhead, limit))
        if overhead > limit:
            failed.append(entry)
        if entry in STACK_EXTRA:
            continue
        worst = max(worst, (entry, overhead), key=lambda w: w[1])
    if "cuCtxGetCurrent" in entries:
        # The lines bench/runner.py reads.
        print("instructions per call through cuabi_cuCtxGetCurrent: %.2f"
              % per_call["bench_cuabi_cuCtxGetCurrent"])
        print("instructions per call through a function pointer:    %.2f"
              % per_call["bench_direct_cuCtxGetCurrent"])
    print("forwarder overhead: %.2f instructions per call (limit %g; the most of any forwarder "
          "with register arguments only, %s)" % (worst[1], args.limit, worst[0]))
    if failed:
        print("over the limit: " + ", ".join(failed))
    print("%d passed, %d failed" % (not failed, bool(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
