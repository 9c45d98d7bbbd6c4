# SPDX-License-Identifier: Apache-2.0
"""Virtual memory: VirtualMemoryResource and VirtualBuffer on the fake driver's VMM
model (tests/fake/vmm.c), and the fake's own rules for misuse of the raw calls."""

import ctypes
import os
import struct
import sys

import pytest

import cuabi
from conftest import run_json
from cuabi import driver as d

MiB = 1 << 20
G = 2 * MiB  # the fake's granularity (an H200's)

pytestmark = pytest.mark.fake


@pytest.fixture
def vmm(fake, ctx):
    """The fake's VMM test API; every test must leave no reservation, chunk or mapping behind."""
    lib = fake.lib
    lib.fakecuda_vmm_fail.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_int]
    lib.fakecuda_vmm_fail.restype = ctypes.c_int

    class Api:
        @staticmethod
        def live():
            """(reservations, physical chunks, mappings) alive in the fake."""
            c = (ctypes.c_uint * 3)()
            lib.fakecuda_vmm_live(c)
            return tuple(c)

        @staticmethod
        def fail(name, nth, code=int(d.CUresult.CUDA_ERROR_OUT_OF_MEMORY)):
            """The nth next call of ``name`` fails with ``code``."""
            assert lib.fakecuda_vmm_fail(name.encode(), nth, code)

    before = Api.live()
    yield Api
    for name in ("cuMemMap", "cuMemCreate", "cuMemAddressReserve", "cuMemSetAccess"):
        lib.fakecuda_vmm_fail(name.encode(), 0, 0)
    assert Api.live() == before


def _prop(device=0, handle_type=0):
    return bytearray(struct.pack("=IIIiQBBH4s", 1, handle_type, 1, device, 0, 0, 0, 0, b""))


def _access(device=0, flags=3):
    return bytearray(struct.pack("=IiI", 1, device, flags))


# -- the resource ---------------------------------------------------------------------------


def test_resource_follows_the_protocol_and_rounds_to_the_granularity(vmm):
    """A VirtualMemoryResource is a device-only MemoryResource whose buffers map whole granules."""
    mr = cuabi.VirtualMemoryResource()
    assert isinstance(mr, cuabi.MemoryResource)
    assert (mr.is_device_accessible, mr.is_host_accessible, mr.device_id) == (True, False, 0)
    assert mr.granularity == G
    assert cuabi.VirtualMemoryResource(granularity="minimum").granularity == G
    b = mr.allocate(1000)
    assert (b.size, b.mapped_size, b.reserved_size) == (1000, G, G)
    assert vmm.live()[0:3] == (1, 1, 1)
    assert b.access() == "rw"
    mr.deallocate(b)
    assert b.closed


def test_buffer_data_round_trips_and_fills(vmm):
    """Bytes copied into a VirtualBuffer come back, fill writes, and copies to a DeviceBuffer work."""
    b = cuabi.VirtualMemoryResource().allocate(3 * MiB)
    data = os.urandom(3 * MiB)
    b.copy_from(data)
    assert b.to_bytes() == data
    b.fill(0x11223344, width=4, count=4)
    dev = cuabi.DeviceBuffer(3 * MiB)
    cuabi.copy(dev, b)
    assert dev.to_bytes()[:20] == bytes.fromhex("44332211" * 4) + data[16:20]
    s = cuabi.Stream()
    b.fill(0, stream=s)
    s.sync()
    assert b.to_bytes() == bytes(3 * MiB)
    b.close()
    dev.close()


def test_buffer_works_with_views_dlpack_and_the_array_interface(vmm):
    """Views, DLPack and __cuda_array_interface__ describe the mapped memory at its address."""
    b = cuabi.VirtualMemoryResource().allocate(4096)
    b.copy_from(struct.pack("=1024I", *range(1024)))
    v = b.view("u4", shape=(32, 32))
    assert v.ptr == b.ptr and v.shape == (32, 32)
    assert struct.unpack("=4I", v.to_bytes()[4 * 32:4 * 36]) == (32, 33, 34, 35)
    cai = b.__cuda_array_interface__
    assert cai["data"][0] == b.ptr and cai["shape"] == (4096,)
    assert b.__dlpack_device__() == (2, 0)
    if sys.implementation.name == "cpython":  # DLPack capsules need ctypes.pythonapi
        arr = cuabi.from_dlpack(b)
        assert arr.ptr == b.ptr and arr.nbytes == 4096
        with pytest.raises(BufferError, match="DLPack"):
            b.close()  # the consumer still holds it
        arr.close()
    v.close()
    b.close()


