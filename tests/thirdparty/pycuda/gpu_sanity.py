#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check that a PyCUDA build starts on the GPU through the driver library it should use.

    gpu_sanity.py cuabi|libcuda

Initialises PyCUDA, queries device 0, runs one copy, and reads which driver
libraries the process mapped: the cuabi build must map libcuabi.so.1 and (loaded
by cuabi) libcuda.so.1; the libcuda build must map libcuda.so.1 and no
libcuabi. Prints a JSON summary; exits 1 if the expectation does not hold, so
the comparison never runs on a build that is not what its name says.
"""
from __future__ import annotations

import json
import os
import sys


def mapped_driver_libraries() -> list[str]:
    """Paths of the libcuda and libcuabi files mapped into this process."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/" in line}
    return sorted(p for p in paths if os.path.basename(p).startswith(("libcuda.so", "libcuabi.so")))


def main() -> None:
    """Command line: the variant name."""
    variant = sys.argv[1]
    import numpy as np
    import pycuda.driver as drv

    drv.init()
    dev = drv.Device(0)
    ctx = dev.make_context()
    try:
        host = np.arange(1 << 20, dtype=np.float32)
        back = drv.from_device_like(drv.to_device(host), host)
        copied = bool(np.array_equal(host, back))
    finally:
        ctx.pop()
        ctx.detach()
    libs = mapped_driver_libraries()
    has_cuabi = any("libcuabi.so" in p for p in libs)
    has_cuda = any(os.path.basename(p).startswith("libcuda.so") for p in libs)
    ok = copied and has_cuda and (has_cuabi if variant == "cuabi" else not has_cuabi)
    print(json.dumps({
        "variant": variant, "ok": ok, "device": dev.name(),
        "compute_capability": dev.compute_capability(),
        "driver_version": drv.get_driver_version(), "header_version": drv.get_version(),
        "copy_roundtrip": copied, "driver_libraries": libs,
        "pycuda": os.path.dirname(drv.__file__),
    }, indent=1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
