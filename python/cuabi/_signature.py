# SPDX-License-Identifier: Apache-2.0
"""libcuabi's signature letters (the JSON table's ``signature_letters``).

One letter per parameter: ``i`` int32, ``I`` uint32, ``q`` int64, ``Q``
uint64, ``z`` size_t, ``p`` pointer or handle, ``f`` float, ``d`` double,
``B`` uint8, ``H`` uint16, and ``{...}`` for a struct passed by value.  This
module parses them, knows each integer letter's range, and lists the entry
points that may be called without releasing the GIL.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

SCALAR_LETTERS = "iIqQzpfdBH"

RANGES: Dict[str, Tuple[int, int]] = {
    "i": (-(1 << 31), (1 << 31) - 1),
    "I": (0, (1 << 32) - 1),
    "q": (-(1 << 63), (1 << 63) - 1),
    "Q": (0, (1 << 64) - 1),
    "z": (0, (1 << 64) - 1),
    "p": (0, (1 << 64) - 1),
    "B": (0, 255),
    "H": (0, 65535),
}

# Pure getters that read driver state without waiting for the GPU or taking a
# lock that a host callback could hold: the backends call them without
# releasing the GIL where they can (ctypes.PyDLL; the compiled speedups
# module), which is cheaper; no other Python thread runs between such a call
# and the read of its result.
GIL_HELD = frozenset((
    "cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGet", "cuDeviceGetCount",
    "cuDeviceGetAttribute", "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString",
    "cuFuncGetAttribute", "cuStreamGetPriority", "cuStreamGetFlags",
))


def check(letter: str, value: object, name: str) -> None:
    """Raise TypeError or OverflowError unless ``value`` fits the letter's C type.

    Used where the backend would not raise itself (ctypes truncates integers).
    """
    if letter in "fd":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return
        raise TypeError("%s: expected a number, got %s" % (name, type(value).__name__))
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s: expected an integer, got %s" % (name, type(value).__name__))
    lo, hi = RANGES[letter]
    if not lo <= value <= hi:
        raise OverflowError("%s: %d does not fit in the range %d..%d" % (name, value, lo, hi))


def split_signature(sig: str) -> List[str]:
    """One token per parameter: ``"Qz{Ii}Ip"`` -> ``['Q', 'z', '{Ii}', 'I', 'p']``."""
    out, i, n = [], 0, len(sig)
    while i < n:
        c = sig[i]
        if c == "{":
            depth, j = 0, i
            while j < n:
                if sig[j] == "{":
                    depth += 1
                elif sig[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= n:
                raise ValueError("unbalanced '{' in signature %r" % sig)
            out.append(sig[i:j + 1])
            i = j + 1
        elif c in SCALAR_LETTERS:
            out.append(c)
            i += 1
        else:
            raise ValueError("unknown letter %r in signature %r" % (c, sig))
    return out


def struct_members(layout: str) -> List[str]:
    """``'{Ii}'`` -> ``['I', 'i']``; ``'{[64]}'`` -> ``['[64]']``."""
    if not (layout.startswith("{") and layout.endswith("}")):
        raise ValueError("not a struct layout: %r" % layout)
    body, out, i = layout[1:-1], [], 0
    while i < len(body):
        if body[i] == "[":
            j = body.index("]", i)
            out.append(body[i:j + 1])
            i = j + 1
        elif body[i] in SCALAR_LETTERS:
            out.append(body[i])
            i += 1
        else:
            raise ValueError("unsupported member %r in struct layout %r" % (body[i], layout))
    return out


def struct_ctype_name(layout: str) -> str:
    """The C type name the cffi declarations use for a by-value struct layout."""
    return "cuabi_s_" + "".join(
        ("a" + m[1:-1]) if m.startswith("[") else m for m in struct_members(layout))
