# SPDX-License-Identifier: Apache-2.0
"""Turning Python objects into addresses, for pointer parameters and kernel arguments.

* :func:`address` and :func:`cstring` serve the driver wrappers: they return
  ``(address, keepalive)``, and the caller keeps ``keepalive`` referenced for
  the duration of the native call (on PyPy that also keeps the memory pinned).
* :func:`device_pointer` serves kernel launches: pointer arguments are device
  memory, so only objects that name device memory (and ints) are accepted.

Both understand cuabi's own objects through ``_cuabi_address()``, a method
every cuabi object that has an address defines (handles for resources, the
device pointer for memory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Tuple

from ._backend import backend

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ._backend_interface import Backend

_MAX = (1 << 64) - 1
_backend = None


def _b() -> "Backend":
    global _backend
    if _backend is None:
        _backend = backend()
    return _backend


def address(obj: Any) -> Tuple[int, Any]:
    """Return ``(address, keepalive)`` for a pointer argument.

    Accepted: ``int`` (taken as an address or handle), ``None`` (NULL), cuabi
    objects (their handle or device pointer), objects exposing
    ``__cuda_array_interface__`` or ``data_ptr()`` (device arrays of other
    libraries), ``str`` (passed as a NUL-terminated UTF-8 string), and any
    object with the buffer protocol (its memory, by address).
    """
    if obj is None:
        return 0, None
    if isinstance(obj, int):
        if obj.__class__ is bool:
            raise TypeError("expected an address or handle, got a bool")
        v = int(obj)
        if v < 0 or v > _MAX:
            raise OverflowError("address %d is outside 0..2**64-1" % v)
        return v, None
    if isinstance(obj, float):
        raise TypeError("expected an address or handle, got a float")
    special = getattr(type(obj), "_cuabi_address", None)
    if special is not None:
        return special.__get__(obj)(), obj
    if isinstance(obj, str):
        data = obj.encode("utf-8") + b"\0"
        return _b().buffer_address(data)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return _b().buffer_address(obj)
    b = _b()
    foreign = b.foreign_address(obj)
    if foreign is not None:
        return foreign, obj
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0]), obj
    data_ptr = getattr(obj, "data_ptr", None)
    if callable(data_ptr):
        return int(data_ptr()), obj
    try:
        memoryview(obj)
    except TypeError:
        raise TypeError(
            "expected an address (int), None, a cuabi object, a device array or a "
            "buffer, got %s" % type(obj).__name__
        ) from None
    return b.buffer_address(obj)


def cstring(obj: Any) -> Tuple[int, Any]:
    """``(address, keepalive)`` for a ``const char *`` parameter.

    ``str`` and ``bytes`` are passed NUL-terminated; ints and ``None`` as for
    :func:`address`.
    """
    if isinstance(obj, str):
        obj = obj.encode("utf-8")
    if isinstance(obj, bytes):
        if b"\0" in obj:
            raise ValueError("string argument contains an embedded NUL byte")
        return _b().buffer_address(obj + b"\0")
    return address(obj)


def device_pointer(obj: Any) -> int:
    """Device address of a pointer kernel argument: cuabi buffers/arrays, objects with
    ``__cuda_array_interface__``, ``data_ptr()`` (PyTorch) or ``ptr``, ints, None."""
    if obj is None:
        return 0
    if isinstance(obj, int) and not isinstance(obj, bool):
        return int(obj)
    a = getattr(type(obj), "_cuabi_address", None)
    if a is not None:
        return a(obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    dp = getattr(obj, "data_ptr", None)
    if callable(dp):
        return int(dp())
    p = getattr(obj, "ptr", None)
    if isinstance(p, int):
        return p
    raise TypeError("a pointer kernel argument must be device memory (cuabi buffer or array, "
                    "__cuda_array_interface__, data_ptr()) or an int, got %s" % type(obj).__name__)
