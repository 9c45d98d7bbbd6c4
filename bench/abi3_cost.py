#!/usr/bin/env python3
"""What building cffi's compiled module on the stable ABI costs, per call.

    python3 bench/abi3_cost.py [--rounds 10] [--number 200000]

Builds cuabi._cuabi_cffi_api twice from the same generated C, once with the
Limited API (Py_LIMITED_API=3.10, as the wheel ships it: ``.abi3.so``) and
once against this interpreter's full API (cffi's _CFFI_NO_LIMITED_API), each in
its own copy of python/cuabi without the speedups module, then times the same
calls in alternating fresh processes, round by round (A B A B ...), so that a
drift of the machine falls on both: ``driver.cuCtxGetCurrent()`` and
``cuabi.launch`` of a 3- and a 16-argument kernel.  Prints the median ns per
call of each and their difference.  Needs the build tree (libcuabi.so.1 and
the fake driver, or CUABI_LIBCUDA for a real one).
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
number = int(sys.argv[1])
dev = cuabi.Device(0)
dev.set_current()
with open(sys.argv[2]) as f:
    module = cuabi.Module.from_ptx(f.read())
buf = cuabi.DeviceBuffer(4096)
config = cuabi.LaunchConfig(grid=1, block=1)
k3 = module.get_kernel("empty_3", "pIf")
k16 = module.get_kernel("empty_16", "pppppppp" + "IIII" + "ffff")
a3 = (buf, 1, 2.0)
a16 = tuple([buf] * 8 + [1, 2, 3, 4] + [1.0, 2.0, 3.0, 4.0])
launch = cuabi.launch
out = {}
for name, stmt in (("driver.cuCtxGetCurrent()", lambda: d.cuCtxGetCurrent()),
                   ("cuabi.launch, 3 arguments", lambda: launch(None, config, k3, *a3)),
                   ("cuabi.launch, 16 arguments", lambda: launch(None, config, k16, *a16))):
    stmt()
    out[name] = min(timeit.repeat(stmt, number=number, repeat=3)) / number * 1e9
d.cuCtxSynchronize()
print(json.dumps(out))
"""


def build(variant, dest):
    """A copy of python/cuabi with cffi's compiled module built limited or not."""
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
    if variant == "limited":
        return build_modules.compile_module([src], "cuabi._cuabi_cffi_api", pkg, limited=True,
                                            cflags=["-w"])
    return build_modules.compile_module([src], "cuabi._cuabi_cffi_api", pkg, limited=False,
                                        cflags=["-w", "-D_CFFI_NO_LIMITED_API"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--number", type=int, default=200000)
    args = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("CUABI_LIBRARY", os.path.join(BUILD, "libcuabi.so.1"))
    env.setdefault("CUABI_LIBCUDA", os.path.join(BUILD, "tests", "libfakecuda.so"))
    env["CUABI_PY_BACKEND"] = "cffi"
    with tempfile.TemporaryDirectory() as tmp:
        roots = {}
        for variant in ("limited", "full"):
            roots[variant] = os.path.join(tmp, variant)
            os.makedirs(roots[variant])
            print("built", build(variant, roots[variant]), file=sys.stderr)
        samples = {v: [] for v in roots}
        for r in range(args.rounds):
            for variant in (("limited", "full") if r % 2 == 0 else ("full", "limited")):
                p = subprocess.run([sys.executable, "-c", CHILD, str(args.number),
                                    os.path.join(BENCH, "kernels.ptx")], capture_output=True,
                                   text=True, env=dict(env, PYTHONPATH=roots[variant]), cwd=tmp)
                if p.returncode != 0:
                    raise SystemExit("abi3_cost: %s run failed:\n%s" % (variant, p.stderr[-3000:]))
                samples[variant].append(json.loads(p.stdout.splitlines()[-1]))
    print("median ns per call over %d alternating rounds (%s):" % (args.rounds, sys.version.split()[0]))
    print("%-30s %12s %12s %10s" % ("", "abi3", "full API", "abi3 cost"))
    for name in samples["limited"][0]:
        lim = statistics.median(s[name] for s in samples["limited"])
        full = statistics.median(s[name] for s in samples["full"])
        print("%-30s %12.1f %12.1f %+9.1f" % (name, lim, full, lim - full))
    return 0


if __name__ == "__main__":
    sys.exit(main())
