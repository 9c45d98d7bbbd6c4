"""Compiling CUDA C++ at run time with NVRTC, loaded lazily.

NVRTC is looked for, in order: ``CUABI_LIBNVRTC`` (absolute path), NVIDIA's
pip wheels through ``cuda.pathfinder`` when that package is installed, the
system loader (``libnvrtc.so.13``, ``.so.12``), then the toolkit folders named
by ``CUDA_HOME``/``CUDA_PATH`` and ``/usr/local/cuda``.  NVRTC is only used
when you compile, so its absence costs nothing until then, and the error
then lists every place tried.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Dict, Iterable, Optional, Sequence

from .errors import NVRTCError

_SONAMES = ("libnvrtc.so.13", "libnvrtc.so.12")
_lock = threading.Lock()
_nvrtc = None
_nvrtc_path = None
_tried = []


def _candidates():
    out = []
    env = os.environ.get("CUABI_LIBNVRTC")
    if env is not None:
        out.append(("CUABI_LIBNVRTC", env))
    out.append(("cuda.pathfinder", None))
    for so in _SONAMES:
        out.append(("system loader", so))
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in roots:
        if root:
            for so in _SONAMES:
                out.append(("toolkit", os.path.join(root, "lib64", so)))
    return out


def _load():
    global _nvrtc, _nvrtc_path
    if _nvrtc is not None:
        return _nvrtc
    with _lock:
        if _nvrtc is not None:
            return _nvrtc
        tried = []
        for kind, path in _candidates():
            if kind == "CUABI_LIBNVRTC":
                if not os.path.isabs(path):
                    tried.append("%s=%r: must be an absolute path" % (kind, path))
                    continue
            if kind == "cuda.pathfinder":
                try:
                    from cuda import pathfinder  # type: ignore
                except ImportError:
                    tried.append("cuda.pathfinder: not installed")
                    continue
                try:
                    loaded = pathfinder.load_nvidia_dynamic_lib("nvrtc")
                    path = loaded.abs_path
                except Exception as exc:  # pathfinder raises its own not-found error
                    tried.append("cuda.pathfinder: %s" % exc)
                    continue
            elif kind == "toolkit" and not os.path.exists(path):
                tried.append("%s (%s): no such file" % (path, kind))
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                tried.append("%s (%s): %s" % (path, kind, exc))
                continue
            _setup(lib)
            _nvrtc = lib
            _nvrtc_path = getattr(lib, "_name", path)
            _tried[:] = tried
            return lib
        _tried[:] = tried
        raise NVRTCError("NVRTC (libnvrtc.so) could not be loaded; tried:\n  " + "\n  ".join(tried)
                         + "\nInstall the CUDA toolkit or `pip install nvidia-cuda-nvrtc`, or set "
                           "CUABI_LIBNVRTC to the library's absolute path.")


def _setup(lib):
    c = ctypes
    P = c.c_void_p
    sig = {
        "nvrtcVersion": [c.POINTER(c.c_int), c.POINTER(c.c_int)],
        "nvrtcCreateProgram": [c.POINTER(P), c.c_char_p, c.c_char_p, c.c_int,
                               c.POINTER(c.c_char_p), c.POINTER(c.c_char_p)],
        "nvrtcDestroyProgram": [c.POINTER(P)],
        "nvrtcCompileProgram": [P, c.c_int, c.POINTER(c.c_char_p)],
        "nvrtcGetProgramLogSize": [P, c.POINTER(c.c_size_t)],
        "nvrtcGetProgramLog": [P, c.c_char_p],
        "nvrtcGetPTXSize": [P, c.POINTER(c.c_size_t)],
        "nvrtcGetPTX": [P, c.c_char_p],
        "nvrtcGetCUBINSize": [P, c.POINTER(c.c_size_t)],
        "nvrtcGetCUBIN": [P, c.c_char_p],
        "nvrtcGetLTOIRSize": [P, c.POINTER(c.c_size_t)],
        "nvrtcGetLTOIR": [P, c.c_char_p],
        "nvrtcAddNameExpression": [P, c.c_char_p],
        "nvrtcGetLoweredName": [P, c.c_char_p, c.POINTER(c.c_char_p)],
        "nvrtcGetNumSupportedArchs": [c.POINTER(c.c_int)],
        "nvrtcGetSupportedArchs": [c.POINTER(c.c_int)],
    }
    for name, argtypes in sig.items():
        f = getattr(lib, name, None)
        if f is None:
            continue
        f.argtypes = argtypes
        f.restype = c.c_int
    f = lib.nvrtcGetErrorString
    f.argtypes = [c.c_int]
    f.restype = c.c_char_p


def _check(lib, rc, what, log=None):
    if rc:
        msg = lib.nvrtcGetErrorString(rc)
        text = msg.decode() if msg else "NVRTC error %d" % rc
        raise NVRTCError("%s failed: %s" % (what, text), code=rc, log=log)


def nvrtc_version():
    """NVRTC's ``(major, minor)``; raises :class:`cuabi.NVRTCError` if not found."""
    lib = _load()
    a, b = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(a), ctypes.byref(b)), "nvrtcVersion")
    return a.value, b.value


