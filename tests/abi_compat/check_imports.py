#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A program built against release 1.0 (tests/abi_compat/old_program.c) imports what a
program linked against the released library imports: libcuabi.so.1, and every symbol
of the snapshot's CUABI_1.0 node (tests/fixtures/cuabi-1.0/abi.map) at version
CUABI_1.0, nothing at a later version; and the library of this tree defines each of
those symbols at CUABI_1.0 (so the dynamic loader binds them; the program's own test
runs it with LD_BIND_NOW=1).

usage: check_imports.py PROGRAM RELEASED_ABI_MAP LIBRARY
"""
import re
import subprocess
import sys


def dynamic_symbols(path: str) -> list[tuple[str, str, str]]:
    """(name, version, 'UND' or the section index) of every dynamic symbol."""
    out = subprocess.run(["readelf", "-W", "--dyn-syms", path], check=True,
                         capture_output=True, text=True).stdout
    symbols = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].rstrip(":").isdigit():
            continue
        m = re.match(r"([^@\s]+)(?:@@?([\w.]+))?(?: \(\d+\))?$", fields[7])
        if m:
            symbols.append((m.group(1), m.group(2) or "", fields[6]))
    return symbols


def main() -> int:
    program, abi_map, library = sys.argv[1:4]
    text = open(abi_map, encoding="utf-8").read()
    node = re.search(r"^CUABI_1\.0 \{(.*?)^\}", text, re.M | re.S).group(1)
    released = set(re.findall(r"^    (cuabi_\w+);", node.split("local:")[0], re.M))
    failures = []
    imports = {name: version for name, version, ndx in dynamic_symbols(program)
               if ndx == "UND" and name.startswith("cuabi_")}
    for name, version in sorted(imports.items()):
        if version != "CUABI_1.0":
            failures.append(f"{program} imports {name} at {version or 'no version'}, not CUABI_1.0")
    missing = sorted(released - set(imports))
    if missing:
        failures.append(f"{len(missing)} symbols of the 1.0 node are not imported: {missing[:5]}")
    extra = sorted(set(imports) - released)
    if extra:
        failures.append(f"imports beyond the 1.0 node: {extra[:5]}")
    dynamic = subprocess.run(["readelf", "-W", "-d", program], check=True, capture_output=True,
                             text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    if "libcuabi.so.1" not in needed or any("libcuda" in n for n in needed):
        failures.append(f"{program} needs {needed}: expected libcuabi.so.1 and no libcuda")
    defined = {(name, version) for name, version, ndx in dynamic_symbols(library) if ndx != "UND"}
    unbound = sorted(name for name in imports if (name, "CUABI_1.0") not in defined)
    if unbound:
        failures.append(f"{library} does not define at CUABI_1.0: {unbound[:5]}")
    if failures:
        print("\n".join(failures))
        print(f"0 passed, {len(failures)} failed")
        return 1
    print(f"{program}: {len(imports)} imports, all at CUABI_1.0, the whole released node; "
          f"{library} defines each at CUABI_1.0")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
