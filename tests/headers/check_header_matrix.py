#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Header fidelity: cuabi's compat cuda.h compiles wherever the toolkit's own
cuda.h compiles, next to every toolkit header that shares declarations with
it, in both orders, as C and C++ of every standard, and as nvcc .cu files,
with no more warnings than the toolkit's cuda.h gives there.

The headers that share declarations are found from the toolkit's headers
(those that include cuda.h, or that name a type, tag, enumerator or macro of
the driver API in their own text), and must contain the ones the issue that
asked for this check named. Each translation unit is compiled twice with
-fsyntax-only -Wall -Wextra -pedantic: once against the toolkit alone, once
with cuabi's compat folder and include folder ahead of it. Where the toolkit's
version compiles, cuabi's must, with at most as many warnings; where the
toolkit's does not (C89 with the runtime headers, a missing GL header), the
case says so and asks nothing of cuabi.

Also: cuabi.h followed by the toolkit's cuda.h compiles (the toolkit's adds
nothing), and the other order stops at cuabi's #error, which names the fix.

cuabi's headers describe the newest CUDA a version node comes from
(driver_api.json's cuda_version, 13.5): the warnings are compared with that
version's headers. Against an older toolkit (13.0's, whose runtime headers
programs may still use with cuabi) only compiling is compared: the newer
declarations bring their own warnings (C11's anonymous structs in C99, a
1 << 31 enumerator), which the toolkit of their version gives as well.

usage: check_header_matrix.py SOURCE_DIR CUDA_INCLUDE_DIR [--jobs N]
Exits 77 (skipped) where the toolkit's headers are absent.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SKIPPED = 77

# Named by the issue that asked for this check; the search must find at least these.
REQUIRED = ["cuda_runtime.h", "cuda_runtime_api.h", "builtin_types.h", "driver_types.h",
            "vector_types.h", "cudaTypedefs.h", "cudaProfiler.h"]
# Every standard for these; the headers found beyond them get one C and one C++ standard.
C_STDS = ["c89", "c99", "c11", "c17"]
CXX_STDS = ["c++98", "c++03", "c++11", "c++14", "c++17", "c++20", "c++23"]
BRIEF_STDS = [("c", "c11"), ("c++", "c++17")]
NVCC_STDS = ["c++11", "c++14", "c++17", "c++20"]

# What a translation unit does with the driver API besides including it: a type,
# the shared CUuuid, a constant, and an entry point's name, so that the names resolve.
USE = """
int cuabi_matrix_use(void);
int cuabi_matrix_use(void)
{
    CUuuid uuid;
    CUdevice device = 0;
    CUresult (*init)(unsigned int) = cuInit;
    uuid.bytes[0] = 1;
    return (int)uuid.bytes[0] + (int)device + (int)CUDA_SUCCESS + (init != 0);
}
"""


@dataclass
class Case:
    name: str
    language: str      # "c", "c++" or "cu"
    std: str
    text: str
    compiler: str


def driver_identifiers(source: Path) -> set[str]:
    """Type, tag, enumerator and macro names of the driver API (from cuabi's own table)."""
    table = json.loads((source / "include/cuabi/driver_api.json").read_text())
    names = set(table["defines"]) | {"CU_UUID_HAS_BEEN_DEFINED"}
    for enum, values in table["enums"].items():
        names.add(enum)
        names.update(v for v in values if not v.startswith("CUABI_"))
    for record in table["records"]:
        names.add(record.split(" ", 1)[-1].split(".", 1)[0])
    types = (source / "include/cuabi/driver_types.h").read_text()
    names.update(re.findall(r"\bstruct (\w+)", types))
    return {n for n in names if re.match(r"(CU|cu)[A-Za-z0-9_]", n)}


def sharing_headers(cuda_include: Path, identifiers: set[str]) -> list[str]:
    """Toolkit headers that include cuda.h or name a driver-API identifier themselves."""
    found = []
    for header in sorted(cuda_include.glob("*.h")):
        if header.name == "cuda.h":
            continue
        text = header.read_text(errors="replace")
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        includes_cuda = re.search(r'#\s*include\s*[<"]cuda\.h[>"]', text) is not None
        if includes_cuda or set(re.findall(r"\b\w+\b", text)) & identifiers:
            found.append(header.name)
    return found


def quoting_headers(cuda_include: Path) -> set[str]:
    """Headers that bring in the toolkit's own cuda.h whatever the include path says: they
    include "cuda.h" from their own folder (or include such a header)."""
    texts = {h.name: h.read_text(errors="replace") for h in cuda_include.glob("*.h")}
    found = {name for name, text in texts.items() if re.search(r'#\s*include\s*"cuda\.h"', text)}
    grew = True
    while grew:
        grew = False
        for name, text in texts.items():
            included = set(re.findall(r'#\s*include\s*[<"]([\w.]+)[>"]', text))
            if name not in found and included & found:
                found.add(name)
                grew = True
    return found


