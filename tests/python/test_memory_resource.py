# SPDX-License-Identifier: Apache-2.0
"""Memory resources: MemoryPool, PinnedMemoryResource and ManagedMemoryResource behind one protocol."""

import pytest

import cuabi


def _resources():
    return [cuabi.MemoryPool(), cuabi.MemoryPool.default(), cuabi.PinnedMemoryResource(),
            cuabi.ManagedMemoryResource()]


def test_every_resource_follows_the_protocol(ctx):
    """Each resource is a MemoryResource and allocates buffers of the size asked, on its device."""
    s = cuabi.Stream()
    for mr in _resources():
        assert isinstance(mr, cuabi.MemoryResource), mr
        assert mr.device_id == 0
        buf = mr.allocate(4096, s)
        assert buf.size == 4096 and buf.ptr
        buf2 = mr.allocate(64)
        mr.deallocate(buf, s)
        mr.deallocate(buf2)
        assert buf.closed and buf2.closed
    assert not isinstance(object(), cuabi.MemoryResource)


def test_accessibility_says_where_the_memory_is_reachable(ctx):
    """Device pools are device-only; pinned and managed memory are reachable from both sides."""
    pool, default, pinned, managed = _resources()
    assert (pool.is_device_accessible, pool.is_host_accessible) == (True, False)
    assert (default.is_device_accessible, default.is_host_accessible) == (True, False)
    for mr in (pinned, managed):
        assert mr.is_device_accessible and mr.is_host_accessible
        buf = mr.allocate(16)
        buf[0:4] = b"abcd"  # the host writes it directly
        assert buf.to_bytes()[:4] == b"abcd"
        mr.deallocate(buf)


def test_memory_from_every_resource_round_trips_through_the_device(ctx):
    """Bytes copied from device memory into a buffer of each resource and back come back unchanged."""
    src, back = cuabi.DeviceBuffer(256), cuabi.DeviceBuffer(256)
    src.copy_from(bytes(range(256)))
    for mr in _resources():
        buf = mr.allocate(256)
        back.fill(0)
        cuabi.copy(buf, src)
        cuabi.copy(back, buf)
        assert back.to_bytes() == bytes(range(256)), mr
        mr.deallocate(buf)


def test_deallocate_refuses_another_resources_buffer(ctx):
    """A resource frees only the kind of buffer it allocates, and a pool only its own."""
    pool, other, pinned, managed = cuabi.MemoryPool(), cuabi.MemoryPool(), cuabi.PinnedMemoryResource(), \
        cuabi.ManagedMemoryResource()
    b = pool.allocate(64)
    with pytest.raises(ValueError, match="did not allocate"):
        other.deallocate(b)
    with pytest.raises(TypeError, match="PinnedBuffer"):
        pinned.deallocate(b)
    with pytest.raises(TypeError, match="ManagedBuffer"):
        managed.deallocate(pinned.allocate(8))
    with pytest.raises(ValueError, match="attach"):
        cuabi.ManagedMemoryResource(attach="device")
    assert not b.closed
    pool.deallocate(b)
