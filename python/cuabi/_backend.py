# SPDX-License-Identifier: Apache-2.0
"""Choosing the foreign-function backend, and opening libcuabi.so.1 with it.

Two modules implement the interface of :mod:`cuabi._backend_interface`:
``_backend_cffi`` (cffi, ABI mode or the compiled API-mode module) and
``_backend_ctypes`` (the standard library only).  :func:`backend` picks one (``CUABI_PY_BACKEND``, else cffi when it is
importable), opens libcuabi with it and keeps it for the process.

Nothing here runs at ``import cuabi`` time: the first caller of :func:`backend`
pays for opening the library (a single ``dlopen``) and importing the backend
module.  The CUDA driver itself is opened later still, by libcuabi, on the
first driver call.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

from .errors import ConfigurationError, LibraryNotFoundError

if TYPE_CHECKING:  # pragma: no cover - the interface is for type checkers and tests
    from ._backend_interface import Backend

LIBRARY_NAME = "libcuabi.so.1"
BACKENDS = ("cffi", "ctypes")

# what a backend's library opener returns: (library object, path, [(candidate, why skipped)])
Opened = Tuple[Any, str, List[Tuple[str, str]]]


_lock = threading.Lock()
_backend: Optional["Backend"] = None


def candidates() -> List[Tuple[str, str]]:
    """Return the ordered list of ``(kind, path)`` places searched for libcuabi.

    ``CUABI_LIBRARY``, when set, is the only one: an explicit choice (another
    build of libcuabi, a debugging one), used or reported, never silently
    passed over for the installed copy, as libcuabi treats ``CUABI_LIBCUDA``.
    Otherwise the copy next to the package (the wheel's), then the system
    loader."""
    env = os.environ.get("CUABI_LIBRARY")
    if env is not None:
        return [("CUABI_LIBRARY", env)]
    here = os.path.dirname(os.path.abspath(__file__))
    return [("next to the package", os.path.join(here, LIBRARY_NAME)),
            ("system loader", LIBRARY_NAME)]


def _check_env_path(path: str) -> Optional[str]:
    if not path:
        return "CUABI_LIBRARY is set but empty"
    if not os.path.isabs(path):
        return "CUABI_LIBRARY must be an absolute path, got %r" % path
    return None


def requested_backend() -> Optional[str]:
    """The backend named by ``CUABI_PY_BACKEND``, or ``None`` for automatic choice."""
    value = os.environ.get("CUABI_PY_BACKEND")
    if value is None or value == "":
        return None
    if value not in BACKENDS:
        raise ConfigurationError(
            "CUABI_PY_BACKEND=%r is not a known backend; use one of: %s "
            "(or leave it unset to choose automatically)" % (value, ", ".join(BACKENDS))
        )
    return value


def open_library(opener: Callable[[str], Any]) -> Opened:
    """Try every candidate with ``opener(path)``; return (library, path, skipped)."""
    tried = []
    for kind, path in candidates():
        if kind == "CUABI_LIBRARY":
            problem = _check_env_path(path)
            if problem is not None:
                tried.append(("%s (%s)" % (path, kind), problem))
                continue
        elif kind == "next to the package" and not os.path.exists(path):
            tried.append(("%s (%s)" % (path, kind), "no such file"))
            continue
        try:
            lib = opener(path)
        except OSError as exc:
            tried.append(("%s (%s)" % (path, kind), str(exc).strip() or type(exc).__name__))
            continue
        return lib, path, tried
    raise LibraryNotFoundError(tried)


def backend() -> "Backend":
    """Return the process-wide backend object, creating it on first use."""
    global _backend
    b = _backend
    if b is not None:
        return b
    with _lock:
        if _backend is None:
            _backend = _make_backend()
        return _backend


def _make_backend() -> "Backend":
    wanted = requested_backend()
    errors = []
    order = [wanted] if wanted else list(BACKENDS)
    for name in order:
        if name == "cffi":
            try:
                from . import _backend_cffi as mod
            except ImportError as exc:
                if wanted:
                    raise ImportError(
                        "CUABI_PY_BACKEND=cffi was requested but the cffi backend is "
                        "unavailable: %s" % exc
                    ) from exc
                errors.append("cffi: %s" % exc)
                _warn_if_compiled_unused(exc)
                continue
        else:
            from . import _backend_ctypes as mod  # type: ignore[no-redef]
        return mod.Backend(open_library)
    raise ImportError("no usable backend: " + "; ".join(errors))  # pragma: no cover


def _warn_if_compiled_unused(exc: BaseException) -> None:
    """The compiled tier is installed but cffi cannot be imported: say so, since
    the ctypes backend that takes over is several times slower."""
    here = os.path.dirname(os.path.abspath(__file__))
    if any(n.startswith("_cuabi_cffi_api") for n in os.listdir(here)):
        import warnings

        warnings.warn("cuabi: the compiled tier is installed but unusable (%s); using the "
                      "slower ctypes backend" % exc, RuntimeWarning, stacklevel=4)


def loaded_backend() -> Optional["Backend"]:
    """The backend if it was already created, else ``None`` (never loads anything)."""
    return _backend
