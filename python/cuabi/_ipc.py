# SPDX-License-Identifier: Apache-2.0
"""Interprocess sharing: what crosses from one process to another.

Device memory and events are shared between processes of one machine in
three pieces (docs/python.md, "Sharing memory and events between
processes", has a complete two-process example):

* a pool made with ``MemoryPool(ipc=True)`` is exported as a POSIX file
  descriptor (:meth:`cuabi.MemoryPool.export_fd`), which travels over a Unix
  socket (:func:`send_fd` / :func:`recv_fd`, ``SCM_RIGHTS``) or is inherited
  (``subprocess``'s ``pass_fds``); the other process imports it with
  :meth:`cuabi.MemoryPool.import_fd`;
* each buffer of that pool is described by an :class:`IpcBufferDescriptor`
  (:meth:`cuabi.DeviceBuffer.ipc_descriptor`): plain bytes, picklable, sent
  any way at all; the other process turns it into a buffer with
  :meth:`cuabi.MemoryPool.import_buffer`;
* an event made with ``Event(interprocess=True)`` is described by an
  :class:`IpcEventHandle` (:meth:`cuabi.Event.ipc_handle`), opened with
  :meth:`cuabi.Event.from_ipc_handle`.

Descriptors and handles carry the exporting process's id, so that one whose
process has exited is refused with a message instead of reaching memory the
driver already took back.
"""

from __future__ import annotations

import array
import os
import socket
from typing import Any, Tuple


def exporter_alive(pid: int, what: str) -> None:
    """Raise ``ValueError`` when process ``pid`` (the exporter of ``what``) has exited."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise ValueError("%s was exported by process %d, which has exited: the driver freed what it "
                         "described; export it again from a live process" % (what, pid)) from None
    except PermissionError:
        pass  # alive, owned by another user


class _Exported:
    """Bytes the driver wrote in the exporting process, and that process's id."""

    __slots__ = ("data", "pid")
    _size = 64

    def __init__(self, data: bytes, pid: int) -> None:
        data = bytes(data)
        if len(data) != self._size:
            raise ValueError("%s data must be %d bytes, got %d" % (type(self).__name__, self._size, len(data)))
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise ValueError("pid must be a positive int, got %r" % (pid,))
        self.data = data
        self.pid = pid

    def _key(self) -> Tuple[Any, ...]:
        return (self.data, self.pid)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> Any:
        return (type(self), self._key())


class IpcBufferDescriptor(_Exported):
    """What another process needs to import one buffer of an interprocess pool:
    ``IpcBufferDescriptor(data, size, pid)``, made by
    :meth:`cuabi.DeviceBuffer.ipc_descriptor`.

    ``data`` is the driver's 64 bytes of export data (``CUmemPoolPtrExportData``),
    ``size`` the buffer's size and ``pid`` the exporting process.  It pickles
    (``multiprocessing`` queues, pipes) and :meth:`to_bytes` /
    :meth:`from_bytes` give it a fixed 80-byte form for any other channel.
    """

    __slots__ = ("size",)

    def __init__(self, data: bytes, size: int, pid: int) -> None:
        super().__init__(data, pid)
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise ValueError("size must be a positive int, got %r" % (size,))
        self.size = size

    def _key(self) -> Tuple[Any, ...]:
        return (self.data, self.size, self.pid)

    def to_bytes(self) -> bytes:
        """80 bytes: the export data, then the size and the pid (little-endian, 8 bytes each)."""
        return self.data + self.size.to_bytes(8, "little") + self.pid.to_bytes(8, "little")

    @classmethod
    def from_bytes(cls, raw: bytes) -> "IpcBufferDescriptor":
        """The descriptor :meth:`to_bytes` wrote."""
        raw = bytes(raw)
        if len(raw) != 80:
            raise ValueError("an IpcBufferDescriptor is 80 bytes, got %d" % len(raw))
        return cls(raw[:64], int.from_bytes(raw[64:72], "little"), int.from_bytes(raw[72:], "little"))

    def __repr__(self) -> str:
        return "<cuabi.IpcBufferDescriptor %d bytes from pid %d>" % (self.size, self.pid)


class IpcEventHandle(_Exported):
    """What another process needs to open an interprocess event:
    ``IpcEventHandle(data, pid)``, made by :meth:`cuabi.Event.ipc_handle`.

    ``data`` is the driver's 64-byte ``CUipcEventHandle`` and ``pid`` the
    exporting process.  It pickles; :meth:`to_bytes` / :meth:`from_bytes`
    give it a fixed 72-byte form.
    """

    __slots__ = ()

    def to_bytes(self) -> bytes:
        """72 bytes: the handle, then the pid (little-endian, 8 bytes)."""
        return self.data + self.pid.to_bytes(8, "little")

    @classmethod
    def from_bytes(cls, raw: bytes) -> "IpcEventHandle":
        """The handle :meth:`to_bytes` wrote."""
        raw = bytes(raw)
        if len(raw) != 72:
            raise ValueError("an IpcEventHandle is 72 bytes, got %d" % len(raw))
        return cls(raw[:64], int.from_bytes(raw[64:], "little"))

    def __repr__(self) -> str:
        return "<cuabi.IpcEventHandle from pid %d>" % self.pid


_MARK = b"F"  # the one byte that carries a descriptor


def send_fd(sock: socket.socket, fd: int) -> None:
    """Send the file descriptor ``fd`` over the Unix socket ``sock``
    (``SCM_RIGHTS``, on one byte of data): the receiver (:func:`recv_fd`)
    gets its own descriptor for the same open file.  ``fd`` stays open here;
    close it when no longer needed.  Anything else the other process needs
    (descriptors of buffers, event handles) travels as ordinary data, before
    or after."""
    if not isinstance(fd, int) or isinstance(fd, bool) or fd < 0:
        raise ValueError("fd must be a non-negative int, got %r" % (fd,))
    if sock.family != socket.AF_UNIX:
        raise ValueError("file descriptors travel over Unix sockets only (socket.socketpair(), AF_UNIX)")
    sock.sendmsg([_MARK], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])


def recv_fd(sock: socket.socket) -> int:
    """Receive one file descriptor sent with :func:`send_fd` on the Unix socket
    ``sock``.  It reads exactly the one byte :func:`send_fd` sent, so data sent
    after it stays in the socket.  The descriptor is the caller's to close
    (``os.close``)."""
    fds = array.array("i")
    msg, ancdata, _flags, _addr = sock.recvmsg(1, socket.CMSG_SPACE(fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    if not msg:
        raise EOFError("the other end closed the socket before sending a file descriptor")
    if msg != _MARK or len(fds) != 1:
        for extra in fds:
            os.close(extra)
        raise ValueError("expected a file descriptor sent with cuabi.send_fd, got %r with %d descriptor(s)"
                         % (msg, len(fds)))
    return fds[0]
