# SPDX-License-Identifier: Apache-2.0
"""Virtual memory management: device memory built from an address range and
physical chunks mapped into it (``cuMemAddressReserve``, ``cuMemCreate``,
``cuMemMap``, ``cuMemSetAccess``), so that a buffer can grow.

:class:`VirtualMemoryResource` implements the memory resource protocol
(``cuabi._memory_resource``); its ``allocate`` returns a :class:`VirtualBuffer`,
a device buffer like :class:`cuabi.DeviceBuffer` (copies, ``fill``, views,
DLPack, ``__cuda_array_interface__``) that also has :meth:`VirtualBuffer.grow`
and :meth:`VirtualBuffer.grant_access`.

What a buffer owns, and in which order it goes: its mappings are unmapped
(one ``cuMemUnmap`` per ``cuMemMap``), then its physical chunks released, then
its address ranges freed.  Every step that builds (allocate, grow) undoes what
it made when a later call fails, so a failure part-way leaves no reservation,
chunk or mapping behind and a buffer that failed to grow as it was.
"""

from __future__ import annotations

import os
import struct
import sys
import weakref
from typing import Any, Callable, List, Optional, Tuple

from . import driver as _d
from ._constants import (CU_MEM_ACCESS_FLAGS_PROT_NONE, CU_MEM_ACCESS_FLAGS_PROT_READ,
                         CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ALLOC_GRANULARITY_MINIMUM,
                         CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, CU_MEM_ALLOCATION_TYPE_PINNED,
                         CU_MEM_HANDLE_TYPE_NONE, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                         CU_MEM_LOCATION_TYPE_DEVICE)
from ._device import Device, current_context
from ._interrupts import deferred
from ._memory import DeviceArray, ResourcePlace, _DeviceMemoryMixin, _nbytes, check_owner
from ._resource import Resource
from ._structs import FORMATS

# fields: cuabi._structs.FIELDS["CUmemAllocationProp"] and ["CUmemAccessDesc"]
_PROP = struct.Struct(FORMATS["CUmemAllocationProp"])
_ACCESS = struct.Struct(FORMATS["CUmemAccessDesc"])
_LOCATION = struct.Struct(FORMATS["CUmemLocation"])

_ACCESS_FLAGS = {"rw": CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "r": CU_MEM_ACCESS_FLAGS_PROT_READ,
                 "none": CU_MEM_ACCESS_FLAGS_PROT_NONE}
_ACCESS_NAMES = {v: k for k, v in _ACCESS_FLAGS.items()}
_HANDLE_TYPES = {None: CU_MEM_HANDLE_TYPE_NONE, "posix_fd": CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR}


def _access_flag(access: Any) -> int:
    try:
        return _ACCESS_FLAGS[access]
    except (KeyError, TypeError):
        raise ValueError("access must be 'rw', 'r' or 'none', got %r" % (access,)) from None


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