def cases(headers: list[str], cc: str, cxx: str) -> list[Case]:
    out = []
    for header in headers:
        full = header in REQUIRED
        stds = [("c", s) for s in C_STDS] + [("c++", s) for s in CXX_STDS] if full else BRIEF_STDS
        for first, second in ((header, "cuda.h"), ("cuda.h", header)):
            text = f"#include <{first}>\n#include <{second}>\n{USE}"
            for language, std in stds:
                compiler = cc if language == "c" else cxx
                out.append(Case(f"{first} then {second}, {std}", language, std, text, compiler))
    return out


def compile_case(case: Case, includes: list[str], work: Path, tag: str) -> tuple[bool, int, str]:
    suffix = {"c": ".c", "c++": ".cpp", "cu": ".cu"}[case.language]
    path = work / (re.sub(r"\W+", "_", f"{case.name}_{tag}") + suffix)
    path.write_text(case.text)
    if case.language == "cu":
        cmd = [case.compiler, f"-std={case.std}", "-c", "-o", os.devnull, *includes, str(path)]
    else:
        std = "c++2b" if case.std == "c++23" and "clang" in case.compiler else case.std
        cmd = [case.compiler, f"-std={std}", "-fsyntax-only", "-Wall", "-Wextra", "-pedantic",
               *includes, str(path)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    output = result.stdout + result.stderr
    return result.returncode == 0, len(re.findall(r"\bwarning\b", output)), output


def error_count(output: str) -> int:
    return len(re.findall(r": (?:fatal )?error:", output))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("source", type=Path)
    ap.add_argument("cuda_include", type=Path)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    source, cuda_include = args.source.resolve(), args.cuda_include.resolve()
    if not (cuda_include / "cuda.h").exists():
        print(f"skipped: {cuda_include}/cuda.h is absent, so there is nothing to compare with")
        return SKIPPED

    cc = os.environ.get("CC", "gcc")
    cxx = os.environ.get("CXX", "g++")
    found = sharing_headers(cuda_include, driver_identifiers(source))
    missing = [h for h in REQUIRED if not (cuda_include / h).exists()]
    headers = sorted(set(found) | set(REQUIRED) - set(missing))
    quoting = quoting_headers(cuda_include)
    all_cases = cases(headers, cc, cxx)
    all_cases += [Case(f"{first} then {second}, clang {std}", lang, std,
                       f"#include <{first}>\n#include <{second}>\n{USE}", comp)
                  for first, second in (("cuda_runtime.h", "cuda.h"), ("cuda.h", "cuda_runtime.h"))
                  for lang, std, comp in (("c", "c11", "clang"), ("c++", "c++17", "clang++"))
                  if shutil.which(comp)]
    # nvcc with the headers of its own toolkit only: the headers of another CUDA version
    # (fetched ones, tools/fetch_cuda_headers.py) come without a compiler.
    nvcc = str(cuda_include.parent / "bin" / "nvcc")
    on_path = shutil.which("nvcc")
    if not Path(nvcc).exists() and on_path and \
            Path(on_path).resolve().parent.parent / "include" == cuda_include:
        nvcc = on_path
    if Path(nvcc).exists():
        for std in NVCC_STDS:
            all_cases.append(Case(f"a .cu file including cuda.h and cudaTypedefs.h, nvcc {std}",
                                  "cu", std, f"#include <cuda.h>\n#include <cudaTypedefs.h>\n{USE}",
                                  nvcc))

    described = json.loads((source / "include/cuabi/driver_api.json").read_text())["cuda_version"]
    theirs = int(re.search(r"^#define CUDA_VERSION (\d+)", (cuda_include / "cuda.h").read_text(),
                           re.M).group(1))
    count_warnings = theirs == described
    toolkit = [f"-I{cuda_include}"]
    cuabi = [f"-I{source}/include/cuabi/compat", f"-I{source}/include", f"-I{cuda_include}"]
    failures = []
    if missing:
        failures.append(f"the toolkit lacks headers this check must cover: {missing}")
    counts = {"both compile": 0, "toolkit fails too": 0, "refused as documented": 0}
    refused: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        work = Path(tmp)
        futures = [(case, pool.submit(compile_case, case, toolkit, work, "toolkit"),
                    pool.submit(compile_case, case, cuabi, work, "cuabi")) for case in all_cases]
        for case, base_future, ours_future in futures:
            base_ok, base_warnings, _ = base_future.result()
            ok, warnings, output = ours_future.result()
            if not base_ok:
                counts["toolkit fails too"] += 1
                continue
            first = case.text.split(">", 1)[0].split("<", 1)[1]
            if not ok and first in quoting and error_count(output) == 1 and \
                    "must come after #include <cuda.h>" in output:
                # The toolkit's cuda.h came in first: cuabi's compat header stops with its
                # one error, which says to include <cuda.h> first (docs/abi.md).
                counts["refused as documented"] += 1
                refused.add(first)
                continue
            if not ok:
                failures.append(f"{case.name}: fails with cuabi, compiles with the toolkit:\n"
                                + "\n".join(output.splitlines()[:8]))
            elif warnings > base_warnings and count_warnings:
                failures.append(f"{case.name}: {warnings} warnings with cuabi, {base_warnings} "
                                "with the toolkit:\n" + "\n".join(output.splitlines()[:8]))
            else:
                counts["both compile"] += 1

        # cuabi.h with the toolkit's cuda.h: one order works, the other stops clearly.
        mixed = [Case("cuabi.h then the toolkit's cuda.h", "c", "c11",
                      f"#include <cuabi.h>\n#include <cuda.h>\n#include <cudaTypedefs.h>\n{USE}"
                      .replace("cuInit", "cuabi_cuInit"), cc),
                 Case("the toolkit's cuda.h then cuabi.h", "c", "c11",
                      f"#include <cuda.h>\n#include <cuabi.h>\n{USE}", cc)]
        # cuabi's own codes are values of CUresult: a switch over them, and constants
        # made of them, compile cleanly with -Werror=switch in C and C++. (Without
        # -pedantic: the pedantic warnings of CUDA's own declarations are the toolkit's,
        # counted above.)
        switch = ("#include <cuda.h>\nint cuabi_matrix_kind(CUresult rc);\n"
                  "int cuabi_matrix_kind(CUresult rc)\n{\n    switch (rc) {\n"
                  "    case CUDA_SUCCESS: return 0;\n"
                  "    case CUABI_ERROR_DRIVER_NOT_FOUND: return 1;\n"
                  "    case CUABI_ERROR_ENTRY_POINT_NOT_FOUND: return 2;\n"
                  "    default: return 3;\n    }\n}\n")
        for comp, lang, std, extra in (("gcc", "c", "c11", ""), ("g++", "c++", "c++17",
                                       "extern const CUresult cuabi_matrix_code;\nconstexpr CUresult "
                                       "cuabi_matrix_code = CUABI_ERROR_DRIVER_TOO_OLD;\n"),
                                       ("clang++", "c++", "c++17",
                                        "extern const CUresult cuabi_matrix_code;\nconstexpr "
                                        "CUresult cuabi_matrix_code = CUABI_ERROR_DRIVER_TOO_OLD;\n")):
            if not shutil.which(comp):
                continue
            case = Case(f"own codes in a switch, {comp} {std}", lang, std, switch + extra, comp)
            ok, _, output = compile_case(case, cuabi + ["-Werror=switch", "-Werror", "-Wno-pedantic"],
                                         work, "own")
            if not ok:
                failures.append(f"{case.name}: does not compile:\n{output[:800]}")
        plain = [f"-I{source}/include", f"-I{cuda_include}"]
        ok, _, output = compile_case(mixed[0], plain, work, "mixed")
        if not ok:
            failures.append(f"{mixed[0].name}: does not compile:\n{output[:800]}")
        ok, _, output = compile_case(mixed[1], plain, work, "mixed")
        if ok or "was included before cuabi.h" not in output or error_count(output) != 1:
            failures.append(f"{mixed[1].name}: expected cuabi's one #error, got:\n{output[:800]}")

    print(f"headers sharing declarations with cuda.h: {len(headers)} ({', '.join(headers)})")
    print(f"CUDA {theirs}'s headers; cuabi's describe CUDA {described}: "
          + ("warnings compared" if count_warnings else "compiling compared, warnings not "
             "(the newer declarations' own warnings are compared with the newer headers)"))
    print(f"{len(all_cases)} cases: {counts['both compile']} compile with cuabi as with the "
          f"toolkit; {counts['refused as documented']} stop at the compat header's error (a "
          f"header that brings the toolkit's cuda.h first: {', '.join(sorted(refused))}); "
          f"{counts['toolkit fails too']} do not compile with the toolkit either")
    if failures:
        print(f"\n{len(failures)} failures:\n" + "\n\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
