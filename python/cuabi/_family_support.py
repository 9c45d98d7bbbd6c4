# SPDX-License-Identifier: Apache-2.0
"""What the generated family modules (:mod:`cuabi.nvrtc`, :mod:`cuabi.nvjitlink`,
:mod:`cuabi.nvvm`, :mod:`cuabi.nvml`) call.

Each of them ends with one :class:`FamilyModule`, which binds a function's
wrapper on its first use (as :func:`cuabi._driver_support.bind` does for the
driver), answers the module's enums and constants, chooses the library file
and turns a failing status into the family's exception.

Choosing the file: libcuabi searches for a family's library itself on its
first call (``CUABI_LIBNVRTC`` ..., then the system; docs/families.md).  Before
that first call, unless the variable is set or :meth:`FamilyModule.load_library`
was called, the Python layer asks ``cuda.pathfinder`` (when it is installed)
where NVIDIA's wheels put NVRTC, nvJitLink or NVVM, and hands that path to
libcuabi, so that ``pip install nvidia-cuda-nvrtc`` is enough.  Nothing here
runs at import time.
"""

from __future__ import annotations

import enum
import os
import threading
from typing import Any, Callable, Dict, List, NoReturn, Optional, Tuple

from ._backend import backend
from ._own_table import OWN_CODES
from .errors import FAMILY_ERRORS, FamilyError

# cuda.pathfinder's name of each family's library (NVML comes with the driver:
# the system search finds it)
PATHFINDER_NAMES = {"nvrtc": "nvrtc", "nvjitlink": "nvJitLink", "nvvm": "nvvm"}

_OWN_NAMES = {value: name for name, value, _kind in OWN_CODES}
_ALREADY_LOADED = next(value for name, value, _kind in OWN_CODES if name == "CUABI_ERROR_ALREADY_LOADED")


def _tables() -> Dict[str, Any]:
    from ._family_tables import FAMILIES

    return FAMILIES


def pathfinder_path(family: str) -> Tuple[Optional[str], str]:
    """``(absolute path or None, what happened)`` of ``cuda.pathfinder``'s search
    for the family's library in NVIDIA's wheels (and where it looks besides)."""
    libname = PATHFINDER_NAMES.get(family)
    if libname is None:
        return None, "cuda.pathfinder: not asked (%s comes with the driver)" % _tables()[family]["title"]
    try:
        from cuda import pathfinder  # type: ignore[import-not-found]
    except ImportError:
        return None, "cuda.pathfinder: not installed (pip install cuda-pathfinder to search NVIDIA's wheels)"
    try:
        loaded = pathfinder.load_nvidia_dynamic_lib(libname)
    except Exception as exc:  # its own not-found error, or any failure to open
        return None, "cuda.pathfinder: %s: %s" % (type(exc).__name__, exc)
    path = getattr(loaded, "abs_path", None)
    if not isinstance(path, str) or not os.path.isabs(path):
        return None, "cuda.pathfinder: found %s but gave no absolute path (%r)" % (libname, path)
    return path, "cuda.pathfinder: found %s" % path


