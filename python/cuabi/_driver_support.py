# SPDX-License-Identifier: Apache-2.0
"""What the generated :mod:`cuabi.driver` module calls.

The generated module holds one small factory per entry point; the first time
an entry point is used, :func:`bind` resolves the native function in libcuabi
and lets the factory build the Python wrapper around it (a closure holding the
native function and its output cells), which then replaces itself in the
module's namespace.  Later calls therefore cost one global lookup and the
wrapper's own body, nothing else.  The helpers below are the ones the
wrappers call (converters, checks, the error raiser).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from ._address import address, cstring
from ._backend import backend
from ._signature import check

__all__ = ["address", "bind", "check", "cstr_at", "cstring", "fast", "need_bytes", "raise_for"]


def _byte_size(obj: Any) -> Optional[int]:
    """How many bytes ``obj`` holds, when Python can tell: a buffer-protocol
    object, a cuabi buffer (``size``) or array (``nbytes``), a str (encoded,
    with its NUL); None for anything else (then nothing is checked)."""
    if isinstance(obj, str):
        return len(obj.encode("utf-8")) + 1
    try:
        return memoryview(obj).nbytes
    except TypeError:
        pass
    for attr in ("nbytes", "size"):
        n = getattr(obj, attr, None)
        if isinstance(n, int) and not isinstance(n, bool):
            return n
    return None


def need_bytes(obj: Any, need: Any, function: str, param: str, size_param: Optional[str]) -> None:
    """Refuse a Python buffer ``obj`` smaller than the ``need`` bytes the call
    will read or write through parameter ``param`` (the generated wrappers call
    this before converting it to an address)."""
    if not isinstance(need, int) or need <= 0:
        return  # a bad size argument is refused by its own check, later
    have = _byte_size(obj)
    if have is not None and have < need:
        if size_param is None:
            why = "the driver uses %d bytes there" % need
        else:
            why = "%s asks for %d" % (size_param, need)
        raise ValueError("%s: %s holds %d bytes but %s; pass a buffer of at least %d bytes"
                         % (function, param, have, why, need))


def cstr_at(addr: int) -> Optional[str]:
    """Decode the NUL-terminated string at ``addr`` (``None`` for NULL)."""
    if not addr:
        return None
    return backend().string_at(addr).decode("utf-8", "replace")


def raise_for(code: int, function: str) -> None:
    """Raise the exception for a failing status (:func:`cuabi._own_api.raise_for`,
    imported when the first call fails)."""
    from ._own_api import raise_for as own_raise_for

    own_raise_for(code, function)


def fast(name: str, wrapper: Callable[..., Any], text_signature: str) -> Optional[Callable[..., Any]]:
    """The compiled tier's C function for a one-output entry point, or None
    (then the generated Python wrapper stays)."""
    from ._compiled import getter

    return getter(name, wrapper, text_signature)


def bind(module_globals: Dict[str, Any], name: str, factory: Callable[..., Callable[..., Any]],
         sig: str, outs: str) -> Callable[..., Any]:
    """Build the wrapper for ``name`` and install it in the driver module.

    ``outs`` has one character per parameter: the output cell's letter for
    outputs, '.' for inputs (backends may declare the two differently).
    """
    b = backend()
    native = b.fn(name, sig, outs)
    wrapper = factory(native, b, b.checks_ranges)
    module_globals[name] = wrapper
    return wrapper
