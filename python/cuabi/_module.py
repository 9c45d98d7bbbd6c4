"""Modules, libraries, kernels and launching.

The launch fast path: a :class:`Kernel` with a parameter signature owns a
precompiled ``struct.Struct`` for the packet libcuabi's ``cuabi_launch_packed``
takes (a 32-byte header - grid, block, shared memory - followed by the kernel
parameters laid out with their natural alignment), packs into a buffer it
reuses, and makes one call into C per launch.
"""

from __future__ import annotations

import os
import struct
from typing import Optional, Tuple, Union

from . import driver as _d
from ._core import Resource, Stream as _Stream, current_context, stream_handle
from ._libload import backend
from .errors import ClosedError, CUDAError

CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_LOG_SIZE = 16384

HEADER = struct.Struct("=8I")
HEADER_SIZE = 32

# kernel parameter kinds: name -> (struct code, size, is_pointer)
_KINDS = {
    "p": ("Q", 8, True), "ptr": ("Q", 8, True), "pointer": ("Q", 8, True),
    "b": ("b", 1, False), "int8": ("b", 1, False),
    "B": ("B", 1, False), "uint8": ("B", 1, False), "?": ("?", 1, False), "bool": ("?", 1, False),
    "h": ("h", 2, False), "int16": ("h", 2, False),
    "H": ("H", 2, False), "uint16": ("H", 2, False),
    "e": ("e", 2, False), "float16": ("e", 2, False),
    "i": ("i", 4, False), "int32": ("i", 4, False), "int": ("i", 4, False),
    "I": ("I", 4, False), "uint32": ("I", 4, False),
    "q": ("q", 8, False), "int64": ("q", 8, False),
    "Q": ("Q", 8, False), "uint64": ("Q", 8, False), "size_t": ("Q", 8, False),
    "f": ("f", 4, False), "float32": ("f", 4, False), "float": ("f", 4, False),
    "d": ("d", 8, False), "float64": ("d", 8, False), "double": ("d", 8, False),
}


def parse_params(spec) -> Tuple[Tuple[str, int, int, bool], ...]:
    """Parse a kernel parameter signature into ``(code, size, align, is_pointer)`` items.

    ``spec`` is a string of single letters (``"ppfi"``), a comma/space separated
    string of names (``"ptr, ptr, float32, int32"``), or a sequence of names and
    ``(size, alignment)`` tuples for structs passed by value (given as bytes).
    """
    if isinstance(spec, str):
        text = spec.strip()
        if "," in text or " " in text or text in _KINDS and len(text) > 1:
            items = [t for t in text.replace(",", " ").split() if t]
        else:
            items = list(text)
    elif isinstance(spec, (list, tuple)):
        items = list(spec)
    else:
        raise TypeError("kernel parameters must be a str or a sequence, got %s" % type(spec).__name__)
    out = []
    for it in items:
        if isinstance(it, tuple):
            if len(it) != 2 or not all(isinstance(x, int) for x in it):
                raise ValueError("a struct parameter is given as (size, alignment), got %r" % (it,))
            size, align = it
            if size <= 0 or align not in (1, 2, 4, 8, 16):
                raise ValueError("bad struct parameter (size=%d, alignment=%d)" % (size, align))
            out.append(("%ds" % size, size, align, False))
            continue
        k = _KINDS.get(it) if isinstance(it, str) else None
        if k is None:
            raise ValueError("unknown kernel parameter type %r (use letters like p i I q Q f d "
                             "or names like ptr int32 float32)" % (it,))
        code, size, ptr = k
        out.append((code, size, size, ptr))
    return tuple(out)


def _layout(params):
    """struct format (after the header), the parameter block size, and per
    parameter ``(code, offset, size)`` (code ``s`` for a struct)."""
    fmt = ["="]
    items = []
    off = 0
    for code, size, align, _ptr in params:
        pad = (-off) % align
        if pad:
            fmt.append("%dx" % pad)
            off += pad
        fmt.append(code)
        items.append(("p" if _ptr else "s" if code.endswith("s") else code, off, size))
        off += size
    return "".join(fmt), off, tuple(items)


_launchers = {}

