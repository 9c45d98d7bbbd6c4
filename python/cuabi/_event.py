"""Events: points in a stream's work to wait for or time (record them with
:meth:`cuabi.Stream.record`)."""

from __future__ import annotations

from typing import Any, Callable

from . import driver as _d
from ._constants import (CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS,
                         CUDA_ERROR_NOT_READY)
from ._device import current_context
from ._resource import Resource
from .errors import CUDAError


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
    """A CUDA event: ``Event(device=None, timing=True, blocking_sync=False, interprocess=False)``."""

    __slots__ = ()

    def __init__(self, device: Any = None, *, timing: bool = True, blocking_sync: bool = False,
                 interprocess: bool = False) -> None:
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

    def _release(self, h: int) -> None:
        _d.cuEventDestroy(h)

    def sync(self) -> None:
        """Wait until the work before the event's last recording has finished."""
        _d.cuEventSynchronize(self.handle)

    def query(self) -> bool:
        """True when the recorded work has finished."""
        return finished(_d.cuEventQuery, self.handle)

    def __sub__(self, start: "Event") -> float:
        """``end - start``: milliseconds between two recorded, completed timing events."""
        if not isinstance(start, Event):
            return NotImplemented
        return _d.cuEventElapsedTime(start.handle, self.handle)
