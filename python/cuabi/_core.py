"""Devices, contexts, streams and events: the Pythonic layer's foundation.

Lifetime rules shared by every resource in the Pythonic layer:

* ``close()`` releases the driver object now; closing twice is harmless; any
  other use after ``close()`` raises :class:`cuabi.errors.ClosedError`.
* Resources are context managers (``with cuabi.Stream() as s: ...``).
* A resource that is garbage-collected while open is released then, unless the
  interpreter is shutting down (the driver tears everything down at exit).
* Each resource belongs to a :class:`Context`; closing the context first
  closes every resource still open in it, so nothing outlives its context.
"""

from __future__ import annotations

import atexit
import sys
import threading
import weakref
from typing import Optional, Tuple

from . import driver as _d
from .errors import ClosedError, CUDAError

_shutdown = False
_init_lock = threading.Lock()
_initialized = False

CUDA_ERROR_NOT_READY = 600


def _at_exit():
    global _shutdown
    _shutdown = True


atexit.register(_at_exit)


def _finalizing():
    return _shutdown or sys.is_finalizing()


def init():
    """Initialise the driver (``cuInit(0)``) once per process; cheap afterwards."""
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if not _initialized:
            _d.cuInit(0)
            _initialized = True


def _closed(obj):
    return ClosedError("%s is closed" % type(obj).__name__)


