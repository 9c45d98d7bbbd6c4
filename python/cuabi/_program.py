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

import dataclasses
import hashlib
import os
import struct
import warnings
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _program_cache
from . import nvrtc as _nvrtc
from ._family_support import string_array
from ._object_code import ObjectCode, _read
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


_CODE_TYPES = ("c++", "ptx", "nvvm")
# code type -> (the targets it compiles to, the default target, the default name)
_TARGETS = {"c++": (("ptx", "cubin", "ltoir"), "ptx", "program.cu"),
            "ptx": (("ptx", "cubin"), "cubin", "program.ptx"),
            "nvvm": (("ptx", "cubin", "ltoir"), "ptx", "program.ll")}
# ProgramOptions fields that have an equivalent for PTX input (nvJitLink) and NVVM IR
# input (libNVVM), and that option's spelling there; arch is handled on its own
_LINK_FIELDS = {"device_debug": "-g", "lineinfo": "-lineinfo", "max_register_count": "-maxrregcount=%d",
                "ftz": "-ftz=%d", "prec_div": "-prec-div=%d", "prec_sqrt": "-prec-sqrt=%d", "fmad": "-fma=%d",
                "ptxas_options": "-Xptxas=%s", "split_compile": "-split-compile=%d",
                "jump_table_density": "-jump-table-density=%d", "no_cache": "-no-cache",
                "device_stack_protector": "-device-stack-protector", "extra": "%s"}
_NVVM_FIELDS = {"device_debug": "-g", "lineinfo": "-generate-line-info", "ftz": "-ftz=%d",
                "prec_div": "-prec-div=%d", "prec_sqrt": "-prec-sqrt=%d", "fmad": "-fma=%d",
                "link_time_optimization": "-gen-lto", "extra": "%s"}


def _translate(options: ProgramOptions, table: Dict[str, str], tool: str) -> Tuple[Optional[str], List[str]]:
    """A ProgramOptions as another tool's options: (its arch or None, the option strings).
    A field set that the tool has no equivalent for is refused, naming it."""
    options.as_list()  # checks every field
    out: List[str] = []
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if f.name == "arch" or value == default or (isinstance(value, (list, tuple, dict)) and not value):
            continue
        spelling = table.get(f.name)
        if spelling is None or (f.name == "device_stack_protector" and value is False):
            raise ValueError("ProgramOptions.%s has no equivalent in %s; pass %s's own options as a list of str"
                             % (f.name, tool, tool))
        if isinstance(value, bool) and "%" not in spelling:
            out.append(spelling)
        elif isinstance(value, (list, tuple)):
            out.extend(spelling % v for v in value)
        else:
            out.append(spelling % value)
    return options.arch, out


def _tool_version(module: Any, version_fn: str) -> List[Any]:
    """What identifies a tool's build for the cache key: its version and its file's path, size and time."""
    version = list(getattr(module, version_fn)())
    path = module.library_path() or ""
    try:
        st = os.stat(path)
        return version + [path, st.st_size, st.st_mtime_ns]
    except OSError:
        return version + [path]


