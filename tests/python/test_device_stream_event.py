# SPDX-License-Identifier: Apache-2.0
"""Device, Context, Stream and Event."""

import pickle
import uuid

import pytest

import cuabi
from cuabi import driver as d
from cuabi.errors import ClosedError, CUDAError


def test_device_is_one_object_per_ordinal(ctx):
    """Device(n), Device(device) and devices() give the same object for one device."""
    dev = cuabi.Device(0)
    assert dev is cuabi.Device(0) and cuabi.Device(dev) is dev
    assert cuabi.Device.count() >= 1 and cuabi.devices()[0] is dev
    assert pickle.loads(pickle.dumps(dev)) is dev


def test_device_identity_properties(ctx):
    """A device reports its id, handle, name, UUID, PCI bus id and repr."""
    dev = cuabi.Device(0)
    assert dev.device_id == 0 and isinstance(dev.handle, int)
    assert dev.name and isinstance(dev.uuid, uuid.UUID)
    assert dev.pci_bus_id.count(":") >= 2
    assert "Device 0" in repr(dev)


def test_device_is_no_int(ctx):
    """A Device does not convert to int (its handle is explicit)."""
    with pytest.raises(TypeError):
        int(cuabi.Device(0))


def test_device_capabilities(ctx):
    """Compute capability, arch string and the common attributes as properties."""
    dev = cuabi.Device(0)
    major, minor = dev.compute_capability
    assert major >= 3 and dev.arch == "sm_%d%d" % (major, minor)
    assert dev.warp_size == 32
    assert dev.multiprocessor_count > 0 and dev.max_threads_per_block >= 256


def test_device_attribute_spellings(ctx):
    """attribute() takes the enum, its name with or without prefix, or its value."""
    dev = cuabi.Device(0)
    assert dev.attribute(d.CU_DEVICE_ATTRIBUTE_WARP_SIZE) == 32
    assert dev.attribute("warp_size") == 32
    assert dev.attribute("CU_DEVICE_ATTRIBUTE_WARP_SIZE") == 32
    assert dev.attribute(10) == 32


def test_device_memory_info(ctx):
    """mem_info() gives free <= total, and total matches total_memory."""
    dev = cuabi.Device(0)
    free, total = dev.mem_info()
    assert 0 < free <= total == dev.total_memory


def test_device_ordinal_out_of_range():
    """Device(n) for a device that does not exist raises ValueError."""
    with pytest.raises(ValueError, match="out of range"):
        cuabi.Device(99)
    with pytest.raises(ValueError):
        cuabi.Device(-1)


def test_device_ordinal_must_be_an_int():
    """Device() refuses strings and bools as ordinals."""
    with pytest.raises(TypeError):
        cuabi.Device("0")
    with pytest.raises(TypeError):
        cuabi.Device(True)


def test_device_attribute_errors():
    """An unknown attribute name is a ValueError, a float a TypeError."""
    dev = cuabi.Device(0)
    with pytest.raises(ValueError, match="unknown device attribute"):
        dev.attribute("no_such_attribute")
    with pytest.raises(TypeError):
        dev.attribute(1.0)


def test_set_current_makes_the_primary_context_current():
    """Device.set_current() returns the primary context and makes it current."""
    dev = cuabi.Device(0)
    ctx = dev.set_current()
    assert d.cuCtxGetCurrent() == ctx.handle
    assert cuabi.current_context() is ctx
    assert ctx.device is dev and not ctx.closed
    ctx.sync()
    ctx.close()


def test_closing_a_context_closes_its_resources():
    """Context.close() closes the streams, events and buffers made in it, then itself."""
    ctx = cuabi.Device(0).set_current()
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


def test_device_gives_a_new_context_after_close():
    """After its primary context was closed, a device hands out a fresh one."""
    dev = cuabi.Device(0)
    ctx = dev.set_current()
    ctx.close()
    ctx2 = dev.set_current()
    assert not ctx2.closed and ctx2 is not ctx
    ctx2.close()


