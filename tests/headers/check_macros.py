#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The macros a translation unit sees after `#include <cuda.h>` and
`#include <cudaProfiler.h>` are the same with cuabi's compat headers as with
the toolkit's, in C and C++, in legacy and per-thread default stream mode
(gcc -dM -E), but for the differences listed in DIFFERENCES, each of which
docs/abi.md ("The compat cuda.h") names and explains. Every cuXxx macro of the
toolkit (a rename such as cuMemAlloc -> cuMemAlloc_v2) exists in the compat
header too, mapped to cuabi's forwarder; and the forwarder of the same function:
each cuXxx name the compat header maps, and each entry point's name, becomes through
cuabi's header the forwarder of the entry point whose driver symbol it becomes
through the toolkit's (driver_api.json's cuda_h_symbol, in per-thread mode
cuda_h_ptds_symbol; a spelling of the other mode, such as cuMemcpy_ptds in legacy
mode, names that mode's entry point).

cuabi's headers describe the newest CUDA version a version node comes from
(driver_api.json's cuda_version, 13.5). Against that version's headers the
comparison goes both ways; a name an older CUDA had and that one dropped, which
cuabi keeps (driver_api.json's kept_names), is a documented difference. Against
an older CUDA's headers (13.0's, the CUABI_1.0 node's) it goes one way: every
macro they define, cuabi's define with the same value, but CUDA_VERSION, which
is the newest's; what cuabi defines beyond them is the newer CUDA's, which the
comparison with the newer headers covers.

usage: check_macros.py SOURCE_DIR CUDA_INCLUDE_DIR
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

# name pattern -> why the compat header may have it where the toolkit's has not (or
# not with the same value). docs/abi.md must name each pattern's example.
DIFFERENCES = {
    r"CUABI_\w+|cuabi_\w+": ("CUABI_VERSION", "cuabi's own API, result-code list and guards"),
    r"cu[A-Z]\w*": ("cuMemAlloc", "every driver name maps to cuabi's forwarder (cuabi_cuMemAlloc), "
                    "also the versioned and per-thread spellings cuda.h renames it to "
                    "(cuMemAlloc_v2, cuMemcpy_ptds)"),
    r"offsetof|_GXX_NULLPTR_T|_GCC_\w+|_\w*PTRDIFF\w*|__DEFINED_ptrdiff_t|_ANSI_STDDEF_H"
    r"|_STDDEF_H_?|___int_ptrdiff_t_h":
        ("<stddef.h>", "cuabi.h includes <stddef.h> for size_t, so its macros come along"),
}


def macros(cc: str, flags: list[str], includes: list[str]) -> dict[str, str]:
    with tempfile.NamedTemporaryFile("w", suffix=".h", delete=False) as f:
        f.write("#include <cuda.h>\n#include <cudaProfiler.h>\n")
    try:
        out = subprocess.run([cc, *flags, "-dM", "-E", *includes, f.name],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    table = {}
    for line in out.splitlines():
        m = re.match(r"#define (\w+)(\([^)]*\))?(?: (.*))?$", line)
        if m:
            table[m.group(1)] = (m.group(2) or "") + " " + (m.group(3) or "")
    return table


def expansions(cc: str, flags: list[str], includes: list[str], names: list[str]) -> dict[str, str]:
    """What each name becomes after cuda.h's and cudaProfiler.h's macros."""
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write("#include <cuda.h>\n#include <cudaProfiler.h>\n" +
                "".join(f"cuabi_probe_{i} {name}\n" for i, name in enumerate(names)))
    try:
        out = subprocess.run([cc, *flags, "-E", "-P", *includes, f.name],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    found = (re.match(r"cuabi_probe_(\d+) (\w+)$", line.strip()) for line in out.splitlines())
    return {names[int(m.group(1))]: m.group(2) for m in found if m}


def mapping_failures(source: Path, toolkit: list[str], cuabi: list[str]) -> list[str]:
    """Each name reaches, through cuabi's compat header, the forwarder of the entry point
    whose driver symbol it reaches through the toolkit's cuda.h."""
    entries = json.loads((source / "include/cuabi/driver_api.json").read_text())["entry_points"]
    compat = (source / "include/cuabi/compat/cuda.h").read_text()
    names = sorted({e["name"] for e in entries} |
                   set(re.findall(r"^#define (cu[A-Z]\w*) cuabi_", compat, re.M)))
    failures = []
    for mode, key, other in (([], "cuda_h_symbol", "cuda_h_ptds_symbol"),
                             (["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"], "cuda_h_ptds_symbol",
                              "cuda_h_symbol")):
        label = "per-thread" if mode else "legacy"
        by_symbol = {e[other]: e["name"] for e in entries}
        by_symbol.update({e[key]: e["name"] for e in entries})  # this mode's symbols first
        theirs = expansions("gcc", mode, toolkit, names)
        ours = expansions("gcc", mode, cuabi, names)
        for name in names:
            entry = by_symbol.get(theirs.get(name))
            if entry is None or ours.get(name) != "cuabi_" + entry:
                failures.append(f"{label}: {name} becomes {theirs.get(name)} with the toolkit's "
                                f"cuda.h (entry point {entry}), {ours.get(name)} with cuabi's")
    return failures


def allowed(name: str) -> bool:
    return any(re.fullmatch(pattern, name) for pattern in DIFFERENCES)


def main() -> int:
    source, cuda_include = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    if not (cuda_include / "cuda.h").exists():
        print(f"skipped: {cuda_include}/cuda.h is absent, so there is nothing to compare with")
        return SKIPPED
    docs = (source / "docs" / "abi.md").read_text()
    failures = [f"docs/abi.md does not explain the difference '{example}' ({why})"
                for example, why in DIFFERENCES.values() if f"`{example}`" not in docs]
    table = json.loads((source / "include/cuabi/driver_api.json").read_text())
    ours_version = table["cuda_version"]
    theirs_version = int(re.search(r"^#define CUDA_VERSION (\d+)",
                                   (cuda_include / "cuda.h").read_text(), re.M).group(1))
    newest = theirs_version == ours_version
    if theirs_version > ours_version:
        failures.append(f"these are CUDA {theirs_version}'s headers, newer than the CUDA "
                        f"{ours_version} cuabi describes")
    kept = {name for name, version in table["kept_names"].items() if version < theirs_version}
    failures += [f"docs/abi.md does not name {name}, which cuabi keeps from CUDA "
                 f"{table['kept_names'][name]}" for name in sorted(kept) if f"`{name}`" not in docs]
    toolkit = [f"-I{cuda_include}"]
    cuabi = [f"-I{source}/include/cuabi/compat", f"-I{source}/include", f"-I{cuda_include}"]
    compared = 0
    for language in ("c", "c++"):
        for mode in ([], ["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"]):
            label = f"{language}{' per-thread' if mode else ''}"
            flags = ["-x", language, *mode]
            theirs = macros("gcc", flags, toolkit)
            ours = macros("gcc", flags, cuabi)
            compared += len(theirs)
            for name in sorted(set(theirs) - set(ours)):
                failures.append(f"{label}: {name} is defined by the toolkit's cuda.h, not by cuabi's")
            for name in sorted(set(ours) - set(theirs)):
                if newest and not allowed(name) and name not in kept:
                    failures.append(f"{label}: {name} is defined by cuabi's cuda.h only "
                                    f"(= {ours[name].strip()})")
            for name in sorted(set(ours) & set(theirs)):
                if ours[name] == theirs[name]:
                    continue
                if re.fullmatch(r"cu[A-Z]\w*", name) and ours[name].strip().startswith("cuabi_cu"):
                    continue
                if not newest and name == "CUDA_VERSION" and ours[name].strip() == str(ours_version):
                    continue
                failures.append(f"{label}: {name} is {theirs[name].strip()!r} in the toolkit's "
                                f"cuda.h, {ours[name].strip()!r} in cuabi's")
    failures += mapping_failures(source, toolkit, cuabi)
    print("\n".join(failures) or
          f"macros agree with CUDA {theirs_version}'s "
          f"({'both ways' if newest else 'every one of theirs in cuabi'}): {compared} toolkit "
          f"macros over C, C++, legacy and per-thread; {len(DIFFERENCES)} kinds of difference "
          f"and {len(kept)} kept names, each explained in docs/abi.md; every name reaches the "
          "forwarder of the function it names")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