class _Undo:
    """The inverse of each step done so far, run newest first when a later
    step fails (every one of them, even when one of them fails too)."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps: List[Callable[[], Any]] = []

    def add(self, step: Callable[[], Any]) -> None:
        self.steps.append(step)

    def run(self) -> None:
        while self.steps:
            try:
                self.steps.pop()()
            except Exception:
                pass  # the first failure is the one raised; undo the rest regardless


class VirtualMemoryResource(ResourcePlace):
    """Device memory from reserved address space and mapped physical chunks:
    ``VirtualMemoryResource(device=None, *, granularity="recommended",
    reserve=0, peers=(), handle_type=None)``.

    * ``granularity``: ``"recommended"`` or ``"minimum"`` (the driver's two
      answers to ``cuMemGetAllocationGranularity``); every size is rounded up
      to it (:attr:`granularity` says how much that is; 2 MiB on an H200).
    * ``reserve``: address space to reserve for each buffer (at least its
      size), so that :meth:`VirtualBuffer.grow` stays in place up to it.
      Address space costs no memory.
    * ``peers``: devices (or ordinals) given read-write access to every
      buffer besides the owning device, which always has it.
    * ``handle_type``: ``None``, or ``"posix_fd"`` to make the chunks
      exportable (:meth:`VirtualBuffer.export_handles`).

    The memory is for the device only (``is_host_accessible`` is False).
    """

    __slots__ = ("_device", "_prop", "_granularity", "_reserve", "_peers")

    def __init__(self, device: Any = None, *, granularity: str = "recommended", reserve: int = 0,
                 peers: Any = (), handle_type: Optional[str] = None) -> None:
        self._device = current_context(device).device if device is None else Device(device)
        if granularity not in ("recommended", "minimum"):
            raise ValueError("granularity must be 'recommended' or 'minimum', got %r" % (granularity,))
        if handle_type not in _HANDLE_TYPES:
            raise ValueError("handle_type must be None or 'posix_fd', got %r" % (handle_type,))
        self._reserve = _nbytes(reserve, "reserve")
        self._peers = tuple(Device(p) for p in peers)
        self._prop = bytes(_PROP.pack(CU_MEM_ALLOCATION_TYPE_PINNED, _HANDLE_TYPES[handle_type],
                                      CU_MEM_LOCATION_TYPE_DEVICE, self._device.device_id, 0, b"", b"", 0, b""))
        option = (CU_MEM_ALLOC_GRANULARITY_RECOMMENDED if granularity == "recommended"
                  else CU_MEM_ALLOC_GRANULARITY_MINIMUM)
        self._granularity = _d.cuMemGetAllocationGranularity(bytearray(self._prop), option)

    @property
    def granularity(self) -> int:
        """Bytes every mapping and reservation is a multiple of."""
        return self._granularity

    def allocate(self, size: int, stream: Any = None) -> "VirtualBuffer":
        """A new :class:`VirtualBuffer` of ``size`` bytes (``stream`` is not
        used: mapping is immediate)."""
        return VirtualBuffer(self, size)

    def deallocate(self, buffer: "VirtualBuffer", stream: Any = None) -> None:
        """Free ``buffer``, which this resource allocated (``stream`` is not
        used); misuse follows the protocol's rule (:func:`cuabi._memory.check_owner`)."""
        check_owner(self, buffer, VirtualBuffer, buffer._mr is self if isinstance(buffer, VirtualBuffer) else False)
        buffer.close()

    def __repr__(self) -> str:
        return "<cuabi.VirtualMemoryResource device %d granularity %d>" % (self._device.device_id,
                                                                           self._granularity)