def test_grow_in_place_within_the_reservation_keeps_the_address_and_data(vmm):
    """With address space reserved ahead, grow maps a new chunk after the old one: same address, same data."""
    mr = cuabi.VirtualMemoryResource(reserve=8 * MiB)
    b = mr.allocate(G)
    data = os.urandom(G)
    b.copy_from(data)
    p = b.ptr
    assert b.grow(5 * MiB) == p == b.ptr
    assert (b.size, b.mapped_size, b.reserved_size) == (5 * MiB, 6 * MiB, 8 * MiB)
    assert vmm.live()[1:] == (2, 2)
    assert b.to_bytes()[:G] == data
    b.fill(0x5A, count=MiB, stream=None)
    tail = bytearray(b"\x01") * (3 * MiB)
    cuabi.copy(b, bytes(tail), 3 * MiB)  # a copy across the two chunks
    assert b.to_bytes()[:3 * MiB] == bytes(tail)
    b.close()


def test_grow_extends_the_reservation_when_the_space_after_it_is_free(vmm):
    """Past its reservation, a buffer whose next addresses are free reserves them and keeps its address."""
    b = cuabi.VirtualMemoryResource().allocate(G)  # the newest reservation: the fake's next addresses are free
    b.copy_from(b"\x42" * G)
    p = b.ptr
    assert b.grow(3 * G, move=False) == p
    assert (b.mapped_size, b.reserved_size) == (3 * G, 3 * G)
    assert vmm.live()[0] == 2  # two adjacent reservations
    assert b.to_bytes()[:G] == b"\x42" * G
    b.copy_from(b"\x24" * (3 * G))  # one copy across both reservations
    assert b.to_bytes() == b"\x24" * (3 * G)
    b.close()


def test_grow_moves_the_chunks_to_a_new_range_when_the_next_space_is_taken(vmm):
    """When the addresses after a buffer are taken, grow remaps its chunks into a new range: data kept, old range freed."""
    mr = cuabi.VirtualMemoryResource()
    b = mr.allocate(G)
    blocker = mr.allocate(G)  # reserved right after b
    data = os.urandom(G)
    b.copy_from(data)
    p = b.ptr
    with pytest.raises(BufferError, match="move=False"):
        b.grow(2 * G, move=False)
    assert b.ptr == p and vmm.live() == (2, 2, 2)
    q = b.grow(2 * G)
    assert q != p and b.ptr == q
    assert (b.mapped_size, b.reserved_size) == (2 * G, 2 * G)
    assert vmm.live() == (2, 3, 3)  # b's new range and blocker's; b's first chunk is remapped, not copied
    assert b.to_bytes()[:G] == data
    b.close()
    blocker.close()


def test_grow_refuses_to_move_while_a_view_holds_the_address(vmm):
    """A move would leave a view pointing at freed addresses, so it is refused until the view is closed."""
    mr = cuabi.VirtualMemoryResource()
    b = mr.allocate(G)
    blocker = mr.allocate(G)
    v = b.view("u1")
    with pytest.raises(BufferError, match="view"):
        b.grow(2 * G)
    assert b.mapped_size == G
    v.close()
    b.grow(2 * G)
    assert b.mapped_size == 2 * G
    b.close()
    blocker.close()


def test_grow_within_the_mapped_size_maps_nothing_and_shrinking_is_refused(vmm):
    """Growing inside the last granule only changes size; a smaller size is a ValueError."""
    b = cuabi.VirtualMemoryResource().allocate(100)
    assert b.grow(G) == b.ptr
    assert (b.size, b.mapped_size, vmm.live()[2]) == (G, G, 1)
    with pytest.raises(ValueError, match="shrink"):
        b.grow(10)
    b.close()
    with pytest.raises(cuabi.ClosedError):
        b.grow(4 * G)


