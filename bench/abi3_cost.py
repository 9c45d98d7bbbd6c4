#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What building the compiled tier on the stable ABI costs, per call.

    python3 bench/abi3_cost.py [--rounds 20] [--number 100000] [--full-speedups FILE]

Builds the compiled tier twice, each in its own copy of python/cuabi: as the
wheel ships it (cffi's API-mode module and the speedups module with the
Limited API of 3.10, ``.abi3.so``) and against this interpreter's full API
(cffi's _CFFI_NO_LIMITED_API; the speedups module from --full-speedups,
default the current python/speedups/speedups.c, without Py_LIMITED_API: give
the speedups.c of before the conversion, e.g. ``git show
0aa2c8b:python/speedups/speedups.c``, to measure what the conversion cost).  Then it times the
same calls in alternating fresh processes, round by round (A B A B ...), so
that a drift of the machine falls on both: ``driver.cuCtxGetCurrent()``,
``cuabi.launch`` of a 3- and a 16-argument kernel on the NULL stream, and of
the 3-argument kernel on a ``cuabi.Stream`` (its handle read from the slot).  Prints the median ns per call of each, and the cost: the
median of the rounds' paired differences, with their quartiles.
Needs the build tree (libcuabi.so.1 and the fake driver, or CUABI_LIBCUDA for
a real one).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
BUILD = os.environ.get("CUABI_BUILD_DIR") or os.path.join(REPO, "build")

CHILD = r"""
import json, sys, timeit
import cuabi
from cuabi import driver as d
assert cuabi.backend_name() == "cffi-compiled", cuabi.backend_name()
from cuabi import _cuabi_speedups  # the compiled tier is complete
number = int(sys.argv[1])
dev = cuabi.Device(0)
dev.set_current()
with open(sys.argv[2]) as f:
    module = cuabi.Module.from_ptx(f.read())
buf = cuabi.DeviceBuffer(4096)
stream = cuabi.Stream()
config = cuabi.LaunchConfig(grid=1, block=1)
k3 = module.get_kernel("empty_3", "pIf")
k16 = module.get_kernel("empty_16", "pppppppp" + "IIII" + "ffff")
a3 = (buf, 1, 2.0)
a16 = tuple([buf] * 8 + [1, 2, 3, 4] + [1.0, 2.0, 3.0, 4.0])
launch = cuabi.launch
out = {}
for name, stmt in (("driver.cuCtxGetCurrent()", lambda: d.cuCtxGetCurrent()),
                   ("cuabi.launch, 3 arguments", lambda: launch(None, config, k3, *a3)),
                   ("cuabi.launch, 16 arguments", lambda: launch(None, config, k16, *a16)),
                   ("cuabi.launch on a Stream, 3 arguments",
                    lambda: launch(stream, config, k3, *a3))):
    stmt()
    out[name] = min(timeit.repeat(stmt, number=number, repeat=3)) / number * 1e9
    d.cuCtxSynchronize()
print(json.dumps(out))
"""


def build(variant, dest, full_speedups):
    """A copy of python/cuabi with the compiled tier built limited or not."""
    sys.path.insert(0, os.path.join(REPO, "python"))
    import build_modules
    import cffi

    pkg = os.path.join(dest, "cuabi")
    shutil.copytree(os.path.join(REPO, "python", "cuabi"), pkg, ignore=shutil.ignore_patterns(
        "libcuabi.so*", "_cuabi_cffi*", "_cuabi_speedups*", "__pycache__"))
    build_modules.build_abi(pkg)
    text = build_modules.cdef_text()
    ffi = cffi.FFI()
    ffi.cdef(text + "\nint cuabi_py_bind(const char *path);\n")
    ffi.set_source("cuabi._cuabi_cffi_api", build_modules.compiled_source(text))
    src = os.path.join(dest, "api.c")
    ffi.emit_c_code(src)
    with open(os.path.join(dest, "getters.h"), "w") as f:
        f.write(build_modules.getters_source(text))
    limited = variant == "abi3"
    built = [build_modules.compile_module(
        [src], "cuabi._cuabi_cffi_api", pkg, limited=limited,
        cflags=["-w"] if limited else ["-w", "-D_CFFI_NO_LIMITED_API"])]
    built.append(build_modules.compile_module(
        [build_modules.SPEEDUPS_C if limited else full_speedups], "cuabi._cuabi_speedups", pkg,
        include_dirs=[dest, build_modules.INCLUDE], limited=limited))
    return built


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--number", type=int, default=100000)
    ap.add_argument("--full-speedups", default=os.path.join(REPO, "python", "speedups", "speedups.c"),
                    help="the speedups.c to build against the full API (default: the current one)")
    args = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("CUABI_LIBRARY", os.path.join(BUILD, "libcuabi.so.1"))
    env.setdefault("CUABI_LIBCUDA", os.path.join(BUILD, "tests", "libfakecuda.so"))
    env["CUABI_PY_BACKEND"] = "cffi"
    with tempfile.TemporaryDirectory() as tmp:
        roots = {}
        for variant in ("abi3", "full"):
            roots[variant] = os.path.join(tmp, variant)
            os.makedirs(roots[variant])
            print("built", build(variant, roots[variant], os.path.abspath(args.full_speedups)),
                  file=sys.stderr)
        samples = {v: [] for v in roots}
        for r in range(args.rounds):
            for variant in (("abi3", "full") if r % 2 == 0 else ("full", "abi3")):
                p = subprocess.run([sys.executable, "-c", CHILD, str(args.number),
                                    os.path.join(BENCH, "kernels.ptx")], capture_output=True,
                                   text=True, env=dict(env, PYTHONPATH=roots[variant]), cwd=tmp)
                if p.returncode != 0:
                    raise SystemExit("abi3_cost: %s run failed:\n%s" % (variant, p.stderr[-3000:]))
                samples[variant].append(json.loads(p.stdout.splitlines()[-1]))
    print("median ns per call over %d alternating rounds (%s):" % (args.rounds, sys.version.split()[0]))
    # the cost: the median of the rounds' paired differences (each round ran
    # both, back to back), with the spread of those differences
    print("%-38s %10s %10s %12s %18s" % ("", "abi3", "full API", "abi3 cost", "cost p25..p75"))
    for name in samples["abi3"][0]:
        lim = statistics.median(s[name] for s in samples["abi3"])
        full = statistics.median(s[name] for s in samples["full"])
        diffs = sorted(a[name] - f[name] for a, f in zip(samples["abi3"], samples["full"]))
        q = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else [diffs[0]] * 3
        print("%-38s %10.1f %10.1f %+12.1f %+8.1f..%+.1f" % (name, lim, full,
                                                             statistics.median(diffs), q[0], q[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
