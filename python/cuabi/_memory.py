# SPDX-License-Identifier: Apache-2.0
"""Memory: device, pinned-host and managed buffers, stream-ordered memory
pools, typed device arrays (:class:`DeviceArray`), and copies between them.

Views and the memory behind them (no path to freed memory):

* Host views of pinned and managed memory (``memoryview()``, indexing,
  slices, ``memoryview(buf)``, numpy arrays over them, their casts and
  slices, ``__array_interface__``, DLPack exports) all come from one exporter
  object per buffer, and every view keeps that exporter alive.  ``close()``
  refuses with ``BufferError`` while any of them is alive; a buffer that is
  garbage-collected while views live frees its memory when the last view
  goes.
* Device views (:meth:`view`, :class:`DeviceArray`) keep their buffer alive
  and raise :class:`cuabi.ClosedError` once it is closed.  DLPack exports keep
  the buffer alive until the consumer releases them, and ``close()`` refuses
  while one is outstanding.  ``__cuda_array_interface__`` hands out a bare
  address: whoever takes it must keep the buffer open while using it.
* A context does not close while memory in it is viewed (``BufferError``).
"""

from __future__ import annotations

import ctypes
import gc
import os
import struct
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Sequence, Tuple, Union

from . import driver as _d
from ._array_interface import cai_dict, cai_nbytes, dtype_info
from ._backend import backend
from ._constants import (CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_HOST,
                         CU_MEM_HANDLE_TYPE_NONE, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                         CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST,
                         CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE,
                         CU_MEMHOSTALLOC_WRITECOMBINED, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                         CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                         CU_STREAM_LEGACY)
from ._device import Device, current_context
from ._interrupts import deferred
from ._own_api import default_stream_mode
from ._resource import NO_CONTEXT, NotCopyable, Resource, finalizing
from ._stream import stream_handle
from ._structs import FORMATS
from .errors import ClosedError

if TYPE_CHECKING:
    from ._ipc import IpcBufferDescriptor

_U64 = struct.Struct("=Q")
_SIZE_MAX = (1 << 64) - 1


def _nbytes(n: Any, what: str = "nbytes") -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError("%s must be an int, got %s" % (what, type(n).__name__))
    if n < 0:
        raise ValueError("%s must not be negative, got %d" % (what, n))
    if n > _SIZE_MAX:
        raise OverflowError("%s=%d does not fit in 64 bits" % (what, n))
    return int(n)


def _behind(obj: Any) -> Any:
    """What a :class:`DeviceArray` views, through any number of them (a view
    of a buffer, an import of that view, ...); any other object itself."""
    while isinstance(obj, DeviceArray) and obj._owner is not None:
        obj = obj._owner
    return obj


def _context_of(*objs: Any) -> Any:
    """The context a copy between ``objs`` runs in: that of the first cuabi
    object among them (the current one when there is none)."""
    for obj in objs:
        obj = _behind(obj)
        ctx = getattr(obj, "_ctx", None) if isinstance(obj, Resource) else None
        if ctx is not None and ctx._h is not None:
            return ctx._pushed()
    return NO_CONTEXT


def _host_view(obj, writable):
    """(address, nbytes, keepalive) of a host object's memory."""
    if isinstance(obj, (PinnedBuffer, ManagedBuffer)):
        mv = obj.memoryview()  # held during the copy: close() refuses meanwhile
        return obj.ptr, obj.size, mv
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError("expected a buffer-protocol object (bytes, bytearray, array, numpy "
                        "array, PinnedBuffer...), got %s" % type(obj).__name__) from None
    if writable and mv.readonly:
        raise TypeError("destination buffer is read-only")
    if not mv.c_contiguous:
        raise ValueError("host buffer must be C-contiguous")
    if mv.nbytes == 0:
        return 0, 0, mv
    addr, keep = backend().buffer_address(obj if isinstance(obj, (bytes, bytearray)) else mv)
    return addr, mv.nbytes, (keep, mv)


def _device_view(obj):
    """(device pointer, nbytes, keepalive) of a device-memory object, or None."""
    if isinstance(obj, (DeviceBuffer, ManagedBuffer)):
        return obj.ptr, obj.size, obj
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0]), cai_nbytes(cai), obj
    return None


def copy(dst, src, nbytes=None, *, stream=None):
    """Copy between host and device memory, in whichever direction the objects say.

    ``dst``/``src``: device objects (cuabi buffers and arrays, anything with
    ``__cuda_array_interface__``) or host buffers (buffer protocol).  With
    ``stream`` the copy is asynchronous on it (the host buffer must then stay
    alive and unchanged until the stream reaches the copy).
    """
    d_dev = _device_view(dst)
    s_dev = _device_view(src)
    if d_dev is None:
        daddr, dsize, dkeep = _host_view(dst, True)
    else:
        daddr, dsize, dkeep = d_dev
    if s_dev is None:
        saddr, ssize, skeep = _host_view(src, False)
    else:
        saddr, ssize, skeep = s_dev
    if nbytes is None:
        if dsize != ssize:
            raise ValueError("size mismatch: destination has %d bytes, source %d; pass nbytes"
                             % (dsize, ssize))
        n = ssize
    else:
        n = _nbytes(nbytes)
        if n > dsize or n > ssize:
            raise ValueError("nbytes=%d exceeds the destination (%d) or source (%d)" % (n, dsize, ssize))
    if n == 0:
        return
    managed_dst = isinstance(dst, ManagedBuffer)
    managed_src = isinstance(src, ManagedBuffer)
    unified = _unified(dst) or _unified(src)
    with _context_of(dst, src):
        _copy(daddr, d_dev is not None, managed_dst, saddr, s_dev is not None, managed_src, n, stream,
              unified)
    del dkeep, skeep


def _unified(obj: Any) -> bool:
    """Whether obj is (or views) memory that only cuMemcpy(Async) copies: a
    host or managed pool's buffer (their class sets ``_unified_copy``)."""
    return bool(getattr(_behind(obj), "_unified_copy", False))


