# SPDX-License-Identifier: Apache-2.0
"""libcuabi's own API, in Python terms: status, report, raw procedures,
dynamic calls, and the exception for a failing status (:func:`raise_for`)."""

from __future__ import annotations

from typing import Any, NoReturn, Optional, Tuple

from ._address import address
from ._backend import backend
from ._constants import CU_GET_PROC_ADDRESS_LEGACY_STREAM, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
from ._signature import check, split_signature
from .errors import error_for, is_load_failure

_FLAG_NAMES = {"legacy": CU_GET_PROC_ADDRESS_LEGACY_STREAM,
               "per_thread": CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM}


def raise_for(code: int, function: Optional[str] = None) -> NoReturn:
    """Raise the :class:`cuabi.CUDAError` subclass for a non-zero status
    ``code`` returned by ``function``: its name and message from libcuabi, and
    the loader's report when no usable driver could be loaded."""
    b = backend()
    report = b.driver_report() if is_load_failure(code) else None
    raise error_for(code, b.error_name(code), b.error_string(code), function, report)


def _check(code: int, function: str) -> None:
    if code:
        raise_for(code, function)


def backend_name() -> str:
    """Which foreign-function backend is in use: ``"cffi"``, ``"cffi-compiled"`` or ``"ctypes"``."""
    return backend().name


def library_path() -> str:
    """Path of the libcuabi.so.1 that was opened."""
    return backend().library_path


def library_version() -> Tuple[int, int, int]:
    """libcuabi's version as ``(major, minor, patch)``."""
    v = backend().version()
    return (v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF


def load(path: Optional[str] = None) -> None:
    """Load the CUDA driver now (it is otherwise loaded on the first driver call).

    ``path`` names a libcuda.so.1 explicitly (absolute path); ``None`` searches.
    Raises :class:`cuabi.errors.DriverLoadError` with the loader's report when no
    usable driver is found.
    """
    if path is not None:
        import os

        if not isinstance(path, str):
            raise TypeError("path must be a str or None, got %s" % type(path).__name__)
        if not os.path.isabs(path):
            raise ValueError("path must be absolute, got %r" % path)
    _check(backend().load(path), "cuabi_load")


def driver_status() -> int:
    """The driver load's status code (0 when a driver is loaded); loads if needed."""
    return backend().driver_status()


def driver_report() -> str:
    """The loader's report: every candidate tried, why it failed, which one was used."""
    return backend().driver_report()


def driver_path() -> Optional[str]:
    """Path of the loaded CUDA driver, or ``None`` if none is loaded."""
    return backend().driver_path()


def driver_version() -> int:
    """The driver's CUDA version as an integer (e.g. 13000 for 13.0)."""
    rc, v = backend().driver_version()
    _check(rc, "cuabi_driver_version")
    return v


def set_default_stream_mode(per_thread: bool) -> None:
    """Choose legacy (``False``) or per-thread (``True``) default-stream semantics.

    Must be called before the driver is loaded; later calls raise
    :class:`cuabi.errors.AlreadyLoadedError`.
    """
    if not isinstance(per_thread, (bool, int)):
        raise TypeError("per_thread must be a bool")
    _check(backend().set_default_stream_mode(1 if per_thread else 0), "cuabi_set_default_stream_mode")


def default_stream_mode() -> str:
    """``"legacy"`` or ``"per_thread"``: the default-stream semantics in effect."""
    return "per_thread" if backend().default_stream_mode() == 1 else "legacy"


def error_name(code: int) -> str:
    """The name of a ``CUresult`` (or libcuabi) status code."""
    check("I", code, "code")  # a CUresult: 0..2**32-1
    return backend().error_name(code)


def error_string(code: int) -> str:
    """The description of a ``CUresult`` (or libcuabi) status code."""
    check("I", code, "code")
    return backend().error_string(code)


def _int(v, name):
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError("%s must be an int, got %s" % (name, type(v).__name__))
    return int(v)


def get_proc(name: str, version: int = 0, flags: Optional[str] = None) -> int:
    """Address of the driver entry point ``name`` (e.g. ``"cuMemAlloc_v2"`` or ``"cuMemAlloc"``).

    ``version`` is the CUDA version whose ABI you want (0: the driver's own);
    ``flags`` is ``"legacy"`` or ``"per_thread"`` (default: the process's mode).
    Raises :class:`cuabi.errors.EntryPointNotFoundError` or
    :class:`cuabi.errors.DriverTooOldError` when the driver lacks it.
    """
    if not isinstance(name, str) or not name:
        raise TypeError("name must be a non-empty str")
    version = _int(version, "version")
    if flags is None:
        flags = default_stream_mode()  # as documented: the process's mode, not the driver's default
    f = _FLAG_NAMES.get(flags)
    if f is None:
        raise ValueError("flags must be 'legacy', 'per_thread' or None, got %r" % (flags,))
    rc, addr = backend().get_proc(name, version, f)
    _check(rc, name)
    return addr


def call(name: str, signature: str, *args: Any, version: int = 0) -> None:
    """Call any driver entry point by name through libcuabi's dynamic caller.

    ``signature`` holds one letter per parameter (``i`` int32, ``I`` uint32,
    ``q`` int64, ``Q`` uint64, ``z`` size_t, ``p`` pointer, ``f`` float,
    ``d`` double).  Pointer arguments take ints, ``None`` or buffers; to receive
    outputs pass a writable buffer (``bytearray``, ``array``...) and read it
    afterwards.  Raises :class:`cuabi.CUDAError` when the call fails.
    """
    if not isinstance(name, str) or not name:
        raise TypeError("name must be a non-empty str")
    if not isinstance(signature, str):
        raise TypeError("signature must be a str")
    version = _int(version, "version")
    try:
        toks = split_signature(signature)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    for t in toks:
        if len(t) != 1 or t in "BH":
            raise ValueError("signature letter %r is not supported by cuabi.call" % t)
    if len(toks) != len(args):
        raise TypeError("signature %r has %d parameters but %d arguments were given"
                        % (signature, len(toks), len(args)))
    values = []
    keep = []
    for letter, value in zip(toks, args):
        if letter == "p":
            value, k = address(value)
            keep.append(k)
        else:
            check(letter, value, "argument")
        values.append(value)
    _check(backend().call(name, version, signature, values), name)
    del keep
