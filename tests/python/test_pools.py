# SPDX-License-Identifier: Apache-2.0
"""Pinned and managed memory pools, graph memory, batch copies (cuabi._pools) on the fake driver."""

import struct

import pytest

import cuabi
from cuabi import driver as d
from cuabi._constants import (CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_LOCATION_TYPE_DEVICE,
                              CU_MEM_LOCATION_TYPE_HOST)


def _access(pool, loc_type, loc_id=0):
    return int(d.cuMemPoolGetAccess(pool.handle, bytearray(struct.pack("=Ii", loc_type, loc_id))))


def _pointer(attr, ptr):
    cell = bytearray(4)
    d.cuPointerGetAttribute(cell, attr, ptr)
    return struct.unpack("=I", cell)[0]


def _node_types(graph):
    n = graph.node_count
    nodes = bytearray(8 * n)
    d.cuGraphGetNodes(graph.handle, nodes, n)
    return [int(d.cuGraphNodeGetType(h)) for h in struct.unpack("=%dQ" % n, nodes)]


# -- pinned and managed pools ---------------------------------------------------------------

def test_pinned_pool_memory_is_host_memory_the_device_may_use(ctx):
    """A pinned pool's host memory is granted to its device: the host writes it, copies move it."""
    s = cuabi.Stream()
    pool = cuabi.PinnedMemoryPool()
    assert isinstance(pool, cuabi.MemoryResource) and isinstance(pool, cuabi.MemoryPool)
    assert (pool.is_host_accessible, pool.is_device_accessible, pool.device_id) == (True, True, 0)
    assert pool.numa_node is None
    assert _access(pool, CU_MEM_LOCATION_TYPE_DEVICE, 0) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    buf = pool.allocate(64, s)
    assert isinstance(buf, cuabi.PinnedPoolBuffer) and isinstance(buf, cuabi.DeviceBuffer)
    assert _pointer(d.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, buf.ptr) == d.CU_MEMORYTYPE_HOST
    buf[0:8] = b"pinnedok"
    dev = cuabi.DeviceBuffer(64)
    dev.fill(0)
    dev.copy_from(buf)
    assert dev.to_bytes()[:8] == b"pinnedok"
    dev.copy_from(bytes(range(64)))
    buf.copy_from(dev, stream=s)
    s.sync()
    assert bytes(buf.memoryview()) == bytes(range(64))
    assert buf.view("u1").to_bytes()[:4] == bytes(range(4))  # a view of it copies the same way
    assert cuabi.from_cuda_array_interface(buf.view("u1")).to_bytes()[:4] == bytes(range(4))  # and an import of a view
    pool.deallocate(buf, s)
    assert buf.closed


def test_pinned_pool_on_a_numa_node(ctx):
    """numa_node picks a host NUMA node (the fake has node 0); another node is refused by the driver."""
    pool = cuabi.PinnedMemoryPool(numa_node=0)
    assert pool.numa_node == 0
    buf = pool.allocate(16)
    buf[:] = b"x" * 16
    assert buf.to_bytes() == b"x" * 16
    pool.deallocate(buf)
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        cuabi.PinnedMemoryPool(numa_node=5)
    with pytest.raises(ValueError, match="numa_node"):
        cuabi.PinnedMemoryPool(numa_node=-1)


def test_managed_pool_buffers_migrate_like_managed_buffers(ctx):
    """Managed pool buffers are managed memory that prefetch, advise and the batch calls take."""
    s = cuabi.Stream()
    for preferred in (None, "device", "host"):
        pool = cuabi.ManagedMemoryPool(preferred=preferred)
        assert pool.preferred == preferred and pool.is_host_accessible
        buf = pool.allocate(2 * 4096, s)
        assert isinstance(buf, cuabi.ManagedPoolBuffer)
        assert _pointer(d.CU_POINTER_ATTRIBUTE_IS_MANAGED, buf.ptr) == 1
        buf[0:5] = b"hello"
        buf.prefetch("device", stream=s)
        with pytest.raises(cuabi.errors.NotSupportedError):  # driver 580: no advice for pool memory
            buf.advise("set_read_mostly")
        cuabi.prefetch_batch([buf], "host", stream=s)
        cuabi.discard_batch([buf], prefetch_to="device", stream=s)
        buf[0:5] = b"again"
        assert buf.to_bytes()[:5] == b"again"
        assert buf.__dlpack_device__() == (13, 0)  # kDLCUDAManaged
        pool.deallocate(buf)
    with pytest.raises(ValueError, match="preferred"):
        cuabi.ManagedMemoryPool(preferred="gpu")