class Resource:
    """Base of every releasable cuabi object (see the module docstring)."""

    __slots__ = ("_h", "_ctx", "__weakref__")

    def __init__(self):
        self._h = None
        self._ctx = None

    # subclasses implement _release(handle)
    def _release(self, handle):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (or the owning context was closed)."""
        return self._h is None

    @property
    def handle(self) -> int:
        """The driver handle, as an integer."""
        h = self._h
        if h is None:
            raise _closed(self)
        return h

    def _cuabi_address(self):
        h = self._h
        if h is None:
            raise _closed(self)
        return h

    def close(self) -> None:
        """Release the driver object now. Closing twice does nothing."""
        h = self._h
        if h is None:
            return
        ctx = self._ctx
        if ctx is not None:
            ctx._forget(self)
        self._h = None
        self._release_in(ctx, h)

    def _release_in(self, ctx, h):
        if ctx is not None and ctx._h is not None:
            with ctx._pushed():
                self._release(h)
        else:
            self._release(h)

    def __enter__(self):
        if self._h is None:
            raise _closed(self)
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            h = self._h
        except AttributeError:
            return
        if h is None or _finalizing():
            return
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        h = self._h
        state = "closed" if h is None else "0x%x" % h
        return "<cuabi.%s %s>" % (type(self).__name__, state)


class _Pushed:
    """Make a context current for a block, restoring the previous one after."""

    __slots__ = ("h", "pushed")

    def __init__(self, h):
        self.h = h
        self.pushed = False

    def __enter__(self):
        if _d.cuCtxGetCurrent() != self.h:
            _d.cuCtxPushCurrent(self.h)
            self.pushed = True
        return self

    def __exit__(self, *exc):
        if self.pushed:
            _d.cuCtxPopCurrent()


class Context:
    """A CUDA context; cuabi uses each device's primary context.

    Obtain it with :meth:`Device.set_current` or :attr:`Device.context`.
    ``close()`` closes every cuabi resource still open in the context and then
    releases cuabi's reference on the primary context.
    """

    __slots__ = ("_h", "_device", "_children", "_owned", "__weakref__")

    def __init__(self, handle, device, owned):
        self._h = handle
        self._device = device
        self._children = weakref.WeakSet()
        self._owned = owned

    @property
    def handle(self) -> int:
        h = self._h
        if h is None:
            raise ClosedError("Context is closed")
        return h

    def _cuabi_address(self):
        return self.handle

    @property
    def closed(self) -> bool:
        return self._h is None

    @property
    def device(self) -> "Device":
        return self._device

    def _adopt(self, res):
        if self._h is None:
            raise ClosedError("Context is closed")
        res._ctx = self
        self._children.add(res)

    def _forget(self, res):
        self._children.discard(res)

    def _pushed(self):
        return _Pushed(self.handle)

    def set_current(self) -> "Context":
        """Make this context current on the calling thread."""
        _d.cuCtxSetCurrent(self.handle)
        return self

    def synchronize(self) -> None:
        """Wait for all work in this context to finish."""
        with self._pushed():
            _d.cuCtxSynchronize()

    sync = synchronize

    def close(self) -> None:
        """Close all resources of this context, then release the primary context."""
        h = self._h
        if h is None:
            return
        for child in list(self._children):
            try:
                child.close()
            except CUDAError:
                pass
        self._h = None
        dev = self._device
        if dev._ctx is self:
            dev._ctx = None
        if self._owned and not _finalizing():
            try:
                if _d.cuCtxGetCurrent() == h:
                    _d.cuCtxSetCurrent(0)
            except CUDAError:
                pass
            _d.cuDevicePrimaryCtxRelease(dev._dev)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._h is None else "0x%x" % self._h
        return "<cuabi.Context %s of device %d>" % (state, self._device.ordinal)


_ctx_by_handle = weakref.WeakValueDictionary()


def current_context(device=None) -> Context:
    """The context cuabi should create resources in, made current if needed.

    With ``device`` given, that device's primary context; otherwise the context
    current on this thread (even one made current by another library), or the
    primary context of device 0 when none is current - as the CUDA runtime does.
    """
    init()
    if device is not None:
        dev = device if isinstance(device, Device) else Device(device)
        ctx = dev.context
        if _d.cuCtxGetCurrent() != ctx._h:
            ctx.set_current()
        return ctx
    h = _d.cuCtxGetCurrent()
    if h:
        ctx = _ctx_by_handle.get(h)
        if ctx is not None and ctx._h == h:
            return ctx
        ordinal = _d.cuCtxGetDevice()
        dev = Device(ordinal)
        pctx = dev.context
        if pctx._h == h:
            return pctx
        foreign = Context(h, dev, owned=False)
        _ctx_by_handle[h] = foreign
        return foreign
    return Device(0).set_current()


_ATTR_ALIASES = None


def _attribute_id(attr):
    """Accept a CUdevice_attribute, its int value, its name, or a short name."""
    if isinstance(attr, int) and not isinstance(attr, bool):
        return int(attr)
    if isinstance(attr, str):
        cls = _d.CUdevice_attribute
        name = attr if attr.startswith("CU_DEVICE_ATTRIBUTE_") else "CU_DEVICE_ATTRIBUTE_" + attr.upper()
        try:
            return int(cls[name])
        except KeyError:
            raise ValueError("unknown device attribute %r" % attr) from None
    raise TypeError("attribute must be a CUdevice_attribute, int or str, got %s" % type(attr).__name__)


class Device:
    """A CUDA device, by ordinal. ``Device(n)`` returns the same object each time."""

    __slots__ = ("_ordinal", "_dev", "_ctx", "__weakref__")
    _cache = {}
    _cache_lock = threading.Lock()

    def __new__(cls, ordinal: Optional[int] = None):
        if ordinal is None:
            init()
            try:
                ordinal = _d.cuCtxGetDevice() if _d.cuCtxGetCurrent() else 0
            except CUDAError:
                ordinal = 0
        if isinstance(ordinal, Device):
            return ordinal
        if not isinstance(ordinal, int) or isinstance(ordinal, bool):
            raise TypeError("device ordinal must be an int, got %s" % type(ordinal).__name__)
        dev = cls._cache.get(ordinal)
        if dev is not None:
            return dev
        init()
        count = _d.cuDeviceGetCount()
        if not 0 <= ordinal < count:
            raise ValueError("device ordinal %d is out of range: %d device(s) present" % (ordinal, count))
        with cls._cache_lock:
            dev = cls._cache.get(ordinal)
            if dev is None:
                dev = object.__new__(cls)
                dev._ordinal = ordinal
                dev._dev = _d.cuDeviceGet(ordinal)
                dev._ctx = None
                cls._cache[ordinal] = dev
        return dev

    @staticmethod
    def count() -> int:
        """How many CUDA devices the driver sees."""
        init()
        return _d.cuDeviceGetCount()

    @property
    def ordinal(self) -> int:
        return self._ordinal

    device_id = ordinal

    @property
    def handle(self) -> int:
        """The ``CUdevice`` value."""
        return self._dev

    @property
    def name(self) -> str:
        buf = bytearray(256)
        _d.cuDeviceGetName(buf, len(buf), self._dev)
        return bytes(buf).split(b"\0", 1)[0].decode("utf-8", "replace")

    @property
    def uuid(self):
        """The device's UUID (``uuid.UUID``)."""
        import uuid as _uuid

        buf = bytearray(16)
        _d.cuDeviceGetUuid(buf, self._dev)
        return _uuid.UUID(bytes=bytes(buf))

    @property
    def pci_bus_id(self) -> str:
        buf = bytearray(64)
        _d.cuDeviceGetPCIBusId(buf, len(buf), self._dev)
        return bytes(buf).split(b"\0", 1)[0].decode("ascii", "replace")

    def attribute(self, attr) -> int:
        """Value of a device attribute: a ``CUdevice_attribute``, its value, or its
        name with or without the ``CU_DEVICE_ATTRIBUTE_`` prefix (``"warp_size"``)."""
        return _d.cuDeviceGetAttribute(_attribute_id(attr), self._dev)

    @property
    def compute_capability(self) -> Tuple[int, int]:
        return (self.attribute("COMPUTE_CAPABILITY_MAJOR"), self.attribute("COMPUTE_CAPABILITY_MINOR"))

    @property
    def arch(self) -> str:
        """``"sm_XY"`` for this device's compute capability."""
        major, minor = self.compute_capability
        return "sm_%d%d" % (major, minor)

    @property
    def multiprocessor_count(self) -> int:
        return self.attribute("MULTIPROCESSOR_COUNT")

    @property
    def warp_size(self) -> int:
        return self.attribute("WARP_SIZE")

    @property
    def max_threads_per_block(self) -> int:
        return self.attribute("MAX_THREADS_PER_BLOCK")

    @property
    def total_memory(self) -> int:
        return _d.cuDeviceTotalMem(self._dev)

    def mem_info(self) -> Tuple[int, int]:
        """``(free, total)`` bytes of device memory."""
        with self.context._pushed():
            return _d.cuMemGetInfo()

    @property
    def context(self) -> Context:
        """This device's primary context (retained by cuabi on first use)."""
        ctx = self._ctx
        if ctx is None or ctx._h is None:
            with self._cache_lock:
                ctx = self._ctx
                if ctx is None or ctx._h is None:
                    h = _d.cuDevicePrimaryCtxRetain(self._dev)
                    ctx = Context(h, self, owned=True)
                    self._ctx = ctx
                    _ctx_by_handle[h] = ctx
        return ctx

    def set_current(self) -> Context:
        """Make this device's primary context current on the calling thread."""
        return self.context.set_current()

    def synchronize(self) -> None:
        """Wait for all work on this device (its primary context) to finish."""
        self.context.synchronize()

    sync = synchronize

    def create_stream(self, **kwargs) -> "Stream":
        return Stream(device=self, **kwargs)

    def create_event(self, **kwargs) -> "Event":
        return Event(device=self, **kwargs)

    def allocate(self, nbytes, stream=None):
        from ._memory import DeviceBuffer

        return DeviceBuffer(nbytes, stream=stream, device=self)

    def __repr__(self):
        return "<cuabi.Device %d>" % self._ordinal

    def __reduce__(self):
        return (Device, (self._ordinal,))


