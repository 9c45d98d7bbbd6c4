# SPDX-License-Identifier: Apache-2.0
"""Events: points in a stream's work to wait for or time (record them with
:meth:`cuabi.Stream.record`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable

from . import driver as _d
from ._constants import (CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS,
                         CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_NOT_READY)
from ._device import current_context
from ._interrupts import deferred
from ._resource import Resource
from .errors import CUDAError

if TYPE_CHECKING:
    from ._ipc import IpcEventHandle


def finished(query: Callable[[int], None], handle: int) -> bool:
    """What ``cuStreamQuery``/``cuEventQuery`` (``query``) says of ``handle``:
    True when its work has finished, False while some is pending."""
    try:
        query(handle)
    except CUDAError as exc:
        if exc.code == CUDA_ERROR_NOT_READY:
            return False
        raise
    return True


class Event(Resource):
    """A CUDA event: ``Event(device=None, timing=False, blocking_sync=False, interprocess=False)``.

    Timing is off unless asked for (``timing=True``): most events only order
    work (``stream.wait(event)``) or are polled, and the driver is fastest
    for those with timing disabled.  Timing with an event made without it is
    a ``ValueError`` that says so.

    An event made with ``interprocess=True`` can be waited for by another
    process: :meth:`ipc_handle` describes it, :meth:`from_ipc_handle` opens
    it there.
    """

    __slots__ = ("_timing", "_recorded", "_interprocess")

    def __init__(self, device: Any = None, *, timing: bool = False, blocking_sync: bool = False,
                 interprocess: bool = False) -> None:
        super().__init__()
        self._timing = bool(timing)
        self._recorded = False
        self._interprocess = bool(interprocess)
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
        with deferred(), ctx._pushed():
            self._h = _d.cuEventCreate(flags)
            ctx._adopt(self)

    def _release(self, h: int) -> None:
        _d.cuEventDestroy(h)

    def ipc_handle(self) -> "IpcEventHandle":
        """What another process needs to open this event: a picklable
        :class:`cuabi.IpcEventHandle` (``cuIpcGetEventHandle``).

        The event must have been made with ``interprocess=True``; keep it
        open while other processes use their copies (the driver cannot tell
        this process that they still do)."""
        from ._ipc import IpcEventHandle

        h = self.handle
        if not self._interprocess:
            raise ValueError("this Event cannot be shared with another process: make it with "
                             "Event(interprocess=True)")
        data = bytearray(64)
        with self._in_context():
            _d.cuIpcGetEventHandle(data, h)
        return IpcEventHandle(bytes(data), os.getpid())

    @classmethod
    def from_ipc_handle(cls, handle: "IpcEventHandle", device: Any = None) -> "Event":
        """The event another process described with :meth:`ipc_handle`,
        opened in this process (``cuIpcOpenEventHandle``): record it, wait for
        it, sync or query it as a local event (timing is off).  ``close()``
        releases this process's copy only."""
        from ._ipc import IpcEventHandle, exporter_alive

        if not isinstance(handle, IpcEventHandle):
            raise TypeError("from_ipc_handle takes a cuabi.IpcEventHandle (Event.ipc_handle()), got %s"
                            % type(handle).__name__)
        if handle.pid == os.getpid():
            raise ValueError("this IpcEventHandle comes from this process: use the Event itself")
        exporter_alive(handle.pid, "this IpcEventHandle")
        ctx = current_context(device)
        self = cls.__new__(cls)
        Resource.__init__(self)
        self._timing = False
        self._recorded = False
        self._interprocess = True
        with deferred(), ctx._pushed():
            self._h = _d.cuIpcOpenEventHandle(handle.data)
            ctx._adopt(self)
        return self

    def _record_on(self, stream: int) -> None:
        """Record on the stream handle ``stream`` (what :meth:`cuabi.Stream.record` does)."""
        h = self.handle
        with self._in_context():
            _d.cuEventRecord(h, stream)
        self._recorded = True

    @property
    def timing(self) -> bool:
        """Whether the event records times (``timing=True``; off by default)."""
        return self._timing

    def sync(self) -> None:
        """Wait until the work before the event's last recording has finished."""
        h = self.handle
        with self._in_context():
            _d.cuEventSynchronize(h)

    def query(self) -> bool:
        """True when the recorded work has finished."""
        h = self.handle
        with self._in_context():
            return finished(_d.cuEventQuery, h)

    def __sub__(self, start: "Event") -> float:
        """``end - start``: milliseconds between two recorded, completed timing events."""
        if not isinstance(start, Event):
            return NotImplemented
        for ev, which in ((start, "start"), (self, "end")):
            if not ev._timing:
                raise ValueError("cannot time with the %s event: it was made without timing (the "
                                 "default); make it with Event(timing=True) or stream.record(timing=True)"
                                 % which)
        sh, eh = start.handle, self.handle
        try:
            with self._in_context():
                return _d.cuEventElapsedTime(sh, eh)
        except CUDAError as exc:
            if exc.code == CUDA_ERROR_INVALID_HANDLE:
                unrecorded = [w for ev, w in ((start, "start"), (self, "end")) if not ev._recorded]
                hint = ("the %s event was never recorded (stream.record(event))" % " and ".join(unrecorded)
                        if unrecorded else "both events must be recorded timing events of one context")
                exc.args = ("%s: %s" % (exc.args[0], hint),)
            raise
