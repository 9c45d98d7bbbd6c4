#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The declarations-only header include/cuabi/cuabi_cdef.h is what C-declaration FFIs can
read and what driver_api.json describes: it has no preprocessor line, include or alignment
specifier; cffi's cdef parser takes it whole; every struct and union it declares has the
size, alignment and field offsets of driver_api.json's records (CUtensorMap's 128-byte
alignment excepted, which the header says it cannot express); every enumerator, #define
constant and own constant has its JSON value; and every function of the JSON is declared
and found in the built library. Skipped where cffi is not installed.

usage: check_cdef.py SOURCE_DIR LIBCUABI
"""
import json
import re
import sys
from pathlib import Path

SKIPPED = 77
# Alignments the header cannot state (C11 _Alignas), by record name.
ALIGN_NOT_EXPRESSED = {"CUtensorMap"}


def main() -> int:
    try:
        import cffi
    except ImportError:
        print("skipped: cffi is not installed (pip install cffi), nothing to parse the header with")
        return SKIPPED
    source, library = Path(sys.argv[1]), sys.argv[2]
    text = (source / "include/cuabi/cuabi_cdef.h").read_text()
    table = json.loads((source / "include/cuabi/driver_api.json").read_text())
    failures = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#") or re.search(r"_Alignas|alignas|__attribute__|CUABI_ALIGNAS", line):
            failures.append(f"line {number} is not a plain declaration: {line.strip()}")
    ffi = cffi.FFI()
    ffi.cdef(text)

    def field_offsets(prefix: str, record: dict, base: int):
        for f in record["fields"]:
            yield prefix + f["name"], base + f["offset"]

    records = 0
    for name, rec in list(table["records"].items()) + list(table["own_records"].items()):
        if "." in name:
            continue                       # declared in place: checked through its parent
        records += 1
        size, align = ffi.sizeof(name), ffi.alignof(name)
        if size != rec["size"]:
            failures.append(f"{name}: size {size}, driver_api.json {rec['size']}")
        if align != rec["align"] and name not in ALIGN_NOT_EXPRESSED:
            failures.append(f"{name}: align {align}, driver_api.json {rec['align']}")
        for path, offset in field_offsets("", rec, 0):
            try:
                got = ffi.offsetof(name, path)
            except (KeyError, TypeError) as exc:
                failures.append(f"{name}.{path}: not a field ({exc})")
                continue
            if got != offset:
                failures.append(f"{name}.{path}: offset {got}, driver_api.json {offset}")
    lib = ffi.dlopen(library)
    values = {k: v for e in table["enums"].values() for k, v in e.items()}
    values.update({k: c["value"] for k, c in table["constants"].items()})
    values.update({k: c["value"] for k, c in table["own_constants"].items()})
    for name, value in values.items():
        got = getattr(lib, name, None)
        if got != value:
            failures.append(f"{name} is {got} in the header, {value} in driver_api.json")
    functions = [f"cuabi_{e['name']}" for e in table["entry_points"]] + [f["name"] for f in table["own_api"]]
    for name in functions:
        try:
            getattr(lib, name)
        except (AttributeError, NotImplementedError) as exc:
            failures.append(f"{name}: {exc}")
    print("\n".join(failures) or f"cuabi_cdef.h: {records} records, {len(values)} constants and "
          f"{len(functions)} functions as driver_api.json says")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