@pytest.mark.parametrize("access", ["r", "none", "rw"])
def test_grant_access_on_the_owning_device(vmm, access):
    """The owning device's access can be changed and is read back; 'none' makes copies fail, as on a GPU."""
    b = cuabi.VirtualMemoryResource().allocate(G)
    b.grant_access(0, access)
    assert b.access() == access and b.access(0) == access
    if access == "none":
        with pytest.raises(cuabi.CUDAError):
            b.to_bytes()
    else:
        assert len(b.to_bytes()) == G
    b.grow(2 * G)  # the new chunk gets the access the buffer has
    assert d.cuMemGetAccess(bytearray(struct.pack("=Ii", 1, 0)), b.ptr + G) == {"r": 1, "none": 0, "rw": 3}[access]
    with pytest.raises(ValueError, match="access must be"):
        b.grant_access(0, "write")
    with pytest.raises(ValueError, match="out of range"):
        b.grant_access(7, "rw")  # no such device
    b.close()


def test_a_second_device_reaches_the_memory_only_once_given_access(fake):
    """With two fake devices, device 1 copies from device 0's buffer only after grant_access or peers=."""
    out = run_json("""
        import json, struct, cuabi
        from cuabi import driver as d
        from cuabi.errors import CUDAError
        G = 2 << 20
        one = cuabi.Device(1)

        def read_from_device_1(ptr):  # a raw copy in device 1's context
            out = bytearray(4)
            with one.context:
                try:
                    d.cuMemcpyDtoH(out, ptr, 4)
                    return out.hex()
                except CUDAError as exc:
                    return exc.name

        b = cuabi.VirtualMemoryResource(device=0).allocate(G)
        b.copy_from(b"\x11" * G)
        res = {"before": read_from_device_1(b.ptr), "access_before": b.access(1)}
        b.grant_access(1, "r")
        res["after"] = read_from_device_1(b.ptr)
        res["access_after"] = [b.access(1), b.access(0)]
        b.grow(3 * G)
        res["grown"] = d.cuMemGetAccess(bytearray(struct.pack("=Ii", 1, 1)), b.ptr + 2 * G)
        b.grant_access(1, "none")
        res["revoked"] = read_from_device_1(b.ptr)
        b.close()
        p = cuabi.VirtualMemoryResource(device=0, peers=[1]).allocate(G)
        p.fill(0x22)
        res["peers"] = [p.access(1), read_from_device_1(p.ptr)]
        p.close()
        print(json.dumps(res))
    """, env={"FAKECUDA_DEVICE_COUNT": "2"})
    assert out == {"before": "CUDA_ERROR_INVALID_VALUE", "access_before": "none", "after": "11111111",
                   "access_after": ["r", "rw"], "grown": 1, "revoked": "CUDA_ERROR_INVALID_VALUE",
                   "peers": ["rw", "22222222"]}


def test_a_failed_grant_puts_the_old_access_back(vmm):
    """grant_access failing on the second chunk restores the first chunk's access and keeps the buffer's."""
    b = cuabi.VirtualMemoryResource(reserve=2 * G).allocate(G)
    b.grow(2 * G)  # two chunks: one cuMemSetAccess each
    vmm.fail("cuMemSetAccess", 2)
    with pytest.raises(cuabi.errors.OutOfMemoryError):
        b.grant_access(0, "r")
    assert d.cuMemGetAccess(bytearray(struct.pack("=Ii", 1, 0)), b.ptr) == 3
    assert b.access() == "rw"
    b.close()


def test_peers_get_access_to_every_buffer(vmm):
    """A resource's peers are given read-write access at allocation (device 0 named twice is harmless)."""
    b = cuabi.VirtualMemoryResource(peers=[0]).allocate(G)
    assert b.access(0) == "rw"
    b.close()


