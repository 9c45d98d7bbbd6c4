#!/usr/bin/env python3
"""The callgrind check: a cuabi forwarder may cost at most LIMIT instructions
more than calling the driver function through a pointer.

Runs forward_cost under callgrind four times (forwarder and direct pointer,
N and 2N calls each), counting only inside bench_cuabi / bench_direct, and
takes the slope: (Ir(2N) - Ir(N)) / N per call for each, which cancels the
fixed costs (start-up, first resolution). Prints the per-call counts and
fails if forwarder - direct > LIMIT. Instruction counts do not depend on the
machine's load, so the check is repeatable.

usage: check_forward_cost.py FORWARD_COST_BINARY [--limit 10] [--calls 100000]
(CUABI_LIBCUDA must name the driver, the fake one in the test suite)
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIPPED = 77


def instructions(binary, mode, calls, workdir):
    out = os.path.join(workdir, f"callgrind.{mode}.{calls}")
    function = "bench_cuabi" if mode == "cuabi" else "bench_direct"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    f"--toggle-collect={function}", binary, mode, str(calls)],
                   check=True, capture_output=True, text=True)
    text = open(out, encoding="utf-8").read()
    match = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    if match is None:
        raise RuntimeError(f"no instruction total in {out}")
    return int(match.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--calls", type=int, default=100000)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("skipped: valgrind is not installed")
        return SKIPPED
    n = args.calls
    with tempfile.TemporaryDirectory() as workdir:
        per_call = {}
        for mode in ("cuabi", "direct"):
            small = instructions(args.binary, mode, n, workdir)
            large = instructions(args.binary, mode, 2 * n, workdir)
            per_call[mode] = (large - small) / n
    overhead = per_call["cuabi"] - per_call["direct"]
    print(f"instructions per call through cuabi_cuCtxGetCurrent: {per_call['cuabi']:.2f}")
    print(f"instructions per call through a function pointer:    {per_call['direct']:.2f}")
    print(f"forwarder overhead: {overhead:.2f} instructions per call (limit {args.limit:g})")
    if overhead > args.limit:
        print("0 passed, 1 failed")
        return 1
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
