# SPDX-License-Identifier: Apache-2.0
"""Green contexts: contexts that run on a partition of a device's SMs.

The steps are the driver's, one object each:

1. :func:`sm_resource` (or :attr:`GreenContext.sm_resource`): the SMs of a
   device, an :class:`SMResource` (plain data, ``cuDeviceGetDevResource``);
2. :meth:`SMResource.split`: disjoint groups of at least ``min_sms`` SMs and
   the remainder (``cuDevSmResourceSplitByCount``);
3. :class:`GreenContext(groups)`: a descriptor of the groups
   (``cuDevResourceGenerateDesc``), the green context
   (``cuGreenCtxCreate``) and its ``CUcontext`` (``cuCtxFromGreenCtx``).

A :class:`GreenContext` is a :class:`cuabi.Context`: ``with gctx:`` makes it
current, and what is made meanwhile (buffers, modules, events, streams of
``Stream()``) belongs to it and is closed with it; its own streams come from
:meth:`GreenContext.create_stream` (``cuGreenCtxStreamCreate``).
``close()`` closes every resource of the green context first (the driver
leaves its streams dangling otherwise), then destroys it; garbage collection
does the same for one left open.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any, Iterable, List, Optional, Tuple, Union

from . import driver as _d
from ._constants import CU_STREAM_NON_BLOCKING
from ._context import Context
from ._device import Device, _ctx_by_handle
from ._event import Event
from ._interrupts import cleanup, deferred
from ._resource import Resource
from ._stream import Stream
from .errors import ClosedError

# CUDA 13.0's cuda.h: CUdevResourceType, CUgreenCtxCreate_flags, CUdevSmResourceSplit_flags
_CU_DEV_RESOURCE_TYPE_SM = 1
_CU_GREEN_CTX_DEFAULT_STREAM = 1
_SPLIT_IGNORE_SM_COSCHEDULING = 1
_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE = 2

RESOURCE_SIZE = 144  # sizeof(CUdevResource)
_SM_FIELDS = struct.Struct("=III")  # CUdevSmResource: smCount, minSmPartitionSize, smCoscheduledAlignment
_SM_OFFSET = 96  # after the type (4 bytes) and 92 bytes the driver keeps for itself
_split_ids = itertools.count(1)  # tells the outputs of one split from those of another


class SMResource:
    """A set of a device's SMs, as the driver describes it (a ``CUdevResource``
    of type SM): plain data, nothing to release.

    ``sm_count``, ``min_partition_size`` (the fewest SMs a group of a split
    may have) and ``coscheduled_alignment`` (group sizes are rounded up to a
    multiple of it), ``device``; ``from_split`` is True for the groups and
    the remainder a split made, which the driver does not split again (make
    a :class:`GreenContext` of one and split its :attr:`~GreenContext.sm_resource`).
    """

    __slots__ = ("_raw", "device", "from_split", "_split_id")

    def __init__(self, raw: bytes, device: Device, split_id: int = 0) -> None:
        if len(raw) != RESOURCE_SIZE:
            raise ValueError("a CUdevResource is %d bytes, got %d" % (RESOURCE_SIZE, len(raw)))
        self._raw = bytes(raw)
        self.device = device
        self._split_id = split_id
        self.from_split = split_id != 0

    @property
    def sm_count(self) -> int:
        return _SM_FIELDS.unpack_from(self._raw, _SM_OFFSET)[0]

    @property
    def min_partition_size(self) -> int:
        return _SM_FIELDS.unpack_from(self._raw, _SM_OFFSET)[1]

    @property
    def coscheduled_alignment(self) -> int:
        return _SM_FIELDS.unpack_from(self._raw, _SM_OFFSET)[2]

    def __bytes__(self) -> bytes:
        """The ``CUdevResource`` itself (for ``cuabi.driver`` calls)."""
        return self._raw

    def split(self, count: Optional[int] = None, *, min_sms: int = 0, coscheduling: bool = True,
              max_cluster_size: bool = False) -> Tuple[List["SMResource"], "SMResource"]:
        """Split into disjoint groups of at least ``min_sms`` SMs each.

        Returns ``(groups, remainder)``: ``count`` groups (all the driver can
        make when None; fewer when fewer fit), each of the same size (the
        driver rounds ``min_sms`` up to :attr:`min_partition_size` and to a
        multiple of :attr:`coscheduled_alignment`), and the SMs left over
        (possibly none, ``sm_count == 0``).  ``coscheduling=False`` allows
        finer groups at the cost of large clusters
        (``CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING``);
        ``max_cluster_size=True`` asks for groups that fit the largest
        clusters (compute capability 9.0 and later).
        """
        if self.from_split:
            raise ValueError("this SMResource came from a split, which the driver does not split again; make a "
                             "GreenContext of it and split that context's sm_resource")
        if not isinstance(min_sms, int) or isinstance(min_sms, bool):
            raise TypeError("min_sms must be an int, got %s" % type(min_sms).__name__)
        total = self.sm_count
        if not 0 <= min_sms <= total:
            raise ValueError("min_sms=%d is outside 0..%d, the SMs of this resource" % (min_sms, total))
        flags = (0 if coscheduling else _SPLIT_IGNORE_SM_COSCHEDULING) | \
            (_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE if max_cluster_size else 0)
        possible = _d.cuDevSmResourceSplitByCount(0, 0, self._raw, 0, flags, min_sms)
        if count is None:
            count = possible
        elif not isinstance(count, int) or isinstance(count, bool):
            raise TypeError("count must be an int or None, got %s" % type(count).__name__)
        elif count < 1:
            raise ValueError("count must be at least 1, got %d" % count)
        if possible == 0 or count == 0:
            raise ValueError("no group of %d or more SMs fits in %d SMs (min_partition_size %d, alignment %d)"
                             % (min_sms, total, self.min_partition_size, self.coscheduled_alignment))
        out = bytearray(RESOURCE_SIZE * count)
        rest = bytearray(RESOURCE_SIZE)
        made = _d.cuDevSmResourceSplitByCount(out, count, self._raw, rest, flags, min_sms)
        split_id = next(_split_ids)  # the groups and remainder of one split may go into one GreenContext
        groups = [SMResource(bytes(out[i * RESOURCE_SIZE:(i + 1) * RESOURCE_SIZE]), self.device, split_id)
                  for i in range(made)]
        return groups, SMResource(bytes(rest), self.device, split_id)

    def __repr__(self) -> str:
        return "<cuabi.SMResource %d SMs of device %d%s>" % (
            self.sm_count, self.device.device_id, ", from a split" if self.from_split else "")


def sm_resource(device: Any = None) -> SMResource:
    """All SMs of ``device`` (a :class:`cuabi.Device` or an ordinal; the
    current device when None), as an :class:`SMResource` to split."""
    dev = Device(device)
    raw = bytearray(RESOURCE_SIZE)
    _d.cuDeviceGetDevResource(dev.handle, raw, _CU_DEV_RESOURCE_TYPE_SM)
    return SMResource(bytes(raw), dev)


class GreenContext(Context):
    """A context on some SMs of a device:
    ``GreenContext(resources)``, where ``resources`` is an :class:`SMResource`
    or a list of them from one split (groups and remainder), all of one device.

    It is a :class:`cuabi.Context` (``handle`` is the ``CUcontext`` that
    ``cuCtxFromGreenCtx`` gives): ``with gctx:`` makes it current for a block,
    so that buffers, modules and events made there are its own, and a
    ``launch`` there runs on its SMs.  ``green_handle`` is the ``CUgreenCtx``.
    ``create_stream()`` makes its streams; ``record()`` and ``wait()`` order
    all of its work against events.  ``close()`` closes its resources, then
    destroys it; it refuses (``BufferError``) while its memory is still viewed.
    """

    __slots__ = ("_green", "_resources")

    def __init__(self, resources: Union[SMResource, Iterable[SMResource]]) -> None:
        items = [resources] if isinstance(resources, SMResource) else list(resources)
        if not items:
            raise ValueError("a GreenContext needs at least one SMResource")
        for r in items:
            if not isinstance(r, SMResource):
                raise TypeError("GreenContext takes SMResource objects, got %s" % type(r).__name__)
        dev = items[0].device
        if any(r.device is not dev for r in items):
            raise ValueError("the SMResources of a GreenContext must all be of one device")
        if len(items) > 1 and (any(r._split_id != items[0]._split_id for r in items) or not items[0].from_split):
            raise ValueError("several SMResources go into one GreenContext only when one split made them all")
        if sum(r.sm_count for r in items) == 0:
            raise ValueError("these SMResources hold no SM (an empty remainder?)")
        dev.context  # the driver retains the primary context: keep it alive meanwhile, as cuda.h advises
        raw = b"".join(r._raw for r in items)
        self._green: Optional[int] = None
        desc = _d.cuDevResourceGenerateDesc(bytearray(raw), len(items))
        with deferred():
            green = _d.cuGreenCtxCreate(desc, dev.handle, _CU_GREEN_CTX_DEFAULT_STREAM)
            try:
                h = _d.cuCtxFromGreenCtx(green)
            except BaseException:
                cleanup(_d.cuGreenCtxDestroy, green)
                raise
            super().__init__(h, dev, owned=True)
            self._green = green
            self._resources = tuple(items)
            _ctx_by_handle[h] = self

    @property
    def green_handle(self) -> int:
        """The ``CUgreenCtx``."""
        g = self._green
        if g is None or self._h is None:
            raise ClosedError("GreenContext is closed")
        return g

    @property
    def sm_resource(self) -> SMResource:
        """The SMs this green context runs on (``cuGreenCtxGetDevResource``);
        unlike a split's groups, it can be split again."""
        raw = bytearray(RESOURCE_SIZE)
        _d.cuGreenCtxGetDevResource(self.green_handle, raw, _CU_DEV_RESOURCE_TYPE_SM)
        return SMResource(bytes(raw), self._device)

    @property
    def sm_count(self) -> int:
        """How many SMs it runs on."""
        return self.sm_resource.sm_count

    def create_stream(self, *, priority: int = 0) -> Stream:
        """A new stream of this green context (``cuGreenCtxStreamCreate``;
        non-blocking, as the driver requires), closed with it."""
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError("priority must be an int, got %s" % type(priority).__name__)
        g = self.green_handle
        s = Stream.__new__(Stream)
        Resource.__init__(s)
        s._owned = True
        s._owner = None
        with deferred():
            s._h = _d.cuGreenCtxStreamCreate(g, CU_STREAM_NON_BLOCKING, priority)
            self._adopt(s)
        return s

    def record(self, event: Optional[Event] = None) -> Event:
        """Record in ``event`` (a new one, without timing, when None) all work
        issued to this green context so far, on any of its streams
        (``cuGreenCtxRecordEvent``); return the event."""
        if event is not None and not isinstance(event, Event):
            raise TypeError("event must be a cuabi.Event, got %s" % type(event).__name__)
        g = self.green_handle
        if event is None:
            with self._pushed():
                event = Event()
        _d.cuGreenCtxRecordEvent(g, event.handle)
        event._recorded = True
        return event

    def wait(self, event: Event) -> None:
        """Make all later work of this green context wait for ``event``
        (``cuGreenCtxWaitEvent``; the event may be of another context)."""
        if not isinstance(event, Event):
            raise TypeError("event must be a cuabi.Event, got %s" % type(event).__name__)
        _d.cuGreenCtxWaitEvent(self.green_handle, event.handle)

    def _let_go(self) -> None:
        g, self._green = self._green, None
        if g is not None:
            _d.cuGreenCtxDestroy(g)

    def close(self) -> None:
        """Close every resource of this green context (streams included),
        then destroy it (which releases the driver's hold on the primary
        context).  Raises ``BufferError``, closing nothing, while its memory
        is still viewed."""
        h = self._h
        super().close()
        if h is not None and self._h is None:
            _ctx_by_handle.pop(h, None)

    def _finalize(self) -> None:
        """What garbage collection does with an open green context: close it."""
        self.close()

    __del__ = Resource.__del__  # released as resources are: not at shutdown, errors ignored

    def __repr__(self) -> str:
        if self._h is None:
            return "<cuabi.GreenContext closed, device %d>" % self._device.device_id
        return "<cuabi.GreenContext 0x%x, %d SMs of device %d>" % (
            self._h, sum(r.sm_count for r in self._resources), self._device.device_id)
