# SPDX-License-Identifier: Apache-2.0
"""Exceptions raised by cuabi.

Every failing driver call raises a subclass of :class:`CUDAError`; there is one
subclass per ``CUresult`` code, created the first time it is needed, named
after the code in CamelCase with ``Error`` appended (``CUDA_ERROR_OUT_OF_MEMORY``
becomes ``OutOfMemoryError``).  Look one up with :func:`by_code` or as an
attribute of this module (``cuabi.errors.OutOfMemoryError``).

libcuabi's own codes (driver missing, stub only, entry point missing, ...)
come from the generated table (``_own_table.OWN_CODES``), each with a kind:
the ``load`` codes (no usable driver was loaded) derive from
:class:`DriverLoadError` and carry the loader's report, the ``lookup`` codes
(an entry point is missing or too new) from :class:`EntryPointError`, the
``usage`` codes from :class:`CUDAError`.  The classes below name the own codes
of this release; a code added to libcuabi later gets its class like the
driver's codes, from its name and kind.
"""

from __future__ import annotations

import os
import threading
from typing import Dict, Iterable, Optional, Tuple, Type

from ._own_table import OWN_CODES

__all__ = [
    "CUDAError",
    "DriverLoadError",
    "EntryPointError",
    "DriverNotFoundError",
    "DriverStubError",
    "DriverUnusableError",
    "EntryPointNotFoundError",
    "DriverTooOldError",
    "BadEnvironmentError",
    "BadSignatureError",
    "AlreadyLoadedError",
    "ClosedError",
    "FamilyError",
    "NVRTCError",
    "NVJitLinkError",
    "NVVMError",
    "NVMLError",
    "LibraryNotFoundError",
    "ConfigurationError",
    "by_code",
]


class CUDAError(RuntimeError):
    """A driver call (or libcuabi) returned a status other than success.

    Attributes: ``code`` (int), ``name`` (e.g. ``"CUDA_ERROR_INVALID_VALUE"``),
    ``message`` (the driver's description), ``function`` (the entry point that
    failed, if known) and ``report`` (the loader's report for load failures,
    else ``None``).
    """

    code: int = -1

    def __init__(self, code, name=None, message=None, function=None, report=None):
        self.code = int(code)
        self.name = name or "CUresult %d" % self.code
        self.message = message or ""
        self.function = function
        self.report = report
        text = "%s%s (%d)" % ((function + ": ") if function else "", self.name, self.code)
        if self.message:
            text += ": " + self.message
        if report:
            text += "\n" + report.rstrip()
        super().__init__(text)

    def __reduce__(self):
        return (_rebuild, (self.code, self.name, self.message, self.function, self.report))


def _rebuild(code, name, message, function, report):
    return by_code(code)(code, name, message, function, report)


class DriverLoadError(CUDAError):
    """No usable CUDA driver could be loaded; ``report`` says what was tried."""


class EntryPointError(CUDAError):
    """The loaded driver lacks the entry point, or has it only in newer versions."""


# One class per own code; ``code`` is set from the generated table below.

class DriverNotFoundError(DriverLoadError):
    """No libcuda.so.1 could be opened (CUABI_ERROR_DRIVER_NOT_FOUND)."""


class DriverStubError(DriverLoadError):
    """Only the CUDA toolkit's stub libcuda was found (CUABI_ERROR_DRIVER_STUB)."""


class DriverUnusableError(DriverLoadError):
    """A library was opened but is not a usable driver (CUABI_ERROR_DRIVER_UNUSABLE)."""


class BadEnvironmentError(DriverLoadError):
    """CUABI_LIBCUDA or CUABI_PER_THREAD_DEFAULT_STREAM has an unusable value."""


class EntryPointNotFoundError(EntryPointError):
    """The loaded driver does not provide this entry point."""


class DriverTooOldError(EntryPointError):
    """The entry point exists only in a newer driver than the one loaded."""


class BadSignatureError(CUDAError):
    """The signature string given to :func:`cuabi.call` is malformed."""


class AlreadyLoadedError(CUDAError):
    """A setting was changed after the driver had already been loaded."""


class LibraryNotFoundError(OSError):
    """libcuabi.so.1 could not be opened.

    ``tried`` lists ``(candidate, reason)`` pairs in the order they were tried.
    """

    def __init__(self, tried: Iterable[Tuple[str, str]]):
        self.tried = list(tried)
        lines = ["cuabi could not open libcuabi.so.1; tried:"]
        for candidate, reason in self.tried:
            lines.append("  %s: %s" % (candidate, reason))
        if os.environ.get("CUABI_LIBRARY") is not None:
            lines.append(
                "CUABI_LIBRARY is set, so nothing else was tried: correct it, or unset it "
                "to use the copy installed with the package."
            )
        else:
            lines.append(
                "Install the cuabi wheel (it bundles the library), or set "
                "CUABI_LIBRARY to the absolute path of libcuabi.so.1."
            )
        super().__init__("\n".join(lines))


