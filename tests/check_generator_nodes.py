#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How the generator places entry points in version nodes and slots
(tools/gen_driver_api.py: read_abi_map, assign_nodes), without the toolkit:

- abi.map's own nodes read back as a chain, its regions as the forwarders;
- an entry point added to a newer node takes the next slot after every older
  one, even when its name sorts first, so no existing slot moves;
- an entry point that a node exports but the headers no longer declare is
  refused: a released symbol is never removed;
- each node takes its entry points from its own headers (merge_nodes): a node
  that is not the newest is released, and headers that would give it another
  forwarder are refused; a name an older node exports keeps that node's
  declaration and pin; a newer ABI of it under a new driver symbol becomes a new
  entry point named after that symbol, replacing the name in the compat header;
  one without a new symbol is refused.

usage: check_generator_nodes.py SOURCE_DIR
"""
import sys
from pathlib import Path


def main() -> int:
    sys.path.insert(0, str(Path(sys.argv[1]) / "tools"))
    import gen_driver_api as gen

    failures = []
    nodes = gen.read_abi_map()
    if [n.name for n in nodes][:1] != ["CUABI_1.0"] or nodes[0].parent is not None:
        failures.append(f"abi.map's first node: {nodes[0].name} inheriting {nodes[0].parent}")
    if "cuabi_version" not in nodes[0].own or "cuabi_cuInit" not in nodes[0].forwarders:
        failures.append("abi.map's CUABI_1.0: own API and forwarders region not read apart")

    def entry(name):
        return gen.EntryPoint(name=name, params=[])

    old = gen.Node("CUABI_1.0", None, ["cuabi_version"], ["cuabi_cuInit", "cuabi_cuMemAlloc"])
    eps = [entry("cuInit"), entry("cuMemAlloc")]
    gen.assign_nodes(eps, [old])
    before = {ep.name: ep.index for ep in eps}

    new = gen.Node("CUABI_1.1", "CUABI_1.0", [], [])
    eps = [entry("cuInit"), entry("cuMemAlloc"), entry("cuAaaNewest")]
    gen.assign_nodes(eps, [old, new])
    after = {ep.name: (ep.index, ep.node) for ep in eps}
    if any(after[name][0] != index for name, index in before.items()):
        failures.append(f"slots moved when a node was added: {before} -> {after}")
    if after["cuAaaNewest"] != (2, "CUABI_1.1"):
        failures.append(f"a new entry point should take slot 2 in CUABI_1.1: {after}")

    try:
        gen.assign_nodes([entry("cuInit")], [old])
        failures.append("an entry point dropped from the headers was accepted")
    except gen.GeneratorError as exc:
        if "never removed" not in str(exc):
            failures.append(f"unexpected refusal text: {exc}")

    # merge_nodes: each node from its own headers
    def pinned(name, symbol, version, canonical="int"):
        return gen.EntryPoint(name=name, params=[], symbol=symbol, ptds_symbol=symbol,
                              driver_name=symbol.split("_v")[0], version=version,
                              ptds_version=version, canonical=canonical)

    released = gen.Node("CUABI_1.0", None, [], ["cuabi_cuFoo"])
    newest = gen.Node("CUABI_1.1", "CUABI_1.0", [], [])
    old_set = [pinned("cuFoo", "cuFoo", 3000)]
    merged = gen.merge_nodes([(released, old_set),
                              (newest, [pinned("cuFoo", "cuFoo", 3000), pinned("cuBar", "cuBar", 13010)])])
    if [(e.name, e.node, e.version) for e in merged] != [("cuFoo", "CUABI_1.0", 3000),
                                                         ("cuBar", "CUABI_1.1", 13010)]:
        failures.append(f"a new node's entry points: {[(e.name, e.node, e.version) for e in merged]}")
    try:
        gen.merge_nodes([(released, old_set + [pinned("cuLate", "cuLate", 3000)]), (newest, [])])
        failures.append("a released node that its headers would give another forwarder was accepted")
    except gen.GeneratorError as exc:
        if "released" not in str(exc):
            failures.append(f"unexpected refusal text: {exc}")
    # a newer cuda.h maps cuFoo to a new symbol: the new ABI is a new entry point
    merged = gen.merge_nodes([(released, old_set),
                              (newest, [pinned("cuFoo", "cuFoo_v2", 13050, "int, int")])])
    by_name = {e.name: e for e in merged}
    if set(by_name) != {"cuFoo", "cuFoo_v2"} or by_name["cuFoo"].version != 3000 or \
            by_name["cuFoo_v2"].replaces != "cuFoo" or by_name["cuFoo_v2"].node != "CUABI_1.1":
        failures.append("a newer ABI under a new symbol: "
                        f"{[(e.name, e.node, e.version, e.replaces) for e in merged]}")
    compat = gen.write_compat(merged, "test")
    if "#define cuFoo cuabi_cuFoo_v2\n" not in compat or "#define cuFoo_v2 cuabi_cuFoo_v2\n" not in compat:
        failures.append("the compat header does not map the name to its newer ABI")
    try:
        gen.merge_nodes([(released, old_set), (newest, [pinned("cuFoo", "cuFoo", 13050, "int, int")])])
        failures.append("a changed pin without a new symbol was accepted")
    except gen.GeneratorError as exc:
        if "no rule" not in str(exc):
            failures.append(f"unexpected refusal text: {exc}")

    print("\n".join(failures) or "nodes and slots: 10 checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
