#!/usr/bin/env python3
"""How the generator places entry points in version nodes and slots
(tools/gen_driver_api.py: read_abi_map, assign_nodes), without the toolkit:

- abi.map's own nodes read back as a chain, its regions as the forwarders;
- an entry point added to a newer node takes the next slot after every older
  one, even when its name sorts first, so no existing slot moves;
- an entry point that a node exports but the headers no longer declare is
  refused: a released symbol is never removed.

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

    print("\n".join(failures) or "nodes and slots: 5 checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