def test_exported_handles_are_file_descriptors_of_the_chunks(vmm):
    """With handle_type='posix_fd' each chunk exports a descriptor whose file holds the chunk's bytes."""
    b = cuabi.VirtualMemoryResource(handle_type="posix_fd").allocate(G)
    b.copy_from(b"\x77" * G)
    [(fd, offset, size)] = b.export_handles()
    try:
        assert (offset, size) == (0, G)
        assert os.pread(fd, 16, 0) == b"\x77" * 16
        h = d.cuMemImportFromShareableHandle(fd, 1)  # the descriptor's value is the "pointer"
    finally:
        os.close(fd)
    a = d.cuMemAddressReserve(G, 0, 0, 0)
    d.cuMemMap(a, G, 0, h, 0)
    d.cuMemSetAccess(a, G, _access(), 1)
    d.cuMemsetD8(a, 0x78, 4)  # written through the import, seen through the buffer
    assert b.to_bytes()[:5] == b"\x78\x78\x78\x78\x77"
    d.cuMemUnmap(a, G)
    d.cuMemRelease(h)
    d.cuMemAddressFree(a, G)
    b.close()
    plain = cuabi.VirtualMemoryResource().allocate(G)
    with pytest.raises(cuabi.CUDAError):
        plain.export_handles()
    plain.close()


def test_bad_arguments_are_refused_before_anything_is_made(vmm):
    """Empty sizes, unknown options and the wrong buffer are refused with the usual exceptions."""
    mr = cuabi.VirtualMemoryResource()
    with pytest.raises(ValueError, match="empty"):
        mr.allocate(0)
    with pytest.raises(ValueError, match="granularity"):
        cuabi.VirtualMemoryResource(granularity="big")
    with pytest.raises(ValueError, match="handle_type"):
        cuabi.VirtualMemoryResource(handle_type="fabric")
    with pytest.raises(ValueError, match="did not allocate"):
        mr.deallocate(cuabi.VirtualMemoryResource().allocate(G))
    import gc

    gc.collect()  # the refused buffer is garbage: collected, it releases everything


def test_closing_the_context_releases_the_buffer(vmm):
    """A VirtualBuffer belongs to its context: closing the context unmaps and frees it."""
    ctx = cuabi.Device(0).context
    b = cuabi.VirtualMemoryResource().allocate(G)
    b.grow(3 * G)
    ctx.close()
    assert b.closed


# -- failures part-way -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess"])
def test_a_failed_allocation_leaves_nothing_behind(vmm, name):
    """Whichever call of an allocation fails, what the earlier ones made is undone and the error raised."""
    mr = cuabi.VirtualMemoryResource()
    vmm.fail(name, 1)
    with pytest.raises(cuabi.CUDAError, match="OUT_OF_MEMORY"):
        mr.allocate(G)
    assert vmm.live() == (0, 0, 0)


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_move_failing_on_the_nth_map_leaves_the_buffer_as_it_was(vmm, nth):
    """A move whose nth cuMemMap fails unmaps the new mappings and frees the new range; the buffer is intact."""
    mr = cuabi.VirtualMemoryResource()
    b = mr.allocate(2 * G)
    b.grow(2 * G + 1)  # the next space is free: extends in place, a second chunk
    blocker = mr.allocate(G)
    data = os.urandom(2 * G + 1)
    b.copy_from(data)
    p, before = b.ptr, vmm.live()
    vmm.fail("cuMemMap", nth)  # the move maps 2 old chunks and then the new one
    with pytest.raises(cuabi.CUDAError):
        b.grow(6 * G)
    assert b.ptr == p and vmm.live() == before
    assert (b.size, b.mapped_size) == (2 * G + 1, 3 * G)
    assert b.to_bytes() == data
    b.grow(6 * G)  # and then it can grow
    assert b.to_bytes()[:len(data)] == data
    b.close()
    blocker.close()


def test_an_in_place_grow_failing_leaves_the_buffer_as_it_was(vmm):
    """A grow whose set-access fails releases the chunk it made and unmaps it; size and data stay."""
    b = cuabi.VirtualMemoryResource(reserve=4 * G).allocate(G)
    before = vmm.live()
    vmm.fail("cuMemSetAccess", 1)
    with pytest.raises(cuabi.CUDAError):
        b.grow(3 * G)
    assert vmm.live() == before and b.mapped_size == G
    b.close()


# -- the fake's rules for the raw calls ------------------------------------------------------


