# SPDX-License-Identifier: Apache-2.0
"""Device, pinned and managed buffers, copies, fills and memory pools."""

import array
import struct
import sys

import pytest

import cuabi
from cuabi import driver as d
from cuabi.errors import ClosedError, CUDAError


def test_device_buffer_roundtrip(ctx):
    """Bytes copied into a device buffer come back out, to bytes or into a host buffer."""
    b = cuabi.DeviceBuffer(1024)
    assert b.size == len(b) == 1024 and b.ptr
    data = bytes(range(256)) * 4
    b.copy_from(data)
    assert b.to_bytes() == data
    out = bytearray(1024)
    b.copy_to(out)
    assert out == data


def test_copy_from_a_typed_host_array(ctx):
    """copy_from() takes any buffer-protocol object, such as an array of floats."""
    b = cuabi.DeviceBuffer(12)
    b.copy_from(array.array("f", [1.0, 2.0, 3.0]))
    assert struct.unpack("3f", b.to_bytes()) == (1.0, 2.0, 3.0)


def test_device_to_device_copy(ctx):
    """copy_from() another device buffer copies on the device."""
    b = cuabi.DeviceBuffer(64)
    b.copy_from(bytes(range(64)))
    c = cuabi.DeviceBuffer(64)
    c.copy_from(b)
    assert c.to_bytes() == b.to_bytes()


def test_closed_buffer_refuses_copies(ctx):
    """A closed buffer (closing twice is fine) cannot be read or copied from."""
    b, c = cuabi.DeviceBuffer(16), cuabi.DeviceBuffer(16)
    b.close()
    b.close()
    with pytest.raises(ClosedError):
        b.to_bytes()
    with pytest.raises(ClosedError):
        c.copy_from(b)


def test_fill_widths(ctx):
    """fill() sets 1-, 2- and 4-byte elements, all of them or count of them."""
    b = cuabi.DeviceBuffer(16)
    b.fill(0xAB)
    assert b.to_bytes() == b"\xab" * 16
    b.fill(0x1234, width=2)
    assert struct.unpack("8H", b.to_bytes()) == (0x1234,) * 8
    b.fill(0xDEADBEEF, width=4, count=2)
    assert struct.unpack("4I", b.to_bytes())[:2] == (0xDEADBEEF,) * 2


def test_fill_on_a_stream(ctx):
    """fill(stream=) queues the memset on the stream, in order."""
    b = cuabi.DeviceBuffer(16)
    s = cuabi.Stream()
    b.fill(0, stream=s)
    b.fill(7, width=2, stream=s)
    b.fill(9, width=4, stream=s)
    s.sync()
    assert struct.unpack("4I", b.to_bytes()) == (9,) * 4


def test_fill_arguments_are_checked(ctx):
    """fill() refuses values too wide, odd widths, floats, counts past the end and partial elements."""
    b = cuabi.DeviceBuffer(16)
    with pytest.raises(ValueError):
        b.fill(256)
    with pytest.raises(ValueError):
        b.fill(1, width=3)
    with pytest.raises(TypeError):
        b.fill(1.0)
    with pytest.raises(ValueError):
        b.fill(1, width=4, count=5)
    with pytest.raises(ValueError):
        cuabi.DeviceBuffer(3).fill(1, width=2)


def test_async_copies_on_a_stream_ordered_buffer(ctx):
    """A stream-ordered buffer knows its stream; async copies in and out follow it."""
    s = cuabi.Stream()
    b = cuabi.DeviceBuffer(64, stream=s)
    assert b.stream is s
    b.copy_from(b"x" * 64, stream=s)
    out = bytearray(64)
    b.copy_to(out, stream=s)
    s.sync()
    assert out == b"x" * 64
    assert b.to_bytes(stream=s) == b"x" * 64


def test_async_device_to_device_copy(ctx):
    """cuabi.copy(stream=) between device buffers copies on the stream."""
    s = cuabi.Stream()
    b = cuabi.DeviceBuffer(64, stream=s)
    b.copy_from(b"y" * 64, stream=s)
    c = cuabi.DeviceBuffer(64, stream=s)
    cuabi.copy(c, b, stream=s)
    s.sync()
    assert c.to_bytes() == b"y" * 64


def test_stream_ordered_buffer_closes_on_another_stream(ctx, fake):
    """close(stream=) frees a stream-ordered buffer on the stream given."""
    s, other = cuabi.Stream(), cuabi.Stream()
    before = fake.live_allocations()
    b = cuabi.DeviceBuffer(64, stream=s)
    b.close(stream=other)
    other.sync()
    assert b.closed and fake.live_allocations() == before