def devices():
    """Every CUDA device, as a list of :class:`Device`."""
    return [Device(i) for i in range(Device.count())]


# -- streams ---------------------------------------------------------------------------

CU_STREAM_NON_BLOCKING = 1
_STREAM_LEGACY = 1
_STREAM_PER_THREAD = 2


def stream_handle(stream) -> int:
    """The ``CUstream`` for ``stream``: a :class:`Stream`, any object with
    ``__cuda_stream__``, an int handle, or ``None`` (the default stream, 0)."""
    if stream is None:
        return 0
    cls = stream.__class__
    if cls is Stream:
        h = stream._h
        if h is None:
            raise ClosedError("Stream is closed")
        return h
    if isinstance(stream, int) and cls is not bool:
        if stream < 0:
            raise ValueError("a stream handle cannot be negative")
        return int(stream)
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        info = proto() if callable(proto) else proto
        if not (isinstance(info, tuple) and len(info) == 2):
            raise TypeError("__cuda_stream__ must return a (version, handle) tuple")
        return int(info[1])
    if isinstance(stream, Stream):
        return stream.handle
    raise TypeError("expected a cuabi.Stream, an object with __cuda_stream__, an int handle "
                    "or None, got %s" % type(stream).__name__)


class Stream(Resource):
    """A CUDA stream.

    ``Stream(device=None, non_blocking=True, priority=None)`` creates one (lower
    numbers mean higher priority, see :meth:`priority_range`).
    :meth:`from_handle` wraps a stream owned by someone else (never destroyed
    by cuabi); :meth:`default`, :meth:`legacy` and :meth:`per_thread` give the
    special streams.
    """

    __slots__ = ("_owned", "_owner")

    def __init__(self, device=None, *, non_blocking: bool = True, priority: Optional[int] = None):
        super().__init__()
        self._owned = True
        self._owner = None
        ctx = current_context(device)
        flags = CU_STREAM_NON_BLOCKING if non_blocking else 0
        if priority is None:
            h = _d.cuStreamCreate(flags)
        else:
            if not isinstance(priority, int) or isinstance(priority, bool):
                raise TypeError("priority must be an int")
            h = _d.cuStreamCreateWithPriority(flags, priority)
        self._h = h
        ctx._adopt(self)

    @classmethod
    def from_handle(cls, handle, owner=None) -> "Stream":
        """Wrap an existing ``CUstream`` (int, or an object with ``__cuda_stream__``).

        ``owner`` is kept alive as long as the wrapper; the stream is never
        destroyed by cuabi.
        """
        h = stream_handle(handle)
        self = cls.__new__(cls)
        self._h = h
        self._ctx = None
        self._owned = False
        self._owner = owner if owner is not None else (None if isinstance(handle, int) else handle)
        return self

    @classmethod
    def default(cls) -> "Stream":
        """The NULL stream (legacy or per-thread, as the process's mode says)."""
        return cls.from_handle(0)

    @classmethod
    def legacy(cls) -> "Stream":
        """The legacy default stream (``CU_STREAM_LEGACY``)."""
        return cls.from_handle(_STREAM_LEGACY)

    @classmethod
    def per_thread(cls) -> "Stream":
        """The per-thread default stream (``CU_STREAM_PER_THREAD``)."""
        return cls.from_handle(_STREAM_PER_THREAD)

    @staticmethod
    def priority_range() -> Tuple[int, int]:
        """``(least, greatest)`` stream priorities of the current context."""
        current_context()
        return _d.cuCtxGetStreamPriorityRange()

    def _release(self, h):
        if self._owned:
            _d.cuStreamDestroy(h)

    def close(self) -> None:
        """Destroy the stream (work already queued still completes)."""
        if not self._owned:
            self._h = None
            self._owner = None
            return
        super().close()

    @property
    def owned(self) -> bool:
        """False for wrapped foreign or special streams."""
        return self._owned

    @property
    def priority(self) -> int:
        return _d.cuStreamGetPriority(self.handle)

    @property
    def flags(self) -> int:
        return _d.cuStreamGetFlags(self.handle)

    @property
    def context(self) -> Optional[Context]:
        return self._ctx

    def __cuda_stream__(self):
        """The stream protocol: ``(0, handle)``."""
        return (0, self.handle)

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished."""
        _d.cuStreamSynchronize(self.handle)

    sync = synchronize

    def query(self) -> bool:
        """True when all queued work has finished, False while some is pending."""
        try:
            _d.cuStreamQuery(self.handle)
        except CUDAError as exc:
            if exc.code == CUDA_ERROR_NOT_READY:
                return False
            raise
        return True

    def wait(self, event_or_stream) -> None:
        """Make later work on this stream wait for an :class:`Event`, or for all
        work queued so far on another stream."""
        h = self.handle
        if isinstance(event_or_stream, Event):
            _d.cuStreamWaitEvent(h, event_or_stream.handle, 0)
            return
        other = stream_handle(event_or_stream)
        with Event(timing=False) as ev:
            _d.cuEventRecord(ev.handle, other)
            _d.cuStreamWaitEvent(h, ev.handle, 0)

    def record(self, event: Optional["Event"] = None) -> "Event":
        """Record ``event`` (a new one if omitted) on this stream and return it."""
        if event is None:
            event = Event(timing=False)
        event.record(self)
        return event

    def capture(self, mode: str = "global"):
        """Context manager capturing the work queued inside it into a :class:`Graph`.

        ``with stream.capture() as cap: ...`` then ``cap.graph``.
        """
        from ._graph import _Capture

        return _Capture(self, mode)

    def begin_capture(self, mode: str = "global") -> None:
        from ._graph import begin_capture

        begin_capture(self, mode)

    def end_capture(self):
        from ._graph import end_capture

        return end_capture(self)


# -- events ----------------------------------------------------------------------------

CU_EVENT_BLOCKING_SYNC = 0x1
CU_EVENT_DISABLE_TIMING = 0x2
CU_EVENT_INTERPROCESS = 0x4


class Event(Resource):
    """A CUDA event: ``Event(device=None, timing=True, blocking_sync=False)``."""

    __slots__ = ()

    def __init__(self, device=None, *, timing: bool = True, blocking_sync: bool = False,
                 interprocess: bool = False):
        super().__init__()
        ctx = current_context(device)
        flags = 0
        if not timing:
            flags |= CU_EVENT_DISABLE_TIMING
        if blocking_sync:
            flags |= CU_EVENT_BLOCKING_SYNC
        if interprocess:
            if timing:
                raise ValueError("interprocess events must be created with timing=False")
            flags |= CU_EVENT_INTERPROCESS
        self._h = _d.cuEventCreate(flags)
        ctx._adopt(self)

    def _release(self, h):
        _d.cuEventDestroy(h)

    def record(self, stream=None) -> "Event":
        """Record the event on ``stream`` (default: the NULL stream); returns self."""
        _d.cuEventRecord(self.handle, stream_handle(stream))
        return self

    def synchronize(self) -> None:
        """Wait until the work captured by the last :meth:`record` has finished."""
        _d.cuEventSynchronize(self.handle)

    sync = synchronize

    def query(self) -> bool:
        """True when the recorded work has finished."""
        try:
            _d.cuEventQuery(self.handle)
        except CUDAError as exc:
            if exc.code == CUDA_ERROR_NOT_READY:
                return False
            raise
        return True

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds from this event to ``end`` (both recorded and complete)."""
        if not isinstance(end, Event):
            raise TypeError("end must be an Event")
        return _d.cuEventElapsedTime(self.handle, end.handle)

    def __sub__(self, start):
        """``end - start``: elapsed milliseconds."""
        if not isinstance(start, Event):
            return NotImplemented
        return start.elapsed_time(self)

