"""Device, pinned and managed buffers, copies, fills and memory pools."""

import array
import struct
import sys

import pytest

import cuabi
from cuabi.errors import ClosedError, CUDAError


def test_device_buffer_roundtrip(ctx):
    b = cuabi.DeviceBuffer(1024)
    assert b.size == len(b) == 1024 and b.ptr
    data = bytes(range(256)) * 4
    b.copy_from(data)
    assert b.to_bytes() == data
    out = bytearray(1024)
    b.copy_to(out)
    assert out == data
    a = array.array("f", [1.0, 2.0, 3.0])
    b.copy_from(a)
    assert struct.unpack("3f", b.to_bytes()[:12]) == (1.0, 2.0, 3.0)
    c = cuabi.DeviceBuffer(1024)
    c.copy_from(b)  # device to device
    assert c.to_bytes() == b.to_bytes()
    b.close()
    b.close()
    with pytest.raises(ClosedError):
        b.to_bytes()
    with pytest.raises(ClosedError):
        c.copy_from(b)


def test_fill_widths(ctx):
    b = cuabi.DeviceBuffer(16)
    b.fill(0xAB)
    assert b.to_bytes() == b"\xab" * 16
    b.fill(0x1234, width=2)
    assert struct.unpack("8H", b.to_bytes()) == (0x1234,) * 8
    b.fill(0xDEADBEEF, width=4, count=2)
    assert struct.unpack("4I", b.to_bytes())[:2] == (0xDEADBEEF,) * 2
    s = cuabi.Stream()
    b.fill(0, stream=s)
    b.fill(7, width=2, stream=s)
    b.fill(9, width=4, stream=s)
    s.sync()
    assert struct.unpack("4I", b.to_bytes()) == (9,) * 4
    with pytest.raises(ValueError):
        b.fill(256)
    with pytest.raises(ValueError):
        b.fill(1, width=3)
    with pytest.raises(TypeError):
        b.fill(1.0)
    with pytest.raises(ValueError):
        b.fill(1, width=4, count=5)
    odd = cuabi.DeviceBuffer(3)
    with pytest.raises(ValueError):
        odd.fill(1, width=2)


def test_async_copies_and_stream_ordered_allocation(ctx):
    s = cuabi.Stream()
    b = cuabi.DeviceBuffer(64, stream=s)
    assert b.stream is s
    b.copy_from(b"x" * 64, stream=s)
    out = bytearray(64)
    b.copy_to(out, stream=s)
    s.sync()
    assert out == b"x" * 64
    assert b.to_bytes(stream=s) == b"x" * 64
    c = cuabi.DeviceBuffer(64, stream=s)
    cuabi.copy(c, b, stream=s)
    s.sync()
    assert c.to_bytes() == b"x" * 64
    b.close(stream=cuabi.Stream())
    c.close()
    assert b.closed and c.closed
    sync = cuabi.DeviceBuffer(16)
    with pytest.raises(ValueError, match="stream-ordered"):
        sync.close(stream=s)
    d = cuabi.DeviceBuffer(16, stream=s)
    with pytest.raises(TypeError):
        d.close(stream="s")
    assert not sync.closed and not d.closed
    sync.close()
    d.close()


def test_copy_errors(ctx):
    b = cuabi.DeviceBuffer(8)
    with pytest.raises(ValueError):
        b.copy_from(b"123456789")  # too big
    with pytest.raises(ValueError, match="size mismatch"):
        cuabi.copy(bytearray(4), b)
    with pytest.raises(TypeError, match="read-only"):
        b.copy_to(b"12345678")
    with pytest.raises(TypeError):
        b.copy_from(12345)
    with pytest.raises(TypeError):
        cuabi.copy(bytearray(8), b"12345678")  # host to host
    with pytest.raises(ValueError):
        cuabi.copy(b, bytearray(8), nbytes=9)
    with pytest.raises(ValueError):
        b.copy_from(memoryview(bytearray(16))[::2])
    cuabi.copy(b, b"", nbytes=0)


def test_allocation_arguments(ctx):
    with pytest.raises(TypeError):
        cuabi.DeviceBuffer(1.5)
    with pytest.raises(ValueError):
        cuabi.DeviceBuffer(-1)
    with pytest.raises(TypeError):
        cuabi.DeviceBuffer(8, pool=object())
    z = cuabi.DeviceBuffer(0)
    assert z.size == 0 and z.to_bytes() == b""
    z.close()
    with pytest.raises(CUDAError):
        cuabi.DeviceBuffer(1 << 62)  # more than the device has