def test_close_with_a_stream_needs_a_stream_ordered_buffer(ctx):
    """close(stream=) of a cuMemAlloc buffer is a ValueError, and frees nothing."""
    s = cuabi.Stream()
    sync = cuabi.DeviceBuffer(16)
    with pytest.raises(ValueError, match="stream-ordered"):
        sync.close(stream=s)
    assert not sync.closed


def test_close_refuses_a_bad_stream_before_freeing(ctx):
    """close(stream=) with something that is no stream raises and keeps the buffer."""
    d = cuabi.DeviceBuffer(16, stream=cuabi.Stream())
    with pytest.raises(TypeError):
        d.close(stream="s")
    assert not d.closed


def test_copy_size_errors(ctx):
    """Copies larger than either side, or of mismatched sizes without nbytes, are refused."""
    b = cuabi.DeviceBuffer(8)
    with pytest.raises(ValueError):
        b.copy_from(b"123456789")
    with pytest.raises(ValueError, match="size mismatch"):
        cuabi.copy(bytearray(4), b)
    with pytest.raises(ValueError):
        cuabi.copy(b, bytearray(8), nbytes=9)
    cuabi.copy(b, b"", nbytes=0)  # nothing to copy is fine


def test_copy_kind_errors(ctx):
    """Copies into read-only memory, from non-buffers, host to host or from strided views are refused."""
    b = cuabi.DeviceBuffer(8)
    with pytest.raises(TypeError, match="read-only"):
        b.copy_to(b"12345678")
    with pytest.raises(TypeError):
        b.copy_from(12345)
    with pytest.raises(TypeError):
        cuabi.copy(bytearray(8), b"12345678")
    with pytest.raises(ValueError):
        b.copy_from(memoryview(bytearray(16))[::2])


def test_allocation_arguments(ctx):
    """DeviceBuffer() refuses a float size, a negative size and a pool that is not one."""
    with pytest.raises(TypeError):
        cuabi.DeviceBuffer(1.5)
    with pytest.raises(ValueError):
        cuabi.DeviceBuffer(-1)
    with pytest.raises(TypeError):
        cuabi.DeviceBuffer(8, pool=object())


def test_empty_buffer(ctx):
    """A zero-byte buffer exists, reads as b"" and closes."""
    z = cuabi.DeviceBuffer(0)
    assert z.size == 0 and z.to_bytes() == b""
    z.close()


def test_allocation_failure_raises(ctx):
    """Asking for more memory than the device has raises CUDAError."""
    with pytest.raises(CUDAError):
        cuabi.DeviceBuffer(1 << 62)


def test_pinned_buffer_host_access(ctx):
    """A pinned buffer is indexable host memory with writable views and an array interface."""
    p = cuabi.PinnedBuffer(32, portable=True)
    assert p.size == len(p) == 32 and p.ptr
    mv = p.memoryview()
    assert not mv.readonly and mv.nbytes == 32 and mv.format == "B"
    p[0:4] = b"abcd"
    assert p[0:4] == b"abcd" and p.to_bytes()[:4] == b"abcd" and mv[0:4] == b"abcd"
    data = p.__array_interface__["data"]
    assert bytes(memoryview(data)[0:4]) == b"abcd"


def test_pinned_buffer_copies(ctx):
    """Pinned buffers copy to and from device memory, also asynchronously."""
    p = cuabi.PinnedBuffer(32)
    p[0:4] = b"abcd"
    b = cuabi.DeviceBuffer(32)
    b.copy_from(p)
    q = cuabi.PinnedBuffer(32)
    b.copy_to(q)
    assert q.to_bytes() == p.to_bytes()
    s = cuabi.Stream()
    b.copy_to(q, stream=s)
    s.sync()


def test_pinned_buffer_close_waits_for_its_views(ctx):
    """close() refuses while a view lives, works once it is gone (twice is fine), then views are refused."""
    p = cuabi.PinnedBuffer(32)
    mv = p.memoryview()
    mv[0] = 0xA5  # fresh pinned memory holds whatever it held (the fake fills it with 0xA5; a GPU does not)
    with pytest.raises(BufferError, match="still alive"):
        p.close()
    assert not p.closed and mv[0] == 0xA5
    del mv
    p.close()
    p.close()
    with pytest.raises(ClosedError):
        p.memoryview()


def test_pinned_buffer_must_not_be_empty(ctx):
    """PinnedBuffer(0) is a ValueError."""
    with pytest.raises(ValueError):
        cuabi.PinnedBuffer(0)


def test_pinned_buffer_refuses_close_while_exported(ctx):
    """close() raises BufferError while another object holds an export of a view."""
    p = cuabi.PinnedBuffer(16)
    import pickle

    held = pickle.PickleBuffer(p.memoryview())  # an object holding a buffer export of a view
    with pytest.raises(BufferError, match="still alive"):
        p.close()
    assert not p.closed
    held.release()
    del held
    p.close()
    assert p.closed