class FamilyModule:
    """The run-time half of one generated family module."""

    def __init__(self, family: str, entries: Dict[str, tuple], namespace: Dict[str, Any]):
        self.family = family
        self._entries = entries
        self._namespace = namespace
        self._lock = threading.Lock()
        self._chosen = False
        self.notes: List[str] = []
        self._enums: Dict[str, Any] = {}
        self._owner: Optional[Dict[str, str]] = None

    # -- facts ----------------------------------------------------------------------
    @property
    def info(self) -> Dict[str, Any]:
        """The family's row of the generated tables."""
        return _tables()[self.family]

    @property
    def error_class(self) -> type:
        return FAMILY_ERRORS[self.family]

    # -- choosing and loading the library ------------------------------------------------
    def _choose(self) -> None:
        """Before the family's first call: hand libcuabi what cuda.pathfinder finds,
        unless the environment variable or load_library() chose already."""
        if self._chosen:
            return
        with self._lock:
            if self._chosen:
                return
            info = self.info
            if os.environ.get(info["environment"]) is not None:
                self.notes.append("%s is set: libcuabi uses it" % info["environment"])
            else:
                path, note = pathfinder_path(self.family)
                self.notes.append(note)
                if path is not None:
                    rc = backend().family_load(info["library_id"], path)
                    if rc == _ALREADY_LOADED:
                        self.notes.append("libcuabi had already loaded %s; %s not used"
                                          % (info["title"], path))
            self._chosen = True

    def load_library(self, path: Optional[str] = None) -> str:
        """Load the family's library now and return the file in use.

        ``path``: an absolute path, the only file tried; ``None``: libcuabi's own
        search (docs/families.md, "Loading"), with no ``cuda.pathfinder``.  Only
        the first load of a process counts: call this before the family's first
        function.  Raises the family's error (with libcuabi's report) when no
        usable library was loaded.
        """
        if path is not None:
            if not isinstance(path, str):
                raise TypeError("path must be a str or None, got %s" % type(path).__name__)
            if not os.path.isabs(path):
                raise ValueError("path must be an absolute path to the library file, got %r "
                                 "(a relative one would depend on the current folder)" % path)
        info = self.info
        b = backend()
        with self._lock:
            rc = b.family_load(info["library_id"], path)
            self._chosen = True
        if rc == _ALREADY_LOADED:
            loaded = b.family_path(info["library_id"])
            if path is None or loaded == path:
                rc = b.family_status(info["library_id"])
            else:
                raise self.error_class(
                    "%s was already loaded (from %s) when load_library(%r) was called: a process "
                    "loads it once; call load_library() before the first %s function, or set %s"
                    % (info["title"], loaded or "nowhere: it failed", path, info["title"],
                       info["environment"]), code=rc, name="CUABI_ERROR_ALREADY_LOADED",
                    function="load_library")
        if rc:
            self._raise_load(rc, "load_library")
        return b.family_path(info["library_id"]) or ""

    def library_status(self) -> int:
        """libcuabi's status of the family's library (0 when usable), loading it if not yet."""
        self._choose()
        return backend().family_status(self.info["library_id"])

    def library_report(self) -> str:
        """libcuabi's report of the family's loading (every file tried and why it was
        not used, the library in use and the functions it lacks), then what the
        Python layer did before it (cuda.pathfinder's answer)."""
        self._choose()
        return backend().family_report(self.info["library_id"]).rstrip("\n") + self._notes() + "\n"

    def _notes(self) -> str:
        return "".join("\n(Python layer) %s" % n for n in self.notes)

    def library_path(self) -> Optional[str]:
        """The family's library file in use, or ``None`` when none could be loaded."""
        self._choose()
        return backend().family_path(self.info["library_id"])

    # -- binding -------------------------------------------------------------------------
    def bind(self, name: str) -> Callable[..., Any]:
        """Build the wrapper of function ``name`` and install it in the module."""
        factory, sig, outs, ret = self._entries[name]
        self._choose()
        b = backend()
        wrapper = factory(b.fn(name, sig, outs, ret), b, b.checks_ranges)
        self._namespace[name] = wrapper
        return wrapper

    def getattr(self, name: str) -> Any:
        """The module's ``__getattr__``: functions, enum classes, enumerators, constants."""
        if name in self._entries:
            return self.bind(name)
        info = self.info
        if name in info["enums"]:
            value: Any = self.enum_class(name)
        else:
            owner = self._owners().get(name)
            if owner is not None:
                value = self.enum_class(owner)[name]
            elif name in info["constants"]:
                value = info["constants"][name]
            else:
                raise AttributeError("module %r has no attribute %r" % (info["module"], name))
        self._namespace[name] = value
        return value

    def dir(self) -> List[str]:
        info = self.info
        return sorted(set(self._namespace) | set(self._entries) | set(info["enums"])
                      | set(self._owners()) | set(info["constants"]))

    def _owners(self) -> Dict[str, str]:
        if self._owner is None:
            owners: Dict[str, str] = {}
            for ename, members in self.info["enums"].items():
                for m in members:
                    owners.setdefault(m, ename)
            self._owner = owners
        return self._owner

    def enum_class(self, name: str) -> Any:
        cls = self._enums.get(name)
        if cls is None:
            with self._lock:
                cls = self._enums.get(name)
                if cls is None:
                    members = self.info["enums"][name]
                    cls = enum.IntEnum(name, list(members.items()), module=self.info["module"])  # type: ignore[misc]
                    cls.__doc__ = "Values of %s's %s enum." % (self.info["header"], name)
                    self._enums[name] = cls
        return cls

    # -- errors --------------------------------------------------------------------------
    def code_name(self, code: int) -> str:
        """The name of a status of the family: its result enum's, or cuabi's own."""
        for name, value in self.info["enums"].get(self.info["result_type"], {}).items():
            if value == code:
                return name
        return _OWN_NAMES.get(code, "%s %d" % (self.info["result_type"], code))

    def _condition(self, code: int) -> Optional[str]:
        for condition, (_name, value) in self.info["answers"].items():
            if value == code:
                return condition
        return None

    def raise_for(self, code: int, function: str) -> NoReturn:
        """Raise the family's error for status ``code`` of ``function``."""
        condition = self._condition(code)
        if condition in ("library_missing", "library_too_old", "bad_environment"):
            self._raise_load(code, function)
        info = self.info
        name = self.code_name(code)
        if condition == "function_missing":
            raise self.error_class(
                "%s: not in the %s library loaded (%s), which is older than %s of CUDA %d.%d that "
                "cuabi forwards; install a newer %s, or do without %s"
                % (function, info["title"], backend().family_path(info["library_id"]), info["header"],
                   info["cuda_version"] // 1000, info["cuda_version"] % 1000 // 10, info["title"],
                   function), code=code, name=name, function=function)
        raise self.error_class("%s failed: %s (%d)" % (function, name, code), code=code, name=name,
                               function=function)

    def _raise_load(self, code: int, function: str) -> NoReturn:
        info = self.info
        report = backend().family_report(info["library_id"]).rstrip("\n") + self._notes()
        raise self.error_class(
            "%s: no usable %s (%s, %d); libcuabi's report:\n%s"
            % (function, info["title"], self.code_name(code), code, report),
            code=code, name=self.code_name(code), function=function, report=report)


