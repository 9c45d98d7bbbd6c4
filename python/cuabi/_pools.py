# SPDX-License-Identifier: Apache-2.0
"""Pools of host-reachable memory, graph memory, and batch copies.

* :class:`PinnedMemoryPool`: page-locked host memory from a stream-ordered
  pool (``cuMemPoolCreate`` with a host location, CUDA 12.6+ for a NUMA node,
  13.0+ for plain host), granted to its device so kernels reach it too.
* :class:`ManagedMemoryPool`: unified memory from a stream-ordered pool
  (``CU_MEM_ALLOCATION_TYPE_MANAGED``, CUDA 13.0+), with an optional
  preferred location.
* :class:`GraphMemoryResource`: allocations made while a stream is captured,
  which become allocation and free nodes of the graph, and the device's
  graph memory counters and trim.
* :func:`copy_batch`: many copies in one ``cuMemcpyBatchAsync`` call.

The pools are :class:`cuabi.MemoryPool` subclasses (release threshold,
reserved and used memory, ``trim``) and their buffers are
:class:`cuabi.DeviceBuffer` subclasses with host views added (the same
``memoryview()``, indexing and lifetime rules as :class:`cuabi.PinnedBuffer`).
"""

from __future__ import annotations

import struct
import sys
import threading
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from . import driver as _d
from ._constants import (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
                         CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
                         CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ALLOCATION_TYPE_MANAGED,
                         CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE,
                         CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA,
                         CU_MEM_LOCATION_TYPE_NONE, CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE,
                         CU_MEMCPY_SRC_ACCESS_ORDER_ANY, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, CU_STREAM_LEGACY)
from ._device import Device, current_context
from ._interrupts import deferred
from ._memory import (_LOCATION, DeviceBuffer, MemoryPool, ResourcePlace, _device_view, _HostViews, _Migratable, _nbytes,
                      check_owner)
from ._own_api import default_stream_mode
from ._stream import stream_handle

_ACCESS_DESC = struct.Struct("=IiI")  # CUmemAccessDesc: location (type, id), flags
_U64 = struct.Struct("=Q")


class _HostPoolBuffer(_HostViews, DeviceBuffer):  # type: ignore[misc]
    """A pool buffer the host reaches too: a :class:`cuabi.DeviceBuffer` with
    host views; ``close()`` refuses while one is alive."""

    __slots__ = ("_exp", "_lock")
    _unified_copy = True  # cuabi.copy uses cuMemcpy(Async): the directed calls refuse pool host memory

    def __init__(self, size: int, *, stream: Any = None, pool: Any = None, device: Any = None) -> None:
        self._exp: Any = None
        self._lock = threading.RLock()
        DeviceBuffer.__init__(self, size, stream=stream, pool=pool, device=device)

    def _busy(self) -> Optional[str]:
        return self._host_busy() or DeviceBuffer._busy(self)

    def close(self, stream: Any = None) -> None:
        """Free the memory in stream order (on ``stream``, default: the one it
        was allocated on); ``BufferError`` while a view of it is alive."""
        with deferred(), self._lock:
            DeviceBuffer.close(self, stream)

    @staticmethod
    def _free_memory(h: int) -> None:
        # memory left to its views by garbage collection: freed after the legacy stream's work
        _d.cuMemFreeAsync(h, CU_STREAM_LEGACY)

    @property
    def __array_interface__(self) -> dict:
        # the data as a buffer (not a bare address): the array holds a view
        return {"shape": (self._size,), "typestr": "|u1", "data": self.memoryview(), "version": 3}


class PinnedPoolBuffer(_HostPoolBuffer):
    """Page-locked host memory from a :class:`PinnedMemoryPool`: ``ptr`` for
    kernels and copies, :meth:`memoryview` and indexing for the host."""

    __slots__ = ()


class ManagedPoolBuffer(_Migratable, _HostPoolBuffer):  # type: ignore[misc]
    """Unified memory from a :class:`ManagedMemoryPool`: as a
    :class:`cuabi.ManagedBuffer`, with ``prefetch``, ``advise`` and
    ``discard``, and it takes part in ``prefetch_batch``/``discard_batch``."""

    __slots__ = ()

    def _dl_type(self) -> int:
        return 13  # kDLCUDAManaged