def test_managed_buffer_is_host_and_device_memory(ctx):
    """A managed buffer is written from the host and read as device memory."""
    m = cuabi.ManagedBuffer(16)
    m[0:3] = b"xyz"
    assert bytes(m.memoryview()[:3]) == b"xyz"
    assert m.to_bytes()[:3] == b"xyz"
    d = cuabi.DeviceBuffer(16)
    d.copy_from(m)
    assert d.to_bytes()[:3] == b"xyz"
    assert m.__cuda_array_interface__["data"][0] == m.ptr


def test_managed_buffer_arguments_and_close(ctx):
    """ManagedBuffer() refuses an unknown attach mode and size 0; closed, it refuses its view."""
    with pytest.raises(ValueError):
        cuabi.ManagedBuffer(16, attach="nowhere")
    with pytest.raises(ValueError):
        cuabi.ManagedBuffer(0)
    m = cuabi.ManagedBuffer(16)
    m.close()
    with pytest.raises(ClosedError):
        m.memoryview()


def _range_attribute(buf, attribute, n=1):
    out = bytearray(4 * n)
    d.cuMemRangeGetAttribute(out, 4 * n, attribute, buf.ptr, len(buf))
    values = struct.unpack("=%di" % n, out)
    return values[0] if n == 1 else list(values)


def _last_prefetch(buf):
    return _range_attribute(buf, d.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION)


def test_managed_advice(ctx):
    """advise() sets and unsets read-mostly, the preferred location and accessed-by, as the driver reports."""
    from conftest import needs

    needs("cuMemAdvise")
    m = cuabi.ManagedBuffer(3 * 4096)
    m.advise("set_read_mostly")
    assert _range_attribute(m, d.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY) == 1
    m.advise("unset_read_mostly")
    assert _range_attribute(m, d.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY) == 0
    m.advise("set_preferred_location", "host")
    assert _range_attribute(m, d.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION) == d.CU_DEVICE_CPU
    m.advise(d.CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 0)
    assert _range_attribute(m, d.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION) == 0
    m.advise("unset_preferred_location")
    assert _range_attribute(m, d.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION) == d.CU_DEVICE_INVALID
    m.advise("set_accessed_by", cuabi.Device(0))
    assert _range_attribute(m, d.CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, 2) == [0, d.CU_DEVICE_INVALID]
    m.advise("unset_accessed_by", "device")
    assert _range_attribute(m, d.CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, 2) == [d.CU_DEVICE_INVALID] * 2
    with pytest.raises(ValueError, match="set_read_mostly"):
        m.advise("read_rarely")


@pytest.mark.fake
def test_managed_discard(ctx, fake):
    """discard() reaches the driver for the whole buffer (the fake marks discarded bytes 0xDD)."""
    from conftest import needs

    needs("cuMemDiscardBatchAsync")
    m = cuabi.ManagedBuffer(5000)
    m[0:5000] = b"\1" * 5000
    m.prefetch("device")
    m.discard(stream=cuabi.Stream())
    cuabi.Stream.legacy().sync()
    assert m.to_bytes() == b"\xdd" * 5000
    assert _last_prefetch(m) == d.CU_DEVICE_INVALID


def test_batch_prefetch_and_discard(ctx):
    """prefetch_batch and discard_batch move several buffers in one call, to one or per-buffer places."""
    from conftest import FAKE, needs

    needs("cuMemPrefetchBatchAsync")
    bufs = [cuabi.ManagedBuffer(4096) for _ in range(3)]
    s = cuabi.Stream()
    cuabi.prefetch_batch(bufs, "host", stream=s)
    s.sync()
    assert [_last_prefetch(b) for b in bufs] == [d.CU_DEVICE_CPU] * 3
    cuabi.prefetch_batch(bufs, ["device", "host", 0], stream=s)
    s.sync()
    assert [_last_prefetch(b) for b in bufs] == [0, d.CU_DEVICE_CPU, 0]
    cuabi.discard_batch(bufs[:2], prefetch_to="host", stream=s)
    cuabi.discard_batch(bufs[2:], stream=cuabi.Stream.per_thread())
    s.sync()
    assert [_last_prefetch(b) for b in bufs][:2] == [d.CU_DEVICE_CPU] * 2  # as an H200 reported
    if FAKE is not None:  # where a discard alone leaves the pages is the fake's model, not a driver promise
        assert _last_prefetch(bufs[2]) == d.CU_DEVICE_INVALID
    with pytest.raises(ValueError, match="one per buffer"):
        cuabi.prefetch_batch(bufs, ["host"], stream=s)
    with pytest.raises(ValueError, match="at least one"):
        cuabi.discard_batch([], stream=s)
    with pytest.raises(TypeError, match="cuMemPrefetchBatchAsync"):
        cuabi.prefetch_batch([cuabi.DeviceBuffer(64)], stream=s)