def _copy(daddr: int, d_dev: bool, managed_dst: bool, saddr: int, s_dev: bool, managed_src: bool,
          n: int, stream: Any, unified: bool) -> None:
    """The driver call of :func:`copy`, picked by where each side lives.

    ``unified``: a side is memory the directed calls refuse (a host or managed
    pool's, which driver 580 answers with CUDA_ERROR_INVALID_VALUE there):
    cuMemcpy(Async), which finds the direction from the addresses."""
    if not d_dev and not s_dev:
        raise TypeError("at least one side of the copy must be device memory")
    if unified:
        if stream is None:
            _d.cuMemcpy(daddr, saddr, n)
        else:
            _d.cuMemcpyAsync(daddr, saddr, n, stream_handle(stream))
        return
    if stream is None:
        if d_dev and s_dev or (d_dev and managed_src) or (s_dev and managed_dst):
            _d.cuMemcpyDtoD(daddr, saddr, n)
        elif d_dev:
            _d.cuMemcpyHtoD(daddr, saddr, n)
        else:
            _d.cuMemcpyDtoH(daddr, saddr, n)
        return
    s = stream_handle(stream)
    if d_dev and s_dev:
        _d.cuMemcpyDtoDAsync(daddr, saddr, n, s)
    elif d_dev:
        _d.cuMemcpyHtoDAsync(daddr, saddr, n, s)
    else:
        _d.cuMemcpyDtoHAsync(daddr, saddr, n, s)


