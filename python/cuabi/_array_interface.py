# SPDX-License-Identifier: Apache-2.0
"""Dtypes as typestrs, and ``__cuda_array_interface__`` (version 3) dicts."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

# typestr kinds cuabi handles: signed, unsigned, float, bool, complex
KINDS = "iufbc"
_NAMES = {
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
    "float16": "f2", "float32": "f4", "float64": "f8", "bool": "b1",
    "complex64": "c8", "complex128": "c16",
}


def dtype_info(dtype: Any) -> Tuple[str, str, int]:
    """Normalise a dtype to ``(typestr, kind, itemsize)``.

    Accepts typestrs (``"<f4"``, ``"f4"``, ``"|u1"``), names (``"float32"``)
    and objects with a ``str`` attribute holding a typestr (numpy dtypes).
    """
    s = getattr(dtype, "str", dtype)
    if not isinstance(s, str):
        raise TypeError("dtype must be a typestr like '<f4' or a name like 'float32', got %r" % (dtype,))
    s = _NAMES.get(s, s)
    if s[:1] and s[0] in "<>|=":
        order, body = s[0], s[1:]
    else:
        order, body = "", s
    kind, digits = body[:1], body[1:]
    if not kind or kind not in KINDS or not digits.isdigit():
        raise ValueError("unsupported dtype %r" % (dtype,))
    size = int(digits)
    if size <= 0:
        raise ValueError("unsupported dtype %r" % (dtype,))
    if order == ">":
        raise ValueError("big-endian dtypes are not supported on the device")
    typestr = ("|" if size == 1 else "<") + kind + digits
    return typestr, kind, size


def cai_dict(ptr: int, shape: Sequence[int], typestr: str, strides: Optional[Sequence[int]],
             readonly: bool, stream: Optional[int]) -> Dict[str, Any]:
    """A ``__cuda_array_interface__`` dict (version 3)."""
    return {
        "shape": tuple(shape),
        "typestr": typestr,
        "data": (ptr, bool(readonly)),
        "strides": strides,
        "version": 3,
        "stream": stream,
    }


def cai_nbytes(cai: Dict[str, Any]) -> int:
    """Bytes spanned by a ``__cuda_array_interface__`` dict."""
    _t, _k, size = dtype_info(cai["typestr"])
    shape = cai["shape"]
    strides = cai.get("strides")
    if not shape:
        return size
    if any(d == 0 for d in shape):
        return 0
    if strides is None:
        n = size
        for d in shape:
            n *= d
        return n
    return sum((d - 1) * abs(st) for d, st in zip(shape, strides)) + size
