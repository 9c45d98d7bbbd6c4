# SPDX-License-Identifier: Apache-2.0
"""Check that cuabi ends at the same driver function as cuda.bindings, entry point by entry point.

Run on a GPU machine where cuda.bindings is installed, once per stream mode:

    python3 tests/gpu/compare_addresses.py build/libcuabi.so.1 [--per-thread]

cuabi's address for an entry point is what libcuabi's own cuabi_get_proc answers for the name,
pinned version and stream flags that the forwarder uses (the table in
include/cuabi/driver_api.json). cuda.bindings exposes the addresses it resolved through
_inspect_function_pointers(), keyed by the symbol that cuda.h's macros give the name
(__cuMemAlloc_v2). Every difference is printed; the last line counts them.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEGACY, PER_THREAD = 1, 2     # CU_GET_PROC_ADDRESS_LEGACY_STREAM, ..._PER_THREAD_DEFAULT_STREAM


def bindings_addresses() -> dict[str, int]:
    for module in ("cuda.bindings._internal.driver", "cuda.bindings._bindings.cydriver"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        inspect = getattr(mod, "_inspect_function_pointers", None)
        if inspect is not None:
            return {name.lstrip("_"): int(addr) for name, addr in inspect().items()}
    raise SystemExit("cuda.bindings has no _inspect_function_pointers here; nothing to compare")


def main() -> int:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    per_thread = "--per-thread" in sys.argv[2:]
    if per_thread:
        # cuda.bindings picks its mode from this variable when it first loads the driver
        os.environ["CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"] = "1"
    lib = ctypes.CDLL(sys.argv[1])
    lib.cuabi_get_proc.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint64,
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.cuabi_get_proc.restype = ctypes.c_int
    table = json.loads((ROOT / "include/cuabi/driver_api.json").read_text())

    import cuda.bindings.driver as drv  # noqa: F401  (loads the driver in cuda.bindings)
    drv.cuInit(0)
    theirs = bindings_addresses()

    same = differ = only_cuabi = only_bindings = 0
    for ep in table["entry_points"]:
        version = ep["ptds_version"] if per_thread else ep["version"]
        fn = ctypes.c_void_p()
        status = lib.cuabi_get_proc(ep["driver_name"].encode(), version,
                                    PER_THREAD if per_thread else LEGACY, ctypes.byref(fn))
        ours = fn.value if status == 0 else None
        key = ep["cuda_h_symbol"]
        other = theirs.get(key) or None
        if ours is None and other is None:
            continue
        if ours is None:
            only_bindings += 1
            print(f"only cuda.bindings resolves {ep['name']} ({key}); cuabi status {status}")
        elif other is None:
            only_cuabi += 1
            if key in theirs:
                print(f"only cuabi resolves {ep['name']}: cuda.bindings left {key} unset")
            else:
                print(f"only cuabi resolves {ep['name']}: cuda.bindings has no {key}")
        elif ours == other:
            same += 1
        else:
            differ += 1
            print(f"DIFFERENT {ep['name']}: cuabi {ours:#x} (v{version}), cuda.bindings "
                  f"{other:#x} ({key})")
    mode = "per-thread" if per_thread else "legacy"
    print(f"{mode}: {same} same, {differ} different, {only_cuabi} only cuabi, "
          f"{only_bindings} only cuda.bindings")
    return 1 if differ or only_bindings else 0


if __name__ == "__main__":
    sys.exit(main())
