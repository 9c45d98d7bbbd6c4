# SPDX-License-Identifier: Apache-2.0
"""Sharing pools, buffers and events between processes (cuabi._ipc), across
real processes: on the fake driver an interprocess pool is a memfd that the
other process maps at its own address (tests/fake/ipc.c)."""

import os
import pickle
import socket
import subprocess
import sys

import pytest

import cuabi
from conftest import REAL_GPU, subprocess_pythonpath
from cuabi import driver as d
from cuabi.errors import ClosedError, CUDAError
from ipc_peer import Peer, run_example


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.fixture
def shared(ctx):
    """An interprocess pool with one 4 KiB buffer filled with 0x11, and an interprocess event."""
    pool = cuabi.MemoryPool(ipc=True)
    buf = pool.allocate(4096)
    buf.fill(0x11)
    d.cuCtxSynchronize()  # an importer must not touch memory before its allocation and fill are done
    ev = cuabi.Event(interprocess=True)
    yield pool, buf, ev
    buf.close()
    pool.close()


def test_child_writes_and_parent_reads_through_an_ipc_pool(shared):
    """A child imports the pool (fd over SCM_RIGHTS) and the buffer, sees the parent's bytes, and its write, ordered by an IPC event, reaches the parent."""
    pool, buf, ev = shared
    pattern = bytes(range(256)) * 16
    peer = Peer("write", subprocess_pythonpath())
    fd = pool.export_fd()
    try:
        peer.send(fd, {"buffer": buf.ipc_descriptor(), "event": ev.ipc_handle(), "pattern": pattern})
    finally:
        os.close(fd)
    got = peer.report()
    assert got["read"] == b"\x11" * 4096  # the child saw what the parent wrote
    assert got["event_timing"] is False
    if not REAL_GPU:
        assert got["ptr"] != buf.ptr  # the same memory at the child's own address (the fake maps it anew)
    s = cuabi.Stream()
    s.wait(ev)
    ev.sync()
    assert buf.to_bytes() == pattern
    assert peer.finish() == {"closed": True}
    assert buf.to_bytes() == pattern  # the child's close released its mapping, not the memory


def test_misuse_in_the_importing_process_is_refused_clearly(shared):
    """An importing process cannot import a buffer twice, allocate, re-export, or use a buffer after its pool closed."""
    pool, buf, ev = shared
    peer = Peer("misuse", subprocess_pythonpath())
    fd = pool.export_fd()
    peer.send(fd, {"buffer": buf.ipc_descriptor(), "event": None, "pattern": b""})
    os.close(fd)
    got = peer.report()
    assert "ValueError: this buffer was already imported into this pool" in str(got["twice"])
    assert got["allocate"].startswith("ValueError: an imported MemoryPool does not allocate")
    assert got["direct"].startswith("ValueError: an imported MemoryPool does not allocate")
    assert "it was imported from another process" in got["reexport_pool"]
    assert "an imported buffer is shared by its exporter" in got["reexport_buffer"]
    assert got["not_a_descriptor"].startswith("TypeError: import_buffer takes a cuabi.IpcBufferDescriptor")
    assert got["again_size"] == 4096 and got["again_bytes"] == b"\x11" * 8
    assert got["table_after_collect"] == 0  # a collected import is forgotten (and was released)
    assert got["again_closed_with_pool"] is True
    assert got["after_pool_close"] == "ClosedError: DeviceBuffer is closed"
    assert peer.finish() == {"closed": True}


def test_exporting_from_what_is_not_shareable_is_refused(ctx):
    """Pools made without ipc=True, the default pool, cuMemAlloc buffers and timing events say how to make a shareable one."""
    plain = cuabi.MemoryPool()
    with pytest.raises(ValueError, match=r"make it with MemoryPool\(ipc=True\)"):
        plain.export_fd()
    with pytest.raises(ValueError, match=r"make it with MemoryPool\(ipc=True\)"):
        cuabi.MemoryPool.default().export_fd()
    b = plain.allocate(256)
    with pytest.raises(ValueError, match="comes from a pool made without ipc=True"):
        b.ipc_descriptor()
    with pytest.raises(ValueError, match="comes from cuMemAlloc/cuMemAllocAsync"):
        cuabi.DeviceBuffer(256).ipc_descriptor()
    with pytest.raises(ValueError, match=r"Event\(interprocess=True\)"):
        cuabi.Event().ipc_handle()
    with pytest.raises(ValueError, match="import_buffer is for a pool imported from another process"):
        cuabi.MemoryPool(ipc=True).import_buffer(cuabi.IpcBufferDescriptor(b"\0" * 64, 256, os.getpid()))
    b.close()
    plain.close()


