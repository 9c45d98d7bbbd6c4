#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cuabi's compat headers of the library families (include/cuabi/compat/nvrtc.h,
nvJitLink.h, nvvm.h, nvml.h) against NVIDIA's of the CUDA version CUABI_1.1 freezes
(13.5's, fetched by tools/fetch_cuda_headers.py), for each family:

- macros: a translation unit sees the same macros after `#include <nvrtc.h>` with
  either header (gcc -dM -E, C and C++), but for the differences DIFFERENCES lists
  (docs/families.md, "Compat headers", names each); every name NVIDIA's header maps
  to a symbol (nvmlInit -> nvmlInit_v2), and every function's own name, maps to the
  forwarder of the function whose symbol NVIDIA's header makes it call;
- layout: every struct and union (its size, alignment, and each field's offset and
  size), every enumerator and every integer or string constant of driver_api.json's
  family table has the same value through either header (two programs, one built
  against each, print them all);
- compiling: the compat header compiles as C99, C11, C17, C++11, C++17 and C++20 with
  -Wall -Wextra -pedantic wherever NVIDIA's does, with no more warnings;
- order: NVIDIA's header after cuabi/<family>.h adds nothing and compiles; before
  it, cuabi's header stops at its one #error.

usage: check_family_headers.py SOURCE_DIR HEADERS_DIR
Exits 77 (skipped) where NVIDIA's headers are absent.
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
CC = os.environ.get("CC", "cc")
CXX = os.environ.get("CXX", "c++")

HEADERS = {"nvrtc": "nvrtc.h", "nvjitlink": "nvJitLink.h", "nvvm": "nvvm.h", "nvml": "nvml.h"}

# name pattern -> why the compat header may have it where NVIDIA's has not, or not with
# the same value (docs/families.md names each).
DIFFERENCES = {
    r"CUABI_\w+|cuabi_\w+": "cuabi's own: its guards, CUABI_API, the answers of a family's "
                            "functions (CUABI_NVRTC_LIBRARY_MISSING, ...)",
    r"NVML_STRUCT_VERSION": "written in cuabi's words; every struct version it makes has NVIDIA's "
                            "value (the layout check compares them)",
}


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def probe(text: str, suffix: str = ".c") -> str:
    f = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False)
    f.write(text)
    f.close()
    return f.name


def macros(compiler: str, includes: list[str], header: str) -> dict[str, str]:
    path = probe(f"#include <{header}>\n")
    try:
        out = run([compiler, "-dM", "-E", *includes, path], check=True).stdout
    finally:
        os.unlink(path)
    table = {}
    for line in out.splitlines():
        m = re.match(r"#define (\w+)(\([^)]*\))?(?: (.*))?$", line)
        if m:
            table[m.group(1)] = ((m.group(2) or "") + " " + (m.group(3) or "")).strip()
    return table


def libc_macros(compiler: str) -> set[str]:
    """What <stddef.h> and <stdint.h>, which cuabi's family headers include, define."""
    path = probe("#include <stddef.h>\n#include <stdint.h>\n")
    try:
        out = run([compiler, "-dM", "-E", path], check=True).stdout
    finally:
        os.unlink(path)
    return {m.group(1) for m in re.finditer(r"#define (\w+)", out)}


def check_macros(family: str, table: dict, source: Path, nvidia: Path) -> list[str]:
    header = HEADERS[family]
    compat = ["-I", str(source / "include" / "cuabi" / "compat"), "-I", str(source / "include")]
    functions = {f["name"]: f for f in table["functions"]}
    by_symbol = {f["header_symbol"]: f["name"] for f in table["functions"]}
    left_out = set(table["macros_left_out"])
    problems = []
    for compiler in (CC, CXX):
        theirs = macros(compiler, ["-I", str(nvidia)], header)
        ours = macros(compiler, compat, header)
        extra_libc = libc_macros(compiler) - set(theirs)
        for name in sorted(set(theirs) | set(ours)):
            a, b = theirs.get(name), ours.get(name)
            if a == b:
                continue
            if any(re.fullmatch(p, name) for p in DIFFERENCES):
                continue
            if name in functions or name in by_symbol or (a in by_symbol and b is not None):
                # a function's name or symbol: cuabi's forwarder of the function it calls
                target = by_symbol.get(a, by_symbol.get(name, name if name in functions else None))
                if target is None or b != f"cuabi_{target}":
                    problems.append(f"{family}: {name} is {b!r} in cuabi's header, expected "
                                    f"cuabi_{target} (NVIDIA's: {a!r}) [{compiler}]")
                continue
            if b is None and name in left_out:
                continue
            if a is None and name in extra_libc:
                continue
            problems.append(f"{family}: {name}: NVIDIA's {a!r}, cuabi's {b!r} [{compiler}]")
    for name in functions:
        if macros(CC, compat, header).get(name) != f"cuabi_{name}":
            problems.append(f"{family}: the compat header does not map {name} to cuabi_{name}")
    return problems


