# SPDX-License-Identifier: Apache-2.0
"""The interface every foreign-function backend implements.

Declared for type checkers and for ``tests/python/test_backend_interface.py``,
which checks that ``_backend_cffi.Backend`` and ``_backend_ctypes.Backend``
both implement every member with these parameters; the package itself never
imports this module at run time.  A new backend implements :class:`Backend`;
a new need of the package from its backend is added here first, then to both.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple, Union


class Backend(Protocol):
    """What the rest of the package needs from a foreign-function backend.

    Every value crossing this interface is a plain Python value (int, float,
    str, bytes, a buffer) or an object the backend itself made (output cells,
    struct values, native buffers): the backends know nothing of cuabi's
    Pythonic classes.  ``tests/python/test_backend_interface.py`` checks that
    both backends implement every member with these parameters.
    """

    name: str
    """``"cffi"``, ``"cffi-compiled"`` or ``"ctypes"``."""
    library_path: str
    """The libcuabi.so.1 that was opened."""
    tried: List[Tuple[str, str]]
    """Candidates skipped before it, with the reason."""
    checks_ranges: bool
    """True when the generated wrappers must range-check integer arguments
    themselves (the backend would truncate them silently)."""
    ArgumentError: type
    """The exception the backend raises for an argument of the wrong type
    (the wrappers re-raise it as TypeError)."""
    out_types: Dict[str, Callable[[], Any]]
    """Signature letter -> constructor of a one-element output cell."""
    launch_packed: Callable[[int, int, Any, int], int]
    """``cuabi_launch_packed(function, stream, packet, size)`` -> status."""
    speedups: Any
    """The compiled speedups module (python/speedups/speedups.c) when this
    backend is cffi's compiled tier and it was built, else None.  Unbound:
    cuabi._compiled binds it."""

    # -- driver entry points
    def fn(self, name: str, sig: str, outs: Optional[str] = None, ret: str = "i") -> Callable[..., int]:
        """The native ``cuabi_<name>``, declared from its signature letters
        (``outs``: an output cell letter per output parameter, '.' per input;
        ``ret``: ``"i"`` a status, ``"p"`` a ``const char *`` returned as an
        int address, 0 for NULL)."""
    def cells(self, name: str) -> Any:
        """The holder of a wrapper's output cells: per thread, or shared where
        the call keeps the GIL."""
    def struct_type(self, layout: str) -> Any:
        """The native type of a by-value struct layout such as ``{Ii}``."""
    def struct_value(self, st: Any, value: Any, name: str) -> Any:
        """``value`` (the struct, a tuple of members, or raw bytes) as a ``st``."""

    # -- libcuabi's own API (cuabi.h)
    def version(self) -> int:
        """``cuabi_version()``."""
    def load(self, path: Optional[str]) -> int:
        """``cuabi_load(path)`` -> status."""
    def driver_status(self) -> int:
        """``cuabi_driver_status()``."""
    def driver_report(self) -> str:
        """``cuabi_driver_report()`` ("" for none)."""
    def driver_path(self) -> Optional[str]:
        """``cuabi_driver_path()``."""
    def family_load(self, library: int, path: Optional[str]) -> int:
        """``cuabi_load_library(library, path)`` -> status (a library family)."""
    def family_status(self, library: int) -> int:
        """``cuabi_library_status(library)``."""
    def family_report(self, library: int) -> str:
        """``cuabi_library_report(library)`` ("" for none)."""
    def family_path(self, library: int) -> Optional[str]:
        """``cuabi_library_path(library)``."""
    def driver_version(self) -> Tuple[int, int]:
        """``cuabi_driver_version()`` -> (status, version)."""
    def set_default_stream_mode(self, per_thread: int) -> int:
        """``cuabi_set_default_stream_mode(per_thread)`` -> status."""
    def default_stream_mode(self) -> int:
        """``cuabi_default_stream_mode()``."""
    def error_name(self, code: int) -> str:
        """``cuabi_error_name(code)`` ("" for none)."""
    def error_string(self, code: int) -> str:
        """``cuabi_error_string(code)`` ("" for none)."""
    def get_proc(self, name: str, version: int, flags: int) -> Tuple[int, int]:
        """``cuabi_get_proc`` -> (status, address)."""
    def call(self, name: str, version: int, sig: str, values: Sequence[Union[int, float]]) -> int:
        """``cuabi_call`` with one number per signature letter (pointers as
        ints) -> status."""

    # -- memory helpers
    def new_buffer(self, size: int) -> Tuple[Any, Any]:
        """A zeroed native buffer: (object passed as a pointer, writable view)."""
    def buffer_address(self, obj: Any) -> Tuple[int, Any]:
        """(address of ``obj``'s memory, object keeping it valid)."""
    def foreign_address(self, obj: Any) -> Optional[int]:
        """The address held by one of the backend's own objects, else None."""
    def memory_at(self, address: int, size: int, readonly: bool = False) -> memoryview:
        """A memoryview of ``size`` bytes at ``address``."""
    def string_at(self, address: int, size: Optional[int] = None) -> bytes:
        """The bytes at ``address`` (NUL-terminated when ``size`` is None)."""
    def callback(self, restype_letter: Optional[str], argletters: str,
                 pyfunc: Callable[..., Any]) -> Tuple[int, Any]:
        """A C function pointer calling ``pyfunc`` -> (address, keepalive)."""
