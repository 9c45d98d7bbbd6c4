# SPDX-License-Identifier: Apache-2.0
"""Devices, driver initialisation, and which context new resources go to."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple

from . import driver as _d
from ._constants import CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
from ._context import Context
from ._interrupts import deferred
from .errors import CUDAError

_init_lock = threading.Lock()
_initialized = False


def init() -> None:
    """Initialise the driver (``cuInit(0)``) once per process; cheap afterwards."""
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if not _initialized:
            _d.cuInit(0)
            _initialized = True


# contexts cuabi knows, by handle: primary contexts it retained, and foreign
# ones it found current
_ctx_by_handle: "weakref.WeakValueDictionary[int, Context]" = weakref.WeakValueDictionary()


def current_context(device: Any = None) -> Context:
    """The context cuabi creates resources in (see cuabi._context).

    With ``device`` given, that device's primary context, not made current
    (constructors push it for their call); otherwise the context current on
    this thread (even one made current by another library), or, when none is
    current, the primary context of device 0, made current - as the CUDA
    runtime does.
    """
    init()
    if device is not None:
        dev = device if isinstance(device, Device) else Device(device)
        return dev.context
    h = _d.cuCtxGetCurrent()
    if h:
        ctx = _ctx_by_handle.get(h)
        if ctx is not None and ctx._h == h:
            return ctx
        dev = Device(_d.cuCtxGetDevice())
        pctx = dev.context
        if pctx._h == h:
            return pctx
        foreign = Context(h, dev, owned=False)
        _ctx_by_handle[h] = foreign
        return foreign
    return Device(0).set_current()


def _attribute_id(attr: Any) -> int:
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

    __slots__ = ("_id", "_dev", "_ctx", "__weakref__")
    _cache: Dict[int, "Device"] = {}
    _cache_lock = threading.Lock()

    def __new__(cls, device_id: Optional[int] = None) -> "Device":
        if device_id is None:
            init()
            try:
                device_id = _d.cuCtxGetDevice() if _d.cuCtxGetCurrent() else 0
            except CUDAError:
                device_id = 0
        if isinstance(device_id, Device):
            return device_id
        if not isinstance(device_id, int) or isinstance(device_id, bool):
            raise TypeError("device ordinal must be an int, got %s" % type(device_id).__name__)
        dev = cls._cache.get(device_id)
        if dev is not None:
            return dev
        init()
        count = _d.cuDeviceGetCount()
        if not 0 <= device_id < count:
            raise ValueError("device ordinal %d is out of range: %d device(s) present" % (device_id, count))
        with cls._cache_lock:
            dev = cls._cache.get(device_id)
            if dev is None:
                dev = object.__new__(cls)
                dev._id = device_id
                dev._dev = _d.cuDeviceGet(device_id)
                dev._ctx = None
                cls._cache[device_id] = dev
        return dev

    @staticmethod
    def count() -> int:
        """How many CUDA devices the driver sees."""
        init()
        return _d.cuDeviceGetCount()

    @property
    def device_id(self) -> int:
        """The device's ordinal (0 for the first)."""
        return self._id

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
    def uuid(self) -> Any:
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

    def attribute(self, attr: Any) -> int:
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
            with self._cache_lock, deferred():
                ctx = self._ctx
                if ctx is None or ctx._h is None:
                    h = _d.cuDevicePrimaryCtxRetain(self._dev)
                    ctx = Context(h, self, owned=True)
                    self._ctx = ctx
                    _ctx_by_handle[h] = ctx
        return ctx

    def can_access_peer(self, peer: Any) -> bool:
        """Whether kernels and copies on this device can reach ``peer``'s
        memory (a :class:`Device` or an ordinal) once peer access is enabled.
        A device always reaches its own memory: True for itself."""
        peer = Device(peer)
        if peer is self:
            return True
        return bool(_d.cuDeviceCanAccessPeer(self._dev, peer._dev))

    def enable_peer_access(self, peer: Any) -> None:
        """Let this device's primary context reach memory of ``peer``'s
        primary context (``cuCtxEnablePeerAccess``).  Enabling it again is a
        no-op.  For the device itself there is nothing to enable, and a
        device that cannot reach ``peer`` (:meth:`can_access_peer`), a
        ``ValueError`` says so."""
        peer = self._peer(peer)
        peer_ctx = peer.context
        with self.context._pushed():
            try:
                _d.cuCtxEnablePeerAccess(peer_ctx.handle, 0)
            except CUDAError as exc:
                if exc.code != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
                    raise

    def disable_peer_access(self, peer: Any) -> None:
        """Undo :meth:`enable_peer_access` (a no-op where it is not enabled)."""
        peer = self._peer(peer)
        peer_ctx = peer.context
        with self.context._pushed():
            try:
                _d.cuCtxDisablePeerAccess(peer_ctx.handle)
            except CUDAError as exc:
                if exc.code != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED:
                    raise

    def _peer(self, peer: Any) -> "Device":
        """``peer`` as another Device this one can reach, or a ValueError saying why not."""
        peer = Device(peer)
        if peer is self:
            raise ValueError("%r is the device itself: peer access is between two devices, and a "
                             "device always reaches its own memory" % (peer,))
        if not _d.cuDeviceCanAccessPeer(self._dev, peer._dev):
            raise ValueError("%r cannot reach the memory of %r (cuDeviceCanAccessPeer: no; no "
                             "NVLink or PCIe peer path between them)" % (self, peer))
        return peer

    def set_current(self) -> Context:
        """Make this device's primary context current on the calling thread."""
        return self.context.set_current()

    def sync(self) -> None:
        """Wait for all work on this device (its primary context) to finish."""
        self.context.sync()

    def __repr__(self) -> str:
        return "<cuabi.Device %d>" % self._id

    def __reduce__(self) -> Any:
        return (Device, (self._id,))


def devices() -> List[Device]:
    """Every CUDA device, as a list of :class:`Device`."""
    return [Device(i) for i in range(Device.count())]
