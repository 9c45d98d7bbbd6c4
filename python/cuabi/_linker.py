# SPDX-License-Identifier: Apache-2.0
"""Linking device code with nvJitLink, through libcuabi's nvJitLink family.

A :class:`Linker` collects inputs (LTO IR, PTX, cubin, fatbin, relocatable
objects, libraries; as bytes, as :class:`cuabi.ObjectCode` or as files) and
:meth:`Linker.link` runs nvJitLink over them once, giving a cubin (or PTX)
that :class:`cuabi.Module` loads.  This is how ``Program(...).compile(
target="ltoir")`` output becomes runnable code: link-time optimisation
happens here.

nvJitLink is found as :mod:`cuabi.nvjitlink` finds it (``CUABI_LIBNVJITLINK``,
``cuda.pathfinder``, libcuabi's search for ``libnvJitLink.so.13``); it is
opened on the first :meth:`Linker.link`, not before.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import nvjitlink as _nvjitlink
from ._family_support import string_array
from ._object_code import ObjectCode
from .errors import NVJitLinkError

# input kind -> nvJitLinkInputType enumerator
_INPUT_TYPES = {
    "cubin": "NVJITLINK_INPUT_CUBIN", "ptx": "NVJITLINK_INPUT_PTX", "ltoir": "NVJITLINK_INPUT_LTOIR",
    "fatbin": "NVJITLINK_INPUT_FATBIN", "object": "NVJITLINK_INPUT_OBJECT",
    "library": "NVJITLINK_INPUT_LIBRARY",
}
# file name ending -> input kind, for add_file without a kind
_SUFFIXES = {".cubin": "cubin", ".ptx": "ptx", ".ltoir": "ltoir", ".lto": "ltoir", ".fatbin": "fatbin",
             ".o": "object", ".a": "library"}
_TARGETS = ("cubin", "ptx")

Code = Union[bytes, bytearray, memoryview, ObjectCode]


def _check_arch(arch: Any) -> str:
    if not (isinstance(arch, str) and arch.startswith("sm_") and arch[3:].rstrip("af").isdigit()):
        raise ValueError("arch must look like 'sm_90' (a real architecture: nvJitLink makes code "
                         "for one GPU), got %r" % (arch,))
    return arch


class Linker:
    """Links device code into one cubin with nvJitLink.

    ``Linker(*inputs, arch=None, lto=None, options=())``; each input as for
    :meth:`add`.  ``arch`` (``"sm_90"``): the GPU to link for; by default the
    architecture the inputs were compiled for (:attr:`ObjectCode.arch`) when
    they agree, else the current device's.  ``lto``: link-time optimisation
    (``-lto``), on by default when an input is LTO IR.  ``options``: more
    nvJitLink options (``"-O3"``, ``"-lineinfo"``, ``"-g"``,
    ``"-maxrregcount=64"``, ...), passed as they are.

    :meth:`link` raises :class:`cuabi.NVJitLinkError` with nvJitLink's error
    and info logs when the link fails.
    """

    def __init__(self, *inputs: Code, arch: Optional[str] = None, lto: Optional[bool] = None,
                 options: Sequence[str] = ()):
        if arch is not None:
            _check_arch(arch)
        if lto is not None and not isinstance(lto, bool):
            raise TypeError("lto must be True, False or None (automatic), got %r" % (lto,))
        if isinstance(options, str):
            raise TypeError("options must be a sequence of str, not a single str: options=[%r]" % options)
        options = list(options)
        for o in options:
            if not isinstance(o, str):
                raise TypeError("options must be str, got %s" % type(o).__name__)
            if o.startswith("-arch"):
                raise ValueError("give the architecture as arch=, not as the option %r" % o)
        self.arch = arch
        self.lto = lto
        self.options = options
        self._inputs: List[Tuple[str, str, Any, Optional[str]]] = []  # (kind, name, bytes or path, arch)
        for item in inputs:
            self.add(item)

    def add(self, code: Code, kind: Optional[str] = None, name: Optional[str] = None) -> "Linker":
        """Add an input: an :class:`cuabi.ObjectCode` (its kind is known), or bytes
        with ``kind`` one of ``"ltoir"``, ``"ptx"``, ``"cubin"``, ``"fatbin"``,
        ``"object"``, ``"library"``.  ``name`` appears in nvJitLink's logs.
        Returns the linker, so calls chain."""
        arch = None
        if isinstance(code, ObjectCode):
            if kind is not None and kind != code.kind:
                raise ValueError("kind=%r contradicts the ObjectCode's own kind %r" % (kind, code.kind))
            kind, data, arch = code.kind, code.code, code.arch
        elif isinstance(code, (bytes, bytearray, memoryview)):
            if kind is None:
                raise TypeError("bytes given without their kind: add(data, kind='ltoir') (or 'ptx', "
                                "'cubin', 'fatbin', 'object', 'library')")
            data = bytes(code)
        elif isinstance(code, str):
            raise TypeError("a str is ambiguous here: pass PTX as bytes with kind='ptx', or a file "
                            "with add_file(path)")
        else:
            raise TypeError("expected an ObjectCode or bytes, got %s" % type(code).__name__)
        if kind not in _INPUT_TYPES:
            raise ValueError("kind must be one of %s, got %r" % (", ".join(sorted(_INPUT_TYPES)), kind))
        if not data:
            raise ValueError("the %s input is empty" % kind)
        if name is not None and not isinstance(name, str):
            raise TypeError("name must be a str, got %s" % type(name).__name__)
        self._inputs.append((kind, name or "input%d.%s" % (len(self._inputs), kind), data, arch))
        return self

    def add_file(self, path: str, kind: Optional[str] = None) -> "Linker":
        """Add an input file, read by nvJitLink itself; ``kind`` from the file's
        ending (``.ltoir``, ``.ptx``, ``.cubin``, ``.fatbin``, ``.o``, ``.a``)
        when not given."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError("path must be a str or os.PathLike, got %s" % type(path).__name__)
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError("no such input file: %r" % path)
        if kind is None:
            kind = _SUFFIXES.get(os.path.splitext(path)[1])
            if kind is None:
                raise ValueError("cannot tell the kind of %r from its name: add_file(path, kind='ptx') "
                                 "(or one of %s)" % (path, ", ".join(sorted(_INPUT_TYPES))))
        if kind not in _INPUT_TYPES:
            raise ValueError("kind must be one of %s, got %r" % (", ".join(sorted(_INPUT_TYPES)), kind))
        self._inputs.append((kind, path, None, None))
        return self

    def _arch(self) -> str:
        if self.arch is not None:
            return self.arch
        known = sorted({a for _k, _n, _d, a in self._inputs if a is not None})
        if len(known) == 1:
            return _check_arch(known[0])
        if len(known) > 1:
            raise ValueError("the inputs were compiled for different architectures (%s): give arch="
                             % ", ".join(known))
        try:
            from . import driver as _driver
            from ._device import Device

            if _driver.cuCtxGetCurrent():
                return Device().arch
        except Exception:  # no driver or no context: say what to do instead
            pass
        raise ValueError("no architecture to link for: give arch='sm_90' (or compile the inputs with "
                         "Program(...).compile(arch=...), or make a context current)")

    def link_options(self) -> List[str]:
        """The options :meth:`link` gives nvJitLink."""
        opts = ["-arch=%s" % self._arch()]
        lto = self.lto if self.lto is not None else any(k == "ltoir" for k, _n, _d, _a in self._inputs)
        if lto:
            opts.append("-lto")
        return opts + self.options

    def link(self, target: str = "cubin") -> ObjectCode:
        """Link every input; return an :class:`cuabi.ObjectCode` of kind ``"cubin"``
        (or ``"ptx"`` with ``target="ptx"``, which needs LTO IR inputs) whose
        ``log`` is nvJitLink's info log."""
        if target not in _TARGETS:
            raise ValueError("target must be 'cubin' or 'ptx', got %r" % (target,))
        if not self._inputs:
            raise ValueError("nothing to link: add inputs first (Linker(obj, ...) or add())")
        opts = self.link_options()
        if target == "ptx" and "-ptx" not in opts:
            opts.append("-ptx")
        copts, _keep = string_array(opts)
        handle = _nvjitlink.nvJitLinkCreate(len(opts), copts)
        try:
            failure: Optional[NVJitLinkError] = None
            try:
                for kind, name, data, _arch in self._inputs:
                    input_type = getattr(_nvjitlink, _INPUT_TYPES[kind])
                    if data is None:
                        _nvjitlink.nvJitLinkAddFile(handle, input_type, name)
                    else:
                        _nvjitlink.nvJitLinkAddData(handle, input_type, data, len(data), name)
                _nvjitlink.nvJitLinkComplete(handle)
            except NVJitLinkError as exc:
                if exc.report is not None:  # the library itself is unusable: nothing to log
                    raise
                failure = exc
            info = _log(handle, _nvjitlink.nvJitLinkGetInfoLogSize, _nvjitlink.nvJitLinkGetInfoLog)
            if failure is not None:
                error = _log(handle, _nvjitlink.nvJitLinkGetErrorLogSize, _nvjitlink.nvJitLinkGetErrorLog)
                log = "\n".join(t for t in (error, info) if t)
                raise NVJitLinkError("linking %d input(s) for %s failed in %s: %s (%s)"
                                     % (len(self._inputs), opts[0][6:], failure.function, failure.name,
                                        failure.code),
                                     code=failure.code, log=log, name=failure.name, function=failure.function)
            if target == "cubin":
                n = _nvjitlink.nvJitLinkGetLinkedCubinSize(handle)
                buf = bytearray(max(1, n))
                _nvjitlink.nvJitLinkGetLinkedCubin(handle, buf)
            else:
                n = _nvjitlink.nvJitLinkGetLinkedPtxSize(handle)
                buf = bytearray(max(1, n))
                _nvjitlink.nvJitLinkGetLinkedPtx(handle, buf)
        finally:
            _nvjitlink.nvJitLinkDestroy(handle)
        return ObjectCode(bytes(buf[:n]), target, info, {}, opts[0][6:])

    def __repr__(self) -> str:
        return "<cuabi.Linker %d input(s), arch=%s>" % (len(self._inputs), self.arch)


def _log(handle: int, size_fn: Any, get_fn: Any) -> str:
    """One of nvJitLink's logs as text ("" when empty or unreadable)."""
    try:
        n = size_fn(handle)
        if n <= 1:
            return ""
        buf = bytearray(n)
        get_fn(handle, buf)
    except NVJitLinkError:
        return ""
    return bytes(buf).rstrip(b"\0").decode("utf-8", "replace").rstrip()


def nvjitlink_version() -> Tuple[int, int]:
    """nvJitLink's ``(major, minor)``; raises :class:`cuabi.NVJitLinkError` (with
    libcuabi's report) when no usable nvJitLink is found."""
    major, minor = _nvjitlink.nvJitLinkVersion()
    return major, minor