_LAUNCHER_TEMPLATE = """
def {name}(kernel, s, cfg, args):
{unpack}    h = kernel._h
    if h is None:
        raise _Closed("Kernel %r is closed (its module was unloaded)" % kernel.name)
    packet = kernel._buf
    kernel._buf = None  # taken: a concurrent launch on another thread makes its own
    if packet is None:
        packet = _new_packet()
    if cfg is not packet[2]:
        if cfg.__class__ is not _Config:
            kernel._buf = packet
            raise TypeError("config must be a LaunchConfig, got %s" % type(cfg).__name__)
        _hdr(packet[1], 0, *cfg._hdr)
        packet[2] = cfg
{convert}{pack}    if cfg._ex:
        rc = _launch_ex(h, s, cfg, packet[1][{header}:{size}])
    else:
        rc = _lp(h, s, packet[0], {size})
    kernel._buf = packet
    if rc:
        _raise(rc, "cuabi_launch_packed(%s)" % kernel.name)
"""


def _make_launcher(params):
    """Build (once per signature) the function that packs and launches.

    The packet (native buffer, writable view, config whose header it holds) is
    reused: the header is rewritten only when the config object changes, and a
    launch is one ``pack_into`` of the arguments plus one call into libcuabi.
    """
    launcher = _launchers.get(params)
    if launcher is not None:
        return launcher
    fmt, size, items = _layout(params)
    total = HEADER_SIZE + size
    n = len(params)
    go = backend().compiled_launcher(
        items, total, (_kernel_pointer, ClosedError, LaunchConfig, _launch_ex))
    if go is not None:  # the speedups module's C launcher: same contract
        launcher = _launchers[params] = (go, total, n)
        return launcher
    st = struct.Struct("=" + fmt[1:]) if params else None
    names = ["a%d" % i for i in range(n)]
    convert = "".join(
        "    if a%d.__class__ is not int:\n        a%d = _addr(a%d)\n" % (i, i, i)
        for i, (_c, _s, _a, is_ptr) in enumerate(params) if is_ptr)
    # a struct given as bytes must have its exact size (struct.pack would pad or cut)
    # (and as bytes: PyPy's struct takes no bytearray)
    convert += "".join(
        "    if a%d.__class__ is bytearray:\n        a%d = bytes(a%d)\n"
        "    if a%d.__class__ is not bytes or len(a%d) != %d:\n"
        "        raise TypeError(\"bad argument for kernel %%r: argument %d must be bytes of "
        "the struct's size (%d)\" %% kernel.name)\n" % (i, i, i, i, i, sz, i + 1, sz)
        for i, (c, sz, _a, _p) in enumerate(params) if c.endswith("s"))
    pack = ""
    if n:
        pack = ("    try:\n        _pack(packet[1], %d, %s)\n    except (_StructError, OverflowError, ValueError) as exc:\n"
                "        kernel._buf = packet\n        raise TypeError(\"bad argument for kernel %%r: %%s\" "
                "%% (kernel.name, exc)) from None\n" % (HEADER_SIZE, ", ".join(names)))
    unpack = ("    %s, = args\n" % ", ".join(names)) if n else ""
    code = _LAUNCHER_TEMPLATE.format(name="launch_%d_args" % n, unpack=unpack,
                                     convert=convert, pack=pack, size=total,
                                     header=HEADER_SIZE)
    ns = {
        "_Closed": ClosedError, "_Config": LaunchConfig, "_hdr": HEADER.pack_into,
        "_pack": st.pack_into if st is not None else None, "_StructError": struct.error,
        "_addr": _kernel_pointer, "_launch_ex": _launch_ex, "_lp": backend().launch_packed,
        "_raise": _raise_for,
        "_new_packet": lambda: list(backend().new_buffer(total)) + [None],
    }
    exec(code, ns)  # noqa: S102 - code built from the fixed template above
    launcher = (ns["launch_%d_args" % n], total, n)
    _launchers[params] = launcher
    return launcher


def _raise_for(code, function):
    from .errors import raise_for

    raise_for(code, function)