class ConfigurationError(ValueError):
    """An environment variable read by cuabi has a value it cannot use."""


class ClosedError(ValueError):
    """The object was closed (or its context was) and can no longer be used."""


class FamilyError(RuntimeError):
    """A call into one of the library families (NVRTC, nvJitLink, NVVM, NVML)
    failed, or its library could not be used.

    ``code`` is the family's status (``None`` when there is none), ``name`` its
    enumerator's name, ``function`` the call that failed, ``log`` the compiler's
    or linker's log when there is one (it ends the message), ``report``
    libcuabi's loading report when the library could not be used.
    """

    family = ""

    def __init__(self, message, code=None, log=None, name=None, function=None, report=None):
        self.code = code
        self.log = log
        self.name = name
        self.function = function
        self.report = report
        if log:
            message = message + "\n" + log.rstrip()
        super().__init__(message)


class NVRTCError(FamilyError):
    """NVRTC could not be loaded, or a call of it (a compilation) failed."""

    family = "nvrtc"


class NVJitLinkError(FamilyError):
    """nvJitLink could not be loaded, or a call of it (a link) failed."""

    family = "nvjitlink"


class NVVMError(FamilyError):
    """NVVM could not be loaded, or a call of it failed."""

    family = "nvvm"


class NVMLError(FamilyError):
    """NVML could not be loaded, or a query of it failed."""

    family = "nvml"


FAMILY_ERRORS: Dict[str, Type[FamilyError]] = {
    cls.family: cls for cls in (NVRTCError, NVJitLinkError, NVVMError, NVMLError)}


KIND_BASES: Dict[str, Type[CUDAError]] = {
    "load": DriverLoadError, "lookup": EntryPointError, "usage": CUDAError}

_lock = threading.Lock()
_by_code: Dict[int, Type[CUDAError]] = {}
_by_name: Dict[str, Type[CUDAError]] = {}
_code_names = None
_LOAD_CODES = frozenset(code for _name, code, kind in OWN_CODES if kind == "load")


def _result_names():
    """code -> CUresult enumerator name (the driver's and libcuabi's own), from
    the generated table (loaded once)."""
    global _code_names
    if _code_names is None:
        from ._tables import ENUMS

        _code_names = {v: k for k, v in ENUMS["CUresult"].items()}
    return _code_names


def class_name_for(enumerator):
    """``CUDA_ERROR_OUT_OF_MEMORY`` -> ``OutOfMemoryError``."""
    base = enumerator
    for prefix in ("CUDA_ERROR_", "CUABI_ERROR_", "CUDA_"):
        if base.startswith(prefix):
            base = base[len(prefix):]
            break
    return "".join(part.capitalize() for part in base.split("_")) + "Error"


def _own_class(name: str, code: int, kind: str) -> Type[CUDAError]:
    """The class of own code ``name``: the one above named for it, else a new
    one on its kind's base."""
    cname = class_name_for(name)
    cls = globals().get(cname)
    if cls is None:
        cls = type(cname, (KIND_BASES[kind],), {
            "__doc__": "libcuabi returned %s." % name, "__module__": __name__})
        _by_name[cname] = cls
    cls.code = code
    return cls


for _name, _code, _kind in OWN_CODES:
    _by_code[_code] = _own_class(_name, _code, _kind)


def by_code(code: int) -> "type[CUDAError]":
    """The :class:`CUDAError` subclass for a ``CUresult`` code."""
    code = int(code)
    cls = _by_code.get(code)
    if cls is not None:
        return cls
    with _lock:
        cls = _by_code.get(code)
        if cls is None:
            enumerator = _result_names().get(code)
            if enumerator is None:
                cls = CUDAError
            else:
                cname = class_name_for(enumerator)
                cls = type(cname, (CUDAError,), {
                    "__doc__": "The driver returned %s." % enumerator,
                    "__module__": __name__,
                    "code": code,
                })
                _by_name[cname] = cls
            _by_code[code] = cls
    return cls


def error_for(code: int, name: Optional[str], message: Optional[str], function: Optional[str],
              report: Optional[str]) -> CUDAError:
    """Build (not raise) the exception for ``code``; ``name`` defaults to the
    enumerator's name from the generated table."""
    return by_code(code)(code, name or _result_names().get(code), message, function, report)


def is_load_failure(code: int) -> bool:
    """True for the codes that mean no usable driver was loaded (their errors
    carry the loader's report)."""
    return code in _LOAD_CODES


def __getattr__(name):
    cls = _by_name.get(name)
    if cls is not None:
        return cls
    if name.endswith("Error"):
        for code, enumerator in list(_result_names().items()):
            if class_name_for(enumerator) == name:
                return by_code(code)
    raise AttributeError("module 'cuabi.errors' has no attribute %r" % name)


def __dir__():
    names = set(globals()) | {class_name_for(n) for n in _result_names().values()}
    return sorted(names)
