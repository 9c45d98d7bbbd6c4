"""Parsing of libcuabi's signature strings (see the JSON table's ``signature_letters``)."""

from __future__ import annotations

SCALAR_LETTERS = "iIqQzpfdBH"

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


def split_signature(sig):
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


def struct_members(layout):
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


def struct_ctype_name(layout):
    """The C type name the cffi declarations use for a by-value struct layout."""
    return "cuabi_s_" + "".join(
        ("a" + m[1:-1]) if m.startswith("[") else m for m in struct_members(layout))
