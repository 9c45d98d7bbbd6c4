#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every forwarder's machine code is the fast path docs/abi.md promises: one
atomic load of its slot, a test, and a tail jump to the driver (x86-64).

For each exported cuabi_cuXxx (for the three that lib/wrapped.c exports
around their forwarder, the internal cuabi__forward_cuXxx), from `objdump -d`
of the library, its fast
path (from the entry to the first indirect jump) has:
  - exactly one load from cuabi__slots (its slot), and no call;
  - no fence, no locked or exchanging instruction (an acquire load on x86-64
    is a plain mov: anything stronger costs every call);
  - no backward branch (a loop), nor has the rest of the function;
  - an end: the indirect jump (the tail call into the driver);
  - at most 4 instructions, plus one per 8- or 16-bit argument (its zero
    extension) and, where arguments travel on the stack, 4 per stack word
    and 4 more: gcc reloads each stack argument into a register it saves
    and restores, and stores it back, around the test (cuLaunchKernel: 20
    instructions for 5 stack words).
The first call's path (gcc: cuabi_cuXxx.cold, elsewhere; clang: after the
fast path, ending in first_cuXxx) is only checked for loops.
Signatures come from tests/generated/entry_points.h.

The library families' forwarders (cuabi_nvrtcXxx, ...) are checked the same way, each
against its family's slot array (cuabi__nvrtc_slots, ...), when the second argument is
tests/generated/family_functions.h instead; the three code-to-text functions
lib/family_wrapped.c exports around their forwarder are checked as cuabi__forward_<name>.

usage: check_forwarder_code.py LIBRARY ENTRY_POINTS_H|FAMILY_FUNCTIONS_H
"""
import re
import subprocess
import sys

SKIPPED = 77
FORBIDDEN = re.compile(r"^(lock\b|mfence|lfence|sfence|xchg|cmpxchg|xadd|pause|call)")
ENTRY = re.compile(r'CUABI_ENTRY\(\d+, (\w+), "\w+", \d+, \d+, "([^"]*)"\)')
# tests/generated/family_functions.h: the family of each list, and each row's name and letters
FAMILY_LIST = re.compile(r"#define CUABI_(\w+)_FUNCTIONS\(X\)(.*?)(?=\n#define|\Z)", re.S)
FAMILY_ROW = re.compile(r'X\(\d+, (\w+), \w+, "([^"]*)", [Ip],')
# objdump -d --no-show-raw-insn: "   18e70:\tmov    0x20301(%rip),%rax  # 39178 <cuabi__slots+0x7b8>"
INSN = re.compile(r"^\s*([0-9a-f]+):\t(.*)$")
SYMBOL = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")


def stack_words_and_small(signature):
    """(eightbytes passed on the stack, 8/16-bit arguments) under the SysV x86-64 ABI."""
    args, i = [], 0
    while i < len(signature):
        if signature[i] == "{":
            j, depth = i, 0
            while True:
                depth += {"{": 1, "}": -1}.get(signature[j], 0)
                if depth == 0:
                    break
                j += 1
            args.append(signature[i:j + 1])
            i = j + 1
        else:
            args.append(signature[i])
            i += 1
    ints = floats = stack = small = 0
    for a in args:
        if a in "fd":
            floats += 1
            stack += floats > 8
        elif a.startswith("{"):
            size = struct_size(a[1:-1])
            words = (size + 7) // 8
            if size > 16 or ints + words > 6:
                stack += words
            else:
                ints += words
        else:
            ints += 1
            stack += ints > 6
            small += a in "BH"
    return stack, small


def struct_size(members):
    """Size of a struct whose members are signature letters or [N] byte arrays."""
    sizes = {"B": 1, "H": 2, "i": 4, "I": 4, "f": 4, "q": 8, "Q": 8, "z": 8, "p": 8, "d": 8}
    offset, align = 0, 1
    for arr, letter in re.findall(r"\[(\d+)\]|(\w)", members):
        size, a = (int(arr), 1) if arr else (sizes[letter], sizes[letter])
        offset = (offset + a - 1) // a * a + size
        align = max(align, a)
    return (offset + align - 1) // align * align


def functions(library):
    """{name: [(address, instruction text)]} for every cuabi_cu* and cuabi__forward_cu* symbol."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", library], check=True,
                         capture_output=True, text=True).stdout
    found, current = {}, None
    for line in out.splitlines():
        m = SYMBOL.match(line)
        if m:
            name = m.group(1)
            current = (found.setdefault(name, [])
                       if re.fullmatch(r"cuabi_(cu|nvrtc|nvJitLink|nvvm|nvml)\w+|cuabi__forward_\w+",
                                       name) else None)
            continue
        m = INSN.match(line)
        if m and current is not None:
            text = m.group(2).strip()
            if not re.match(r"(nop|data16|cs nop|xchg\s+%ax,%ax)", text):
                current.append((int(m.group(1), 16), text))
    return found


def fast_path_length(code):
    ends = [i for i, (_, t) in enumerate(code) if re.match(r"jmp\s+\*%", t)]
    return ends[0] + 1 if ends else len(code)


def problems_of(name, code, signature, slots="cuabi__slots"):
    stack, small = stack_words_and_small(signature)
    limit = 4 + small + (4 * stack + 4 if stack else 0)
    found = []
    fast = code[:fast_path_length(code)]
    if not fast or not re.match(r"jmp\s+\*%", fast[-1][1]):
        return ["no indirect tail jump into the driver"]
    slot_loads = [t for _, t in fast if "<%s" % slots in t]
    if len(slot_loads) != 1:
        found.append("%d loads of %s, not 1" % (len(slot_loads), slots))
    for _, text in fast:
        if FORBIDDEN.match(text):
            found.append("forbidden instruction: %s" % text)
    for address, text in code:
        jump = re.match(r"j\w+\s+([0-9a-f]+) <", text)
        if jump and code[0][0] <= int(jump.group(1), 16) <= address:
            found.append("backward branch (a loop): %s" % text)
    if len(fast) > limit:
        found.append("fast path of %d instructions, at most %d for signature %r"
                     % (len(fast), limit, signature))
    return found


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    library, entry_points = sys.argv[1:]
    text = open(entry_points, encoding="utf-8").read()
    signatures = dict(ENTRY.findall(text))
    slots = dict.fromkeys(signatures, "cuabi__slots")
    for family, rows in FAMILY_LIST.findall(text):
        for name, letters in FAMILY_ROW.findall(rows):
            signatures[name] = letters
            slots[name] = "cuabi__%s_slots" % family.lower()
    code = functions(library)
    problems = []
    for name, signature in sorted(signatures.items()):
        # A wrapped entry point (lib/wrapped.c) exports its own function around the
        # generated forwarder, which is then the internal cuabi__forward_<name>.
        body = code.get("cuabi__forward_" + name) or code.get("cuabi_" + name)
        if body is None:
            problems.append("cuabi_%s: not found in the disassembly" % name)
            continue
        problems += ["cuabi_%s: %s" % (name, p) for p in problems_of(name, body, signature, slots[name])]
    sizes = sorted(fast_path_length(code.get("cuabi__forward_" + n) or code.get("cuabi_" + n, []))
                   for n in signatures)
    print("%d forwarders: the fast path of %d of them is 4 instructions, the longest %d" %
          (len(signatures), sizes.count(4), sizes[-1] if sizes else 0))
    for p in problems[:50]:
        print(p)
    if len(problems) > 50:
        print("... and %d more" % (len(problems) - 50))
    print("%d passed, %d failed" % (not problems, bool(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