@pytest.mark.fake  # driver 580 answers the pointer export with CUDA_ERROR_INVALID_HANDLE
def test_the_driver_refuses_what_the_wrappers_check_first(ctx):
    """Below the checks: the fake driver itself refuses a non-IPC pool's export and a pointer not of an IPC pool."""
    plain = cuabi.MemoryPool()
    with pytest.raises(CUDAError) as e:
        d.cuMemPoolExportToShareableHandle(bytearray(4), plain.handle, 1, 0)
    assert e.value.name == "CUDA_ERROR_INVALID_VALUE"
    b = plain.allocate(256)
    with pytest.raises(CUDAError) as e:
        d.cuMemPoolExportPointer(bytearray(64), b.ptr)
    assert e.value.name == "CUDA_ERROR_INVALID_VALUE"
    local = cuabi.Event()
    with pytest.raises(CUDAError) as e:
        d.cuIpcGetEventHandle(bytearray(64), local.handle)
    assert e.value.name == "CUDA_ERROR_INVALID_VALUE"
    b.close()
    plain.close()


def test_handles_from_a_dead_process_are_refused(ctx):
    """A descriptor or event handle whose exporting process has exited is refused before the driver is asked."""
    pid = _dead_pid()
    ev = cuabi.Event(interprocess=True)
    h = ev.ipc_handle()
    dead = cuabi.IpcEventHandle(h.data, pid)
    with pytest.raises(ValueError, match="exported by process %d, which has exited" % pid):
        cuabi.Event.from_ipc_handle(dead)
    with pytest.raises(ValueError, match="comes from this process: use the Event itself"):
        cuabi.Event.from_ipc_handle(h)


@pytest.mark.fake  # driver 580 answers with CUDA_ERROR_INVALID_CONTEXT
def test_the_fake_refuses_an_event_handle_of_a_dead_process(ctx):
    """The fake driver models the exited exporter too: the raw open fails."""
    pid = _dead_pid()
    h = cuabi.Event(interprocess=True).ipc_handle()
    raw = bytearray(h.data)
    raw[8:16] = pid.to_bytes(8, sys.byteorder)
    with pytest.raises(CUDAError) as e:
        d.cuIpcOpenEventHandle(bytes(raw))
    assert e.value.name == "CUDA_ERROR_INVALID_HANDLE"


def test_descriptors_pickle_and_have_a_fixed_byte_form(shared):
    """IpcBufferDescriptor and IpcEventHandle survive pickle and to_bytes/from_bytes, and refuse bad sizes."""
    pool, buf, ev = shared
    desc = buf.ipc_descriptor()
    assert desc.size == 4096 and desc.pid == os.getpid() and len(desc.data) == 64
    assert pickle.loads(pickle.dumps(desc)) == desc
    assert cuabi.IpcBufferDescriptor.from_bytes(desc.to_bytes()) == desc and len(desc.to_bytes()) == 80
    h = ev.ipc_handle()
    assert pickle.loads(pickle.dumps(h)) == h and cuabi.IpcEventHandle.from_bytes(h.to_bytes()) == h
    assert hash(desc) == hash(pickle.loads(pickle.dumps(desc)))
    with pytest.raises(ValueError, match="80 bytes, got 79"):
        cuabi.IpcBufferDescriptor.from_bytes(desc.to_bytes()[:-1])
    with pytest.raises(ValueError, match="data must be 64 bytes"):
        cuabi.IpcEventHandle(b"short", 1)
    with pytest.raises(ValueError, match="size must be a positive int"):
        cuabi.IpcBufferDescriptor(desc.data, 0, 1)
    buf.close()
    with pytest.raises(ClosedError):
        buf.ipc_descriptor()


def test_send_fd_and_recv_fd_pass_a_descriptor():
    """send_fd/recv_fd carry an open file over a Unix socket pair, leave the data after it in the socket, and refuse misuse."""
    a, b = socket.socketpair()
    r, w = os.pipe()
    cuabi.send_fd(a, w)
    a.sendall(b"data after the descriptor")
    got = cuabi.recv_fd(b)
    assert got != w and b.recv(100) == b"data after the descriptor"
    os.write(got, b"via the received descriptor")
    assert os.read(r, 100) == b"via the received descriptor"
    for fd in (r, w, got):
        os.close(fd)
    with pytest.raises(ValueError, match="fd must be a non-negative int"):
        cuabi.send_fd(a, -1)
    a.sendall(b"no fd")
    with pytest.raises(ValueError, match=r"expected a file descriptor sent with cuabi.send_fd, got b'n'"):
        cuabi.recv_fd(b)
    b.recv(100)
    a.close()
    with pytest.raises(EOFError):
        cuabi.recv_fd(b)
    b.close()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        with pytest.raises(ValueError, match="Unix sockets only"):
            cuabi.send_fd(tcp, 0)


def test_the_two_process_example_runs():
    """examples/python/ipc.py (the example docs/python.md points to) shares a buffer and an event with its child."""
    rc, out = run_example(subprocess_pythonpath())
    assert rc == 0 and "the parent read what the child wrote: OK" in out, out