class _DeviceMemoryMixin:
    """Copy, fill and interop methods shared by device and managed buffers."""

    __slots__ = ()

    @property
    def ptr(self) -> int:
        """The device address (``CUdeviceptr``)."""
        h = self._h
        if h is None:
            raise ClosedError("%s is closed" % type(self).__name__)
        return h

    @property
    def size(self) -> int:
        """Bytes of memory."""
        return self._size

    def __len__(self):
        return self._size

    def copy_from(self, src: Any, nbytes: Optional[int] = None, *, stream: Any = None) -> None:
        """Copy ``src`` (host buffer or device memory) into this buffer.

        Without ``nbytes`` both must have the same size (as for :func:`copy`)."""
        copy(self, src, nbytes, stream=stream)

    def copy_to(self, dst: Any, nbytes: Optional[int] = None, *, stream: Any = None) -> None:
        """Copy this buffer into ``dst`` (host buffer or device memory).

        Without ``nbytes`` both must have the same size (as for :func:`copy`)."""
        copy(dst, self, nbytes, stream=stream)

    def to_bytes(self, stream: Any = None) -> bytes:
        """A copy of the contents as ``bytes`` (synchronises ``stream`` if given)."""
        out = bytearray(self._size)
        copy(out, self, self._size, stream=stream)
        if stream is not None:
            with self._in_context():
                _d.cuStreamSynchronize(stream_handle(stream))
        return bytes(out)

    def fill(self, value: int, *, width: int = 1, count: Optional[int] = None, stream=None) -> None:
        """Set ``count`` elements of ``width`` bytes (1, 2 or 4) to ``value``.

        ``count`` defaults to the whole buffer.
        """
        if width not in (1, 2, 4):
            raise ValueError("width must be 1, 2 or 4")
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError("value must be an int")
        if not 0 <= value < (1 << (8 * width)):
            raise ValueError("value %d does not fit in %d byte(s)" % (value, width))
        if count is None:
            if self._size % width:
                raise ValueError("buffer size %d is not a multiple of width %d" % (self._size, width))
            count = self._size // width
        elif _nbytes(count, "count") * width > self._size:
            raise ValueError("count * width exceeds the buffer")
        p = self.ptr
        with self._in_context():
            if stream is None:
                f = {1: _d.cuMemsetD8, 2: _d.cuMemsetD16, 4: _d.cuMemsetD32}[width]
                f(p, value, count)
            else:
                f = {1: _d.cuMemsetD8Async, 2: _d.cuMemsetD16Async, 4: _d.cuMemsetD32Async}[width]
                f(p, value, count, stream_handle(stream))

    def view(self, dtype: Any = "u1", shape: Any = None, strides: Any = None) -> "DeviceArray":
        """A typed :class:`DeviceArray` over this memory (it keeps the buffer
        alive); its shape and strides must stay inside the buffer."""
        itemsize = dtype_info(dtype)[2]
        if shape is None:
            if self._size % itemsize:
                raise ValueError("buffer size %d is not a multiple of the item size %d"
                                 % (self._size, itemsize))
            shape = (self._size // itemsize,)
        arr = DeviceArray(self.ptr, shape, dtype, strides=strides, owner=self,
                          device_id=self._device_id(), stream=self._stream_ref())
        if arr.strides is not None and any(st < 0 for st in arr.strides):
            raise ValueError("a view of a buffer takes non-negative strides, got %r" % (arr.strides,))
        if arr.nbytes > self._size:
            raise ValueError("a view of shape %r and item size %d spans %d bytes; the buffer has %d"
                             % (arr.shape, itemsize, arr.nbytes, self._size))
        if self._dl_type() == 13:  # kDLCUDAManaged (cuabi._dlpack)
            arr._managed = 1
        return arr

    def _dl_type(self) -> int:
        return 2  # kDLCUDA

    def _busy(self) -> Optional[str]:
        """Why the memory cannot be freed now (outstanding DLPack exports), or None."""
        dl = sys.modules.get("cuabi._dlpack")
        if dl is not None and self._h is not None:
            n = dl.exported_from(self)  # type: ignore[attr-defined]
            if n:
                return ("%d DLPack export(s) of this %s are still held by their consumer; "
                        "delete the consumer's arrays first" % (n, type(self).__name__))
        return None

    def _device_id(self):
        ctx = self._ctx
        return ctx.device.device_id if ctx is not None else 0

    def _stream_ref(self):
        return None

    @property
    def __cuda_array_interface__(self):
        return cai_dict(self.ptr, (self._size,), "|u1", None, False, self._stream_ref())

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.view().__dlpack__(stream=stream, max_version=max_version,
                                      dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return self.view().__dlpack_device__()


class DeviceBuffer(_DeviceMemoryMixin, Resource):
    """Device memory: ``DeviceBuffer(size, stream=None, pool=None, device=None)``.

    Without ``stream``, ``cuMemAlloc``; with ``stream`` (or ``pool``), a
    stream-ordered allocation (``cuMemAllocAsync`` / ``cuMemAllocFromPoolAsync``)
    that :meth:`close` frees on the same stream unless told another.
    """

    __slots__ = ("_size", "_stream", "_pool")

    def __init__(self, size: int, *, stream: Any = None, pool: Optional["MemoryPool"] = None,
                 device: Any = None) -> None:
        Resource.__init__(self)
        n = _nbytes(size, "size")
        self._size = n
        self._stream = None
        self._pool = None
        if pool is not None and not isinstance(pool, MemoryPool):
            raise TypeError("pool must be a cuabi.MemoryPool")
        if pool is not None and pool._ipc == "imported":
            raise ValueError("an imported MemoryPool does not allocate (the driver forbids it): allocate in "
                             "the exporting process and import the buffer (MemoryPool.import_buffer)")
        ctx = current_context(device if pool is None else pool.device)
        ordered = stream is not None or pool is not None
        s = stream_handle(stream) if ordered else 0
        ph = pool.handle if pool is not None else 0
        with deferred(), ctx._pushed():
            if pool is not None:
                self._h = _d.cuMemAllocFromPoolAsync(n, ph, s)
                self._pool = pool
            elif ordered:
                self._h = _d.cuMemAllocAsync(n, s)
            else:
                self._h = _d.cuMemAlloc(n) if n else 0
            if ordered:
                self._stream = stream if stream is not None else 0
            ctx._adopt(self)

    @property
    def stream(self):
        """The stream of a stream-ordered allocation (``None`` otherwise)."""
        return self._stream

    def ipc_descriptor(self) -> "IpcBufferDescriptor":
        """What another process needs to import this buffer: a picklable
        :class:`cuabi.IpcBufferDescriptor` (``cuMemPoolExportPointer``).

        Only buffers of a pool made with ``MemoryPool(ipc=True)`` can be
        shared; the other process imports the pool first
        (:meth:`MemoryPool.import_fd`), then the buffer
        (:meth:`MemoryPool.import_buffer`).  Keep this buffer open until every
        importer has closed its copy: the driver cannot tell this process
        that another one still reads the memory."""
        from ._ipc import IpcBufferDescriptor

        ptr = self.ptr
        pool = self._pool
        if pool is None or pool._ipc != "exported":
            where = ("a pool made without ipc=True" if pool is not None and not pool._ipc else
                     "another process (an imported buffer is shared by its exporter)" if pool is not None else
                     "cuMemAlloc/cuMemAllocAsync, not an interprocess pool")
            raise ValueError("this DeviceBuffer cannot be shared with another process: it comes from %s; "
                             "allocate it from MemoryPool(ipc=True)" % where)
        # driver 580 refused cuMemPoolExportPointer (CUDA_ERROR_INVALID_VALUE) for a pool
        # never exported, and took it once the pool had been: export it once (and let go of
        # the descriptor) first
        if not pool._handed_out:
            os.close(pool.export_fd())
        data = bytearray(64)
        with self._in_context():
            _d.cuMemPoolExportPointer(data, ptr)
        return IpcBufferDescriptor(bytes(data), self._size, os.getpid())

    def _stream_ref(self):
        s = self._stream
        if s is None or s == 0:
            return None
        try:
            return stream_handle(s)
        except ClosedError:
            return None

    def _release(self, h: int, free_stream: Optional[int] = None) -> None:
        """Free ``h``: at once, or stream-ordered on ``free_stream`` (default: the
        stream it was allocated on; the NULL stream if that one was closed)."""
        if self._stream is None:
            if h:
                _d.cuMemFree(h)
            return
        if free_stream is None:
            try:
                free_stream = stream_handle(self._stream)
            except ClosedError:
                free_stream = 0
        _d.cuMemFreeAsync(h, free_stream)

    def close(self, stream: Any = None) -> None:
        """Free the memory.  A stream-ordered buffer is freed on ``stream`` (default:
        the stream it was allocated on) after the work queued there.  Refuses
        (``BufferError``) while a DLPack consumer still holds the memory."""
        if self._h is None:
            return
        reason = self._busy()
        if reason:
            raise BufferError("cannot free the %s: %s" % (type(self).__name__, reason))
        if stream is None:
            self._close()
            return
        if self._stream is None:
            raise ValueError("close(stream=...) is for stream-ordered buffers; this one "
                             "was allocated with cuMemAlloc and is freed at once")
        self._close(stream_handle(stream))  # a bad stream is refused before anything is freed


_REFCOUNTED = sys.implementation.name == "cpython"
_ffi: Any = None


def _exporter(address: int, size: int) -> Any:
    """A new object exporting ``size`` bytes at ``address`` through the buffer
    protocol, which every view made from it (slices, casts, ``memoryview`` of
    a view, numpy arrays) keeps alive: a ctypes array on CPython, a cffi
    buffer on PyPy (whose memoryview slices keep the cffi buffer, not a
    ctypes array, alive)."""
    if _REFCOUNTED:
        return (ctypes.c_ubyte * size).from_address(address)
    import cffi  # built into PyPy

    global _ffi
    if _ffi is None:
        _ffi = cffi.FFI()
    return _ffi.buffer(_ffi.cast("char *", address), size)


class _Orphan:
    """Host memory whose buffer object was garbage-collected while views of it
    lived on: freed (in its context) when the last view goes.  Its context
    keeps it, and refuses to close meanwhile."""

    __slots__ = ("h", "free", "ctx", "ref", "what", "__weakref__")

    def __init__(self, h: int, free: Any, ctx: Any, exporter: Any, what: str) -> None:
        self.h = h
        self.free = free
        self.ctx = ctx
        self.what = what
        self.ref = weakref.ref(exporter, self._last_view_gone)

    def _busy(self) -> Optional[str]:
        if self.ref() is not None:
            return "views of the memory of a collected %s are still alive" % self.what
        return None

    def _last_view_gone(self, _ref: Any) -> None:
        with deferred():
            h, self.h = self.h, None
            ctx = self.ctx
            if ctx is not None:
                ctx._orphans.discard(self)
            if h is None or finalizing():
                return
            try:
                with (ctx._pushed() if ctx is not None and ctx._h is not None else NO_CONTEXT):
                    self.free(h)
            except Exception:
                pass


class _HostViews:
    """Host views of pinned or managed memory and their lifetime (see the
    module docstring): one exporter at a time, weakly held; close() refuses
    while it lives; garbage collection leaves the memory to the views."""

    __slots__ = ()

    def memoryview(self) -> memoryview:
        """A writable ``memoryview`` of the memory (format ``B``); ``close()``
        refuses while it, or anything made from it, is alive."""
        with deferred(), self._lock:  # type: ignore[attr-defined]
            h = self._h  # type: ignore[attr-defined]
            if h is None:
                raise ClosedError("%s is closed" % type(self).__name__)
            ref = self._exp  # type: ignore[attr-defined]
            exp = ref() if ref is not None else None
            if exp is None:
                exp = _exporter(h, self._size)  # type: ignore[attr-defined]
                self._exp = weakref.ref(exp)  # type: ignore[attr-defined]
        return memoryview(exp).cast("B")

    def __getitem__(self, key: Any) -> Any:
        return self.memoryview()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.memoryview()[key] = value

    def _views_alive(self) -> bool:
        ref = self._exp  # type: ignore[attr-defined]
        if ref is None or ref() is None:
            return False
        if not _REFCOUNTED:  # dead views go at the next collection there
            gc.collect()
        return ref() is not None

    def _host_busy(self) -> Optional[str]:
        if self._views_alive():
            return ("a view of its memory (a memoryview, a slice or cast of one, a numpy array, "
                    "a DLPack export ...) is still alive; delete it first")
        return None

    def _free_or_refuse(self, base_close: Any) -> None:
        with deferred(), self._lock:  # type: ignore[attr-defined]
            if self._h is None:  # type: ignore[attr-defined]
                return
            reason = self._busy()  # type: ignore[attr-defined]
            if reason:
                raise BufferError("cannot free the %s: %s" % (type(self).__name__, reason))
            base_close(self)

    def _finalize(self) -> None:
        """Garbage collection: free now, or hand the memory to its views."""
        with deferred(), self._lock:  # type: ignore[attr-defined]
            h = self._h  # type: ignore[attr-defined]
            ref = self._exp  # type: ignore[attr-defined]
            exp = ref() if ref is not None else None
            if h is None:
                return
            if exp is None:
                Resource.close(self)  # type: ignore[arg-type]
                return
            ctx = self._ctx  # type: ignore[attr-defined]
            orphan = _Orphan(h, self._free_memory, ctx, exp, type(self).__name__)  # type: ignore[attr-defined]
            if ctx is not None:
                ctx._orphan(orphan)
                ctx._forget(self)
            self._h = None  # type: ignore[attr-defined]
            del exp


class _Migratable:
    """Prefetch, advice and discard for managed memory (a :class:`ManagedBuffer`
    or a buffer from a managed pool, cuabi._pools); the batch calls take either."""

    __slots__ = ()

    def _location(self, location: Any) -> Tuple[int, int]:
        """A ``CUmemLocation`` (type, id): ``"device"`` (this buffer's), ``"host"``,
        a :class:`Device` or a device ordinal."""
        if location == "host":
            return (CU_MEM_LOCATION_TYPE_HOST, 0)
        dev = self._ctx.device if location == "device" else Device(location)  # type: ignore[attr-defined]
        return (CU_MEM_LOCATION_TYPE_DEVICE, dev.device_id)

    def prefetch(self, location: Any = "device", *, stream: Any = None) -> None:
        """Migrate the memory to the device (``"device"``, a Device or an
        ordinal) or ``"host"``, in stream order."""
        loc = self._location(location)
        p = self.ptr  # type: ignore[attr-defined]
        with self._in_context():  # type: ignore[attr-defined]
            _d.cuMemPrefetchAsync(p, self._size, loc, 0, stream_handle(stream))  # type: ignore[attr-defined]

    def advise(self, advice: Any, location: Any = "device") -> None:
        """Tell the driver how the memory will be used (``cuMemAdvise``).

        ``advice`` is a ``CUmem_advise`` or its short name:
        ``"set_read_mostly"``/``"unset_read_mostly"`` (``location`` is not
        used), ``"set_preferred_location"``/``"unset_preferred_location"``,
        ``"set_accessed_by"``/``"unset_accessed_by"``; ``location`` as for
        :meth:`prefetch`.  Driver 580 takes no advice for memory from a
        managed pool: it raises :class:`cuabi.errors.NotSupportedError`.
        """
        a = _advice_id(advice)
        loc = self._location(location)
        p = self.ptr  # type: ignore[attr-defined]
        with self._in_context():  # type: ignore[attr-defined]
            _d.cuMemAdvise(p, self._size, a, loc)  # type: ignore[attr-defined]

    def discard(self, *, stream: Any) -> None:
        """Declare the contents no longer needed (``cuMemDiscardBatchAsync``,
        CUDA 13.0+), in order on ``stream`` (not the legacy NULL stream, which
        the driver refuses for this call): the driver may drop the pages
        instead of migrating them; what a later read sees is undefined until
        written."""
        discard_batch([self], stream=stream)  # type: ignore[list-item]


class ManagedBuffer(_HostViews, _Migratable, _DeviceMemoryMixin, Resource):
    """Unified (managed) memory reachable from host and device.

    ``ManagedBuffer(size, attach="global")``; host access through
    :meth:`memoryview`, indexing and the buffer protocol (3.12+), device
    access through ``ptr`` and the array protocols (DLPack device
    ``kDLCUDAManaged``).
    """

    __slots__ = ("_size", "_exp", "_lock")

    def __init__(self, size: int, *, attach: str = "global", device: Any = None) -> None:
        Resource.__init__(self)
        n = _nbytes(size, "size")
        if n == 0:
            raise ValueError("managed allocations must not be empty")
        flags = {"global": CU_MEM_ATTACH_GLOBAL, "host": CU_MEM_ATTACH_HOST}.get(attach)
        if flags is None:
            raise ValueError("attach must be 'global' or 'host', got %r" % (attach,))
        self._size = n
        self._exp = None
        self._lock = threading.RLock()
        ctx = current_context(device)
        with deferred(), ctx._pushed():
            self._h = _d.cuMemAllocManaged(n, flags)
            ctx._adopt(self)

    @staticmethod
    def _free_memory(h: int) -> None:
        _d.cuMemFree(h)

    def _release(self, h: int) -> None:
        _d.cuMemFree(h)

    def _dl_type(self) -> int:
        return 13  # kDLCUDAManaged

    def _busy(self) -> Optional[str]:
        return self._host_busy() or _DeviceMemoryMixin._busy(self)

    def close(self) -> None:
        """Free the memory; raises ``BufferError`` while a view of it is alive."""
        self._free_or_refuse(Resource.close)

_ADVICE_PREFIX = "CU_MEM_ADVISE_"


def _advice_id(advice: Any) -> int:
    """A ``CUmem_advise`` from the enum, its int value, or its (short) name."""
    if isinstance(advice, str):
        name = advice.upper()
        name = name if name.startswith(_ADVICE_PREFIX) else _ADVICE_PREFIX + name
        try:
            return int(_d.CUmem_advise[name])
        except KeyError:
            known = ", ".join(m.name[len(_ADVICE_PREFIX):].lower() for m in _d.CUmem_advise)
            raise ValueError("unknown advice %r; the advice there is: %s" % (advice, known)) from None
    if isinstance(advice, int) and not isinstance(advice, bool):
        return int(advice)
    raise TypeError("advice must be a CUmem_advise, int or str, got %s" % type(advice).__name__)


_LOCATION = struct.Struct(FORMATS["CUmemLocation"])


def _ranges(buffers: Iterable["ManagedBuffer"]) -> List["ManagedBuffer"]:
    out = list(buffers)
    if not out:
        raise ValueError("a batch needs at least one ManagedBuffer")
    for b in out:
        if not isinstance(b, _Migratable):
            raise TypeError("a batch takes managed memory (ManagedBuffers, buffers of a ManagedMemoryPool), "
                            "got %s (for other memory, use "
                            "cuabi.driver's cuMemPrefetchBatchAsync)" % type(b).__name__)
    return out


def _batch(buffers: Iterable["ManagedBuffer"], location: Any, stream: Any, discard: bool) -> None:
    """One ``cuMem*BatchAsync`` call over ``buffers``: discard, prefetch to
    ``location`` (one for all, or one per buffer), or both; ``location`` None
    means no prefetch."""
    bufs = _ranges(buffers)
    ptrs = struct.pack("=%dQ" % len(bufs), *(b.ptr for b in bufs))
    sizes = struct.pack("=%dQ" % len(bufs), *(b._size for b in bufs))
    h = stream_handle(stream)
    if h == CU_STREAM_LEGACY or (h == 0 and default_stream_mode() == "legacy"):
        raise ValueError("the driver's batch prefetch and discard refuse the legacy NULL stream: pass "
                         "stream=cuabi.Stream() (or Stream.per_thread())")
    locs = idxs = b""
    if location is not None:
        if isinstance(location, (list, tuple)):
            if len(location) != len(bufs):
                raise ValueError("%d locations for %d buffers: give one location, or one per buffer"
                                 % (len(location), len(bufs)))
            per = [b._location(x) for b, x in zip(bufs, location)]
        else:
            per = [b._location(location) for b in bufs]
        # runs of one location: prefetchLocs[k] applies from prefetchLocIdxs[k] on
        starts = [i for i in range(len(per)) if i == 0 or per[i] != per[i - 1]]
        locs = b"".join(_LOCATION.pack(*per[i]) for i in starts)
        idxs = struct.pack("=%dQ" % len(starts), *starts)
    n, nloc = len(bufs), len(idxs) // 8
    ptrs_b, sizes_b = bytearray(ptrs), bytearray(sizes)  # the wrappers pass buffers by address
    with bufs[0]._in_context():
        if location is None:
            _d.cuMemDiscardBatchAsync(ptrs_b, sizes_b, n, 0, h)
        elif discard:
            _d.cuMemDiscardAndPrefetchBatchAsync(ptrs_b, sizes_b, n, bytearray(locs), bytearray(idxs), nloc, 0, h)
        else:
            _d.cuMemPrefetchBatchAsync(ptrs_b, sizes_b, n, bytearray(locs), bytearray(idxs), nloc, 0, h)


def prefetch_batch(buffers: Iterable["ManagedBuffer"], location: Union[Any, Sequence[Any]] = "device", *,
                   stream: Any) -> None:
    """Prefetch several managed buffers in one driver call
    (``cuMemPrefetchBatchAsync``, CUDA 13.0+) on ``stream``, which the
    driver requires not to be the legacy NULL stream.  ``location`` is one
    place for all (as :meth:`ManagedBuffer.prefetch` takes) or a list with
    one per buffer."""
    _batch(buffers, location, stream, discard=False)


def discard_batch(buffers: Iterable["ManagedBuffer"], *, prefetch_to: Union[Any, Sequence[Any], None] = None,
                  stream: Any) -> None:
    """Discard several managed buffers' contents in one driver call
    (``cuMemDiscardBatchAsync``, CUDA 13.0+); with ``prefetch_to``, also map
    their pages there (``cuMemDiscardAndPrefetchBatchAsync``), as
    :func:`prefetch_batch`'s ``location``."""
    _batch(buffers, prefetch_to, stream, discard=True)


if sys.version_info >= (3, 12):  # pragma: no cover - exercised on 3.12+ only
    def _buffer(self: Any, flags: int) -> memoryview:
        return self.memoryview()

    ManagedBuffer.__buffer__ = _buffer  # type: ignore[attr-defined]


class _HostExport:
    """What a DLPack export of pinned memory describes (read by cuabi._dlpack.export),
    holding a view so that the buffer refuses to close while it is exported."""

    __slots__ = ("typestr", "shape", "strides", "readonly", "_view", "_owner")

    def __init__(self, buf: "PinnedBuffer") -> None:
        self._view = buf.memoryview()
        self._owner = buf
        self.typestr = "|u1"
        self.shape = (buf._size,)
        self.strides = None
        self.readonly = False

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (3, 0)  # kDLCUDAHost


class PinnedBuffer(_HostViews, Resource):
    """Page-locked host memory (``cuMemHostAlloc``) usable as a Python buffer.

    ``memoryview(buf)`` works on Python 3.12+; on every version
    :meth:`memoryview` returns a writable view, and indexing reads and writes.
    ``close()`` refuses while any view of the memory is alive (see the module
    docstring).  DLPack exports it as ``kDLCUDAHost``.
    """

    __slots__ = ("_size", "_exp", "_lock")

    def __init__(self, size: int, *, portable: bool = False, device_map: bool = False,
                 write_combined: bool = False, device: Any = None) -> None:
        Resource.__init__(self)
        n = _nbytes(size, "size")
        if n == 0:
            raise ValueError("pinned allocations must not be empty")
        flags = ((CU_MEMHOSTALLOC_PORTABLE if portable else 0)
                 | (CU_MEMHOSTALLOC_DEVICEMAP if device_map else 0)
                 | (CU_MEMHOSTALLOC_WRITECOMBINED if write_combined else 0))
        self._size = n
        self._exp = None
        self._lock = threading.RLock()
        ctx = current_context(device)
        with deferred(), ctx._pushed():
            self._h = _d.cuMemHostAlloc(n, flags)
            ctx._adopt(self)

    @property
    def ptr(self) -> int:
        """The host address."""
        h = self._h
        if h is None:
            raise ClosedError("PinnedBuffer is closed")
        return h

    @property
    def size(self) -> int:
        """Bytes of memory."""
        return self._size

    def __len__(self) -> int:
        return self._size

    def to_bytes(self) -> bytes:
        """A copy of the contents as ``bytes``."""
        return self.memoryview().tobytes()

    @property
    def __array_interface__(self) -> dict:
        # the data as a buffer (not a bare address): the array holds a view
        return {"shape": (self._size,), "typestr": "|u1", "data": self.memoryview(), "version": 3}

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (3, 0)  # kDLCUDAHost

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """Export as a DLPack capsule of device type ``kDLCUDAHost`` (no copy;
        ``stream`` is accepted and ignored: the memory is the host's)."""
        from ._dlpack import DLPACK_MAJOR, export

        if copy:
            raise BufferError("cuabi does not copy on DLPack export (copy=True)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("cannot export pinned host memory to device %r without a copy"
                              % (tuple(dl_device),))
        arr = _HostExport(self)
        versioned = max_version is not None and tuple(max_version)[0] >= DLPACK_MAJOR
        return export(arr, self.ptr, versioned)

    @staticmethod
    def _free_memory(h: int) -> None:
        _d.cuMemFreeHost(h)

    def _release(self, h: int) -> None:
        _d.cuMemFreeHost(h)

    def _busy(self) -> Optional[str]:
        return self._host_busy()

    def close(self) -> None:
        """Free the memory; raises ``BufferError`` while a view of it is alive."""
        self._free_or_refuse(Resource.close)


if sys.version_info >= (3, 12):  # pragma: no cover
    PinnedBuffer.__buffer__ = _buffer  # type: ignore[attr-defined]


# -- typed device arrays -----------------------------------------------------------------

class DeviceArray(NotCopyable):
    """A typed view of device memory: pointer, shape, dtype, strides (bytes).

    It keeps its ``owner`` alive (a cuabi buffer, another library's array, or a
    DLPack capsule's tensor, released with :meth:`close` or at garbage
    collection).  Pass it to kernels as a pointer argument, to copies, or to
    other libraries through DLPack or ``__cuda_array_interface__``.
    """

    __slots__ = ("_ptr", "shape", "typestr", "itemsize", "strides", "_owner", "device_id",
                 "readonly", "_stream", "_deleter", "_managed", "__weakref__")

    def __init__(self, ptr: int, shape, dtype="u1", *, strides=None, owner=None,
                 device_id: int = 0, readonly: bool = False, stream: Optional[int] = None):
        if not isinstance(ptr, int) or isinstance(ptr, bool) or ptr < 0:
            raise TypeError("ptr must be a non-negative int")
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(shape)
        for d in shape:
            if not isinstance(d, int) or isinstance(d, bool) or d < 0:
                raise ValueError("shape must hold non-negative ints, got %r" % (shape,))
        self.typestr, _kind, self.itemsize = dtype_info(dtype)
        if strides is not None:
            strides = tuple(int(s) for s in strides)
            if len(strides) != len(shape):
                raise ValueError("strides and shape differ in length")
        self._ptr = ptr
        self.shape = shape
        self.strides = strides
        self._owner = owner
        self.device_id = device_id
        self.readonly = bool(readonly)
        self._stream = stream
        self._deleter = None
        self._managed = 0

    @property
    def ptr(self) -> int:
        p = self._ptr
        if p is None:
            raise ClosedError("DeviceArray is closed")
        owner = self._owner
        if owner is not None and getattr(owner, "_h", 1) is None:
            raise ClosedError("the memory behind this DeviceArray was freed")
        return p

    def _cuabi_address(self):
        return self.ptr

    @property
    def dtype(self) -> str:
        return self.typestr

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return cai_nbytes({"typestr": self.typestr, "shape": self.shape, "strides": self.strides})

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def is_c_contiguous(self) -> bool:
        if self.strides is None:
            return True
        expected = self.itemsize
        for d, st in zip(reversed(self.shape), reversed(self.strides)):
            if d != 1 and st != expected:
                return False
            expected *= d
        return True

    def copy_from(self, src, *, stream=None):
        """Copy a host buffer or device array into this (contiguous) array."""
        if not self.is_c_contiguous():
            raise ValueError("copies need a C-contiguous array")
        copy(self, src, self.nbytes, stream=stream)

    def copy_to(self, dst, *, stream=None):
        """Copy this (contiguous) array into a host buffer or device array."""
        if not self.is_c_contiguous():
            raise ValueError("copies need a C-contiguous array")
        copy(dst, self, self.nbytes, stream=stream)

    def to_bytes(self) -> bytes:
        out = bytearray(self.nbytes)
        self.copy_to(out)
        return bytes(out)

    @property
    def __cuda_array_interface__(self):
        return cai_dict(self.ptr, self.shape, self.typestr, self.strides, self.readonly, self._stream)

    def __dlpack_device__(self):
        from ._dlpack import kDLCUDA, kDLCUDAManaged

        return (kDLCUDAManaged if self._managed else kDLCUDA, self.device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export as a DLPack capsule.

        ``stream`` is the consumer's stream (``None``/1: legacy default, 2:
        per-thread default, other ints: a handle, -1: no synchronisation); work
        pending on this array's stream is ordered before it.  ``copy=True`` is
        refused (cuabi never copies on export).  (DLPack's ctypes structures
        are loaded by the first export.)
        """
        from ._dlpack import DLPACK_MAJOR, export, sync_for_consumer

        ptr = self.ptr
        if copy:
            raise BufferError("cuabi does not copy on DLPack export (copy=True)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("cannot export device %r to %r without a copy"
                              % (self.__dlpack_device__(), tuple(dl_device)))
        sync_for_consumer(self._stream, stream)
        versioned = max_version is not None and tuple(max_version)[0] >= DLPACK_MAJOR
        return export(self, ptr, versioned)

    def close(self) -> None:
        """Drop the view; a DLPack import's producer is told it may free the memory."""
        self._ptr = None
        self._owner = None
        d = self._deleter
        self._deleter = None
        if d is not None:
            d()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            d = self._deleter
        except AttributeError:
            return
        if d is not None and not finalizing():
            try:
                self._deleter = None
                d()
            except Exception:
                pass

    def __repr__(self):
        state = "closed" if self._ptr is None else "0x%x" % self._ptr
        return "<cuabi.DeviceArray %s shape=%r dtype=%s>" % (state, self.shape, self.typestr)


# -- memory pools ----------------------------------------------------------------------

# fields: cuabi._structs.FIELDS["CUmemPoolProps"]
_POOL_PROPS = struct.Struct(FORMATS["CUmemPoolProps"])


class ResourcePlace:
    """The memory resource protocol's three properties, for a resource of one
    device (``self._device``) whose memory kernels reach; a resource whose
    memory the host reaches too sets ``_host_accessible``."""

    __slots__ = ()
    _host_accessible = False
    _device: Any

    @property
    def is_device_accessible(self) -> bool:
        """True: kernels reach the memory."""
        return True

    @property
    def is_host_accessible(self) -> bool:
        """Whether the host reads and writes the memory directly (else only through copies)."""
        return self._host_accessible

    @property
    def device_id(self) -> int:
        """The ordinal of the resource's device."""
        return self._device.device_id


class MemoryPool(ResourcePlace, Resource):
    """A stream-ordered memory pool.

    ``MemoryPool(device=None, release_threshold=None, max_size=0, ipc=False)``
    creates a pool; :meth:`default` returns a device's default pool (not
    destroyed by ``close``).  ``pool.allocate(n, stream)`` returns a
    :class:`DeviceBuffer`.

    With ``ipc=True`` the pool can be shared with other processes (see
    :mod:`cuabi._ipc`): :meth:`export_fd` gives a file descriptor that another
    process opens with :meth:`import_fd`, and each buffer's
    :meth:`DeviceBuffer.ipc_descriptor` is imported there with
    :meth:`import_buffer`.
    """

    __slots__ = ("_owned", "_device", "_ipc", "_imports", "_handed_out")
    # what allocate() returns; the pinned and managed pools (cuabi._pools) return their own kinds
    _buffer_type: Any = None  # DeviceBuffer, set below

    def _where(self, device_id: int) -> Tuple[int, int, int]:
        """The pool's (allocation type, location type, location id)."""
        return (CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE, device_id)

    def __init__(self, device=None, *, release_threshold: Optional[int] = None, max_size: int = 0,
                 ipc: bool = False):
        Resource.__init__(self)
        ctx = current_context(device)
        self._device = ctx.device
        self._owned = True
        self._ipc = "exported" if ipc else ""
        self._imports: Any = None
        self._handed_out = False  # export_fd has run (driver 580 exports pointers only after it)
        alloc_type, loc_type, loc_id = self._where(ctx.device.device_id)
        props = bytearray(_POOL_PROPS.size)
        handle_type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR if ipc else CU_MEM_HANDLE_TYPE_NONE
        _POOL_PROPS.pack_into(props, 0, alloc_type, handle_type, loc_type, loc_id, 0,
                              _nbytes(max_size, "max_size"), 0, b"", b"")
        if release_threshold is not None:
            _nbytes(release_threshold, "release_threshold")
        with deferred(), ctx._pushed():
            self._h = _d.cuMemPoolCreate(props)
            ctx._adopt(self)
        if release_threshold is not None:
            self.release_threshold = release_threshold

    @classmethod
    def _bare(cls, ctx: Any, owned: bool, ipc: str) -> "MemoryPool":
        """A pool object of ``ctx``'s device without its handle yet (set by the caller)."""
        self = cls.__new__(cls)
        Resource.__init__(self)
        self._owned = owned
        self._device = ctx.device
        self._ipc = ipc
        self._imports = {} if ipc == "imported" else None
        self._handed_out = False
        return self

    @classmethod
    def default(cls, device=None) -> "MemoryPool":
        """The device's default pool (owned by the driver)."""
        ctx = current_context(device)
        self = cls._bare(ctx, False, "")
        with deferred():
            self._h = _d.cuDeviceGetDefaultMemPool(ctx.device.handle)
            ctx._adopt(self)
        return self

    # -- sharing with other processes (cuabi._ipc)

    @property
    def ipc(self) -> str:
        """``"exported"`` for a pool made with ``ipc=True``, ``"imported"`` for
        one from :meth:`import_fd`, ``""`` for a pool of this process only."""
        return self._ipc

    def export_fd(self) -> int:
        """A new POSIX file descriptor for this pool
        (``cuMemPoolExportToShareableHandle``), for another process to
        :meth:`import_fd`.  The descriptor is the caller's: send it
        (:func:`cuabi.send_fd`, or ``pass_fds`` of a child), then ``os.close`` it."""
        h = self.handle
        if self._ipc != "exported":
            raise ValueError("this MemoryPool cannot be shared: %s" % (
                "it was imported from another process (export from the process that made it)"
                if self._ipc else "make it with MemoryPool(ipc=True)"))
        cell = bytearray(4)
        with self._in_context():
            _d.cuMemPoolExportToShareableHandle(cell, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
        self._handed_out = True
        return int.from_bytes(cell, sys.byteorder, signed=True)

    @classmethod
    def import_fd(cls, fd: int, device: Any = None) -> "MemoryPool":
        """The pool another process exported as ``fd`` (:meth:`export_fd`),
        opened in this process (``cuMemPoolImportFromShareableHandle``).

        ``fd`` stays the caller's (close it when done; the pool keeps what it
        needs).  The imported pool does not allocate; it turns descriptors
        into buffers (:meth:`import_buffer`).  Closing it first closes the
        buffers imported through it."""
        if not isinstance(fd, int) or isinstance(fd, bool) or fd < 0:
            raise ValueError("fd must be a file descriptor (a non-negative int), got %r" % (fd,))
        ctx = current_context(device)
        self = cls._bare(ctx, True, "imported")
        with deferred(), ctx._pushed():
            self._h = _d.cuMemPoolImportFromShareableHandle(fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
            ctx._adopt(self)
        return self

    def import_buffer(self, descriptor: "IpcBufferDescriptor") -> "DeviceBuffer":
        """The buffer ``descriptor`` (a :class:`cuabi.IpcBufferDescriptor` from
        the exporting process) describes, as a :class:`DeviceBuffer` of this
        process (``cuMemPoolImportPointer``).

        Its ``close()`` releases this process's mapping only
        (``cuMemFree`` of an imported pointer); the memory stays the
        exporter's.  Each descriptor is imported once per pool: a second
        import while the first buffer is open is refused."""
        from ._ipc import IpcBufferDescriptor, exporter_alive

        if not isinstance(descriptor, IpcBufferDescriptor):
            raise TypeError("import_buffer takes a cuabi.IpcBufferDescriptor (DeviceBuffer.ipc_descriptor()), "
                            "got %s" % type(descriptor).__name__)
        h = self.handle
        if self._ipc != "imported":
            raise ValueError("import_buffer is for a pool imported from another process "
                             "(MemoryPool.import_fd); this one %s" % (
                                 "was made here: use its buffers directly" if self._ipc else
                                 "is not shared at all"))
        previous = self._imports.get(descriptor.data)
        if previous is not None:
            buf = previous()
            if buf is not None and not buf.closed:
                raise ValueError("this buffer was already imported into this pool (%r); use that one, "
                                 "or close it before importing again" % (buf,))
        exporter_alive(descriptor.pid, "this IpcBufferDescriptor")
        buf = DeviceBuffer.__new__(DeviceBuffer)
        Resource.__init__(buf)
        buf._size = descriptor.size
        buf._stream = None  # released with cuMemFree, which for an imported pointer unmaps it
        buf._pool = self
        ctx = self._ctx
        with deferred(), self._in_context():
            buf._h = _d.cuMemPoolImportPointer(h, bytearray(descriptor.data))
            if ctx is not None:
                ctx._adopt(buf)
        key, imports = descriptor.data, self._imports
        imports[key] = weakref.ref(buf, lambda ref: imports.pop(key) if imports.get(key) is ref else None)
        return buf

    @property
    def device(self):
        return self._device

    def _release(self, h):
        imports, self._imports = self._imports, None
        for ref in (imports or {}).values():
            buf = ref()
            if buf is not None:
                buf.close()  # an imported pointer goes before the pool it came through
        if self._owned:
            _d.cuMemPoolDestroy(h)

    def _get(self, attr: int) -> int:
        cell = bytearray(8)
        h = self.handle
        with self._in_context():
            _d.cuMemPoolGetAttribute(h, attr, cell)
        return _U64.unpack(cell)[0]

    def _set(self, attr: int, value: int, what: str) -> None:
        cell = bytearray(_U64.pack(_nbytes(value, what)))
        h = self.handle
        with self._in_context():
            _d.cuMemPoolSetAttribute(h, attr, cell)

    @property
    def release_threshold(self) -> int:
        """Bytes the pool keeps reserved instead of returning them at synchronisation."""
        return self._get(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)

    @release_threshold.setter
    def release_threshold(self, value: int) -> None:
        self._set(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, value, "release_threshold")

    @property
    def reserved_memory(self) -> int:
        return self._get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)

    @property
    def used_memory(self) -> int:
        return self._get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)

    def trim(self, keep: int = 0) -> None:
        """Return unused memory to the system, keeping at least ``keep`` bytes."""
        h = self.handle
        with self._in_context():
            _d.cuMemPoolTrimTo(h, _nbytes(keep, "keep"))

    def allocate(self, size: int, stream: Any = None) -> DeviceBuffer:
        """A stream-ordered allocation from this pool on ``stream``."""
        if self._h is None:
            raise ClosedError("%s is closed" % type(self).__name__)
        return self._buffer_type(size, stream=stream if stream is not None else 0, pool=self)

    # the rest of the memory resource protocol (cuabi._memory_resource)

    def deallocate(self, buffer: DeviceBuffer, stream: Any = None) -> None:
        """Free ``buffer``, which this pool allocated, on ``stream`` (default:
        the stream it was allocated on).  The protocol's rule for misuse:
        ``TypeError`` for an object of a kind this pool never returns,
        ``ValueError`` for a buffer of that kind another resource allocated."""
        check_owner(self, buffer, self._buffer_type, buffer._pool is self
                    if isinstance(buffer, self._buffer_type) else False)
        buffer.close(stream)



MemoryPool._buffer_type = DeviceBuffer


def check_owner(resource: Any, buffer: Any, kind: type, mine: bool) -> None:
    """The memory resource protocol's one rule for ``deallocate`` misuse:
    ``TypeError`` when ``buffer`` is not of the ``kind`` the resource hands
    out, ``ValueError`` when it is but another resource allocated it."""
    if not isinstance(buffer, kind):
        raise TypeError("%s deallocates %s objects, got %s"
                        % (type(resource).__name__, kind.__name__, type(buffer).__name__))
    if not mine:
        raise ValueError("this %s did not allocate %r" % (type(resource).__name__, buffer))
