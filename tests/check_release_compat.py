#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a released version node promised still holds: the tree against the snapshot of a
release (tests/fixtures/cuabi-1.0: the 1.0 headers, abi.map and driver_api.json as released).

1. The node is frozen: its part of abi.map is the same text; its entry points in
   driver_api.json are the same, byte for byte as JSON (name, slot, driver name, pinned
   versions, the cuda.h symbols, signature, parameters).
2. Every type, enumerator and constant the release declared still exists (a name CUDA
   dropped is kept: driver_api.json's kept_names), with the same value, but for the
   exceptions docs/abi.md ("Types") lists, each decided here by a rule:
   - an enumerator that counts the others (`*_MAX`, `*_NUM_*`) may grow with them;
   - ENUMERATOR_EXCEPTIONS, each with its reason;
   - CUDA_VERSION says which CUDA the headers describe.
3. Every record (struct or union) of the release keeps its size, its alignment and the
   offset and size of every field it had (followed into nested records), but:
   - a field named reserved (reserved*, pad*, padding*, _oversize, _internal_padding) may
     shrink, move or go: its bytes were set aside for this;
   - a field the release did not have may take only bytes that the release had reserved,
     or bytes that still hold every field the release had there, unchanged (an
     alternative in a union: a new member, or an old one grown into the union's room);
   - a record may grow only if no entry point of the release reaches it through a pointer
     or takes it by value, so that it lives only inside other records, whose own layout is
     checked here (CUDA 13.5's grown graph-node parameters, inside CUgraphNodeParams's
     fixed 232-byte union);
   - ALIGNMENT_EXCEPTIONS, each with its reason.
   Each changed record is printed with the rule that accepts it, or the failure.

The snapshot's driver_api.json is the generator's description of the release, which
layout.json_records checked against the compiler when it was released; the current one is
checked the same way now.

usage: check_release_compat.py SOURCE_DIR [FIXTURE_DIR]
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

RESERVED = re.compile(r"^(reserved\w*|_?pad(ding)?\d*|_oversize|_internal_padding)$")
SENTINEL = re.compile(r"_MAX$|_NUM_\w+$")

# An enumerator whose value changed, and why a program built against the release is not
# affected. docs/abi.md ("Types") lists each.
ENUMERATOR_EXCEPTIONS = {
    "CU_COREDUMP_LIGHTWEIGHT_FLAGS": (
        "a preset, the OR of the CU_COREDUMP_SKIP_* flags, which CUDA 13.5 extends with the "
        "new CU_COREDUMP_SKIP_TENSOR_MEMORY; a program built against 1.0 keeps the value it "
        "was compiled with (47), the flags CUDA 13.0 had"),
}
# A record whose alignment changed, and why. docs/abi.md lists each.
ALIGNMENT_EXCEPTIONS = {
    "struct CUdevResource_st": (
        "4 -> 8: CUDA 13.5 put a pointer (nextResource) in the last 8 of the bytes 1.0 "
        "reserved; the size (144, a multiple of 8) and every 1.0 field stay, and no record "
        "of the API holds a CUdevResource by value, so nothing of 1.0 moves"),
}


USED_EXCEPTIONS: set[str] = set()   # the exceptions some change needed; docs/abi.md lists each


def load(path: Path) -> dict:
    return json.loads(path.read_text())


class Types:
    """A driver_api.json's records and typedefs, and what can be said of them."""

    def __init__(self, table: dict):
        self.records, self.typedefs = table["records"], table["typedefs"]

    def ident(self, key: str) -> str:
        """The struct or union a record key names, whatever typedef it goes by."""
        seen = set()
        while key in self.typedefs and key not in seen:
            seen.add(key)
            key = self.typedefs[key]["type"]
        return key

    def record_of_type(self, text: str) -> str | None:
        """The record a C type text names through pointers (`const CUfoo *`), or None."""
        base = re.sub(r"\bconst\b|\*|\[\d*\]", " ", text).strip()
        if base in self.typedefs:
            rec = self.typedefs[base].get("record")
            return self.ident(rec) if rec else None
        if re.fullmatch(r"(struct|union) \w+", base):
            return base
        return None

    def key_of(self, ident: str) -> str | None:
        for key in self.records:
            if self.ident(key) == ident:
                return key
        return None

    def leaves(self, key: str, prefix: str = "", base: int = 0, in_union: bool = False):
        """(path, offset, size, code, count, reserved, in_union) of every scalar or array field,
        nested records followed; in_union when some enclosing record overlays it."""
        rec = self.records[key]
        fields = rec["fields"]
        union = rec["kind"] == "union"
        for f in fields:
            # members of an anonymous union are flattened into their parent: they start at
            # the same offset (fields that merely overlap would be a broken layout)
            overlaid = union or in_union or any(g is not f and g["offset"] == f["offset"] for g in fields)
            path = prefix + f["name"]
            reserved = bool(RESERVED.match(f["name"]))
            if f.get("record"):
                for leaf in self.leaves(f["record"], path + ".", base + f["offset"], overlaid):
                    yield leaf[:5] + (leaf[5] or reserved,) + leaf[6:]
            else:
                yield path, base + f["offset"], f["size"], f["code"], f["count"], reserved, overlaid


def reached(old: dict, types: Types) -> tuple[set[str], set[str]]:
    """The records the release's entry points reach through a pointer (anywhere on the way),
    and those they take by value."""
    by_pointer, by_value, members = set(), set(), set()
    todo = []
    for ep in old["entry_points"]:
        for p in ep["params"]:
            rec = types.record_of_type(p["type"])
            if rec is None:
                continue
            (by_value if p["code"].startswith("{") else by_pointer).add(rec)
            todo.append(rec)
    seen = set()
    while todo:
        ident = todo.pop()
        if ident in seen:
            continue
        seen.add(ident)
        key = types.key_of(ident)
        if key is None:
            continue          # opaque
        for f in types.records[key]["fields"]:
            if f.get("record"):
                nested = types.ident(f["record"])
                members.add(nested)
                todo.append(nested)
            elif f["code"] == "p":
                nested = types.record_of_type(f["type"])
                if nested is not None:
                    by_pointer.add(nested)
                    todo.append(nested)
    return by_pointer, by_value


def check_record(key: str, old: Types, new: Types, pointer: set[str], value: set[str]) -> tuple[list, list]:
    """(failures, rules that accepted a change) for one record of the release."""
    failures, rules = [], []
    a, b = old.records[key], new.records.get(key)
    if b is None:
        return [f"{key}: gone"], rules
    ident = old.ident(key)
    if a["size"] != b["size"]:
        if ident in pointer or ident in value:
            how = "through a pointer" if ident in pointer else "by value"
            failures.append(f"{key}: size {a['size']} -> {b['size']}, and the release's entry "
                            f"points reach it {how}")
        else:
            rules.append(f"size {a['size']} -> {b['size']}: lives only inside other records")
    if a["align"] != b["align"]:
        if ident in ALIGNMENT_EXCEPTIONS:
            USED_EXCEPTIONS.add(ident)
            rules.append(f"alignment {ALIGNMENT_EXCEPTIONS[ident]}")
        else:
            failures.append(f"{key}: alignment {a['align']} -> {b['align']}")
    old_leaves = {l[0]: l for l in old.leaves(key)}
    new_leaves = {l[0]: l for l in new.leaves(key)}
    for path, leaf in old_leaves.items():
        now = new_leaves.get(path)
        if now is not None and now[1:5] == leaf[1:5]:
            continue
        if leaf[5]:
            rules.append(f"{path}: reserved, "
                         + ("gone" if now is None else f"now {now[2]} bytes at {now[1]}"))
            continue
        failures.append(f"{key}: field {path} was {leaf[2]} bytes at {leaf[1]} ({leaf[3]} x{leaf[4]}), "
                        + ("gone" if now is None else f"now {now[2]} bytes at {now[1]} ({now[3]} x{now[4]})"))
    # the bytes each release field and each reserved field of the release held
    held = {}
    reserved_bytes = set()
    for path, off, size, _, _, reserved, _ in old_leaves.values():
        for byte in range(off, off + size):
            if reserved:
                reserved_bytes.add(byte)
            else:
                held.setdefault(byte, []).append(path)
    for path, leaf in new_leaves.items():
        if path in old_leaves or leaf[5]:
            continue
        off, size = leaf[1], leaf[2]
        taken = {p for byte in range(off, off + size) for p in held.get(byte, [])}
        if not taken and all(byte in reserved_bytes or byte >= a["size"] for byte in range(off, off + size)):
            if off + size > a["size"]:
                rules.append(f"{path}: new, in the bytes the record grew by")
            else:
                rules.append(f"{path}: new, in bytes the release reserved")
        elif leaf[6] and all(p in new_leaves and new_leaves[p][1:5] == old_leaves[p][1:5] for p in taken):
            rules.append(f"{path}: new, an alternative in a union over fields that stay")
        else:
            failures.append(f"{key}: new field {path} ({size} bytes at {off}) takes bytes the "
                            f"release used for {sorted(taken) or 'padding'}")
    return failures, rules


def main() -> int:
    source = Path(sys.argv[1])
    fixture = Path(sys.argv[2]) if len(sys.argv) > 2 else source / "tests" / "fixtures" / "cuabi-1.0"
    old, new = load(fixture / "driver_api.json"), load(source / "include" / "cuabi" / "driver_api.json")
    failures, report = [], []
    node = {ep["node"] for ep in old["entry_points"]}
    if len(node) != 1:
        failures.append(f"the snapshot has entry points of several nodes: {sorted(node)}")
    node = node.pop() if len(node) == 1 else ""

    # 1. the node is frozen
    released = old["entry_points"]
    now = [ep for ep in new["entry_points"] if ep["node"] == node]
    if json.dumps(now, sort_keys=True) != json.dumps(released, sort_keys=True):
        changed = [a["name"] for a, b in zip(released, now) if a != b]
        failures.append(f"{node}'s entry points changed: {len(released)} released, {len(now)} now; "
                        f"first differences: {changed[:5] or 'in number'}")
    map_text = (source / "abi.map").read_text()
    block = re.search(rf"^{re.escape(node)} \{{.*?^\}}[^\n]*\n", (fixture / "abi.map").read_text(), re.M | re.S)
    if block is None or block.group(0) not in map_text:
        failures.append(f"abi.map's {node} node is not the released text")

    # 2. names and values
    kept = new.get("kept_names", {})
    old_types, new_types = Types(old), Types(new)
    for name in old["typedefs"]:
        if name not in new["typedefs"]:
            failures.append(f"the typedef {name} is gone")
        elif name in kept:
            report.append(f"typedef {name}: kept (CUDA {kept[name]} had it; now "
                          f"{new['typedefs'][name]['type']})")
    new_values = {e: v for values in new["enums"].values() for e, v in values.items()}
    for enum, values in old["enums"].items():
        for e, v in values.items():
            if e.startswith("CUABI_"):
                continue
            if e not in new_values:
                failures.append(f"the enumerator {e} ({enum}) is gone")
            elif new_values[e] != v:
                others = [x for n, x in new["enums"].get(enum, {}).items() if n != e]
                if SENTINEL.search(e) and others and new_values[e] == max(others) + 1:
                    report.append(f"enumerator {e}: {v} -> {new_values[e]}, counts {enum}'s values")
                elif e in ENUMERATOR_EXCEPTIONS:
                    USED_EXCEPTIONS.add(e)
                    report.append(f"enumerator {e}: {v} -> {new_values[e]}, {ENUMERATOR_EXCEPTIONS[e]}")
                else:
                    failures.append(f"the enumerator {e} ({enum}) was {v}, is {new_values[e]}")
    for name, v in old["defines"].items():
        if name not in new["defines"]:
            failures.append(f"the constant {name} is gone")
        elif new["defines"][name] != v and name != "CUDA_VERSION":
            failures.append(f"the constant {name} was {v}, is {new['defines'][name]}")
        elif name in kept:
            report.append(f"constant {name}: kept (CUDA {kept[name]} had it)")

    # 3. records
    pointer, value = reached(old, old_types)
    changed = 0
    for key in old["records"]:
        if new["records"].get(key) == old["records"][key]:
            continue
        changed += 1
        bad, rules = check_record(key, old_types, new_types, pointer, value)
        failures += bad
        report.append(f"record {key}: " + ("NOT ACCEPTED" if bad else "accepted") + "\n      "
                      + "\n      ".join(rules + bad))
    docs = (source / "docs" / "abi.md").read_text()
    for e in sorted(USED_EXCEPTIONS):
        if f"`{e.split()[-1]}`" not in docs:
            failures.append(f"docs/abi.md does not list the exception {e}, which a change needs")

    print("\n".join(report))
    print(f"{node}: {len(released)} entry points frozen; {len(old['records'])} records compared, "
          f"{changed} changed since the release")
    if failures:
        print("\n" + "\n".join(failures))
        print(f"0 passed, {len(failures)} failed")
        return 1
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