def test_fake_maps_physical_memory_so_two_mappings_alias(vmm):
    """One physical chunk mapped at two addresses shows the same bytes at both, as a real GPU's does."""
    h = d.cuMemCreate(G, _prop(), 0)
    a = d.cuMemAddressReserve(2 * G, 0, 0, 0)
    d.cuMemMap(a, G, 0, h, 0)
    d.cuMemMap(a + G, G, 0, h, 0)
    d.cuMemSetAccess(a, 2 * G, _access(), 1)
    d.cuMemsetD8(a, 0x3C, 16)
    out = bytearray(16)
    d.cuMemcpyDtoH(out, a + G, 16)
    assert out == b"\x3c" * 16
    d.cuMemUnmap(a, 2 * G)  # one unmap may cover several whole mappings
    d.cuMemRelease(h)
    d.cuMemAddressFree(a, 2 * G)


def test_fake_refuses_misuse_as_a_driver_does(vmm):
    """Unaligned sizes, double maps, partial unmaps, stale handles and wrong frees all fail with INVALID_VALUE."""
    bad = cuabi.errors.InvalidValueError
    with pytest.raises(bad):
        d.cuMemCreate(G + 4096, _prop(), 0)  # not a multiple of the granularity
    with pytest.raises(bad):
        d.cuMemAddressReserve(G, 3, 0, 0)  # alignment not a power of two
    h = d.cuMemCreate(2 * G, _prop(), 0)
    a = d.cuMemAddressReserve(4 * G, 0, 0, 0)
    with pytest.raises(bad):
        d.cuMemMap(a, 2 * G, G, h, 0)  # offset must be 0
    with pytest.raises(bad):
        d.cuMemMap(a + 3 * G, 2 * G, 0, h, 0)  # past the reservation
    with pytest.raises(bad):
        d.cuMemUnmap(a, G)  # nothing mapped there
    d.cuMemMap(a, 2 * G, 0, h, 0)
    with pytest.raises(bad):
        d.cuMemMap(a + G, G, 0, h, 0)  # already mapped
    with pytest.raises(bad):
        d.cuMemUnmap(a, G)  # half of a mapping
    with pytest.raises(bad):
        d.cuMemSetAccess(a, 4 * G, _access(), 1)  # not fully mapped
    out = bytearray(4)
    with pytest.raises(bad):
        d.cuMemcpyDtoH(out, a, 4)  # mapped but no access set
    with pytest.raises(bad):
        d.cuMemAddressFree(a, 4 * G)  # still mapped
    with pytest.raises(bad):
        d.cuMemAddressFree(a, 2 * G)  # not the reserved size
    d.cuMemRelease(h)  # allowed while mapped: the memory stays until unmapped
    assert vmm.live()[1] == 1
    with pytest.raises(bad):
        d.cuMemRelease(h)  # released already
    with pytest.raises(bad):
        d.cuMemMap(a + 2 * G, 2 * G, 0, h, 0)  # a released handle cannot be mapped again
    d.cuMemUnmap(a, 2 * G)
    with pytest.raises(bad):
        d.cuMemUnmap(a, 2 * G)  # unmapped twice
    d.cuMemAddressFree(a, 4 * G)
    with pytest.raises(bad):
        d.cuMemAddressFree(a, 4 * G)  # freed twice


def test_fake_grants_an_address_hint_only_where_it_is_free(vmm):
    """A hint right after the newest reservation is granted; one inside a reservation is not."""
    a = d.cuMemAddressReserve(G, 0, 0, 0)
    b = d.cuMemAddressReserve(G, 0, a + G, 0)
    c = d.cuMemAddressReserve(G, 0, a, 0)
    assert b == a + G and c not in (a, b)
    for p in (a, b, c):
        d.cuMemAddressFree(p, G)


def test_an_allocation_beyond_the_devices_memory_fails_in_create_and_frees_its_range(vmm):
    """cuMemCreate refuses more than FAKECUDA_TOTAL_MEM; the reservation made before it is freed."""
    _free, total = d.cuMemGetInfo()
    with pytest.raises(cuabi.errors.OutOfMemoryError):
        cuabi.VirtualMemoryResource().allocate(total + G)
    assert vmm.live() == (0, 0, 0)