def layout_program(family: str, table: dict, header: str) -> str:
    """A C program printing every record's, enumerator's and constant's facts."""
    lines = [f"#include <{header}>", "#include <stddef.h>", "#include <stdio.h>",
             "int main(void)", "{"]
    for name, rec in sorted(table["records"].items()):
        if "." in name:
            continue
        ctype = name
        lines.append(f'    printf("{name} %zu %zu\\n", sizeof({ctype}), _Alignof({ctype}));')
        for f in rec["fields"]:
            member = f["name"]
            lines.append(f'    printf("{name}.{member} %zu %zu\\n", offsetof({ctype}, {member}), '
                         f'sizeof((({ctype} *)0)->{member}));')
    for enum in sorted(table["enums"].values(), key=lambda e: sorted(e)):
        for enumerator in sorted(enum):
            lines.append(f'    printf("{enumerator} %lld\\n", (long long){enumerator});')
    for name, c in sorted(table["constants"].items()):
        if isinstance(c.get("value"), int):
            lines.append(f'    printf("{name} %lld\\n", (long long)({name}));')
        elif isinstance(c.get("value"), str):
            lines.append(f'    printf("{name} %s\\n", {name});')
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def check_layout(family: str, table: dict, source: Path, nvidia: Path) -> tuple[list[str], int]:
    header = HEADERS[family]
    path = probe(layout_program(family, table, header))
    outputs = []
    try:
        for includes in (["-I", str(nvidia)],
                         ["-I", str(source / "include" / "cuabi" / "compat"), "-I", str(source / "include")]):
            exe = path + ".exe"
            built = run([CC, "-std=c11", "-w", *includes, path, "-o", exe])
            if built.returncode != 0:
                return [f"{family}: the layout program does not build:\n{built.stderr[:2000]}"], 0
            outputs.append(run([exe], check=True).stdout.splitlines())
            os.unlink(exe)
    finally:
        os.unlink(path)
    problems = [f"{family}: NVIDIA's {a!r}, cuabi's {b!r}" for a, b in zip(*outputs) if a != b]
    return problems, len(outputs[0])


STANDARDS = [(CC, "-std=c99", ".c"), (CC, "-std=c11", ".c"), (CC, "-std=c17", ".c"),
             (CXX, "-std=c++11", ".cpp"), (CXX, "-std=c++17", ".cpp"), (CXX, "-std=c++20", ".cpp")]


def warnings(compiler: str, std: str, suffix: str, includes: list[str], header: str):
    """None when it does not compile, else the number of warnings."""
    path = probe(f"#include <{header}>\nint cuabi_probe;\n", suffix)
    try:
        r = run([compiler, std, "-Wall", "-Wextra", "-pedantic", "-fsyntax-only", *includes, path])
    finally:
        os.unlink(path)
    return None if r.returncode != 0 else r.stderr.count("warning:")


def check_compiling(family: str, source: Path, nvidia: Path) -> list[str]:
    header = HEADERS[family]
    compat = ["-I", str(source / "include" / "cuabi" / "compat"), "-I", str(source / "include")]
    problems = []
    for compiler, std, suffix in STANDARDS:
        theirs = warnings(compiler, std, suffix, ["-I", str(nvidia)], header)
        ours = warnings(compiler, std, suffix, compat, header)
        if theirs is not None and (ours is None or ours > theirs):
            problems.append(f"{family}: {std}: NVIDIA's header compiles with {theirs} warnings, "
                            f"cuabi's {'does not compile' if ours is None else f'with {ours}'}")
    return problems


def check_order(family: str, source: Path, nvidia: Path) -> list[str]:
    header = HEADERS[family]
    includes = ["-I", str(source / "include")]
    problems = []
    after = probe(f"#include <cuabi/{family}.h>\n#include \"{nvidia / header}\"\nint cuabi_probe;\n")
    before = probe(f"#include \"{nvidia / header}\"\n#include <cuabi/{family}.h>\nint cuabi_probe;\n")
    try:
        r = run([CC, "-std=c11", "-fsyntax-only", *includes, after])
        if r.returncode != 0:
            problems.append(f"{family}: NVIDIA's {header} after cuabi/{family}.h does not compile:\n"
                            f"{r.stderr[:1000]}")
        r = run([CC, "-std=c11", "-fsyntax-only", *includes, before])
        if r.returncode == 0 or r.stderr.count("error:") != 1 or "was included before" not in r.stderr:
            problems.append(f"{family}: NVIDIA's {header} before cuabi/{family}.h: expected one "
                            f"#error, got:\n{r.stderr[:1000]}")
    finally:
        os.unlink(after)
        os.unlink(before)
    return problems


def main() -> int:
    source, nvidia = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    missing = [h for h in HEADERS.values() if not (nvidia / h).exists()]
    if missing:
        print(f"skipped: {', '.join(missing)} not in {nvidia} (python3 tools/fetch_cuda_headers.py "
              "fetches them)")
        return SKIPPED
    api = json.loads((source / "include" / "cuabi" / "driver_api.json").read_text())
    problems, facts = [], 0
    for family, table in api["families"].items():
        table = dict(table, macros_left_out=table.get("macros_left_out", []))
        problems += check_macros(family, table, source, nvidia)
        found, count = check_layout(family, table, source, nvidia)
        problems += found
        facts += count
        problems += check_compiling(family, source, nvidia)
        problems += check_order(family, source, nvidia)
    for p in problems[:60]:
        print(p)
    if len(problems) > 60:
        print(f"... and {len(problems) - 60} more")
    print(f"{len(api['families'])} families: macros, {facts} layout facts, {len(STANDARDS)} "
          f"standards, both orders; {0 if problems else 1} passed, {1 if problems else 0} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