@pytest.mark.fake
def test_host_pools_keep_the_pool_counters(ctx):
    """Used and reserved memory follow allocations, the release threshold and trim (the fake's byte counts)."""
    s = cuabi.Stream()
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):  # as driver 580: no size limit
        cuabi.ManagedMemoryPool(max_size=1 << 24)
    for pool in (cuabi.PinnedMemoryPool(release_threshold=1 << 20), cuabi.ManagedMemoryPool()):
        if pool.release_threshold == 0:
            pool.release_threshold = 1 << 20
        a, b = pool.allocate(1000, s), pool.allocate(3000, s)
        assert (pool.used_memory, pool.reserved_memory) == (4000, 4000)
        pool.deallocate(a)
        assert (pool.used_memory, pool.reserved_memory) == (3000, 4000)
        pool.trim(0)
        assert pool.reserved_memory == 3000
        b.close()
        assert pool.used_memory == 0


def test_host_views_hold_a_pool_buffer_open(ctx):
    """As for PinnedBuffer: close refuses while a view lives; after it goes, the buffer frees."""
    pool = cuabi.PinnedMemoryPool()
    buf = pool.allocate(32)
    view = buf.memoryview()
    with pytest.raises(BufferError, match="view"):
        buf.close()
    with pytest.raises(BufferError):
        pool.deallocate(buf)
    assert not buf.closed and pool.used_memory == 32
    del view
    buf.close()
    assert buf.closed and pool.used_memory == 0
    with pytest.raises(cuabi.ClosedError):
        buf.memoryview()


def test_a_collected_pool_buffer_leaves_its_memory_to_its_views(ctx):
    """Garbage collection while a view lives frees the memory only when the view goes."""
    import gc

    pool = cuabi.ManagedMemoryPool()
    buf = pool.allocate(16)
    view = buf.memoryview()
    view[0:3] = b"abc"
    del buf
    gc.collect()
    assert pool.used_memory == 16 and bytes(view[0:3]) == b"abc"
    del view
    gc.collect()
    assert pool.used_memory == 0


def test_default_pools_are_the_drivers_shared_ones(ctx):
    """default() wraps cuMemGetDefaultMemPool's pool of that kind and place; close leaves it alive."""
    s = cuabi.Stream()
    pinned, again = cuabi.PinnedMemoryPool.default(), cuabi.PinnedMemoryPool.default()
    assert pinned.handle == again.handle and pinned.numa_node is None
    assert _access(pinned, CU_MEM_LOCATION_TYPE_DEVICE, 0) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    assert cuabi.PinnedMemoryPool.default(numa_node=0).handle != pinned.handle
    handles = {cuabi.ManagedMemoryPool.default(preferred=p).handle for p in (None, "device", "host")}
    assert len(handles) == 3 and pinned.handle not in handles
    assert cuabi.MemoryPool.default().handle not in handles | {pinned.handle}
    buf = pinned.allocate(32, s)
    assert isinstance(buf, cuabi.PinnedPoolBuffer) and pinned.used_memory == 32
    pinned.deallocate(buf)
    m = cuabi.ManagedMemoryPool.default(preferred="device")
    mb = m.allocate(64, s)
    assert isinstance(mb, cuabi.ManagedPoolBuffer) and _pointer(d.CU_POINTER_ATTRIBUTE_IS_MANAGED, mb.ptr) == 1
    m.deallocate(mb)
    h = pinned.handle
    pinned.close()
    assert cuabi.PinnedMemoryPool.default().handle == h  # the driver's pool is still there
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        d.cuMemPoolDestroy(h)  # a default pool cannot be destroyed
    with pytest.raises(ValueError, match="preferred"):
        cuabi.ManagedMemoryPool.default(preferred="gpu")


def test_host_pools_are_not_a_devices_pool(ctx):
    """cuDeviceSetMemPool refuses a pinned pool, and the device keeps its pool."""
    before = int(d.cuDeviceGetMemPool(0))
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        d.cuDeviceSetMemPool(0, cuabi.PinnedMemoryPool().handle)
    assert int(d.cuDeviceGetMemPool(0)) == before
    # (driver 580 takes a managed pool on the device, as the device's managed pool: not
    # tried here, since destroying a pool the driver still uses as current crashes it)