def nvrtc_path() -> str:
    """Where NVRTC was loaded from (loads it if needed)."""
    _load()
    return _nvrtc_path


def supported_archs():
    """Compute capabilities NVRTC can target, as ints (e.g. 75, 80, 90)."""
    lib = _load()
    if not hasattr(lib, "nvrtcGetNumSupportedArchs"):
        return []
    n = ctypes.c_int()
    _check(lib, lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
    arr = (ctypes.c_int * n.value)()
    _check(lib, lib.nvrtcGetSupportedArchs(arr), "nvrtcGetSupportedArchs")
    return list(arr)


# the NVRTC options that choose the target architecture
_ARCH_OPTIONS = ("-arch", "--gpu-architecture")


class ObjectCode:
    """What :meth:`Program.compile` produced: ``code`` (bytes), ``kind``
    (``"ptx"``, ``"cubin"`` or ``"ltoir"``), the compiler ``log`` and
    ``name_map`` (name expression -> lowered, mangled name)."""

    __slots__ = ("code", "kind", "log", "name_map")

    def __init__(self, code: bytes, kind: str, log: str, name_map: Dict[str, str]):
        self.code = code
        self.kind = kind
        self.log = log
        self.name_map = name_map

    def load(self, device=None):
        """Load as a :class:`cuabi.Module`."""
        from ._module import Module

        if self.kind == "ltoir":
            raise ValueError("LTO-IR must be linked before it can be loaded")
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

    def compile(self, options: Sequence[str] = (), *, target: str = "ptx", arch: Optional[str] = None,
                name_expressions: Iterable[str] = ()) -> ObjectCode:
        """Compile to ``target`` (``"ptx"``, ``"cubin"`` or ``"ltoir"``).

        ``arch``: ``"sm_90"`` style (default: the current device's, else the
        oldest architecture NVRTC supports).  ``options`` are NVRTC options.
        ``name_expressions`` (e.g. ``"kernel<float>"``) get their mangled
        names in the result's ``name_map``.
        """
        if target not in ("ptx", "cubin", "ltoir"):
            raise ValueError("target must be 'ptx', 'cubin' or 'ltoir', got %r" % (target,))
        if isinstance(options, str):
            raise TypeError("options must be a sequence of str, not a single str")
        opts = [o for o in options]
        for o in opts:
            if not isinstance(o, str):
                raise TypeError("options must be str")
        names = list(name_expressions)
        given = [o for o in opts if o.startswith(_ARCH_OPTIONS)]
        if given and arch is not None:
            raise ValueError("the architecture is given twice: arch=%r and %r in options; pass one"
                             % (arch, given[0]))
        if arch is not None and not (isinstance(arch, str) and arch.startswith(("sm_", "compute_"))):
            raise ValueError("arch must look like 'sm_90' or 'compute_90', got %r" % (arch,))
        if not given:  # an -arch among the options is the caller's choice: keep it alone
            num = (arch if arch is not None else _default_arch()).split("_", 1)[1]
            opts.append(("-arch=compute_%s" if target == "ptx" else "-arch=sm_%s") % num)
        if target == "ltoir":
            opts.append("-dlto")
        lib = _load()
        c = ctypes
        prog = c.c_void_p()
        hnames = list(self.headers)
        hsrc = (c.c_char_p * max(1, len(hnames)))(*[self.headers[k].encode() for k in hnames])
        hinc = (c.c_char_p * max(1, len(hnames)))(*[k.encode() for k in hnames])
        _check(lib, lib.nvrtcCreateProgram(c.byref(prog), self.source.encode(), self.name.encode(),
                                           len(hnames), hsrc if hnames else None,
                                           hinc if hnames else None), "nvrtcCreateProgram")
        try:
            for n in names:
                _check(lib, lib.nvrtcAddNameExpression(prog, n.encode()), "nvrtcAddNameExpression")
            copts = (c.c_char_p * max(1, len(opts)))(*[o.encode() for o in opts])
            rc = lib.nvrtcCompileProgram(prog, len(opts), copts)
            log = _get(lib, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog").rstrip(b"\0").decode(
                "utf-8", "replace")
            _check(lib, rc, "compiling %s" % self.name, log=log)
            if target == "ptx":
                code = _get(lib, prog, "nvrtcGetPTXSize", "nvrtcGetPTX")
            elif target == "cubin":
                code = _get(lib, prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
            else:
                code = _get(lib, prog, "nvrtcGetLTOIRSize", "nvrtcGetLTOIR")
            name_map = {}
            for n in names:
                out = c.c_char_p()
                _check(lib, lib.nvrtcGetLoweredName(prog, n.encode(), c.byref(out)), "nvrtcGetLoweredName")
                name_map[n] = out.value.decode()
        finally:
            lib.nvrtcDestroyProgram(c.byref(prog))
        return ObjectCode(code, target, log, name_map)


def _get(lib, prog, size_fn, get_fn):
    n = ctypes.c_size_t()
    _check(lib, getattr(lib, size_fn)(prog, ctypes.byref(n)), size_fn)
    buf = ctypes.create_string_buffer(n.value)
    _check(lib, getattr(lib, get_fn)(prog, buf), get_fn)
    return buf.raw[: n.value]


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
