# SPDX-License-Identifier: Apache-2.0
"""A long-lived Python contender process, driven by bench/runner.py.

    python3 bench/worker.py MODULE KERNELS.ptx

MODULE is a module of bench/contenders.  The worker imports the library,
initialises it, builds every operation it can (see Op in common.py) and calls
each once to check that it works.  Then it speaks the same line protocol as the
C program bench/c/bench_driver.c:

    -> info KEY VALUE...             facts for the report (version...)
    -> op NAME HOW...                an operation this contender offers
    -> skip NAME REASON...           one it does not, and why
    -> ready                         (or: fail REASON, then exit)
    <- run NAME N WARM CHUNK TIMED_SYNC
    -> ok NANOSECONDS                (or: err REASON)
    <- quit

`run` synchronises the GPU, makes WARM untimed calls, synchronises again,
then times N calls in chunks of at most CHUNK (0: one chunk), synchronising
after each chunk, inside the timed region when TIMED_SYNC is 1, outside it
when 0 (launches: the enqueue rate, not the GPU's execution).
"""

import sys
from itertools import repeat
from time import perf_counter_ns

from common import Op, contender_module, one_line
from ops import OPERATIONS


def say(*words):
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def python_loop_op():
    return Op(abs, (0,), "abs(0): the loop and one call of a builtin")


def build_ops(bench):
    """name -> Op for what works, name -> reason for what does not."""
    offered, skipped = {}, {}
    reasons = getattr(bench, "NO_EQUIVALENT", {})
    for op in OPERATIONS:
        if op.name == "python_loop":
            offered[op.name] = python_loop_op()
            continue
        builder = getattr(bench, "op_" + op.name, None)
        if builder is None:
            skipped[op.name] = reasons.get(op.name, "not offered by this library")
            continue
        try:
            spec = builder()
            bench.check(spec.call(*spec.args))
            bench.sync()
        except Exception as exc:  # one op's failure must not end the worker
            skipped[op.name] = "failed: " + one_line(exc)
            try:
                bench.sync()
            except Exception:
                pass
            continue
        offered[op.name] = spec
    return offered, skipped


def run(spec, sync, n, warm, chunk, timed_sync):
    call, args = spec.call, spec.args
    sync()
    for _ in repeat(None, warm):
        call(*args)
    sync()
    total = 0
    left = n
    chunk = chunk or n
    while left > 0:
        k = min(left, chunk)
        t0 = perf_counter_ns()
        for _ in repeat(None, k):
            call(*args)
        if timed_sync:
            sync()
        total += perf_counter_ns() - t0
        if not timed_sync:
            sync()
        left -= k
    return total


def serve(bench, offered):
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] != "run" or len(words) != 6 or words[1] not in offered:
            say("err bad command or operation not offered:", line.strip())
            continue
        spec = offered[words[1]]
        n, warm, chunk, timed_sync = (int(w) for w in words[2:])
        try:
            total = run(spec, bench.sync, n, warm, chunk, timed_sync)
            bench.check(spec.call(*spec.args))  # still working after the batch?
            bench.sync()
        except Exception as exc:
            say("err", one_line(exc))
            continue
        say("ok", total)


def main():
    module_name, ptx_path = sys.argv[1], sys.argv[2]
    with open(ptx_path, "rb") as f:
        ptx = f.read()
    try:
        module = contender_module(module_name)
        handle = module.load()
        module.first_call(handle)
        bench = module.Bench(handle, ptx)
    except Exception as exc:
        say("fail", one_line(exc))
        return 1
    say("info version", module.version(handle))
    offered, skipped = build_ops(bench)
    for name, spec in offered.items():
        say("op", name, spec.how)
    for name, reason in skipped.items():
        say("skip", name, reason)
    say("ready")
    serve(bench, offered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