@pytest.mark.fake
def test_the_fake_grants_host_pool_access_as_the_driver_does(ctx):
    """The fake grants pool access and refuses pool locations as CUDA 13.0 documents."""
    props = bytearray(88)
    struct.pack_into("=IIIi", props, 0, d.CU_MEM_ALLOCATION_TYPE_PINNED, 0, CU_MEM_LOCATION_TYPE_HOST, 0)
    h = d.cuMemPoolCreate(props)
    try:
        assert _access(cuabi.MemoryPool.default(), CU_MEM_LOCATION_TYPE_HOST) == 0
        raw = cuabi.MemoryPool.default()
        assert _access(raw, CU_MEM_LOCATION_TYPE_DEVICE, 0) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        assert int(d.cuMemPoolGetAccess(h, bytearray(struct.pack("=Ii", CU_MEM_LOCATION_TYPE_DEVICE, 0)))) == 0
        assert int(d.cuMemPoolGetAccess(h, bytearray(struct.pack("=Ii", CU_MEM_LOCATION_TYPE_HOST, 0)))) == 3
        with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):  # the own device keeps full access
            d.cuMemPoolSetAccess(raw.handle, bytearray(struct.pack("=IiI", CU_MEM_LOCATION_TYPE_DEVICE, 0, 0)), 1)
        struct.pack_into("=IIIi", props, 0, d.CU_MEM_ALLOCATION_TYPE_PINNED, 1, CU_MEM_LOCATION_TYPE_HOST, 0)
        with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):  # host pools are not IPC capable
            d.cuMemPoolCreate(props)
        struct.pack_into("=IIIi", props, 0, d.CU_MEM_ALLOCATION_TYPE_PINNED, 0, 4, 0)
        with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):  # HOST_NUMA_CURRENT
            d.cuMemPoolCreate(props)
        struct.pack_into("=IIIi", props, 0, d.CU_MEM_ALLOCATION_TYPE_PINNED, 0, 0, 0)
        with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):  # no location: managed pools only
            d.cuMemPoolCreate(props)
        p = d.cuMemAllocFromPoolAsync(64, h, 0)
        with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):  # not cuMemHostAlloc memory
            d.cuMemFreeHost(p)
        d.cuMemFreeAsync(p, 0)
    finally:
        d.cuMemPoolDestroy(h)


# -- one rule for deallocate misuse ------------------------------------------------------------

def test_every_resource_refuses_misuse_the_same_way(ctx):
    """Wrong kind: TypeError; another resource's buffer: ValueError; nothing freed; a closed one: no-op."""
    s = cuabi.Stream()
    resources = [cuabi.MemoryPool(), cuabi.PinnedMemoryPool(), cuabi.ManagedMemoryPool(),
                 cuabi.PinnedMemoryResource(), cuabi.ManagedMemoryResource()]
    twins = [cuabi.MemoryPool(), cuabi.PinnedMemoryPool(), cuabi.ManagedMemoryPool(),
             cuabi.PinnedMemoryResource(), cuabi.ManagedMemoryResource()]
    mine = [mr.allocate(64, s) for mr in resources]
    for i, mr in enumerate(resources):
        with pytest.raises(ValueError, match="did not allocate"):
            twins[i].deallocate(mine[i])
        for j, other in enumerate(mine):
            if not isinstance(other, type(mine[i])):
                with pytest.raises(TypeError, match="deallocates"):
                    mr.deallocate(other)
            elif other is not mine[i]:  # a pool buffer of another kind is still a DeviceBuffer
                with pytest.raises(ValueError, match="did not allocate"):
                    mr.deallocate(other)
        with pytest.raises(TypeError, match="deallocates"):
            mr.deallocate(object())
    assert not any(b.closed for b in mine)
    for mr, b in zip(resources, mine):
        mr.deallocate(b)
        mr.deallocate(b)  # closed already: nothing
        assert b.closed
    g = cuabi.GraphMemoryResource()
    with pytest.raises(TypeError, match="deallocates"):
        g.deallocate(cuabi.DeviceBuffer(8))
    vmm = cuabi.VirtualMemoryResource()
    with pytest.raises(TypeError, match="deallocates"):
        vmm.deallocate(cuabi.DeviceBuffer(8))
    foreign = cuabi.VirtualMemoryResource().allocate(64)
    with pytest.raises(ValueError, match="did not allocate"):
        vmm.deallocate(foreign)
    assert not foreign.closed
    foreign.close()


