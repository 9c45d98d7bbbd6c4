"""Contexts: a device's primary context, and the resources that live in it."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from . import driver as _d
from ._resource import finalizing
from .errors import ClosedError, CUDAError

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ._device import Device
    from ._resource import Resource


class _Pushed:
    """Make a context current for a block, restoring the previous one after."""

    __slots__ = ("h", "pushed")

    def __init__(self, h: int) -> None:
        self.h = h
        self.pushed = False

    def __enter__(self) -> "_Pushed":
        if _d.cuCtxGetCurrent() != self.h:
            _d.cuCtxPushCurrent(self.h)
            self.pushed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pushed:
            _d.cuCtxPopCurrent()


class Context:
    """A CUDA context; cuabi uses each device's primary context.

    Obtain it with :meth:`Device.set_current` or :attr:`Device.context`.
    ``close()`` closes every cuabi resource still open in the context and then
    releases cuabi's reference on the primary context (``owned``: cuabi
    retained it; a context another library made current is not released).
    """

    __slots__ = ("_h", "_device", "_children", "_owned", "__weakref__")

    def __init__(self, handle: int, device: "Device", owned: bool) -> None:
        self._h = handle
        self._device = device
        self._children: "weakref.WeakSet[Resource]" = weakref.WeakSet()
        self._owned = owned

    @property
    def handle(self) -> int:
        h = self._h
        if h is None:
            raise ClosedError("Context is closed")
        return h

    def _cuabi_address(self) -> int:
        return self.handle

    @property
    def closed(self) -> bool:
        return self._h is None

    @property
    def device(self) -> "Device":
        return self._device

    def _adopt(self, res: Any) -> None:
        """Make ``res`` one of this context's resources (closed with it)."""
        if self._h is None:
            raise ClosedError("Context is closed")
        res._ctx = self
        self._children.add(res)

    def _forget(self, res: Any) -> None:
        self._children.discard(res)

    def _pushed(self) -> _Pushed:
        return _Pushed(self.handle)

    def set_current(self) -> "Context":
        """Make this context current on the calling thread."""
        _d.cuCtxSetCurrent(self.handle)
        return self

    def sync(self) -> None:
        """Wait for all work in this context to finish."""
        with self._pushed():
            _d.cuCtxSynchronize()

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
        if self._owned and not finalizing():
            try:
                if _d.cuCtxGetCurrent() == h:
                    _d.cuCtxSetCurrent(0)
            except CUDAError:
                pass
            _d.cuDevicePrimaryCtxRelease(self._device.handle)

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._h is None else "0x%x" % self._h
        return "<cuabi.Context %s of device %d>" % (state, self._device.device_id)