def _kernel_pointer(obj):
    """Device address of a pointer argument: cuabi buffers/arrays, objects with
    ``__cuda_array_interface__``, ``data_ptr()`` (PyTorch) or ``ptr``, ints, None."""
    if obj is None:
        return 0
    if isinstance(obj, int) and not isinstance(obj, bool):
        return int(obj)
    a = getattr(type(obj), "_cuabi_address", None)
    if a is not None:
        return a(obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    dp = getattr(obj, "data_ptr", None)
    if callable(dp):
        return int(dp())
    p = getattr(obj, "ptr", None)
    if isinstance(p, int):
        return p
    raise TypeError("a pointer kernel argument must be device memory (cuabi buffer or array, "
                    "__cuda_array_interface__, data_ptr()) or an int, got %s" % type(obj).__name__)


def _dim3(v, what):
    if isinstance(v, int) and not isinstance(v, bool):
        t = (v, 1, 1)
    elif isinstance(v, (tuple, list)) and 1 <= len(v) <= 3:
        t = tuple(v) + (1,) * (3 - len(v))
    else:
        raise TypeError("%s must be an int or a tuple of 1-3 ints, got %r" % (what, v))
    for x in t:
        if not isinstance(x, int) or isinstance(x, bool) or not 1 <= x <= 0xFFFFFFFF:
            raise ValueError("%s dimensions must be ints from 1 to 2**32-1, got %r" % (what, v))
    return t


class LaunchConfig:
    """Launch geometry: ``LaunchConfig(grid, block, shmem=0, cluster=None, cooperative=False)``.

    ``grid``/``block``/``cluster`` are ints or 1-3 tuples.  A config is
    immutable; a kernel rewrites its packet's header only when it is launched
    with a different config object, so reusing one config is cheapest.
    """

    __slots__ = ("grid", "block", "shmem", "cluster", "cooperative", "_hdr", "_ex")

    def __init__(self, grid=1, block=1, shmem: int = 0, cluster=None, cooperative: bool = False):
        put = object.__setattr__
        grid = _dim3(grid, "grid")
        block = _dim3(block, "block")
        if not isinstance(shmem, int) or isinstance(shmem, bool) or not 0 <= shmem <= 0xFFFFFFFF:
            raise ValueError("shmem must be a byte count from 0 to 2**32-1, got %r" % (shmem,))
        cluster = None if cluster is None else _dim3(cluster, "cluster")
        if cluster is not None:
            for g, c in zip(grid, cluster):
                if g % c:
                    raise ValueError("grid %r is not a multiple of cluster %r" % (grid, cluster))
        put(self, "grid", grid)
        put(self, "block", block)
        put(self, "shmem", shmem)
        put(self, "cluster", cluster)
        put(self, "cooperative", bool(cooperative))
        put(self, "_hdr", grid + block + (shmem, 0))
        put(self, "_ex", cluster is not None or bool(cooperative))

    def __setattr__(self, name, value):
        raise AttributeError("LaunchConfig is immutable; make a new one")

    def __repr__(self):
        extra = ""
        if self.cluster:
            extra += ", cluster=%r" % (self.cluster,)
        if self.cooperative:
            extra += ", cooperative=True"
        return "LaunchConfig(grid=%r, block=%r, shmem=%d%s)" % (self.grid, self.block, self.shmem, extra)


def _jit_options(log):
    """Option arrays asking the JIT for its error log into ``log``."""
    opts = struct.pack("=II", CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    b = backend()
    log_addr, _keep = b.buffer_address(log)
    values = bytearray(struct.pack("=QQ", log_addr, len(log)))
    return bytearray(opts), values, _keep


def _log_text(log):
    return bytes(log).split(b"\0", 1)[0].decode("utf-8", "replace")


def _image_bytes(data, kind):
    if isinstance(data, str):
        if kind not in ("ptx", None):
            raise TypeError("%s images are binary: pass bytes, not str" % kind)
        data = data.encode("utf-8")
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError("module image must be bytes or str, got %s" % type(data).__name__)
    if not data:
        raise ValueError("module image is empty")
    if kind == "ptx" and not data.endswith(b"\0"):
        data += b"\0"
    return data


class Module(Resource):
    """A loaded module (``cuModuleLoadDataEx``): PTX, cubin or fatbin.

    Build one with :meth:`from_ptx`, :meth:`from_cubin`, :meth:`from_fatbin`,
    :meth:`from_file` or ``Module(image)``.  JIT errors raise
    :class:`cuabi.CUDAError` with the JIT's log in the message.
    """

    __slots__ = ("_kind", "_kernels")

    def __init__(self, image, *, kind: Optional[str] = None, device=None):
        Resource.__init__(self)
        self._kind = kind
        self._kernels = {}
        data = _image_bytes(image, kind if kind is not None else
                            ("ptx" if isinstance(image, str) else None))
        ctx = current_context(device)
        log = bytearray(_LOG_SIZE)
        opts, values, keep = _jit_options(log)
        try:
            self._h = _d.cuModuleLoadDataEx(data, 2, opts, values)
        except CUDAError as exc:
            text = _log_text(log)
            if text:
                exc.args = (exc.args[0] + "\nJIT log:\n" + text,)
                exc.jit_log = text
            raise
        finally:
            del keep
        ctx._adopt(self)

    @classmethod
    def from_ptx(cls, ptx: Union[str, bytes], **kw) -> "Module":
        return cls(ptx, kind="ptx", **kw)

    @classmethod
    def from_cubin(cls, cubin: bytes, **kw) -> "Module":
        return cls(cubin, kind="cubin", **kw)

    @classmethod
    def from_fatbin(cls, fatbin: bytes, **kw) -> "Module":
        return cls(fatbin, kind="fatbin", **kw)

    @classmethod
    def from_file(cls, path, **kw) -> "Module":
        """Load a .ptx, .cubin or .fatbin file."""
        path = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
        kind = "ptx" if path.endswith(".ptx") else None
        return cls(data, kind=kind, **kw)

    def _release(self, h):
        for k in list(self._kernels.values()):
            k._h = None
        self._kernels.clear()
        _d.cuModuleUnload(h)

    def get_kernel(self, name: str, params=None) -> "Kernel":
        """The kernel ``name`` (its mangled name for C++ kernels, or use
        ``extern "C"``).  ``params`` gives its parameter signature for the fast
        launch path (see :func:`parse_params`); without it the layout is taken
        from the driver (``cuFuncGetParamInfo``) and the Python argument types."""
        if not isinstance(name, str) or not name:
            raise TypeError("kernel name must be a non-empty str")
        h = _d.cuModuleGetFunction(self.handle, name)
        k = Kernel._make(h, name, params, self)
        self._kernels[id(k)] = k
        return k

    def get_global(self, name: str) -> Tuple[int, int]:
        """``(device pointer, size)`` of a ``__device__`` variable."""
        return _d.cuModuleGetGlobal(self.handle, name)


class Library(Resource):
    """A context-independent library (``cuLibraryLoadData``), CUDA 12+."""

    __slots__ = ("_kernels",)

    def __init__(self, image, *, kind: Optional[str] = None):
        Resource.__init__(self)
        self._kernels = {}
        data = _image_bytes(image, kind if kind is not None else
                            ("ptx" if isinstance(image, str) else None))
        ctx = current_context()
        log = bytearray(_LOG_SIZE)
        opts, values, keep = _jit_options(log)
        try:
            self._h = _d.cuLibraryLoadData(data, opts, values, 2, None, None, 0)
        except CUDAError as exc:
            text = _log_text(log)
            if text:
                exc.args = (exc.args[0] + "\nJIT log:\n" + text,)
            raise
        finally:
            del keep
        ctx._adopt(self)

    @classmethod
    def from_file(cls, path) -> "Library":
        path = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
        return cls(data, kind="ptx" if path.endswith(".ptx") else None)

    def _release(self, h):
        for k in list(self._kernels.values()):
            k._h = None
        self._kernels.clear()
        _d.cuLibraryUnload(h)

    def get_kernel(self, name: str, params=None) -> "Kernel":
        """The kernel ``name``, bound to the current context's function."""
        if not isinstance(name, str) or not name:
            raise TypeError("kernel name must be a non-empty str")
        kh = _d.cuLibraryGetKernel(self.handle, name)
        fh = _d.cuKernelGetFunction(kh)
        k = Kernel._make(fh, name, params, self)
        k._kernel = kh
        self._kernels[id(k)] = k
        return k


class Kernel:
    """A kernel ready to launch; get one from :meth:`Module.get_kernel`.

    ``kernel.launch(config, *args, stream=None)`` or
    ``cuabi.launch(stream, config, kernel, *args)``.  It stays valid while its
    module is open.
    """

    __slots__ = ("_h", "name", "_owner", "_params", "_go", "_nargs", "_buf", "_kernel",
                 "__weakref__")

    @classmethod
    def _make(cls, handle, name, params, owner):
        self = cls.__new__(cls)
        self._h = handle
        self.name = name
        self._owner = owner
        self._kernel = None
        self._buf = None
        self._params = None
        self._go = _launch_inferred
        self._nargs = None
        if params is not None:
            self.set_params(params)
        return self

    @property
    def handle(self) -> int:
        h = self._h
        if h is None:
            raise ClosedError("Kernel %r is closed (its module was unloaded)" % self.name)
        return h

    def _cuabi_address(self):
        return self.handle

    @property
    def closed(self) -> bool:
        return self._h is None

    @property
    def params(self):
        """The parameter signature in use (``None`` when inferred per launch)."""
        return self._params

    def set_params(self, params) -> "Kernel":
        """Fix the parameter signature (see :func:`parse_params`) for fast launches."""
        p = parse_params(params)
        self._go, _size, self._nargs = _make_launcher(p)
        self._params = p
        self._buf = None
        return self

    def attribute(self, attr) -> int:
        """A ``CUfunction_attribute`` value (enum, int, or name like ``"num_regs"``)."""
        if isinstance(attr, str):
            name = attr if attr.startswith("CU_FUNC_ATTRIBUTE_") else "CU_FUNC_ATTRIBUTE_" + attr.upper()
            try:
                attr = _d.CUfunction_attribute[name]
            except KeyError:
                raise ValueError("unknown function attribute %r" % attr) from None
        return _d.cuFuncGetAttribute(int(attr), self.handle)

    @property
    def max_threads_per_block(self) -> int:
        return self.attribute("MAX_THREADS_PER_BLOCK")

    @property
    def num_regs(self) -> int:
        return self.attribute("NUM_REGS")

    def param_info(self):
        """``[(offset, size), ...]`` of the kernel's parameters, from the driver."""
        out = []
        h = self.handle
        i = 0
        while True:
            try:
                out.append(_d.cuFuncGetParamInfo(h, i))
            except CUDAError as exc:
                if exc.code == 1:  # CUDA_ERROR_INVALID_VALUE: past the end
                    break
                raise
            i += 1
        return out

    def _infer(self, args):
        try:
            info = self.param_info()
        except CUDAError as exc:
            if exc.code in (100004, 100005):  # entry point missing / driver too old
                raise TypeError(
                    "kernel %r has no parameter signature and this driver cannot describe its "
                    "parameters (cuFuncGetParamInfo needs CUDA 12.4+); pass params= to "
                    "get_kernel() or call set_params()" % self.name) from None
            raise
        if len(info) != len(args):
            raise TypeError("kernel %r takes %d arguments, %d given" % (self.name, len(info), len(args)))
        items = []
        for (off, size), a in zip(info, args):
            if isinstance(a, float):
                kind = {4: "f", 8: "d", 2: "e"}.get(size)
            elif isinstance(a, int):
                kind = {1: "b", 2: "h", 4: "i" if a < (1 << 31) else "I", 8: "Q" if a >= 0 else "q"}.get(size)
            elif size == 8:
                kind = "p"
            else:
                kind = None
            if kind is None:
                if isinstance(a, (bytes, bytearray)) and len(a) == size:
                    items.append((size, min(size, 8) if size & (size - 1) == 0 else 1))
                    continue
                raise TypeError("cannot pass %s as a %d-byte kernel parameter; give the kernel "
                                "a signature with set_params()" % (type(a).__name__, size))
            items.append(kind)
        return _make_launcher(parse_params(items))[0]

    def launch(self, config: LaunchConfig, *args, stream=None) -> None:
        """Launch on ``stream`` (default: the NULL stream): the same as
        ``cuabi.launch(stream, config, kernel, *args)``.  With the compiled
        speedups module, the first launch replaces this method by its C form."""
        (_launch or _resolve_launch())(stream, config, self, *args)

    def __repr__(self):
        state = "closed" if self._h is None else "0x%x" % self._h
        return "<cuabi.Kernel %s %s>" % (self.name, state)


def _launch_inferred(kernel, s, config, args):
    """Launcher of kernels without a signature: layout from the driver, per launch."""
    if kernel._h is None:
        raise ClosedError("Kernel %r is closed (its module was unloaded)" % kernel.name)
    go = kernel._infer(args)
    saved = kernel._buf
    kernel._buf = None
    try:
        go(kernel, s, config, args)
    finally:
        kernel._buf = saved


# CUlaunchConfig: grid[3], block[3], shmem, (pad), hStream, attrs, numAttrs, (pad)
_LAUNCH_CONFIG = struct.Struct("=7I4xQQI4x")
# CUlaunchAttribute: id, pad[4], value (64-byte union)
_LAUNCH_ATTR = struct.Struct("=I4x64s")
CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4


def _launch_ex(f, s, config, param_bytes):
    """Cluster or cooperative launches go through cuLaunchKernelEx; returns the
    status (0 for success)."""
    b = backend()
    attrs = bytearray()
    if config.cluster is not None:
        attrs += _LAUNCH_ATTR.pack(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, struct.pack("=3I", *config.cluster))
    if config.cooperative:
        attrs += _LAUNCH_ATTR.pack(CU_LAUNCH_ATTRIBUTE_COOPERATIVE, struct.pack("=i", 1))
    n_attrs = len(attrs) // _LAUNCH_ATTR.size
    attrs_addr, keep_a = b.buffer_address(attrs)
    cfg = bytearray(_LAUNCH_CONFIG.pack(*config.grid, *config.block, config.shmem, s, attrs_addr, n_attrs))
    params = bytes(param_bytes)
    params_addr, keep_p = b.buffer_address(bytearray(params) or bytearray(1))
    size_cell = bytearray(struct.pack("=Q", len(params)))
    size_addr, keep_s = b.buffer_address(size_cell)
    # CU_LAUNCH_PARAM_BUFFER_POINTER (1), ptr, CU_LAUNCH_PARAM_BUFFER_SIZE (2), &size, END (0)
    extra = bytearray(struct.pack("=5Q", 1, params_addr, 2, size_addr, 0))
    try:
        _d.cuLaunchKernelEx(cfg, f, None, extra)
    except CUDAError as exc:
        return exc.code
    finally:
        del keep_a, keep_p, keep_s
    return 0


def _launch_py(stream, config: LaunchConfig, kernel: Kernel, *args) -> None:
    """Launch ``kernel`` with ``config`` on ``stream`` (``None``: the NULL stream).

    Pointer arguments take cuabi buffers and arrays, other libraries' device
    arrays (``__cuda_array_interface__``, ``data_ptr()``) or ints; numbers are
    converted to the kernel's declared parameter types.
    """
    if stream.__class__ is _Stream:
        s = stream._h
        if s is None:
            raise ClosedError("Stream is closed")
    elif stream is None:
        s = 0
    else:
        s = stream_handle(stream)
    if kernel.__class__ is not Kernel:
        raise TypeError("kernel must be a cuabi.Kernel, got %s" % type(kernel).__name__)
    n = kernel._nargs
    if n is not None and len(args) != n:
        raise TypeError("kernel %r takes %d arguments, %d given" % (kernel.name, n, len(args)))
    kernel._go(kernel, s, config, args)


# cuabi.launch: the speedups module's C function (same contract as _launch_py)
# where the backend has one; chosen on first use, since that loads libcuabi.
_launch = None


def _resolve_launch():
    global _launch
    if _launch is None:
        from ._memory import DeviceBuffer, ManagedBuffer, PinnedBuffer
        # memory whose kernel address is its handle, as Resource defines it
        memory = tuple(t for t in (DeviceBuffer, ManagedBuffer, PinnedBuffer)
                       if t._cuabi_address is Resource._cuabi_address)
        try:
            fast = backend().compiled_launch(_Stream, stream_handle, Kernel, ClosedError,
                                             Resource, memory)
        except (OSError, ImportError, ValueError):
            # no library, no backend module, a bad CUABI_* setting: _launch_py
            # raises the same clear error when it is called
            fast = None
        if fast is None:
            _launch = _launch_py
        else:
            # the compiled launch, and Kernel.launch as a C method doing the same
            _launch, Kernel.launch = fast
    return _launch


def __getattr__(name):
    if name == "launch":
        return _resolve_launch()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