# -- graph memory ---------------------------------------------------------------------------

@pytest.mark.fake  # driver 580 counts graph memory differently (tests/fake/README.md)
def test_graph_memory_becomes_allocation_and_free_nodes(ctx):
    """Capture makes allocation and free nodes; each launch allocates, uses and frees the memory."""
    s = cuabi.Stream()
    g = cuabi.GraphMemoryResource()
    assert isinstance(g, cuabi.MemoryResource)
    assert (g.is_device_accessible, g.is_host_accessible, g.device_id) == (True, False, 0)
    out = cuabi.DeviceBuffer(64)
    out.fill(0)
    with cuabi.Graph.capture(s) as cap:
        buf = g.allocate(256, s)
        buf.fill(0x5A, stream=s)
        cuabi.copy(out, buf, 64, stream=s)
        g.deallocate(buf, s)
    assert buf.closed
    types = _node_types(cap.graph)
    assert types[0] == d.CU_GRAPH_NODE_TYPE_MEM_ALLOC and types[-1] == d.CU_GRAPH_NODE_TYPE_MEM_FREE
    assert g.used_memory == 0 and g.reserved_memory == 0  # nothing runs at capture
    exe = cap.graph.instantiate()
    g.reset_high_marks()
    for _ in range(2):
        exe.launch(s)
        s.sync()
        assert out.to_bytes() == b"\x5a" * 64
        out.fill(0)
    assert g.used_memory == 0 and g.used_memory_high == 256
    assert g.reserved_memory == 256 and g.reserved_memory_high == 256
    g.trim()
    assert g.reserved_memory == 0 and g.reserved_memory_high == 256
    g.reset_high_marks()
    assert g.used_memory_high == 0 and g.reserved_memory_high == 0


@pytest.mark.fake  # the fake's graph memory counts
def test_graph_memory_left_live_by_a_launch_is_freed_in_stream_order(ctx):
    """Memory a launch leaves live counts as used until freed; relaunching before that is refused."""
    s = cuabi.Stream()
    g = cuabi.GraphMemoryResource()
    with cuabi.Graph.capture(s) as cap:
        buf = g.allocate(512, s)
        buf.fill(1, stream=s)
    ptr = buf.ptr  # fixed at capture
    exe = cap.graph.instantiate()
    exe.launch(s)
    assert g.used_memory == 512
    assert buf.to_bytes(s) == b"\x01" * 512  # the host reads it through a copy after the launch
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        exe.launch(s)
    g.deallocate(buf)
    assert buf.closed and g.used_memory == 0
    exe.launch(s)
    assert g.used_memory == 512
    d.cuMemFreeAsync(ptr, s.handle)  # a launch's memory, freed through the raw driver
    assert g.used_memory == 0
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        d.cuMemFreeAsync(ptr, s.handle)  # not allocated now


def test_graph_memory_is_refused_outside_capture(ctx):
    """allocate needs a stream, and one that is being captured."""
    g = cuabi.GraphMemoryResource()
    with pytest.raises(ValueError, match="stream="):
        g.allocate(64)
    with pytest.raises(ValueError, match="not being captured"):
        g.allocate(64, cuabi.Stream())


def test_graph_memory_attributes_refuse_what_the_driver_refuses(ctx):
    """Only the high marks may be set, and only to 0."""
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        d.cuDeviceSetGraphMemAttribute(0, d.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, bytearray(8))
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        d.cuDeviceSetGraphMemAttribute(0, d.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, bytearray(struct.pack("=Q", 5)))


# -- batch copies -------------------------------------------------------------------------

