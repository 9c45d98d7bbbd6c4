# SPDX-License-Identifier: Apache-2.0
"""Contexts: a device's primary context, and the resources that live in it.

Which context a call uses:

* a method of a resource runs in the resource's own context: cuabi pushes it
  for the call when the calling thread has another one (or none) current, and
  pops it after, so methods work from any thread and leave the thread's
  current context as it was;
* a constructor given ``device=`` creates in that device's primary context,
  pushed for the call only;
* a constructor without ``device=`` creates in the thread's current context
  (one another library made current included); when none is current, in
  device 0's primary context, which it then makes current, as the CUDA
  runtime does;
* ``with ctx:`` pushes ``ctx`` for the block and pops it after; only
  :meth:`Context.set_current` and :meth:`cuabi.Device.set_current` change the
  thread's current context for good.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, List, Optional

from . import driver as _d
from ._interrupts import cleanup, deferred
from ._resource import NotCopyable, finalizing
from .errors import ClosedError, CUDAError

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ._device import Device
    from ._resource import Resource


class _Pushed:
    """Make a context current for a block, restoring the previous one after
    (``always``: push even when it is current already, as ``with ctx:`` does).
    A Ctrl-C never leaves the context pushed without its pop."""

    __slots__ = ("h", "pushed", "always")

    def __init__(self, h: int, always: bool = False) -> None:
        self.h = h
        self.pushed = False
        self.always = always

    def __enter__(self) -> "_Pushed":
        try:
            with deferred():
                if self.always or _d.cuCtxGetCurrent() != self.h:
                    _d.cuCtxPushCurrent(self.h)
                    self.pushed = True
        except BaseException:
            cleanup(self._pop)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pushed:
            cleanup(self._pop)

    def _pop(self) -> None:
        if self.pushed:
            self.pushed = False
            _d.cuCtxPopCurrent()


class Context(NotCopyable):
    """A CUDA context: a device's primary context, or (the subclass
    :class:`cuabi.GreenContext`) a green context on some of its SMs.

    Obtain it with :meth:`Device.set_current` or :attr:`Device.context`.
    ``with ctx:`` makes it current for the block (push, then pop).
    ``close()`` closes every cuabi resource still open in the context and then
    releases cuabi's reference on the primary context (``owned``: cuabi
    retained it; a context another library made current is not released).
    It refuses (``BufferError``) while memory of the context is still viewed
    (a host view, a DLPack export), and then closes nothing.
    """

    __slots__ = ("_h", "_device", "_children", "_orphans", "_owned", "_stack", "__weakref__")

    def __init__(self, handle: int, device: "Device", owned: bool) -> None:
        self._h = handle
        self._device = device
        self._children: "weakref.WeakSet[Resource]" = weakref.WeakSet()
        self._orphans: "set[Any]" = set()
        self._owned = owned
        self._stack: "List[_Pushed]" = []

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
        """A context manager making this context current for a block, when it is not."""
        return _Pushed(self.handle)

    def set_current(self) -> "Context":
        """Make this context current on the calling thread."""
        _d.cuCtxSetCurrent(self.handle)
        return self

    def sync(self) -> None:
        """Wait for all work in this context to finish."""
        with self._pushed():
            _d.cuCtxSynchronize()

    def _orphan(self, obj: Any) -> None:
        """Keep ``obj`` (memory whose Python owner is gone while views of it
        live on) until it frees itself: the context cannot close before."""
        self._orphans.add(obj)

    def _busy(self) -> Optional[str]:
        """Why this context cannot close now (memory still viewed), or None."""
        for child in list(self._children) + list(self._orphans):
            why = getattr(child, "_busy", None)
            reason = why() if why is not None else None
            if reason:
                return reason
        return None

    def close(self) -> None:
        """Close all resources of this context, then release the primary context.

        Raises ``BufferError`` (and closes nothing) while some of its memory is
        still viewed by another object."""
        if self._h is None:
            return
        reason = self._busy()
        if reason:
            raise BufferError("cannot close the context: %s" % reason)
        for child in list(self._children):
            try:
                child.close()
            except CUDAError:
                pass
        with deferred():
            h = self._h
            if h is None:
                return
            self._h = None
            if self._owned and not finalizing():
                try:
                    if _d.cuCtxGetCurrent() == h:
                        _d.cuCtxSetCurrent(0)
                except CUDAError:
                    pass
                self._let_go()

    def _let_go(self) -> None:
        """Release cuabi's hold on the driver context (its objects are closed
        and it is no longer current here): a primary context's reference."""
        _d.cuDevicePrimaryCtxRelease(self._device.handle)

    def __enter__(self) -> "Context":
        p = _Pushed(self.handle, always=True)
        try:
            with deferred():
                p.__enter__()
                self._stack.append(p)
        except BaseException:  # a Ctrl-C noted meanwhile: leave nothing pushed
            cleanup(self._unpush, p)
            raise
        return self

    def _unpush(self, p: _Pushed) -> None:
        if p in self._stack:
            self._stack.remove(p)
        p._pop()

    def __exit__(self, *exc: object) -> None:
        cleanup(self._pop_one)

    def _pop_one(self) -> None:
        stack = self._stack
        if stack:
            stack.pop()._pop()

    def __repr__(self) -> str:
        state = "closed" if self._h is None else "0x%x" % self._h
        return "<cuabi.Context %s of device %d>" % (state, self._device.device_id)