def string_array(strings: List[str]) -> Tuple[int, Any]:
    """``(address, keepalive)`` of a native ``const char *[]`` holding ``strings``
    (NUL-terminated UTF-8), for the parameters that take option lists; (0, None)
    for an empty list."""
    if not strings:
        return 0, None
    import struct

    b = backend()
    data = [s.encode("utf-8") for s in strings]
    for s, d in zip(strings, data):
        if b"\0" in d:
            raise ValueError("option %r contains a NUL character" % s)
    blob, blob_view = b.new_buffer(sum(len(d) + 1 for d in data))
    base, keep_blob = b.buffer_address(blob)
    addresses = []
    at = 0
    mv = memoryview(blob_view).cast("B")
    for d in data:
        mv[at:at + len(d)] = d
        addresses.append(base + at)
        at += len(d) + 1
    table, table_view = b.new_buffer(8 * len(addresses))
    memoryview(table_view).cast("B")[:] = struct.pack("=%dQ" % len(addresses), *addresses)
    addr, keep_table = b.buffer_address(table)
    return addr, (blob, keep_blob, table, keep_table)


def family_error(family: str) -> type:
    """The exception class of ``family``."""
    return FAMILY_ERRORS[family]


__all__ = ["FamilyModule", "FamilyError", "family_error", "pathfinder_path", "string_array"]