def test_copy_batch_copies_every_triple(ctx):
    """Device, pinned, managed and pool buffers, arrays and addresses in one call."""
    s = cuabi.Stream()
    src = cuabi.DeviceBuffer(256)
    src.copy_from(bytes(range(256)))
    pinned = cuabi.PinnedBuffer(64)
    managed = cuabi.ManagedBuffer(64)
    pooled = cuabi.PinnedMemoryPool().allocate(64, s)
    dst = cuabi.DeviceBuffer(64)
    arr = cuabi.DeviceBuffer(32).view("u4")
    cuabi.copy_batch([(pinned, src, 64), (managed, src.ptr + 64, 64), (pooled, cuabi.DeviceArray(src.ptr + 128, (64,), owner=src), 64),
                      (dst.ptr, src.ptr + 192, 64), (arr, src, 32)], stream=s)
    s.sync()
    assert pinned.to_bytes() == bytes(range(64))
    assert managed.to_bytes() == bytes(range(64, 128))
    assert pooled.to_bytes() == bytes(range(128, 192))
    assert dst.to_bytes() == bytes(range(192, 256))
    assert arr.to_bytes() == bytes(range(32))
    cuabi.copy_batch([(dst, pinned, 64)], stream=s, source_order="any", overlap=True)
    assert dst.to_bytes(s) == bytes(range(64))
    pooled.close()


def test_copy_batch_refuses_bad_batches(ctx):
    """Bad batches are refused in Python before any copy, or by the driver after the copies before the bad one."""
    s = cuabi.Stream()
    a, b = cuabi.DeviceBuffer(16), cuabi.DeviceBuffer(16)
    a.fill(1)
    b.fill(2)
    with pytest.raises(ValueError, match="exceeds"):
        cuabi.copy_batch([(a, b, 17)], stream=s)
    with pytest.raises(ValueError, match="at least one"):
        cuabi.copy_batch([], stream=s)
    with pytest.raises(TypeError, match="triples"):
        cuabi.copy_batch([(a, b)], stream=s)
    with pytest.raises(TypeError, match="dst must be"):
        cuabi.copy_batch([("x", b, 4)], stream=s)
    with pytest.raises(ValueError, match="source_order"):
        cuabi.copy_batch([(a, b, 4)], stream=s, source_order="later")
    with pytest.raises(ValueError, match="legacy"):
        cuabi.copy_batch([(a, b, 4)], stream=cuabi.Stream.legacy())
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        cuabi.copy_batch([(a, b, 16), (b.ptr + 8, a, 16)], stream=s)  # the second runs past b
    s.sync()
    assert a.to_bytes() == b"\x02" * 16  # the copy before the bad one was made, as driver 580 does


def test_the_fake_checks_batch_copy_attributes(ctx):
    """attrsIdxs starts at 0 and rises below count; every copy has a valid source order."""
    s = cuabi.Stream()
    a, b = cuabi.DeviceBuffer(16), cuabi.DeviceBuffer(16)

    def call(attrs, idxs, n=2, order_ok=True):
        ptrs = bytearray(struct.pack("=2Q", a.ptr, a.ptr + 8))
        srcs = bytearray(struct.pack("=2Q", b.ptr, b.ptr + 8))
        sizes = bytearray(struct.pack("=2Q", 8, 8))
        blob = b"".join(struct.pack("=IIiIiI", o, 1, 0, 1, 0, f) for o, f in attrs)
        d.cuMemcpyBatchAsync(ptrs, srcs, sizes, n, bytearray(blob), bytearray(struct.pack("=%dQ" % len(idxs), *idxs)),
                             len(attrs), s.handle)

    call([(1, 0)], [0])
    call([(1, 0), (3, 1)], [0, 1])
    for attrs, idxs in (([(1, 0)], [1]), ([(0, 0)], [0]), ([(1, 2)], [0]), ([(1, 0), (1, 0)], [0, 2]),
                        ([(1, 0), (1, 0)], [0, 0])):
        with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
            call(attrs, idxs)


def test_kernels_take_pool_buffers_as_pointer_arguments(module):
    """The fake's saxpy reads a pinned pool buffer and updates a managed pool buffer in place."""
    k = module.get_kernel("saxpy", "fppi")
    s = cuabi.Stream()
    n = 64
    x = cuabi.PinnedMemoryPool().allocate(4 * n, s)
    y = cuabi.ManagedMemoryPool().allocate(4 * n, s)
    x[:] = struct.pack("%df" % n, *range(n))
    y[:] = struct.pack("%df" % n, *([1.0] * n))
    cuabi.launch(s, cuabi.LaunchConfig(1, n), k, 2.0, x, y, n)
    s.sync()
    assert struct.unpack("%df" % n, bytes(y.memoryview())) == tuple(2.0 * i + 1.0 for i in range(n))
    assert x.__array_interface__["shape"] == (4 * n,)
