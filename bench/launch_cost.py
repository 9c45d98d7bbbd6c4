# SPDX-License-Identifier: Apache-2.0
"""Launch overhead in one process: cuabi's launches against the C floor,
interleaved round by round.

    launch_cost.py LOOP_LIBRARY KERNELS_PTX ROUNDS   (prints JSON)

The steady-state phase compares contenders that run in separate processes,
whose placement on the machine alone moves a 3-4 us launch by a few hundred
ns from run to run: too coarse for a bound of +0.3 us.  Here the C loop
(bench/c/launch_loop.c, loaded into this process) and the Python loops take
turns in one process, in a new random order each round, and each round's
difference to the floor is kept, so drift that hits a round hits all of them.
Launches are timed the steady-state way: chunks of 256, each followed by an
untimed synchronisation.  The backend is the one CUABI_PY_BACKEND chooses.
"""

import ctypes
import json
import random
import sys
from itertools import repeat
from time import perf_counter_ns

from common import KERNELS
from contenders import shared
from contenders.py_cuabi import SIGNATURES

CHUNK = 256
CHUNKS = 16          # chunks per variant per round
ARITIES = (3, 16)    # the kernels of the launch targets: empty_3, empty_16


def loop_function(call, names):
    """A timed loop of `call` written out as a user writes it, its arguments
    passed in as locals."""
    args = "".join(", " + n for n in names)
    source = ("def loop(n%s):\n"
              "    t0 = perf_counter_ns()\n"
              "    for _ in repeat(None, n):\n"
              "        %s\n"
              "    return perf_counter_ns() - t0\n" % (args, call))
    scope = {"repeat": repeat, "perf_counter_ns": perf_counter_ns}
    exec(source, scope)
    return scope["loop"]


def main(argv):
    loop_library, ptx_path, rounds = argv[0], argv[1], int(argv[2])
    import cuabi

    c_loop = ctypes.CDLL(loop_library).bench_launch_loop
    c_loop.restype = ctypes.c_int64
    c_loop.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int]

    dev = cuabi.Device(0)
    dev.set_current()
    stream = cuabi.Stream(dev)
    with open(ptx_path, "rb") as f:
        module = cuabi.Module.from_ptx(f.read())
    memory = cuabi.DeviceBuffer(4096)
    values = dict(zip((3, 16), shared.kernel_values(memory.ptr)))
    prepacked = shared.Prepacked(memory.ptr)
    launch_kernel = cuabi.get_proc("cuLaunchKernel")
    config = cuabi.LaunchConfig(grid=1, block=1)

    def synced(timed):
        def run():
            total = 0
            for _ in range(CHUNKS):
                total += timed()
                stream.sync()
            return total / (CHUNK * CHUNKS)
        return run

    variants = {}
    for arity in ARITIES:
        kinds = [kind for kind, _ in values[arity]]
        args = [value for _, value in values[arity]]
        kernel = module.get_kernel(KERNELS[ARITIES.index(arity) + 1],
                                   params="".join(SIGNATURES[k] for k in kinds))
        names = ["a%d" % i for i in range(arity)]
        params = prepacked.addresses[ARITIES.index(arity) + 1]

        def c_floor(kernel=kernel, params=params):
            t = c_loop(launch_kernel, kernel.handle, stream.handle, params, CHUNK)
            if t < 0:
                raise SystemExit("cuLaunchKernel failed with code %d" % -t)
            return t

        plain = loop_function("launch(stream, config, kernel, %s)" % ", ".join(names),
                              ["launch", "stream", "config", "kernel"] + names)
        variants[arity] = {
            "C floor": synced(c_floor),
            "cuabi.launch": synced(lambda p=plain, k=kernel, a=args:
                                   p(CHUNK, cuabi.launch, stream, config, k, *a)),
        }

    jobs = [(arity, name) for arity in ARITIES for name in variants[arity]]
    for arity, name in jobs:   # warm-up, and a check that each one works
        variants[arity][name]()
    samples = {job: [] for job in jobs}
    for _ in range(rounds):
        random.shuffle(jobs)
        for arity, name in jobs:
            samples[arity, name].append(variants[arity][name]())

    out = {"backend": cuabi.backend_name(), "rounds": rounds,
           "arities": {str(a): {name: samples[a, name] for name in variants[a]} for a in ARITIES}}
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