def test_context_used_when_none_current():
    """With no current context, resources go to device 0's primary context, as in the runtime."""
    d.cuInit(0)
    d.cuCtxSetCurrent(0)
    s = cuabi.Stream()
    assert s.context is cuabi.Device(0).context
    assert d.cuCtxGetCurrent() == s.context.handle
    s.context.close()


def test_foreign_current_context_is_wrapped():
    """A context another library made current is used as it is."""
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


def test_stream_query_and_sync(ctx):
    """A new stream is owned, idle (query() is True) and can be synchronised twice."""
    s = cuabi.Stream()
    assert s.owned and not s.closed
    assert s.query() is True
    s.sync()
    s.sync()
    assert isinstance(s.flags, int)


def test_stream_protocol(ctx):
    """__cuda_stream__ gives (0, handle)."""
    s = cuabi.Stream()
    assert s.__cuda_stream__() == (0, s.handle)


def test_stream_priority(ctx):
    """A stream made with a priority from priority_range() reports it."""
    _lo, hi = cuabi.Stream.priority_range()
    s = cuabi.Stream(priority=hi, non_blocking=False)
    assert s.priority == hi
    with pytest.raises(TypeError):
        cuabi.Stream(priority=1.5)


def test_stream_waits_for_a_stream_or_an_event(ctx):
    """wait() takes another stream or an event recorded on one."""
    s, s2 = cuabi.Stream(), cuabi.Stream()
    assert s != s2 and s == s
    s.wait(s2)
    ev = s2.record()
    assert isinstance(ev, cuabi.Event)
    s.wait(ev)


def test_closed_stream_refuses_use(ctx):
    """After close() (twice is fine) a stream raises ClosedError when used."""
    s = cuabi.Stream()
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


def test_stream_as_context_manager(ctx):
    """A stream used in a with block is closed at its end."""
    with cuabi.Stream() as s:
        assert not s.closed
    assert s.closed


def test_foreign_stream_is_wrapped_not_destroyed(ctx):
    """from_handle() wraps an object with __cuda_stream__; closing the wrapper keeps the stream."""
    owner = cuabi.Stream()

    class Foreign:
        def __cuda_stream__(self):
            return (0, owner.handle)

    f = cuabi.Stream.from_handle(Foreign())
    assert f.handle == owner.handle and not f.owned
    f.sync()
    f.close()
    assert owner.query() is True
    assert cuabi.Stream.from_handle(owner.handle).handle == owner.handle


def test_special_streams(ctx):
    """default(), legacy() and per_thread() are the handles 0, 1 and 2."""
    assert cuabi.Stream.default().handle == 0
    assert cuabi.Stream.legacy().handle == 1
    assert cuabi.Stream.per_thread().handle == 2
    cuabi.Stream.legacy().sync()


def test_from_handle_refuses_what_is_no_stream(ctx):
    """A bad __cuda_stream__, a str or a negative handle is refused."""
    class Bad:
        def __cuda_stream__(self):
            return 5

    with pytest.raises(TypeError):
        cuabi.Stream.from_handle(Bad())
    with pytest.raises(TypeError):
        cuabi.Stream.from_handle("stream")
    with pytest.raises(ValueError):
        cuabi.Stream.from_handle(-1)


def test_events_time_the_work_between_them(ctx):
    """Two timing events recorded on a stream give elapsed milliseconds, also as end - start."""
    s = cuabi.Stream()
    a = cuabi.Event(timing=True)
    b = cuabi.Event(timing=True, blocking_sync=True)
    s.record(a)
    s.record(b)
    b.sync()
    assert a.query() and b.query()
    ms = b - a
    assert isinstance(ms, float) and ms >= 0.0


