#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The exported dynamic symbols of libcuabi.so are exactly the names abi.map
lists, each under the version node abi.map puts it in; the nodes form one
chain (CUABI_1.0, then CUABI_1.1 inheriting CUABI_1.0, and so on, each minor
release one node); the SONAME is libcuabi.so.1; and the library neither links
libcuda nor leaves any cu* symbol to be found at load time (the driver is only
ever opened by dlopen).

usage: check_exports.py LIBRARY ABI_MAP
"""
import re
import subprocess
import sys


def map_symbols(path):
    """({node: [names]}, {node: parent or None}) from a GNU ld version script, in its order."""
    text = re.sub(r"#[^\n]*", "", open(path, encoding="utf-8").read())
    nodes, parents = {}, {}
    for node, body, parent in re.findall(r"([A-Za-z_][\w.]*)\s*\{(.*?)\}\s*([\w.]*)\s*;", text, re.S):
        globals_part = body.split("local:")[0].split("global:")[-1]
        nodes[node] = [s.strip() for s in globals_part.split(";") if s.strip()]
        parents[node] = parent or None
    return nodes, parents


def chain_failures(nodes, parents):
    """The nodes must be CUABI_1.0, CUABI_1.1, ... in order, each inheriting the one before."""
    failures = []
    expected = [f"CUABI_1.{minor}" for minor in range(len(nodes))]
    if list(nodes) != expected:
        failures.append(f"abi.map nodes are {list(nodes)}, expected {expected}: one node per "
                        "minor release, in order")
    for older, newer in zip([None] + list(nodes), nodes):
        if parents[newer] != older:
            failures.append(f"{newer} inherits {parents[newer]}, expected {older}")
    seen = {}
    for node, names in nodes.items():
        for name in names:
            if name in seen:
                failures.append(f"{name} is in both {seen[name]} and {node}")
            seen[name] = node
    return failures


def main():
    library, abi_map = sys.argv[1], sys.argv[2]
    nodes, parents = map_symbols(abi_map)
    failures = chain_failures(nodes, parents)
    expected = {name: node for node, names in nodes.items() for name in names}
    if any("*" in name for name in expected):
        failures.append("abi.map exports a wildcard; every exported name must be listed")

    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    exported, version_nodes = {}, set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        kind, symbol = fields[1], fields[2]
        if kind == "A" and "@" not in symbol:
            version_nodes.add(symbol)  # the version definition itself
            continue
        if kind == "A":
            name, _, node = symbol.partition("@@")
            if name == node:
                version_nodes.add(name)
                continue
        name, sep, node = symbol.partition("@@")
        if not sep:
            name, sep, node = symbol.partition("@")
        exported[name] = node if sep else None

    for name, node in sorted(exported.items()):
        if name not in expected:
            failures.append(f"exported but not in abi.map: {name}")
        elif node != expected[name]:
            failures.append(f"{name} is versioned {node!r}, abi.map puts it in {expected[name]}")
    for name in sorted(set(expected) - set(exported)):
        failures.append(f"in abi.map but not exported: {name}")
    if version_nodes != set(nodes):
        failures.append(f"version nodes defined by the library: {sorted(version_nodes)}")

    dynamic = subprocess.run(["objdump", "-p", library], check=True, capture_output=True, text=True).stdout
    soname = re.findall(r"SONAME\s+(\S+)", dynamic)
    if soname != ["libcuabi.so.1"]:
        failures.append(f"SONAME is {soname}, expected libcuabi.so.1")
    needed = re.findall(r"NEEDED\s+(\S+)", dynamic)
    if any("libcuda" in n for n in needed):
        failures.append(f"libcuabi must not link libcuda: NEEDED {needed}")
    undefined = subprocess.run(["nm", "-D", "--undefined-only", library], check=True,
                               capture_output=True, text=True).stdout.split()
    cu_refs = [s for s in undefined if re.match(r"cu[A-Z]", s)]
    if cu_refs:
        failures.append(f"libcuabi refers to driver symbols at load time: {cu_refs}")

    own = [n for n in expected if not n.startswith("cuabi_cu")]
    forwarders = [n for n in expected if n.startswith("cuabi_cu")]
    if failures:
        print("\n".join(failures))
        print(f"0 passed, {len(failures)} failed")
        return 1
    per_node = ", ".join(f"{node} {len(names)}" for node, names in nodes.items())
    print(f"{len(exported)} exported symbols ({len(own)} own API, {len(forwarders)} forwarders; "
          f"{per_node}); SONAME libcuabi.so.1; no link to libcuda")
    return 0


if __name__ == "__main__":
    sys.exit(main())