def test_batches_refuse_the_legacy_null_stream(ctx):
    """The batch calls name the legacy NULL stream, which the driver refuses, before calling it."""
    from conftest import needs

    needs("cuMemPrefetchBatchAsync")
    m = cuabi.ManagedBuffer(4096)
    for legacy in (None, cuabi.Stream.legacy()):
        with pytest.raises(ValueError, match="legacy NULL stream"):
            cuabi.prefetch_batch([m], "host", stream=legacy)
        with pytest.raises(ValueError, match="legacy NULL stream"):
            m.discard(stream=legacy)
    with pytest.raises(CUDAError, match="INVALID_VALUE"):  # the driver itself, called raw
        d.cuMemDiscardBatchAsync(bytearray(struct.pack("=Q", m.ptr)), bytearray(struct.pack("=Q", 4096)), 1, 0, 0)


def test_managed_prefetch(ctx):
    """prefetch() moves managed memory to the device or the host, and refuses other places."""
    from conftest import needs

    needs("cuMemPrefetchAsync")
    m = cuabi.ManagedBuffer(4096)
    m.prefetch("device")
    cuabi.Stream.legacy().sync()
    assert _last_prefetch(m) == 0  # device 0
    m.prefetch("host", stream=cuabi.Stream())
    assert _last_prefetch(m) == d.CU_DEVICE_CPU
    m.prefetch(cuabi.Device(0))
    assert _last_prefetch(m) == 0
    with pytest.raises(ValueError):
        m.prefetch(5)  # no such device
    with pytest.raises(CUDAError) as ei:
        d.cuMemPrefetchAsync(m.ptr, len(m), (d.CU_MEM_LOCATION_TYPE_DEVICE, 5), 0, 0)
    assert ei.value.code == d.CUDA_ERROR_INVALID_DEVICE
    assert _last_prefetch(m) == 0
    with pytest.raises(CUDAError) as ei:
        d.cuMemPrefetchAsync(cuabi.DeviceBuffer(64).ptr, 64, (d.CU_MEM_LOCATION_TYPE_DEVICE, 0), 0, 0)
    assert ei.value.code == d.CUDA_ERROR_INVALID_VALUE  # not managed memory


def test_memory_pool_release_threshold(ctx):
    """A pool's release threshold is set at creation and can be changed."""
    with cuabi.MemoryPool(release_threshold=1 << 20) as pool:
        assert pool.release_threshold == 1 << 20
        pool.release_threshold = 0
        assert pool.release_threshold == 0


def test_memory_pool_allocates_stream_ordered_buffers(ctx):
    """pool.allocate() gives a stream-ordered DeviceBuffer that the pool's counters see."""
    s = cuabi.Stream()
    with cuabi.MemoryPool() as pool:
        b = pool.allocate(4096, s)
        assert isinstance(b, cuabi.DeviceBuffer) and b.stream is s
        b.copy_from(b"\1" * 4096, stream=s)
        assert pool.used_memory >= 4096
        assert pool.reserved_memory >= pool.used_memory
        b.close()
        s.sync()
        pool.trim(0)


def test_memory_pool_arguments_are_checked(ctx):
    """trim() refuses a negative size, the threshold a non-int."""
    with cuabi.MemoryPool() as pool:
        with pytest.raises(ValueError):
            pool.trim(-1)
        with pytest.raises(TypeError):
            pool.release_threshold = "big"


def test_closed_pool_refuses_allocations(ctx):
    """A pool closed by its with block cannot allocate."""
    with cuabi.MemoryPool() as pool:
        pass
    assert pool.closed
    with pytest.raises(ClosedError):
        pool.allocate(16, cuabi.Stream())


def test_default_pool_is_never_destroyed(ctx):
    """The device's default pool allocates; closing cuabi's wrapper leaves the pool in place."""
    s = cuabi.Stream()
    default = cuabi.MemoryPool.default()
    b = cuabi.DeviceBuffer(128, stream=s, pool=default)
    b.close()
    default.close()
    b2 = cuabi.MemoryPool.default().allocate(64, s)
    b2.close()


def test_buffer_outliving_its_context():
    """Buffers and views of a closed context are closed too; closing them again is harmless."""
    dev = cuabi.Device(0)
    ctx = dev.set_current()
    b = cuabi.DeviceBuffer(64)
    p = cuabi.PinnedBuffer(64)
    v = b.view("u4")
    ctx.close()
    assert b.closed and p.closed
    with pytest.raises(ClosedError):
        v.ptr  # noqa: B018
    b.close()
