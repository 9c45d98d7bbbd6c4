#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Pinning, checked against the toolkit's headers without the generator's
logic: for every entry point, in legacy and in per-thread default stream mode,
the C preprocessor says which driver symbol code compiled against cuda.h and
cudaProfiler.h links (cuMemAlloc -> cuMemAlloc_v2, cuMemcpyAsync ->
cuMemcpyAsync_ptsz), and the version cuabi pins must be the one whose
cuGetProcAddress answer is that symbol.

The rule that ties a symbol to a version is the driver's naming: a symbol
base_vK is the K-th ABI of `base`, and cudaTypedefs.h has one PFN_base_vN
typedef per ABI, so the K-th of those in ascending order is its version (the
plain name is the first); a per-thread symbol base[_vK]_ptds/_ptsz is the one
per-thread ABI of the newest legacy one, whose version is its PFN_..._ptds/_ptsz
typedef's. Where cuda.h makes the per-thread symbol an inline function of its
own (cuGetProcAddress_v2_ptsz), the driver symbol it calls is the one pinned.
The generator applies the same rule from its parsed typedefs and checks each
pinned typedef's parameter list; the two must agree everywhere.
On a GPU, tests/gpu/check_pinned_symbols.py asks the driver itself.

The entry points checked are those of the version nodes whose CUDA version is
not newer than the headers' (CUDA_VERSION): against CUDA 13.0's headers the
CUABI_1.0 node, against 13.5's every node; each must pin in those headers what
its own node's headers pinned (driver_api.json's "nodes").

usage: check_pinning.py SOURCE_DIR CUDA_INCLUDE_DIR
Exits 77 (skipped) where the toolkit's headers are absent.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SKIPPED = 77


def linked_symbols(cuda_include: Path, names: list[str], per_thread: bool) -> dict[str, str]:
    """What each name becomes after cuda.h's and cudaProfiler.h's macros."""
    probe = "#include <cuda.h>\n#include <cudaProfiler.h>\n" + "".join(
        f"cuabi_probe_{i} {name}\n" for i, name in enumerate(names))
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write(probe)
    try:
        flags = ["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"] if per_thread else []
        out = subprocess.run([os.environ.get("CC", "cc"), "-E", "-P", *flags, f"-I{cuda_include}",
                              f.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    result = {}
    for line in out.splitlines():
        m = re.match(r"cuabi_probe_(\d+) (\w+)$", line.strip())
        if m:
            result[names[int(m.group(1))]] = m.group(2)
    return result


def inline_functions(cuda_include: Path) -> dict[str, str]:
    """Per-thread names cuda.h defines as inline functions: {name: driver symbol it calls}."""
    text = (cuda_include / "cuda.h").read_text()
    found = {}
    for m in re.finditer(r"static inline CUresult (\w+)\([^)]*\)\s*\{(.*?)\n\}", text, re.S):
        called = re.search(r"return (\w+)\(", m.group(2))
        if called:
            found[m.group(1)] = called.group(1)
    return found


def abi_versions(cuda_include: Path) -> dict[tuple[str, str], list[int]]:
    """{(base, '' | '_ptds' | '_ptsz'): ascending versions of its PFN typedefs}."""
    versions: dict[tuple[str, str], set[int]] = {}
    for header in ("cudaTypedefs.h", "cudaProfilerTypedefs.h"):
        for m in re.finditer(r"\bPFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\)", (cuda_include / header).read_text()):
            versions.setdefault((m.group(1), m.group(3) or ""), set()).add(int(m.group(2)))
    return {key: sorted(v) for key, v in versions.items()}


def expected_version(symbol: str, versions, inline: dict[str, str]) -> tuple[int | None, str]:
    if symbol in inline:
        symbol = inline[symbol]
    m = re.fullmatch(r"(cu\w+?)(?:_v(\d+))?(_ptds|_ptsz)?", symbol)
    base, k, suffix = m.group(1), int(m.group(2) or 1), m.group(3) or ""
    legacy = versions.get((base, ""), [])
    if not suffix:
        if k > len(legacy):
            return None, f"{symbol}: cudaTypedefs.h has only {len(legacy)} ABIs of {base}"
        return legacy[k - 1], symbol
    # Per-thread ABIs exist for the newest legacy ones only (those since CUDA 7.0):
    # the lists line up at their ends.
    threaded = versions.get((base, suffix), [])
    index = k - 1 - (len(legacy) - len(threaded))
    if not threaded or not 0 <= index < len(threaded):
        return None, f"{symbol}: cudaTypedefs.h has no per-thread ABI for {base}'s ABI {k}"
    return threaded[index], symbol


def main() -> int:
    source, cuda_include = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    if not (cuda_include / "cudaTypedefs.h").exists():
        print(f"skipped: {cuda_include}/cudaTypedefs.h is absent; nothing to check against")
        return SKIPPED
    table = json.loads((source / "include/cuabi/driver_api.json").read_text())
    cuda_version = int(re.search(r"^#define CUDA_VERSION (\d+)", (cuda_include / "cuda.h").read_text(),
                                 re.M).group(1))
    nodes = [n["name"] for n in table["nodes"] if n["cuda_version"] <= cuda_version]
    if not nodes:
        print(f"these headers (CUDA {cuda_version}) are older than every node of cuabi")
        return 1
    entries = [e for e in table["entry_points"] if e["node"] in nodes]
    names = [e["name"] for e in entries]
    versions = abi_versions(cuda_include)
    inline = inline_functions(cuda_include)
    failures = []
    # What the library itself asks for: lib/entry_table.c, row for row the same as the table.
    rows = re.findall(r'\{ "(\w+)", "(\w+)", (\d+), (\d+) \}',
                      (source / "lib/entry_table.c").read_text())
    built = {name: (driver, int(v), int(pv)) for name, driver, v, pv in rows}
    for e in table["entry_points"]:
        if built.get(e["name"]) != (e["driver_name"], e["version"], e["ptds_version"]):
            failures.append(f"{e['name']}: lib/entry_table.c has {built.get(e['name'])}, "
                            f"driver_api.json {(e['driver_name'], e['version'], e['ptds_version'])}")
    for per_thread in (False, True):
        mode = "per-thread" if per_thread else "legacy"
        symbols = linked_symbols(cuda_include, names, per_thread)
        for e in entries:
            symbol = symbols.get(e["name"])
            recorded = e["cuda_h_ptds_symbol" if per_thread else "cuda_h_symbol"]
            pinned = e["ptds_version" if per_thread else "version"]
            if symbol != recorded:
                failures.append(f"{e['name']} ({mode}): cuda.h links {symbol}, the table says {recorded}")
                continue
            want, why = expected_version(symbol, versions, inline)
            if want is None:
                failures.append(f"{e['name']} ({mode}): {why}")
            elif want != pinned:
                failures.append(f"{e['name']} ({mode}): cuda.h links {why}, the ABI of version "
                                f"{want}; cuabi pins {pinned}")
    print("\n".join(failures) or f"{len(entries)} entry points ({', '.join(nodes)}), both modes, "
          f"against CUDA {cuda_version}'s headers: every pinned version is the one of the "
          "symbol cuda.h links")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
