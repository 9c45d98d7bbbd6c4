# SPDX-License-Identifier: Apache-2.0
"""Virtual memory on a real GPU (CUABI_TEST_REAL_GPU=1): VirtualMemoryResource's
buffers hold data, grow in place or by remapping, take access changes, export
their chunks, and leave nothing behind when the driver refuses."""

import os
import struct

import pytest

import cuabi
from cuabi import driver as d

pytestmark = pytest.mark.gpu


@pytest.fixture
def mr():
    ctx = cuabi.Device(0).set_current()
    yield cuabi.VirtualMemoryResource()
    ctx.close()


def _free_bytes():
    free, _total = d.cuMemGetInfo()
    return free


def test_gpu_buffer_holds_data_at_a_granule_aligned_address(mr):
    """A buffer is aligned to the granularity, round-trips random bytes and fills like device memory."""
    g = mr.granularity
    assert g >= 4096 and g & (g - 1) == 0
    b = mr.allocate(3 * g + 5)
    assert b.ptr % g == 0 and b.mapped_size == 4 * g and b.access() == "rw"
    data = os.urandom(b.size)
    b.copy_from(data)
    assert b.to_bytes() == data
    b.fill(0xDEADBEEF, width=4, count=8)
    assert b.to_bytes()[:32] == struct.pack("=8I", *[0xDEADBEEF] * 8)
    dev = cuabi.DeviceBuffer(b.size)
    cuabi.copy(dev, b)  # device to device
    assert dev.to_bytes() == b.to_bytes()
    dev.close()
    mr.deallocate(b)


def test_gpu_grow_within_the_reservation_keeps_address_and_contents(mr):
    """With room reserved, grow maps a second chunk after the first: same address, old bytes kept, new ones usable."""
    g = mr.granularity
    b = cuabi.VirtualMemoryResource(reserve=4 * g).allocate(g)
    data = os.urandom(g)
    b.copy_from(data)
    p = b.ptr
    assert b.grow(3 * g) == p
    assert b.to_bytes()[:g] == data
    tail = os.urandom(2 * g)
    cuabi.copy(cuabi.DeviceArray(p + g, 2 * g, owner=b), tail)
    whole = b.to_bytes()
    assert whole == data + tail  # one copy reads across both chunks
    b.close()


def test_gpu_grow_past_a_taken_range_remaps_without_losing_data(mr):
    """When the addresses after a buffer are taken, grow moves it (move=False refuses); either way the data stays."""
    g = mr.granularity
    b = mr.allocate(g)
    data = os.urandom(g)
    b.copy_from(data)
    p = b.ptr
    hint = p + b.reserved_size
    blocker = d.cuMemAddressReserve(g, 0, hint, 0)
    try:
        if blocker == hint:  # the driver granted the hint: the next space is surely taken
            with pytest.raises(BufferError, match="move=False"):
                b.grow(3 * g, move=False)
            assert b.ptr == p and b.mapped_size == g
        q = b.grow(3 * g)
        if blocker == hint:
            assert q != p and b.ptr == q
        assert b.mapped_size == 3 * g and b.reserved_size >= 3 * g
        assert b.to_bytes()[:g] == data
        b.fill(0x7E, count=3 * g)
        assert b.to_bytes() == b"\x7e" * (3 * g)
    finally:
        b.close()
        d.cuMemAddressFree(blocker, g)


def test_gpu_grow_extends_when_the_next_addresses_are_free(mr):
    """Growing a buffer whose following addresses are free (as the driver usually leaves them) keeps the data."""
    g = mr.granularity
    b = mr.allocate(g)
    data = os.urandom(g)
    b.copy_from(data)
    for n in (2, 5, 9):
        b.grow(n * g)
        assert b.to_bytes()[:g] == data and b.mapped_size == n * g
    b.copy_from(b"\x01" * (9 * g))
    assert b.to_bytes() == b"\x01" * (9 * g)
    b.close()


def test_gpu_access_changes_are_reported_by_the_driver(mr):
    """grant_access to read-only and back is what cuMemGetAccess reports, and grown memory inherits it."""
    g = mr.granularity
    b = mr.allocate(g)
    b.grant_access(0, "r")
    assert b.access(0) == "r"
    b.grant_access(0, "rw")
    b.grow(2 * g)
    assert b.access(0) == "rw"
    loc = bytearray(struct.pack("=Ii", 1, 0))
    assert d.cuMemGetAccess(loc, b.ptr + g) == 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE on the new chunk
    b.copy_from(b"\x33" * (2 * g))
    assert b.to_bytes() == b"\x33" * (2 * g)
    b.close()


def test_gpu_exported_chunk_imports_and_aliases_the_memory(mr):
    """A chunk exported as a file descriptor and imported again maps the same physical bytes elsewhere."""
    g = mr.granularity
    b = cuabi.VirtualMemoryResource(handle_type="posix_fd").allocate(g)
    data = os.urandom(g)
    b.copy_from(data)
    [(fd, offset, size)] = b.export_handles()
    try:
        h = d.cuMemImportFromShareableHandle(fd, 1)  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    finally:
        os.close(fd)
    a = d.cuMemAddressReserve(size, 0, 0, 0)
    d.cuMemMap(a, size, 0, h, 0)
    d.cuMemSetAccess(a, size, bytearray(struct.pack("=IiI", 1, 0, 3)), 1)
    out = bytearray(g)
    d.cuMemcpyDtoH(out, a, g)
    assert bytes(out) == data
    d.cuMemUnmap(a, size)
    d.cuMemRelease(h)
    d.cuMemAddressFree(a, size)
    b.close()


def test_gpu_refused_allocation_leaves_no_memory_behind(mr):
    """An allocation larger than the GPU fails in cuMemCreate, and memory and address space are given back."""
    free = _free_bytes()
    _free, total = d.cuMemGetInfo()
    too_big = (total // mr.granularity + 1) * mr.granularity
    with pytest.raises(cuabi.CUDAError):
        mr.allocate(too_big)
    assert abs(_free_bytes() - free) < 64 << 20
    b = mr.allocate(mr.granularity)  # and the resource still works
    b.close()
