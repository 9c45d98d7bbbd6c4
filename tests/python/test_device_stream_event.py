"""Device, Context, Stream and Event."""

import pickle
import uuid

import pytest

import cuabi
from cuabi import driver as d
from cuabi.errors import ClosedError, CUDAError


def test_device_basics(ctx):
    dev = cuabi.Device(0)
    assert dev is cuabi.Device(0) and cuabi.Device(dev) is dev
    assert cuabi.Device.count() >= 1
    assert cuabi.devices()[0] is dev
    assert dev.device_id == 0
    assert isinstance(dev.handle, int)
    with pytest.raises(TypeError):
        int(dev)
    assert dev.name
    assert isinstance(dev.uuid, uuid.UUID)
    assert dev.pci_bus_id.count(":") >= 2
    major, minor = dev.compute_capability
    assert major >= 3 and dev.arch == "sm_%d%d" % (major, minor)
    assert dev.warp_size == 32
    assert dev.multiprocessor_count > 0 and dev.max_threads_per_block >= 256
    assert dev.attribute(d.CU_DEVICE_ATTRIBUTE_WARP_SIZE) == 32
    assert dev.attribute("warp_size") == 32
    assert dev.attribute("CU_DEVICE_ATTRIBUTE_WARP_SIZE") == 32
    assert dev.attribute(10) == 32
    free, total = dev.mem_info()
    assert 0 < free <= total == dev.total_memory
    assert pickle.loads(pickle.dumps(dev)) is dev
    assert "Device 0" in repr(dev)


def test_device_errors():
    with pytest.raises(ValueError, match="out of range"):
        cuabi.Device(99)
    with pytest.raises(ValueError):
        cuabi.Device(-1)
    with pytest.raises(TypeError):
        cuabi.Device("0")
    with pytest.raises(TypeError):
        cuabi.Device(True)
    dev = cuabi.Device(0)
    with pytest.raises(ValueError, match="unknown device attribute"):
        dev.attribute("no_such_attribute")
    with pytest.raises(TypeError):
        dev.attribute(1.0)


def test_context_current_and_close():
    dev = cuabi.Device(0)
    ctx = dev.set_current()
    assert d.cuCtxGetCurrent() == ctx.handle
    assert cuabi.current_context() is ctx
    assert ctx.device is dev and not ctx.closed
    ctx.sync()
    s = cuabi.Stream()
    e = cuabi.Event()
    b = cuabi.DeviceBuffer(64)
    ctx.close()
    assert ctx.closed and s.closed and e.closed and b.closed
    ctx.close()  # twice is fine
    with pytest.raises(ClosedError):
        ctx.handle  # noqa: B018
    with pytest.raises(ClosedError):
        s.sync()
    with pytest.raises(ClosedError):
        b.ptr  # noqa: B018
    # the device hands out a fresh primary context afterwards
    ctx2 = dev.set_current()
    assert not ctx2.closed and ctx2 is not ctx
    ctx2.close()


def test_context_used_when_none_current():
    d.cuInit(0)
    d.cuCtxSetCurrent(0)
    s = cuabi.Stream()  # like the runtime: device 0's primary context
    assert s.context is cuabi.Device(0).context
    assert d.cuCtxGetCurrent() == s.context.handle
    s.context.close()


def test_foreign_current_context_is_wrapped():
    d.cuInit(0)
    dev = d.cuDeviceGet(0)
    h = d.cuDevicePrimaryCtxRetain(dev)
    try:
        d.cuCtxSetCurrent(h)
        ctx = cuabi.current_context()
        assert ctx.handle == h
        ctx.close()
    finally:
        d.cuDevicePrimaryCtxRelease(dev)


def test_stream_lifecycle(ctx):
    s = cuabi.Stream()
    assert s.owned and not s.closed
    assert s.query() is True
    s.sync()
    s.sync()
    assert s.__cuda_stream__() == (0, s.handle)
    assert isinstance(s.flags, int)
    lo, hi = cuabi.Stream.priority_range()
    s2 = cuabi.Stream(priority=hi, non_blocking=False)
    assert s2.priority == hi
    assert s != s2 and s == s
    s.wait(s2)
    ev = s2.record()
    s.wait(ev)
    s.close()
    s.close()
    assert s.closed
    with pytest.raises(ClosedError):
        s.query()
    with pytest.raises(ClosedError):
        s.handle  # noqa: B018
    with pytest.raises(ClosedError):
        s.__cuda_stream__()
    with pytest.raises(ClosedError):
        with s:
            pass
    with cuabi.Stream() as s3:
        assert not s3.closed
    assert s3.closed
    with pytest.raises(TypeError):
        cuabi.Stream(priority=1.5)


def test_foreign_and_special_streams(ctx):
    owner = cuabi.Stream()

    class Foreign:
        def __cuda_stream__(self):
            return (0, owner.handle)

    f = cuabi.Stream.from_handle(Foreign())
    assert f.handle == owner.handle and not f.owned
    f.sync()
    f.close()  # does not destroy the stream
    assert owner.query() is True
    g = cuabi.Stream.from_handle(owner.handle)
    assert g.handle == owner.handle
    assert cuabi.Stream.default().handle == 0
    assert cuabi.Stream.legacy().handle == 1
    assert cuabi.Stream.per_thread().handle == 2
    cuabi.Stream.legacy().sync()

    class Bad:
        def __cuda_stream__(self):
            return 5

    with pytest.raises(TypeError):
        cuabi.Stream.from_handle(Bad())
    with pytest.raises(TypeError):
        cuabi.Stream.from_handle("stream")
    with pytest.raises(ValueError):
        cuabi.Stream.from_handle(-1)


def test_event(ctx):
    s = cuabi.Stream()
    a = cuabi.Event()
    b = cuabi.Event(blocking_sync=True)
    s.record(a)
    s.record(b)
    b.sync()
    assert a.query() and b.query()
    ms = b - a
    assert isinstance(ms, float) and ms >= 0.0
    assert a.elapsed_time(b) == pytest.approx(ms, abs=1e-3) or a.elapsed_time(b) >= 0
    n = cuabi.Stream.default().record(cuabi.Event(timing=False))
    n.sync()
    with pytest.raises(CUDAError):
        n.elapsed_time(a)  # no timing data
    with pytest.raises(TypeError):
        a.elapsed_time(3)
    assert a.__sub__(3) is NotImplemented
    with pytest.raises(ValueError):
        cuabi.Event(interprocess=True)
    a.close()
    with pytest.raises(ClosedError):
        s.record(a)
    with pytest.raises(ClosedError):
        b - a  # noqa: B018


def test_resources_released_at_gc(ctx, fake):
    import gc

    before = fake.live_objects("streams"), fake.live_objects("events")
    for _ in range(10):
        cuabi.Stream()
        cuabi.Event()
    gc.collect()
    assert (fake.live_objects("streams"), fake.live_objects("events")) == before


def test_stream_handle_helper():
    from cuabi._stream import stream_handle

    assert stream_handle(None) == 0
    assert stream_handle(7) == 7
    with pytest.raises(TypeError):
        stream_handle(True)
    with pytest.raises(TypeError):
        stream_handle(3.0)