class Program:
    """Device code to compile: CUDA C++ (NVRTC), PTX (nvJitLink) or NVVM IR (libNVVM).

    ``Program(source, name=None, headers=None, code_type="c++")``, then
    :meth:`compile`.  ``code_type``:

    * ``"c++"``: CUDA C++, compiled by NVRTC; ``headers`` maps include names
      to their sources, kept in memory.
    * ``"ptx"``: PTX text; ``compile()`` links it into a cubin with nvJitLink
      (``target="cubin"``, the default), so that ptxas' errors and log come at
      compile time and the cubin can be cached; ``target="ptx"`` gives the
      PTX back as it is, for the driver to JIT when it is loaded.
    * ``"nvvm"``: NVVM IR (text, or LLVM bitcode as bytes), compiled by
      libNVVM (:class:`cuabi.NVVMProgram` for several modules).

    Failures raise :class:`cuabi.NVRTCError`, :class:`cuabi.NVJitLinkError` or
    :class:`cuabi.NVVMError` carrying the tool's log.
    """

    def __init__(self, source, name: Optional[str] = None, headers: Optional[Dict[str, str]] = None,
                 code_type: str = "c++"):
        if code_type not in _CODE_TYPES:
            raise ValueError("code_type must be 'c++', 'ptx' or 'nvvm', got %r" % (code_type,))
        if isinstance(source, (bytes, bytearray, memoryview)) and code_type != "nvvm":
            source = bytes(source).decode("utf-8")
        if code_type == "nvvm" and isinstance(source, (bytearray, memoryview)):
            source = bytes(source)
        if not isinstance(source, (str, bytes)):
            raise TypeError("source must be a str%s, got %s"
                            % (" or bytes" if code_type == "nvvm" else "", type(source).__name__))
        if name is None:
            name = _TARGETS[code_type][2]
        if not isinstance(name, str):
            raise TypeError("name must be a str")
        if headers and code_type != "c++":
            raise ValueError("headers are for CUDA C++ only (code_type=%r)" % (code_type,))
        headers = dict(headers or {})
        for k, v in headers.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("headers must map str names to str sources")
        self.source = source
        self.name = name
        self.headers = headers
        self.code_type = code_type

    def compile(self, options: Union[ProgramOptions, Sequence[str]] = (), *, target: Optional[str] = None,
                arch: Optional[str] = None, name_expressions: Iterable[str] = (),
                cache: Any = None) -> ObjectCode:
        """Compile to ``target``: ``"ptx"``, ``"cubin"`` or ``"ltoir"`` (PTX input:
        ``"cubin"`` or ``"ptx"``); by default ``"cubin"`` for PTX input, else ``"ptx"``.

        ``arch``: ``"sm_90"`` style (default: the current device's, else the
        oldest architecture NVRTC supports).  ``options``: a
        :class:`cuabi.ProgramOptions` (for PTX and NVVM input only its fields
        that nvJitLink or libNVVM have are accepted), or a sequence of the
        tool's own option strings.  ``name_expressions`` (C++ only, e.g.
        ``"kernel<float>"``) get their mangled names in the result's
        ``name_map``.  ``cache``: a :class:`cuabi.ProgramCache` or a
        directory; None uses ``CUABI_PROGRAM_CACHE`` when it is set; False
        never caches.
        """
        targets, default_target, _name = _TARGETS[self.code_type]
        if target is None:
            target = default_target
        if target not in targets:
            raise ValueError("target must be %s for code_type=%r, got %r"
                             % (" or ".join(repr(t) for t in targets), self.code_type, target))
        names = list(name_expressions)
        for n in names:
            if not isinstance(n, str):
                raise TypeError("name_expressions must be str, got %s" % type(n).__name__)
        if names and self.code_type != "c++":
            raise ValueError("name_expressions are for CUDA C++ only (code_type=%r)" % (self.code_type,))
        if arch is not None and not (isinstance(arch, str) and arch.startswith(("sm_", "compute_"))):
            raise ValueError("arch must look like 'sm_90' or 'compute_90', got %r" % (arch,))
        if isinstance(options, str):
            raise TypeError("options must be a ProgramOptions or a sequence of str, not a single str")
        given_arch: Optional[str] = None
        if isinstance(options, ProgramOptions):
            if self.code_type == "c++":
                opts = options.as_list()
            else:
                given_arch, opts = _translate(options, _LINK_FIELDS if self.code_type == "ptx" else _NVVM_FIELDS,
                                              "nvJitLink" if self.code_type == "ptx" else "libNVVM")
        else:
            opts = [o for o in options]
            for o in opts:
                if not isinstance(o, str):
                    raise TypeError("options must be str")
        given = [o for o in opts if o.startswith(_ARCH_OPTIONS)]
        if given_arch is not None:
            if arch is not None:
                raise ValueError("the architecture is given twice: arch=%r and ProgramOptions.arch=%r; pass one"
                                 % (arch, given_arch))
            arch = given_arch
        if given and arch is not None:
            raise ValueError("the architecture is given twice: arch=%r and %r in options; pass one"
                             % (arch, given[0]))
        if self.code_type == "ptx" and target == "ptx":
            if opts or arch is not None:
                raise ValueError("PTX to PTX runs no tool: options and arch have nowhere to go (target='cubin' "
                                 "links it with nvJitLink)")
            return ObjectCode(self._bytes(), "ptx", "", {}, None)
        store = _program_cache.resolve(cache)
        if store is None:
            return self._compile(opts, target, arch, names, given)
        num = None if given else (arch if arch is not None else _default_arch()).split("_", 1)[1]
        key = _program_cache.make_key({
            "code_type": self.code_type, "name": self.name, "target": target, "options": opts, "arch": num,
            "source": hashlib.sha256(self._bytes()).hexdigest(),
            "headers": sorted(self.headers.items()), "names": names, "tools": self._tools(target)})
        obj = store.get(key)
        if obj is not None:
            return obj
        obj = self._compile(opts, target, None if num is None else "sm_" + num, names, given)
        try:
            store.put(key, obj)
        except OSError as exc:  # a compilation that worked is not lost for want of a cache
            warnings.warn("cuabi: the program cache %s could not be written: %s" % (store.directory, exc),
                          RuntimeWarning, stacklevel=2)
        return obj

    def _bytes(self) -> bytes:
        """The source as bytes (NVVM bitcode is kept as given; text is UTF-8)."""
        return self.source if isinstance(self.source, bytes) else self.source.encode("utf-8")

    def _tools(self, target: str) -> List[Any]:
        """The versions of the tools this compilation runs (a part of the cache key)."""
        tools = []
        if self.code_type == "c++":
            tools.append(_tool_version(_nvrtc, "nvrtcVersion"))
        if self.code_type == "nvvm":
            from . import nvvm as _nvvm

            tools.append(_tool_version(_nvvm, "nvvmVersion"))
        if self.code_type != "c++" and target == "cubin":
            from . import nvjitlink as _nvjitlink

            tools.append(_tool_version(_nvjitlink, "nvJitLinkVersion"))
        return tools

    def _compile(self, opts: List[str], target: str, arch: Optional[str], names: List[str],
                 given: List[str]) -> ObjectCode:
        if self.code_type == "c++":
            return self._compile_cpp(list(opts), target, arch, names, given)
        num = None if given else (arch if arch is not None else _default_arch()).split("_", 1)[1]
        if self.code_type == "ptx":
            ptx, log = self._bytes(), ""
        else:
            from ._nvvm_program import NVVMProgram

            nvvm_opts = list(opts)
            if num is not None:
                nvvm_opts.append("-arch=compute_%s" % num)
            if target == "ltoir" and "-gen-lto" not in nvvm_opts:
                nvvm_opts.append("-gen-lto")
            prog = NVVMProgram().add_module(self.source, self.name)
            code = prog.compile(nvvm_opts)
            if target != "cubin":
                return ObjectCode(code, target, prog.log, {}, None if num is None else "sm_" + num)
            ptx, log, opts = code, prog.log, []  # libNVVM had the options; nvJitLink only assembles
        from ._linker import Linker

        if num is None:
            raise ValueError("give the architecture as arch='sm_90' to make a cubin from %s input"
                             % self.code_type.upper())
        linked = Linker(arch="sm_" + num, options=opts).add(ptx, "ptx", name=self.name).link("cubin")
        return ObjectCode(linked.code, "cubin", "\n".join(t for t in (log, linked.log) if t), {}, linked.arch)

    def _compile_cpp(self, opts: List[str], target: str, arch: Optional[str], names: List[str],
                     given: List[str]) -> ObjectCode:
        num = None
        if not given:  # an -arch among the options is the caller's choice: keep it alone
            num = (arch if arch is not None else _default_arch()).split("_", 1)[1]
            opts.append(("-arch=compute_%s" if target == "ptx" else "-arch=sm_%s") % num)
        if target == "ltoir" and "-dlto" not in opts and "--dlink-time-opt" not in opts:
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