def test_pinned_buffer(ctx):
    p = cuabi.PinnedBuffer(32, portable=True)
    assert p.size == len(p) == 32 and p.ptr
    mv = p.memoryview()
    assert mv is p.memoryview() and not mv.readonly and mv.nbytes == 32
    p[0:4] = b"abcd"
    assert p[0:4] == b"abcd" and p.tobytes()[:4] == b"abcd"
    assert p.__array_interface__["data"][0] == p.ptr
    b = cuabi.DeviceBuffer(32)
    b.copy_from(p)
    q = cuabi.PinnedBuffer(32)
    b.copy_to(q)
    assert q.tobytes() == p.tobytes()
    s = cuabi.Stream()
    b.copy_to(q, stream=s)
    s.sync()
    p.close()
    p.close()
    with pytest.raises(ValueError):
        mv[0]  # the view was released with the memory  # noqa: B018
    with pytest.raises(ClosedError):
        p.memoryview()
    with pytest.raises(ValueError):
        cuabi.PinnedBuffer(0)


@pytest.mark.skipif(sys.implementation.name != "cpython",
                    reason="PyPy's memoryview.release() does not track exports")
def test_pinned_buffer_refuses_close_while_exported(ctx):
    p = cuabi.PinnedBuffer(16)
    mv = p.memoryview()
    import pickle

    held = pickle.PickleBuffer(mv)  # an object holding a buffer export of the view
    with pytest.raises(BufferError, match="still exported"):
        p.close()
    assert not p.closed
    held.release()
    p.close()
    assert p.closed


def test_managed_buffer(ctx):
    m = cuabi.ManagedBuffer(16)
    m[0:3] = b"xyz"
    assert bytes(m.memoryview()[:3]) == b"xyz"
    assert m.to_bytes()[:3] == b"xyz"
    d = cuabi.DeviceBuffer(16)
    d.copy_from(m)
    assert d.to_bytes()[:3] == b"xyz"
    assert m.__cuda_array_interface__["data"][0] == m.ptr
    with pytest.raises(ValueError):
        cuabi.ManagedBuffer(16, attach="nowhere")
    with pytest.raises(ValueError):
        cuabi.ManagedBuffer(0)
    m.close()
    with pytest.raises(ClosedError):
        m.memoryview()


def test_managed_prefetch(ctx):
    from conftest import needs

    needs("cuMemPrefetchAsync")
    m = cuabi.ManagedBuffer(4096)
    m.prefetch("device")
    m.prefetch("host")
    cuabi.Stream.legacy().sync()


def test_memory_pools(ctx):
    s = cuabi.Stream()
    with cuabi.MemoryPool(release_threshold=1 << 20) as pool:
        assert pool.release_threshold == 1 << 20
        pool.release_threshold = 0
        assert pool.release_threshold == 0
        b = pool.allocate(4096, s)
        assert isinstance(b, cuabi.DeviceBuffer) and b.stream is s
        b.copy_from(b"\1" * 4096, stream=s)
        assert pool.used_memory >= 4096
        assert pool.reserved_memory >= pool.used_memory
        b.close()
        s.sync()
        pool.trim(0)
        with pytest.raises(ValueError):
            pool.trim(-1)
        with pytest.raises(TypeError):
            pool.release_threshold = "big"
    assert pool.closed
    with pytest.raises(ClosedError):
        pool.allocate(16, s)
    default = cuabi.MemoryPool.default()
    b = cuabi.DeviceBuffer(128, stream=s, pool=default)
    b.close()
    default.close()  # never destroys the device's default pool
    b2 = cuabi.MemoryPool.default().allocate(64, s)
    b2.close()


def test_buffer_outliving_its_context():
    dev = cuabi.Device(0)
    ctx = dev.set_current()
    b = cuabi.DeviceBuffer(64)
    p = cuabi.PinnedBuffer(64)
    v = b.view("u4")
    ctx.close()
    assert b.closed and p.closed
    with pytest.raises(ClosedError):
        v.ptr  # noqa: B018
    b.close()  # harmless
