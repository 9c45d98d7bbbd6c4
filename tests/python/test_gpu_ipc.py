# SPDX-License-Identifier: Apache-2.0
"""Interprocess pools, buffers and events on a real GPU (CUABI_TEST_REAL_GPU=1):
two processes, the child writes (a copy, or a slow NVRTC kernel) and the
parent reads after waiting for an IPC event.  The other process is
tests/python/ipc_peer.py."""

import os

import pytest

import cuabi
from conftest import subprocess_pythonpath
from cuabi import driver as d
from cuabi.errors import CUDAError
from ipc_peer import Peer, expected, run_example

pytestmark = pytest.mark.gpu


@pytest.fixture
def gpu():
    c = cuabi.Device(0).set_current()
    yield c
    c.close()


def _share(nbytes, fill):
    pool = cuabi.MemoryPool(ipc=True)
    buf = pool.allocate(nbytes)
    buf.fill(fill)
    d.cuCtxSynchronize()  # the importer must not touch it before the allocation and fill are done
    return pool, buf, cuabi.Event(interprocess=True)


def _start(mode, pool, job):
    peer = Peer(mode, subprocess_pythonpath())
    fd = pool.export_fd()
    assert os.fstat(fd).st_size >= 0  # a real descriptor of this process
    try:
        peer.send(fd, job)
    finally:
        os.close(fd)
    return peer


def test_gpu_child_copies_into_the_parents_buffer(gpu):
    """A child imports the pool and buffer, reads the parent's 0x3C bytes, writes 1 MiB; the parent reads it after the IPC event."""
    pool, buf, ev = _share(1 << 20, 0x3C)
    pattern = bytes((i * 7 + 3) & 0xFF for i in range(1 << 20))
    peer = _start("write", pool, {"buffer": buf.ipc_descriptor(), "event": ev.ipc_handle(), "pattern": pattern})
    got = peer.report()
    assert got["read"] == b"\x3c" * (1 << 20)
    s = cuabi.Stream()
    s.wait(ev)
    host = bytearray(1 << 20)
    buf.copy_to(host, stream=s)
    s.sync()
    assert bytes(host) == pattern
    assert peer.finish() == {"closed": True}
    assert buf.to_bytes() == pattern  # the child's close unmapped its import, the memory is still ours
    buf.close()
    pool.close()


def test_gpu_ipc_event_orders_a_slow_kernel_of_another_process(gpu):
    """The child's kernel spins, then writes; its IPC event, recorded after it, is pending at report time and orders the parent's read."""
    n = 1 << 20
    pool, buf, ev = _share(4 * n, 0)
    peer = _start("kernel", pool, {"buffer": buf.ipc_descriptor(), "event": ev.ipc_handle(), "spin": 400_000_000})
    got = peer.report()
    assert got["recorded"] and got["done_at_report"] is False  # the kernel still spins
    s = cuabi.Stream()
    s.wait(ev)  # on the GPU: the parent's copy starts after the child's kernel
    host = bytearray(4 * n)
    buf.copy_to(host, stream=s)
    s.sync()
    assert ev.query()
    assert bytes(host) == expected(n)
    assert peer.finish() == {"closed": True}
    buf.close()
    pool.close()


def test_gpu_importer_misuse_and_reimport(gpu):
    """On the real driver: a second import is refused while the first is open, allowed after; closing the imported pool closes its buffers."""
    pool, buf, ev = _share(4096, 0x11)
    peer = _start("misuse", pool, {"buffer": buf.ipc_descriptor(), "event": None, "pattern": b""})
    got = peer.report()
    assert "ValueError: this buffer was already imported into this pool" in str(got["twice"])
    assert got["allocate"].startswith("ValueError: an imported MemoryPool does not allocate")
    assert got["again_size"] == 4096 and got["again_bytes"] == b"\x11" * 8
    assert got["table_after_collect"] == 0  # a collected import is forgotten (and was released)
    assert got["again_closed_with_pool"] is True
    assert peer.finish() == {"closed": True}
    buf.close()
    pool.close()


def test_gpu_driver_refuses_exports_of_plain_pools(gpu):
    """The real driver refuses what the wrappers refuse first: exporting a pool or pointer made without a handle type."""
    plain = cuabi.MemoryPool()
    b = plain.allocate(256)
    with pytest.raises(CUDAError):
        d.cuMemPoolExportToShareableHandle(bytearray(4), plain.handle, 1, 0)
    with pytest.raises(CUDAError):
        d.cuMemPoolExportPointer(bytearray(64), b.ptr)
    local = cuabi.Event()
    with pytest.raises(CUDAError):
        d.cuIpcGetEventHandle(bytearray(64), local.handle)
    b.close()
    plain.close()


def test_gpu_two_process_example():
    """examples/python/ipc.py runs on the GPU: the child's write reaches the parent through the IPC event."""
    rc, out = run_example(subprocess_pythonpath())
    assert rc == 0 and "the parent read what the child wrote: OK" in out, out
