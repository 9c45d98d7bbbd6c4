# SPDX-License-Identifier: Apache-2.0
"""On a GPU: every pinned version makes the driver's cuGetProcAddress return exactly
the symbol that code compiled against cuda.h links, in both stream modes.

For each entry point of include/cuabi/driver_api.json, cuabi's own cuabi_get_proc asks
the driver with the forwarder's name, pinned version and stream flags; dlsym on the
driver (libcuda.so.1) gives the address of the symbol cuda.h's macros turn the name into
(cuda_h_symbol, cuda_h_ptds_symbol). The two must be the same function. cuda.h's one
inline per-thread wrapper (cuGetProcAddress_v2_ptsz) is compared with the symbol it calls.
tests/check_pinning.py checks the same from the headers alone; this asks the driver.

    python3 tests/gpu/check_pinned_symbols.py build/libcuabi.so.1
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEGACY, PER_THREAD = 1, 2     # CU_GET_PROC_ADDRESS_LEGACY_STREAM, ..._PER_THREAD_DEFAULT_STREAM
INLINE = {"cuGetProcAddress_v2_ptsz": "cuGetProcAddress_v2"}  # defined in cuda.h itself


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cuabi = ctypes.CDLL(sys.argv[1])
    cuabi.cuabi_get_proc.argtypes = [ctypes.c_char_p, ctypes.c_int32, ctypes.c_uint64,
                                     ctypes.POINTER(ctypes.c_void_p)]
    cuabi.cuabi_get_proc.restype = ctypes.c_int
    rc = cuabi.cuabi_driver_status()
    if rc != 0:
        print(f"no driver: cuabi_driver_status() = {rc}")
        return 2
    cuabi.cuabi_driver_path.restype = ctypes.c_char_p
    driver = ctypes.CDLL(cuabi.cuabi_driver_path().decode())
    table = json.loads((ROOT / "include/cuabi/driver_api.json").read_text())
    same = both_absent = 0
    failures = []
    for e in table["entry_points"]:
        for flags, version, symbol in ((LEGACY, e["version"], e["cuda_h_symbol"]),
                                       (PER_THREAD, e["ptds_version"], e["cuda_h_ptds_symbol"])):
            fn = ctypes.c_void_p()
            rc = cuabi.cuabi_get_proc(e["driver_name"].encode(), version, flags, ctypes.byref(fn))
            try:
                linked = ctypes.cast(getattr(driver, INLINE.get(symbol, symbol)), ctypes.c_void_p).value
            except AttributeError:
                linked = None
            mode = "per-thread" if flags == PER_THREAD else "legacy"
            if rc == 0 and fn.value == linked:
                same += 1
            elif rc != 0 and linked is None:
                both_absent += 1
            else:
                failures.append(f"{e['name']} ({mode}): cuGetProcAddress({e['driver_name']}, "
                                f"{version}) = {hex(fn.value or 0)} (status {rc}), "
                                f"dlsym({symbol}) = {hex(linked or 0)}")
    print("\n".join(failures))
    print(f"{same} same function, {both_absent} absent from this driver both ways, "
          f"{len(failures)} different")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