if sys.version_info >= (3, 12):  # pragma: no cover - exercised on 3.12+ only
    def _host_buffer(self: Any, flags: int) -> memoryview:
        return self.memoryview()

    _HostPoolBuffer.__buffer__ = _host_buffer  # type: ignore[attr-defined]


class _HostPool(MemoryPool):
    """A pool whose memory the host reaches as well as kernels."""

    __slots__ = ()
    _host_accessible = True

    @classmethod
    def _driver_default(cls, device: Any, **attrs: Any) -> Any:
        """The driver's default pool of this kind (``cuMemGetDefaultMemPool``,
        CUDA 13.0+), not destroyed by ``close``; ``attrs`` set what ``_where`` reads."""
        ctx = current_context(device)
        self = cls._bare(ctx, False, "")
        for name, value in attrs.items():
            setattr(self, name, value)
        alloc_type, loc_type, loc_id = self._where(ctx.device.device_id)
        loc = bytearray(_LOCATION.pack(loc_type, loc_id))
        with deferred(), ctx._pushed():
            self._h = _d.cuMemGetDefaultMemPool(loc, alloc_type)
            ctx._adopt(self)
        return self


class PinnedMemoryPool(_HostPool):
    """Page-locked host memory from a stream-ordered pool.

    ``PinnedMemoryPool(device=None, *, numa_node=None, release_threshold=None,
    max_size=0)``: the memory lives on the host (on NUMA node ``numa_node``
    when given) and ``device`` is granted read-write access to it, so kernels
    there use it too.  ``allocate(n, stream)`` returns a
    :class:`PinnedPoolBuffer`.  :meth:`default` is the driver's own pool.
    """

    __slots__ = ("_numa",)
    _buffer_type = PinnedPoolBuffer

    def __init__(self, device: Any = None, *, numa_node: Optional[int] = None,
                 release_threshold: Optional[int] = None, max_size: int = 0) -> None:
        self._numa = None if numa_node is None else _nbytes(numa_node, "numa_node")
        MemoryPool.__init__(self, device, release_threshold=release_threshold, max_size=max_size)
        self._grant()

    @classmethod
    def default(cls, device: Any = None, *, numa_node: Optional[int] = None) -> "PinnedMemoryPool":
        """The driver's default pinned host pool (of NUMA node ``numa_node`` when
        given), shared by the process; ``device`` is granted access to it."""
        self = cls._driver_default(device, _numa=None if numa_node is None else _nbytes(numa_node, "numa_node"))
        self._grant()
        return self

    def _grant(self) -> None:
        """Let the pool's device read and write the memory (``cuMemPoolSetAccess``)."""
        desc = bytearray(_ACCESS_DESC.pack(CU_MEM_LOCATION_TYPE_DEVICE, self._device.device_id,
                                           CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
        h = self.handle
        with self._in_context():
            _d.cuMemPoolSetAccess(h, desc, 1)

    def _where(self, device_id: int) -> Tuple[int, int, int]:
        if self._numa is None:
            return (CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0)
        return (CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, self._numa)

    @property
    def numa_node(self) -> Optional[int]:
        """The host NUMA node the memory lives on (None: any)."""
        return self._numa


class ManagedMemoryPool(_HostPool):
    """Unified memory from a stream-ordered pool (CUDA 13.0+).

    ``ManagedMemoryPool(device=None, *, preferred=None, release_threshold=None,
    max_size=0)``: ``preferred`` is where the memory prefers to live:
    ``"device"`` (``device``), ``"host"``, or None for no preference.
    ``allocate(n, stream)`` returns a :class:`ManagedPoolBuffer`.
    :meth:`default` is the driver's own pool.
    """

    __slots__ = ("_preferred",)
    _buffer_type = ManagedPoolBuffer

    def __init__(self, device: Any = None, *, preferred: Optional[str] = None,
                 release_threshold: Optional[int] = None, max_size: int = 0) -> None:
        self._preferred = _preferred(preferred)
        MemoryPool.__init__(self, device, release_threshold=release_threshold, max_size=max_size)

    @classmethod
    def default(cls, device: Any = None, *, preferred: Optional[str] = None) -> "ManagedMemoryPool":
        """The driver's default managed pool for ``preferred`` (as for the
        constructor), shared by the process."""
        return cls._driver_default(device, _preferred=_preferred(preferred))

    def _where(self, device_id: int) -> Tuple[int, int, int]:
        loc = {None: (CU_MEM_LOCATION_TYPE_NONE, 0), "host": (CU_MEM_LOCATION_TYPE_HOST, 0),
               "device": (CU_MEM_LOCATION_TYPE_DEVICE, device_id)}[self._preferred]
        return (CU_MEM_ALLOCATION_TYPE_MANAGED,) + loc

    @property
    def preferred(self) -> Optional[str]:
        """Where the memory prefers to live: ``"device"``, ``"host"`` or None."""
        return self._preferred


def _preferred(preferred: Optional[str]) -> Optional[str]:
    if preferred not in (None, "device", "host"):
        raise ValueError("preferred must be 'device', 'host' or None, got %r" % (preferred,))
    return preferred


# -- graph memory ----------------------------------------------------------------------

class _GraphBuffer(DeviceBuffer):
    """A :class:`cuabi.DeviceBuffer` allocated during stream capture."""

    __slots__ = ("_resource",)
    _resource: "GraphMemoryResource"


class GraphMemoryResource(ResourcePlace):
    """Memory for graphs: ``GraphMemoryResource(device=None)``.

    ``allocate(n, stream)`` on a stream being captured records an allocation
    node into the graph; ``deallocate(buf, stream)`` (or ``buf.close()``)
    while the capture goes on records the matching free node.  The address
    is fixed when the graph is captured and the memory is there while the
    launched graph runs: free it inside the capture (the usual way), or
    after a launch, before launching the graph again.  The device's graph
    memory counters (``used_memory``, ``reserved_memory`` and their high
    marks) and :meth:`trim` are the driver's per-device ones.
    """

    __slots__ = ("_device",)

    def __init__(self, device: Any = None) -> None:
        self._device = current_context(device).device if device is None else Device(device)

    def allocate(self, size: int, stream: Any = None) -> DeviceBuffer:
        """A buffer of ``size`` bytes allocated by the graph ``stream`` is capturing."""
        if stream is None:
            raise ValueError("graph memory is allocated on a capturing stream: pass stream=")
        h = stream_handle(stream)
        ctx = current_context(self._device)
        with ctx._pushed():
            capturing = int(_d.cuStreamIsCapturing(h))
        if capturing != 1:  # CU_STREAM_CAPTURE_STATUS_ACTIVE
            raise ValueError("the stream is not being captured: GraphMemoryResource allocates "
                             "inside stream capture (cuabi.Graph.capture(stream))")
        buf = _GraphBuffer(size, stream=stream, device=self._device)
        buf._resource = self
        return buf

    def deallocate(self, buffer: DeviceBuffer, stream: Any = None) -> None:
        """Free ``buffer`` on ``stream`` (default: the stream it was allocated
        on): a free node while that stream is captured, else a stream-ordered
        free of graph memory a launch allocated."""
        check_owner(self, buffer, _GraphBuffer,
                    getattr(buffer, "_resource", None) is self if isinstance(buffer, _GraphBuffer) else False)
        buffer.close(stream)

    def _get(self, attr: int) -> int:
        cell = bytearray(8)
        with current_context(self._device)._pushed():
            _d.cuDeviceGetGraphMemAttribute(self._device.handle, attr, cell)
        return _U64.unpack(cell)[0]

    @property
    def used_memory(self) -> int:
        """Bytes of graph memory in use by launched graphs on the device."""
        return self._get(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)

    @property
    def used_memory_high(self) -> int:
        """The most :attr:`used_memory` reached since the last :meth:`reset_high_marks`."""
        return self._get(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)

    @property
    def reserved_memory(self) -> int:
        """Bytes the device holds for graph allocations."""
        return self._get(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)

    @property
    def reserved_memory_high(self) -> int:
        """The most :attr:`reserved_memory` reached since the last :meth:`reset_high_marks`."""
        return self._get(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)

    def reset_high_marks(self) -> None:
        """Set both high marks to their current values."""
        zero = bytearray(8)
        with current_context(self._device)._pushed():
            for attr in (CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH):
                _d.cuDeviceSetGraphMemAttribute(self._device.handle, attr, zero)

    def trim(self) -> None:
        """Give reserved graph memory that no graph uses back to the system."""
        with current_context(self._device)._pushed():
            _d.cuDeviceGraphMemTrim(self._device.handle)

    def __repr__(self) -> str:
        return "<cuabi.GraphMemoryResource device %d>" % self._device.device_id


# -- batch copies ----------------------------------------------------------------------

_COPY_ATTRS = struct.Struct("=IIiIiI")  # CUmemcpyAttributes: srcAccessOrder, srcLocHint, dstLocHint, flags


def copy_batch(copies: Iterable[Sequence[Any]], *, stream: Any, source_order: str = "stream",
               overlap: bool = False) -> None:
    """Copy ``(dst, src, nbytes)`` triples in one ``cuMemcpyBatchAsync`` call
    (CUDA 12.8+), in order on ``stream`` as a whole, in no order among
    themselves (so no copy may depend on another).

    ``dst`` and ``src`` are buffers (device, pinned, managed, pool buffers,
    :class:`cuabi.DeviceArray`) or plain addresses; ``nbytes`` must fit both.
    ``source_order="stream"`` reads the sources in stream order;
    ``"any"`` lets the driver read them at any time after the call, for
    sources nothing earlier on the stream writes.  ``overlap=True`` asks the
    driver to overlap the copies with kernels.  The driver refuses the
    legacy NULL stream.  cuabi checks every triple before the call; a batch
    the driver refuses may have been partly copied (driver 580 had made the
    copy before the bad one).
    """
    order = {"stream": CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, "any": CU_MEMCPY_SRC_ACCESS_ORDER_ANY}.get(source_order)
    if order is None:
        raise ValueError("source_order must be 'stream' or 'any', got %r" % (source_order,))
    dsts: List[int] = []
    srcs: List[int] = []
    sizes: List[int] = []
    owner: Any = None
    for item in copies:
        try:
            dst, src, n = item
        except (TypeError, ValueError):
            raise TypeError("copy_batch takes (dst, src, nbytes) triples, got %r" % (item,)) from None
        n = _nbytes(n)
        d, dsize = _address(dst, "dst")
        s, ssize = _address(src, "src")
        if (dsize is not None and n > dsize) or (ssize is not None and n > ssize):
            raise ValueError("copy %d: nbytes=%d exceeds the destination (%s) or source (%s)"
                             % (len(sizes), n, dsize, ssize))
        if owner is None:
            owner = next((x for x in (dst, src) if getattr(x, "_ctx", None) is not None), None)
        dsts.append(d)
        srcs.append(s)
        sizes.append(n)
    if not sizes:
        raise ValueError("a batch needs at least one copy")
    h = stream_handle(stream)
    if h == CU_STREAM_LEGACY or (h == 0 and default_stream_mode() == "legacy"):
        raise ValueError("the driver's batch copy refuses the legacy NULL stream: pass "
                         "stream=cuabi.Stream() (or Stream.per_thread())")
    count = len(sizes)
    ctx = owner._ctx if owner is not None else None
    if ctx is not None and ctx._h is None:
        ctx = None
    # location hints matter only for managed memory: the device the copies run on
    dev = ctx.device.device_id if ctx is not None else current_context().device.device_id
    flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE if overlap else 0
    attrs = bytearray(_COPY_ATTRS.pack(order, CU_MEM_LOCATION_TYPE_DEVICE, dev, CU_MEM_LOCATION_TYPE_DEVICE, dev,
                                       flags))
    fmt = "=%dQ" % count
    args = (bytearray(struct.pack(fmt, *dsts)), bytearray(struct.pack(fmt, *srcs)),
            bytearray(struct.pack(fmt, *sizes)), count, attrs, bytearray(8), 1, h)
    if ctx is not None:
        with ctx._pushed():
            _d.cuMemcpyBatchAsync(*args)
    else:
        _d.cuMemcpyBatchAsync(*args)


def _address(obj: Any, what: str) -> Tuple[int, Optional[int]]:
    """An operand of a batch copy: (address, size or None for a bare address)."""
    if isinstance(obj, int) and not isinstance(obj, bool):
        if obj <= 0:
            raise ValueError("%s must be a non-zero address, got %d" % (what, obj))
        return obj, None
    ptr = getattr(obj, "ptr", None)
    if isinstance(ptr, int):
        size = getattr(obj, "nbytes", None)
        if size is None:
            size = getattr(obj, "size", None)
        return ptr, size
    view = _device_view(obj)
    if view is None:
        raise TypeError("%s must be a buffer, a DeviceArray, an object with __cuda_array_interface__ "
                        "or an address, got %s" % (what, type(obj).__name__))
    return view[0], view[1]