class VirtualBuffer(_DeviceMemoryMixin, Resource):
    """Device memory mapped into a reserved address range (made by
    :meth:`VirtualMemoryResource.allocate`).

    ``size`` is the bytes asked for; :attr:`mapped_size` (a multiple of the
    granularity) is what is mapped, :attr:`reserved_size` the address space
    held.  :meth:`grow` adds memory, in place when it can.
    """

    __slots__ = ("_size", "_mr", "_ranges", "_chunks", "_access", "_views")

    def __init__(self, mr: VirtualMemoryResource, size: int) -> None:
        Resource.__init__(self)
        n = _nbytes(size, "size")
        if n == 0:
            raise ValueError("virtual memory allocations must not be empty")
        self._mr = mr
        self._size = n
        self._ranges: List[Tuple[int, int]] = []       # (address, size) reservations, in address order
        self._chunks: List[Tuple[int, int, int]] = []  # (handle, offset, size): what is mapped where
        own = mr._device.device_id
        self._access = {own: CU_MEM_ACCESS_FLAGS_PROT_READWRITE}
        for p in mr._peers:
            self._access[p.device_id] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        self._views: Any = weakref.WeakSet()
        g = mr._granularity
        mapped = _round_up(n, g)
        reserved = max(mapped, _round_up(mr._reserve, g))
        ctx = current_context(mr._device)
        with deferred(), ctx._pushed():
            undo = _Undo()
            try:
                base = self._reserve(reserved, 0, undo)
                self._map_new(base, 0, mapped, undo)
            except BaseException:
                undo.run()
                self._ranges, self._chunks = [], []
                raise
            self._h = base
            ctx._adopt(self)

    # -- building blocks: each records its inverse in `undo` ---------------------------------

    def _reserve(self, size: int, hint: int, undo: _Undo) -> int:
        addr = _d.cuMemAddressReserve(size, self._mr._granularity, hint, 0)
        undo.add(lambda: _d.cuMemAddressFree(addr, size))
        self._ranges.append((addr, size))
        return addr

    def _map(self, handle: int, addr: int, size: int, undo: _Undo) -> None:
        _d.cuMemMap(addr, size, 0, handle, 0)
        undo.add(lambda: _d.cuMemUnmap(addr, size))

    def _set_access(self, addr: int, size: int, access: Any) -> None:
        desc = b"".join(_ACCESS.pack(CU_MEM_LOCATION_TYPE_DEVICE, dev, flags) for dev, flags in access)
        _d.cuMemSetAccess(addr, size, bytearray(desc), len(access))

    def _map_new(self, base: int, offset: int, size: int, undo: _Undo) -> None:
        """A new physical chunk of ``size`` bytes mapped at ``base + offset``,
        accessible as this buffer is."""
        handle = _d.cuMemCreate(size, bytearray(self._mr._prop), 0)
        undo.add(lambda: _d.cuMemRelease(handle))
        self._map(handle, base + offset, size, undo)
        self._set_access(base + offset, size, sorted(self._access.items()))
        self._chunks.append((handle, offset, size))

    # -- growing --------------------------------------------------------------------------------

    @property
    def mapped_size(self) -> int:
        """Bytes of memory mapped (``size`` rounded up to the granularity)."""
        return sum(c[2] for c in self._chunks)

    @property
    def reserved_size(self) -> int:
        """Bytes of address space the buffer holds (at least :attr:`mapped_size`)."""
        return sum(r[1] for r in self._ranges)

    def grow(self, size: int, *, move: bool = True) -> int:
        """Make the buffer ``size`` bytes long, keeping its contents, and
        return its address.

        Memory is added as one new physical chunk.  In place when the
        reserved range has room, or when the address space right after it can
        be reserved too; otherwise (``move=True``) a new range of the new size
        is reserved and the existing chunks are mapped into it: the contents
        move without a copy, and the address changes.  A move is refused
        (``BufferError``) while a view (:meth:`view`) or DLPack export of the
        buffer lives, since they hold the old address; with ``move=False``
        it raises ``BufferError`` instead of moving.  Growing to a size no
        larger than :attr:`mapped_size` only changes ``size``.  On failure the
        buffer stays as it was.
        """
        n = _nbytes(size, "size")
        base = self.ptr
        if n < self._size:
            raise ValueError("grow() does not shrink: size %d is below the current %d" % (n, self._size))
        g = self._mr._granularity
        mapped, reserved = self.mapped_size, self.reserved_size
        need = _round_up(n, g) - mapped
        if need == 0:
            self._size = n
            return base
        moved: Optional[Tuple[int, List[Tuple[int, int, int]], List[Tuple[int, int]]]] = None
        with deferred(), self._in_context():
            undo = _Undo()
            ranges, chunks = list(self._ranges), list(self._chunks)
            try:
                if need <= reserved - mapped:
                    self._map_new(base, mapped, need, undo)
                elif self._extend(base + reserved, need - (reserved - mapped), undo):
                    if reserved > mapped:  # the old range's tail, then the new one: one chunk each
                        self._map_new(base, mapped, reserved - mapped, undo)
                    self._map_new(base, reserved, need - (reserved - mapped), undo)
                else:
                    self._move(mapped + need, undo, move)
                    moved = (base, chunks, ranges)
                    base = self._h
            except BaseException:
                undo.run()
                self._ranges, self._chunks = ranges, chunks
                raise
            self._size = n
            if moved is not None:  # the new layout is complete: the old mappings and ranges go
                _release_all(*moved, release_chunks=False)
        return base

    def _extend(self, at: int, size: int, undo: _Undo) -> bool:
        """Reserve ``size`` bytes exactly at ``at`` (the driver takes the
        address as a hint); False, with nothing kept, when it chose another."""
        addr = _d.cuMemAddressReserve(size, self._mr._granularity, at, 0)
        if addr != at:
            _d.cuMemAddressFree(addr, size)
            return False
        undo.add(lambda: _d.cuMemAddressFree(addr, size))
        self._ranges.append((addr, size))
        return True

    def _move(self, total: int, undo: _Undo, move: bool) -> None:
        """Map every chunk into a new range of ``total`` bytes and add the rest
        as a new chunk; the caller drops the old mappings and ranges."""
        if not move:
            raise BufferError("the buffer cannot grow in place and move=False")
        reason = self._busy()
        if reason:
            raise BufferError("cannot move the VirtualBuffer: %s" % reason)
        old_chunks = self._chunks
        self._ranges, self._chunks = [], []
        new = self._reserve(total, 0, undo)
        access = sorted(self._access.items())
        for handle, offset, size in old_chunks:
            self._map(handle, new + offset, size, undo)
            self._chunks.append((handle, offset, size))
        end = sum(c[2] for c in old_chunks)
        self._set_access(new, end, access)
        self._map_new(new, end, total - end, undo)
        self._h = new

    # -- access ---------------------------------------------------------------------------------

    def grant_access(self, device: Any, access: str = "rw") -> None:
        """Let ``device`` (a Device or ordinal) read and write (``"rw"``), only
        read (``"r"``) or not reach (``"none"``) the memory; kept for memory
        added by :meth:`grow`.  Another device needs peer access to this one
        (``cuDeviceCanAccessPeer``) for anything but ``"none"``."""
        dev = Device(device).device_id
        flag = _access_flag(access)
        base = self.ptr
        done: List[Tuple[int, int, int]] = []
        with deferred(), self._in_context():
            try:
                for chunk in self._chunks:  # per mapping: a range never spans two reservations
                    self._set_access(base + chunk[1], chunk[2], [(dev, flag)])
                    done.append(chunk)
            except BaseException:  # the chunks changed so far get their old access back
                old = [(dev, self._access.get(dev, CU_MEM_ACCESS_FLAGS_PROT_NONE))]
                for _h, offset, size in done:
                    try:
                        self._set_access(base + offset, size, old)
                    except Exception:
                        pass  # the failure raised is the first one
                raise
        self._access[dev] = flag

    def access(self, device: Any = None) -> str:
        """What ``device`` (default: the owning one) may do with the memory, as
        the driver reports it (``cuMemGetAccess``): ``"rw"``, ``"r"`` or ``"none"``."""
        dev = self._mr._device if device is None else Device(device)
        loc = bytearray(_LOCATION.pack(CU_MEM_LOCATION_TYPE_DEVICE, dev.device_id))
        base = self.ptr
        with self._in_context():
            flags = _d.cuMemGetAccess(loc, base)
        return _ACCESS_NAMES.get(flags, str(flags))

    # -- sharing --------------------------------------------------------------------------------

    def export_handles(self) -> List[Tuple[int, int, int]]:
        """``(fd, offset, size)`` for each physical chunk, the file descriptor
        exported with ``cuMemExportToShareableHandle`` (the resource needs
        ``handle_type="posix_fd"``); the caller owns and closes the
        descriptors.  Another process imports each with
        ``cuMemImportFromShareableHandle`` and maps it at ``offset``."""
        self.ptr  # raises once closed
        out: List[Tuple[int, int, int]] = []
        cell = bytearray(4)
        try:
            for handle, offset, size in self._chunks:
                _d.cuMemExportToShareableHandle(cell, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
                out.append((int.from_bytes(cell, sys.byteorder, signed=True), offset, size))
        except BaseException:
            for fd, _o, _s in out:
                os.close(fd)
            raise
        return out

    # -- views and release ----------------------------------------------------------------------

    def view(self, dtype: Any = "u1", shape: Any = None, strides: Any = None) -> DeviceArray:
        arr = _DeviceMemoryMixin.view(self, dtype, shape, strides)
        self._views.add(arr)
        return arr

    def _busy(self) -> Optional[str]:
        reason = _DeviceMemoryMixin._busy(self)
        if reason is None and any(v._ptr is not None for v in self._views):
            reason = "a view of it (view(), a DeviceArray) still holds its address; close or delete it first"
        return reason

    def _release(self, base: int) -> None:
        chunks, ranges = self._chunks, self._ranges
        self._chunks, self._ranges = [], []
        _release_all(base, chunks, ranges, release_chunks=True)

    def close(self) -> None:
        """Unmap and free the memory.  Refuses (``BufferError``) while a DLPack
        consumer still holds it."""
        if self._h is None:
            return
        reason = _DeviceMemoryMixin._busy(self)
        if reason:
            raise BufferError("cannot free the VirtualBuffer: %s" % reason)
        self._close()

    def __repr__(self) -> str:
        h = self._h
        if h is None:
            return "<cuabi.VirtualBuffer closed>"
        return "<cuabi.VirtualBuffer 0x%x size=%d mapped=%d reserved=%d>" % (h, self._size, self.mapped_size,
                                                                            self.reserved_size)


def _release_all(base: int, chunks: List[Tuple[int, int, int]], ranges: List[Tuple[int, int]],
                 release_chunks: bool) -> None:
    """Unmap ``chunks`` (mapped at ``base`` + offset), release them (with
    ``release_chunks``), free ``ranges``: in that order, every step tried
    even when one fails; the first failure is raised at the end."""
    first: Optional[BaseException] = None
    steps: List[Tuple[Callable[..., Any], Tuple[int, ...]]] = [(_d.cuMemUnmap, (base + o, s)) for _h, o, s in chunks]
    if release_chunks:
        steps += [(_d.cuMemRelease, (h,)) for h, _o, _s in chunks]
    steps += [(_d.cuMemAddressFree, r) for r in ranges]
    for call, args in steps:
        try:
            call(*args)
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first
