# SPDX-License-Identifier: Apache-2.0
"""Memory resources: one small protocol for code that allocates memory
without caring which kind it gets.

A memory resource hands out buffers with ``allocate(size, stream=None)`` and
takes them back with ``deallocate(buffer, stream=None)``, and says where its
memory can be reached from (``is_device_accessible``, ``is_host_accessible``)
and which device it belongs to (``device_id``).  Four kinds implement it:

* :class:`cuabi.MemoryPool` (``cuabi._memory``): device memory from a
  stream-ordered pool (a pool of one's own, or ``MemoryPool.default()``);
* :class:`PinnedMemoryResource`: page-locked host memory (``cuMemHostAlloc``);
* :class:`ManagedMemoryResource`: unified memory (``cuMemAllocManaged``);
* :class:`cuabi.VirtualMemoryResource` (``cuabi._vmm``): device memory mapped
  into reserved address space, in buffers that can grow.

The pinned and managed kinds allocate at once, not in stream order: their
``stream`` arguments are accepted so that every resource is called the same
way, and they are not used.  Pools of pinned host memory and of managed
memory, and the graph memory resource, are in ``cuabi._pools``.

One rule for misuse, the same for every resource: ``deallocate`` raises
``TypeError`` for an object of a kind the resource never hands out, and
``ValueError`` for a buffer of that kind that another resource allocated
(nothing is freed either way); deallocating a buffer already closed does
nothing, as closing it twice does.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol, runtime_checkable

from ._device import Device, current_context
from ._memory import ManagedBuffer, PinnedBuffer, ResourcePlace, check_owner


@runtime_checkable
class MemoryResource(Protocol):
    """What a memory resource offers (``isinstance(mr, MemoryResource)``
    checks for these members)."""

    def allocate(self, size: int, stream: Any = None) -> Any:
        """A new buffer of ``size`` bytes (stream-ordered on ``stream`` where the kind is)."""

    def deallocate(self, buffer: Any, stream: Any = None) -> None:
        """Free a buffer this resource allocated (on ``stream`` where stream-ordered)."""

    @property
    def is_device_accessible(self) -> bool:
        """Whether kernels can read and write the memory."""

    @property
    def is_host_accessible(self) -> bool:
        """Whether the CPU can read and write the memory."""

    @property
    def device_id(self) -> int:
        """The ordinal of the device the memory belongs to."""


class _ImmediateResource(ResourcePlace):
    """A resource whose buffers are allocated at once and reachable from both
    the host and the device; a subclass sets ``_kind`` and ``_new``."""

    __slots__ = ("_device", "_mine")
    _kind: type = object
    _host_accessible = True

    def __init__(self, device: Any = None) -> None:
        self._device = current_context(device).device if device is None else Device(device)
        self._mine: "weakref.WeakSet[Any]" = weakref.WeakSet()  # what this resource allocated

    def _new(self, size: int) -> Any:  # pragma: no cover - each subclass has its own
        raise NotImplementedError

    def allocate(self, size: int, stream: Any = None) -> Any:
        """A new buffer of ``size`` bytes (``stream`` is not used: the allocation is immediate)."""
        buf = self._new(size)
        self._mine.add(buf)
        return buf

    def deallocate(self, buffer: Any, stream: Any = None) -> None:
        """Free ``buffer``, which this resource allocated (``stream`` is not
        used); refuses while host views of it live, as ``close()`` does."""
        check_owner(self, buffer, self._kind, buffer in self._mine if isinstance(buffer, self._kind) else False)
        buffer.close()

    def __repr__(self) -> str:
        return "<cuabi.%s device %d>" % (type(self).__name__, self._device.device_id)


class PinnedMemoryResource(_ImmediateResource):
    """Page-locked host memory, mapped for the device: ``PinnedMemoryResource(device=None)``.

    ``allocate`` returns a :class:`cuabi.PinnedBuffer` (portable, and mapped
    into the device's address space); both the host and kernels reach it.
    """

    __slots__ = ()
    _kind = PinnedBuffer

    def _new(self, size: int) -> PinnedBuffer:
        return PinnedBuffer(size, portable=True, device_map=True, device=self._device)


class ManagedMemoryResource(_ImmediateResource):
    """Unified memory: ``ManagedMemoryResource(device=None, attach="global")``.

    ``allocate`` returns a :class:`cuabi.ManagedBuffer`, which the driver
    migrates between host and device as they touch it (see its
    ``prefetch``/``advise``).
    """

    __slots__ = ("_attach",)
    _kind = ManagedBuffer

    def __init__(self, device: Any = None, *, attach: str = "global") -> None:
        if attach not in ("global", "host"):
            raise ValueError("attach must be 'global' or 'host', got %r" % (attach,))
        super().__init__(device)
        self._attach = attach

    def _new(self, size: int) -> ManagedBuffer:
        return ManagedBuffer(size, attach=self._attach, device=self._device)
