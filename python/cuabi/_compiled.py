# SPDX-License-Identifier: Apache-2.0
"""The compiled tier's contract: what python/speedups/speedups.c may read and call.

The speedups module (``cuabi._cuabi_speedups``, built by
``python/build_modules.py --compiled`` for CPython) gives C versions of two hot
paths: the driver functions that return one output (the getters) and
:func:`cuabi.launch`.  It is used with cffi's compiled backend only; every
other backend runs the Python versions, which behave the same.

The module never looks for anything on its own.  Everything it uses is handed
to it through two calls, both made here:

``bind(library_path, raise_for, address, cstring)``
    once, before any other use: the libcuabi.so.1 the backend opened (the
    module takes its function pointers from that copy), the function that
    raises the exception for a failing status, and the pointer converters the
    getters call for arguments that are not plain ints.

``register_launch(contract)``
    once, when :mod:`cuabi._launch` first chooses ``cuabi.launch``: a
    :class:`LaunchContract` naming each class the compiled launch reads, the
    ``__slots__`` attribute it reads on objects of exactly that class, and the
    Python functions it calls for everything else.  The C code finds each
    named slot's offset through the class's member descriptor (measured with a
    marker object, the stable ABI not showing the offset: see speedups.c's
    slot_offset) and refuses a name that is not an object slot of that class,
    so it reads what the classes declare here and nothing else.  A class that
    changes one of these slots must change its entry below.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from ._address import address, cstring
from ._backend import backend

_lock = threading.Lock()
_bound = False


class LaunchContract:
    """What the compiled ``launch(stream, config, kernel, *args)`` may read and call.

    It follows the same steps as the Python :func:`cuabi._launch.python_launch`;
    each field says where that step gets its data on the C side:

    ``stream_type``, ``stream_slot``
        streams of exactly this class: the CUstream is that slot (None when
        closed: ``closed_error`` "Stream is closed");
    ``stream_handle(obj) -> int``
        the CUstream of any other stream argument (int handles, foreign streams);
    ``kernel_type``
        the only kernel class accepted (anything else: TypeError);
    ``kernel_handle_slot``
        its CUfunction (None once its module is unloaded: ``closed_error``);
    ``kernel_layout_slot``
        its argument layout, made by the module's ``make_layout`` (None: inferred
        per launch by ``infer_layout(kernel, args)``);
    ``memory_types``, ``memory_slot``
        pointer arguments of exactly one of these classes: the address is that
        slot (None once freed: then ``device_pointer`` raises);
    ``device_pointer(obj) -> int``
        the address of any other pointer argument;
    ``config_type``, ``config_header``, ``config_extended``
        the only launch configuration class accepted, and its attributes
        holding the packet header ``(grid x, y, z, block x, y, z, shared
        memory, 0)`` and whether the launch needs ``launch_extended``;
    ``launch_extended(function, stream, config, parameter bytes) -> status``
        cluster and cooperative launches (cuLaunchKernelEx);
    ``closed_error``
        the exception for a closed stream or kernel.
    """

    FIELDS = ("stream_type", "stream_slot", "stream_handle", "kernel_type", "kernel_handle_slot",
              "kernel_layout_slot", "infer_layout", "memory_types", "memory_slot", "device_pointer",
              "config_type", "config_header", "config_extended", "launch_extended", "closed_error")
    __slots__ = FIELDS

    def __init__(self, **fields: Any) -> None:
        missing = set(self.FIELDS) - set(fields)
        unknown = set(fields) - set(self.FIELDS)
        if missing or unknown:
            raise TypeError("LaunchContract: missing %s, unknown %s" % (sorted(missing), sorted(unknown)))
        for name, value in fields.items():
            setattr(self, name, value)

    def replace(self, **changes: Any) -> "LaunchContract":
        """A copy with some fields changed."""
        fields = {name: getattr(self, name) for name in self.FIELDS}
        fields.update(changes)
        return LaunchContract(**fields)


def speedups() -> Optional[Any]:
    """The speedups module, bound to the backend's libcuabi; None without one.

    Opens libcuabi (through :func:`cuabi._backend.backend`) if that was not
    done yet.
    """
    global _bound
    b = backend()
    module = b.speedups
    if module is None or _bound:
        return module
    from ._own_api import raise_for

    with _lock:
        if not _bound:
            module.bind(b.library_path, raise_for, address, cstring)
            _bound = True
    return module


def getter(name: str, wrapper: Callable[..., Any], text_signature: str) -> Optional[Callable[..., Any]]:
    """The compiled getter for entry point ``name`` (same arguments, result and
    errors as ``wrapper``, whose docstring it takes), or None."""
    module = speedups()
    if module is None:
        return None
    doc = "%s%s\n--\n\n%s" % (name, text_signature, wrapper.__doc__ or "")
    return module.function(name, doc)
