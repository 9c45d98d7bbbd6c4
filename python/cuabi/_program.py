# SPDX-License-Identifier: Apache-2.0
"""Compiling CUDA C++ at run time with NVRTC, through libcuabi's NVRTC family.

:class:`Program` calls :mod:`cuabi.nvrtc`, so NVRTC is found as that module
finds it: ``CUABI_LIBNVRTC`` (absolute path), else NVIDIA's pip wheels through
``cuda.pathfinder`` when that package is installed, else libcuabi's own
search (``libnvrtc.so.13``, ``.so.12``, the toolkit folders named by
``CUDA_HOME``/``CUDA_PATH``, ``/usr/local/cuda``; docs/families.md).  NVRTC is
only opened when you compile, so its absence costs nothing until then, and
the error then carries libcuabi's report of every place tried.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import nvrtc as _nvrtc
from ._family_support import string_array
from ._program_options import ProgramOptions
from .errors import NVRTCError


def nvrtc_version():
    """NVRTC's ``(major, minor)``; raises :class:`cuabi.NVRTCError` (with libcuabi's
    report) when no usable NVRTC is found."""
    return tuple(_nvrtc.nvrtcVersion())


def nvrtc_path() -> str:
    """Where NVRTC was loaded from (loads it if needed)."""
    _nvrtc.nvrtcVersion()
    return _nvrtc.library_path() or ""


def supported_archs() -> List[int]:
    """Compute capabilities NVRTC can target, as ints (e.g. 75, 80, 90)."""
    n = _nvrtc.nvrtcGetNumSupportedArchs()
    if n <= 0:
        return []
    buf = bytearray(4 * n)
    _nvrtc.nvrtcGetSupportedArchs(buf)
    return list(struct.unpack("=%di" % n, bytes(buf)))


# the NVRTC options that choose the target architecture
_ARCH_OPTIONS = ("-arch", "--gpu-architecture")


class ObjectCode:
    """What :meth:`Program.compile` or :meth:`cuabi.Linker.link` produced: ``code``
    (bytes), ``kind`` (``"ptx"``, ``"cubin"``, ``"ltoir"`` or ``"fatbin"``), the
    compiler's or linker's ``log``, ``name_map`` (name expression -> lowered,
    mangled name) and ``arch`` (``"sm_90"`` style, or ``None`` when unknown)."""

    __slots__ = ("code", "kind", "log", "name_map", "arch")

    def __init__(self, code: bytes, kind: str, log: str, name_map: Dict[str, str],
                 arch: Optional[str] = None):
        self.code = code
        self.kind = kind
        self.log = log
        self.name_map = name_map
        self.arch = arch

    def load(self, device=None):
        """Load as a :class:`cuabi.Module`."""
        from ._module import Module

        if self.kind == "ltoir":
            raise ValueError("LTO IR cannot be loaded as it is: link it first, e.g. "
                             "cuabi.Linker(obj, arch=...).link() gives a cubin that loads")
        return Module(self.code, kind=self.kind, device=device)

    def __repr__(self):
        return "<cuabi.ObjectCode %s, %d bytes>" % (self.kind, len(self.code))


class Program:
    """A CUDA C++ source to compile with NVRTC.

    ``Program(source, name="program.cu", headers={"name.h": "source"})``, then
    :meth:`compile`.  Compilation errors raise :class:`cuabi.NVRTCError`
    carrying the compiler log.
    """

    def __init__(self, source, name: str = "program.cu", headers: Optional[Dict[str, str]] = None):
        if isinstance(source, bytes):
            source = source.decode("utf-8")
        if not isinstance(source, str):
            raise TypeError("source must be a str, got %s" % type(source).__name__)
        if not isinstance(name, str):
            raise TypeError("name must be a str")
        headers = dict(headers or {})
        for k, v in headers.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("headers must map str names to str sources")
        self.source = source
        self.name = name
        self.headers = headers

    def compile(self, options: Union[ProgramOptions, Sequence[str]] = (), *, target: str = "ptx",
                arch: Optional[str] = None,
                name_expressions: Iterable[str] = ()) -> ObjectCode:
        """Compile to ``target`` (``"ptx"``, ``"cubin"`` or ``"ltoir"``).

        ``arch``: ``"sm_90"`` style (default: the current device's, else the
        oldest architecture NVRTC supports).  ``options`` are NVRTC options:
        a :class:`cuabi.ProgramOptions` or a sequence of option strings.
        ``name_expressions`` (e.g. ``"kernel<float>"``) get their mangled
        names in the result's ``name_map``.
        """
        if target not in ("ptx", "cubin", "ltoir"):
            raise ValueError("target must be 'ptx', 'cubin' or 'ltoir', got %r" % (target,))
        if isinstance(options, ProgramOptions):
            options = options.as_list()
        if isinstance(options, str):
            raise TypeError("options must be a ProgramOptions or a sequence of str, not a single str")
        opts = [o for o in options]
        for o in opts:
            if not isinstance(o, str):
                raise TypeError("options must be str")
        names = list(name_expressions)
        for n in names:
            if not isinstance(n, str):
                raise TypeError("name_expressions must be str, got %s" % type(n).__name__)
        given = [o for o in opts if o.startswith(_ARCH_OPTIONS)]
        if given and arch is not None:
            raise ValueError("the architecture is given twice: arch=%r and %r in options; pass one"
                             % (arch, given[0]))
        if arch is not None and not (isinstance(arch, str) and arch.startswith(("sm_", "compute_"))):
            raise ValueError("arch must look like 'sm_90' or 'compute_90', got %r" % (arch,))
        num = None
        if not given:  # an -arch among the options is the caller's choice: keep it alone
            num = (arch if arch is not None else _default_arch()).split("_", 1)[1]
            opts.append(("-arch=compute_%s" if target == "ptx" else "-arch=sm_%s") % num)
        if target == "ltoir":
            opts.append("-dlto")
        hnames = list(self.headers)
        hsrc, keep_src = string_array([self.headers[k] for k in hnames])
        hinc, keep_inc = string_array(hnames)
        prog = _nvrtc.nvrtcCreateProgram(self.source, self.name, len(hnames), hsrc, hinc)
        try:
            for n in names:
                _nvrtc.nvrtcAddNameExpression(prog, n)
            copts, _keep_opts = string_array(opts)
            failure: Optional[NVRTCError] = None
            try:
                _nvrtc.nvrtcCompileProgram(prog, len(opts), copts)
            except NVRTCError as exc:
                failure = exc
            log = _read(prog, _nvrtc.nvrtcGetProgramLogSize, _nvrtc.nvrtcGetProgramLog).rstrip(b"\0").decode(
                "utf-8", "replace")
            if failure is not None:
                raise NVRTCError("compiling %s failed: %s (%s)" % (self.name, failure.name, failure.code), code=failure.code, log=log,
                                 name=failure.name, function=failure.function, report=failure.report)
            if target == "ptx":
                code = _read(prog, _nvrtc.nvrtcGetPTXSize, _nvrtc.nvrtcGetPTX)
            elif target == "cubin":
                code = _read(prog, _nvrtc.nvrtcGetCUBINSize, _nvrtc.nvrtcGetCUBIN)
            else:
                code = _read(prog, _nvrtc.nvrtcGetLTOIRSize, _nvrtc.nvrtcGetLTOIR)
            name_map = {n: _nvrtc.nvrtcGetLoweredName(prog, n) for n in names}
        finally:
            _nvrtc.nvrtcDestroyProgram(prog)
        del keep_src, keep_inc  # the arrays NVRTC read, kept alive until here
        return ObjectCode(code, target, log, name_map, None if num is None else "sm_%s" % num)


def _read(prog: int, size_fn: Any, get_fn: Any) -> bytes:
    """One of the program's outputs (log, PTX, cubin, LTO IR): its size, then its bytes."""
    n = size_fn(prog)
    buf = bytearray(max(1, n))
    get_fn(prog, buf)
    return bytes(buf[:n])


def _default_arch():
    """The current device's architecture, else NVRTC's oldest supported one."""
    try:
        from . import driver as _d
        from ._device import Device

        if _d.cuCtxGetCurrent():
            return Device().arch
    except Exception:
        pass
    archs = supported_archs()
    if archs:
        return "sm_%d" % min(archs)
    return "sm_75"