def test_event_without_timing_has_no_elapsed_time(ctx):
    """end - start with an event made without timing (the default) is a ValueError that says so."""
    a = cuabi.Stream.default().record(cuabi.Event(timing=True))
    n = cuabi.Stream.default().record(cuabi.Event())
    n.sync()
    with pytest.raises(ValueError, match=r"without timing \(the default\); make it with Event\(timing=True\)"):
        n - a  # noqa: B018
    # the driver was told too: it refuses to time the default event
    with pytest.raises(cuabi.CUDAError, match="CUDA_ERROR_INVALID_HANDLE"):
        cuabi.driver.cuEventElapsedTime(a.handle, n.handle)


def test_event_arguments_are_checked(ctx):
    """Only events subtract; interprocess events need timing=False."""
    a = cuabi.Event()
    with pytest.raises(TypeError):
        a - 3  # noqa: B018
    assert a.__sub__(3) is NotImplemented
    with pytest.raises(ValueError):
        cuabi.Event(interprocess=True, timing=True)


def test_record_takes_only_events(ctx):
    """Stream.record() refuses what is not an Event."""
    with pytest.raises(TypeError, match="must be a cuabi.Event"):
        cuabi.Stream().record(3)


def test_closed_event_refuses_use(ctx):
    """A closed event can be neither recorded nor timed."""
    s = cuabi.Stream()
    a, b = cuabi.Event(timing=True), cuabi.Event(timing=True)
    s.record(b)
    a.close()
    with pytest.raises(ClosedError):
        s.record(a)
    with pytest.raises(ClosedError):
        b - a  # noqa: B018


def test_resources_released_at_gc(ctx, fake):
    """Streams and events dropped without close() are destroyed by garbage collection."""
    import gc

    before = fake.live_objects("streams"), fake.live_objects("events")
    for _ in range(10):
        cuabi.Stream()
        cuabi.Event()
    gc.collect()
    assert (fake.live_objects("streams"), fake.live_objects("events")) == before


def test_stream_handle_helper():
    """stream_handle() takes None and ints, and refuses bools and floats."""
    from cuabi._stream import stream_handle

    assert stream_handle(None) == 0
    assert stream_handle(7) == 7
    with pytest.raises(TypeError):
        stream_handle(True)
    with pytest.raises(TypeError):
        stream_handle(3.0)


def test_a_device_is_no_peer_of_itself(ctx):
    """A device reaches its own memory; enabling peer access to itself is a ValueError that says why."""
    dev = cuabi.Device(0)
    assert dev.can_access_peer(dev) and dev.can_access_peer(0)
    with pytest.raises(ValueError, match="the device itself"):
        dev.enable_peer_access(0)
    with pytest.raises(ValueError, match="the device itself"):
        dev.disable_peer_access(dev)
    with pytest.raises(ValueError, match="out of range"):
        dev.can_access_peer(cuabi.Device.count())


@pytest.mark.fake
def test_peer_access_between_two_fake_devices(fake):
    """With two devices, peer access is enabled and disabled in the driver, each twice without error."""
    from conftest import run_json

    out = run_json("""
        import json, cuabi
        from cuabi import driver as d
        from cuabi.errors import CUDAError
        a, b = cuabi.Device(0), cuabi.Device(1)

        def raw(call):  # the driver's own answer, in a's context
            with a.context:
                try:
                    call()
                    return "ok"
                except CUDAError as exc:
                    return exc.name

        out = {"can": [a.can_access_peer(b), b.can_access_peer(0)]}
        a.enable_peer_access(b)
        a.enable_peer_access(1)
        out["after_enable"] = raw(lambda: d.cuCtxEnablePeerAccess(b.context.handle, 0))
        a.disable_peer_access(b)
        a.disable_peer_access(b)
        out["after_disable"] = raw(lambda: d.cuCtxDisablePeerAccess(b.context.handle))
        print(json.dumps(out))
    """, env={"FAKECUDA_DEVICE_COUNT": "2"})
    assert out == {"can": [True, True], "after_enable": "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
                   "after_disable": "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"}
