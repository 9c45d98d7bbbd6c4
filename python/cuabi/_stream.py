# SPDX-License-Identifier: Apache-2.0
"""Streams, and what cuabi accepts wherever it takes a stream (:func:`stream_handle`)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from . import driver as _d
from ._constants import CU_STREAM_LEGACY, CU_STREAM_NON_BLOCKING, CU_STREAM_PER_THREAD
from ._context import Context
from ._device import current_context
from ._event import Event, finished
from ._interrupts import deferred
from ._resource import Resource
from .errors import ClosedError


def stream_handle(stream: Any) -> int:
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

    def __init__(self, device: Any = None, *, non_blocking: bool = True,
                 priority: Optional[int] = None) -> None:
        super().__init__()
        self._owned = True
        self._owner = None
        if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
            raise TypeError("priority must be an int, got %s" % type(priority).__name__)
        ctx = current_context(device)
        flags = CU_STREAM_NON_BLOCKING if non_blocking else 0
        with deferred(), ctx._pushed():
            if priority is None:
                self._h = _d.cuStreamCreate(flags)
            else:
                self._h = _d.cuStreamCreateWithPriority(flags, priority)
            ctx._adopt(self)

    @classmethod
    def from_handle(cls, handle: Any, owner: Any = None) -> "Stream":
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
        return cls.from_handle(CU_STREAM_LEGACY)

    @classmethod
    def per_thread(cls) -> "Stream":
        """The per-thread default stream (``CU_STREAM_PER_THREAD``)."""
        return cls.from_handle(CU_STREAM_PER_THREAD)

    @staticmethod
    def priority_range() -> Tuple[int, int]:
        """``(least, greatest)`` stream priorities of the current context."""
        current_context()
        return _d.cuCtxGetStreamPriorityRange()

    def _release(self, h: int) -> None:
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
        """The stream's priority (lower numbers run first)."""
        h = self.handle
        with self._in_context():
            return _d.cuStreamGetPriority(h)

    @property
    def flags(self) -> int:
        """The ``CUstream_flags`` it was created with."""
        h = self.handle
        with self._in_context():
            return _d.cuStreamGetFlags(h)

    @property
    def context(self) -> Optional[Context]:
        return self._ctx

    def __cuda_stream__(self) -> Tuple[int, int]:
        """The stream protocol: ``(0, handle)``."""
        return (0, self.handle)

    def sync(self) -> None:
        """Wait until all work queued on this stream has finished."""
        h = self.handle
        with self._in_context():
            _d.cuStreamSynchronize(h)

    def query(self) -> bool:
        """True when all queued work has finished, False while some is pending."""
        h = self.handle
        with self._in_context():
            return finished(_d.cuStreamQuery, h)

    def wait(self, event_or_stream: Any) -> None:
        """Make later work on this stream wait for an :class:`Event`, or for all
        work queued so far on another stream."""
        h = self.handle
        if isinstance(event_or_stream, Event):
            eh = event_or_stream.handle
            with self._in_context():
                _d.cuStreamWaitEvent(h, eh, 0)
            return
        other = stream_handle(event_or_stream)
        with self._in_context(), Event(timing=False) as ev:
            _d.cuEventRecord(ev.handle, other)
            _d.cuStreamWaitEvent(h, ev.handle, 0)

    def record(self, event: Optional[Event] = None, *, timing: bool = False) -> Event:
        """Record ``event`` on this stream and return it; without one, a new
        :class:`Event` (``timing=True`` makes it a timing event, so that
        ``end - start`` works; off by default, as for ``Event()``)."""
        if event is not None and not isinstance(event, Event):
            raise TypeError("event must be a cuabi.Event, got %s" % type(event).__name__)
        if event is not None and timing:
            raise ValueError("timing= is for the event record() makes; the event given was made "
                             "%s timing" % ("with" if event.timing else "without"))
        h = self.handle
        with self._in_context():
            if event is None:
                event = Event(timing=timing)
            event._record_on(h)
        return event
