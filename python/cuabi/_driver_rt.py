"""Run-time support for the generated :mod:`cuabi.driver` module.

The generated module holds one small factory per entry point; the first time
an entry point is used, :func:`bind` resolves the native function in libcuabi
and lets the factory build the Python wrapper around it (a closure holding the
native function and its output cells), which then replaces itself in the
module's namespace.  Later calls therefore cost one global lookup and the
wrapper's own body, nothing else.
"""

from __future__ import annotations

from . import _ptr
from ._libload import backend


address = _ptr.address
cstring = _ptr.cstring

_RANGES = {
    "i": (-(1 << 31), (1 << 31) - 1),
    "I": (0, (1 << 32) - 1),
    "q": (-(1 << 63), (1 << 63) - 1),
    "Q": (0, (1 << 64) - 1),
    "z": (0, (1 << 64) - 1),
    "p": (0, (1 << 64) - 1),
    "B": (0, 255),
    "H": (0, 65535),
}


def raise_for(code, function):
    from .errors import make_error

    raise make_error(code, function)


def check(letter, value, name):
    """Type and range check used where the backend would not raise itself."""
    if letter in "fd":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return
        raise TypeError("%s: expected a number, got %s" % (name, type(value).__name__))
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s: expected an integer, got %s" % (name, type(value).__name__))
    lo, hi = _RANGES[letter]
    if not lo <= value <= hi:
        raise OverflowError("%s: %d does not fit in the range %d..%d" % (name, value, lo, hi))


def check_int(value, name, letter):
    """Checks an integer argument for backends that do not (ctypes); returns it."""
    check(letter, value, name)
    return value


def cstr_at(addr):
    """Decode the NUL-terminated string at ``addr`` (``None`` for NULL)."""
    if not addr:
        return None
    return backend().string_at(addr).decode("utf-8", "replace")


def struct_arg(layout, value, name):
    """Convert a Python value for a struct passed by value (see ``backend.struct_value``)."""
    return backend().struct_value(layout, value, name)


def bind(module_globals, name, factory, sig, outs):
    """Build the wrapper for ``name`` and install it in the driver module.

    ``outs`` has one character per parameter: the output cell's letter for
    outputs, '.' for inputs (backends may declare the two differently).
    """
    b = backend()
    native = b.fn(name, sig, outs)
    wrapper = factory(native, b, b.checks_ranges)
    module_globals[name] = wrapper
    return wrapper

