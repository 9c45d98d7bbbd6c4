"""Finding libcuabi.so.1 and choosing the foreign-function backend.

Nothing here runs at ``import cuabi`` time: the first caller of :func:`backend`
pays for opening the library (a single ``dlopen``) and importing the backend
module.  The CUDA driver itself is opened later still, by libcuabi, on the
first driver call.
"""

from __future__ import annotations

import os
import threading

LIBRARY_NAME = "libcuabi.so.1"
BACKENDS = ("cffi", "ctypes")

_lock = threading.Lock()
_backend = None


class LibraryNotFoundError(OSError):
    """libcuabi.so.1 could not be opened.

    ``tried`` lists ``(candidate, reason)`` pairs in the order they were tried.
    """

    def __init__(self, tried):
        self.tried = list(tried)
        lines = ["cuabi could not open %s; tried:" % LIBRARY_NAME]
        for candidate, reason in self.tried:
            lines.append("  %s: %s" % (candidate, reason))
        lines.append(
            "Install the cuabi wheel (it bundles the library), or set "
            "CUABI_LIBRARY to the absolute path of libcuabi.so.1."
        )
        super().__init__("\n".join(lines))


class ConfigurationError(ValueError):
    """An environment variable read by cuabi has a value it cannot use."""


def candidates():
    """Return the ordered list of ``(kind, path)`` places searched for libcuabi."""
    out = []
    here = os.path.dirname(os.path.abspath(__file__))
    out.append(("next to the package", os.path.join(here, LIBRARY_NAME)))
    env = os.environ.get("CUABI_LIBRARY")
    if env is not None:
        out.append(("CUABI_LIBRARY", env))
    out.append(("system loader", LIBRARY_NAME))
    return out


def _check_env_path(path):
    if not path:
        return "CUABI_LIBRARY is set but empty"
    if not os.path.isabs(path):
        return "CUABI_LIBRARY must be an absolute path, got %r" % path
    return None


def requested_backend():
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


def _open_with(module_opener):
    """Try every candidate with ``module_opener(path)``; return (lib, path)."""
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
            lib = module_opener(path)
        except OSError as exc:
            tried.append(("%s (%s)" % (path, kind), str(exc).strip() or type(exc).__name__))
            continue
        return lib, path, tried
    raise LibraryNotFoundError(tried)


def backend():
    """Return the process-wide backend object, creating it on first use."""
    global _backend
    b = _backend
    if b is not None:
        return b
    with _lock:
        if _backend is None:
            _backend = _make_backend()
        return _backend


def _make_backend():
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
                continue
        else:
            from . import _backend_ctypes as mod
        return mod.Backend(_open_with)
    raise ImportError("no usable backend: " + "; ".join(errors))  # pragma: no cover


def loaded_backend():
    """The backend if it was already created, else ``None`` (never loads anything)."""
    return _backend


def _reset_for_tests():  # pragma: no cover - used by the test-suite in subprocesses only
    global _backend
    _backend = None

