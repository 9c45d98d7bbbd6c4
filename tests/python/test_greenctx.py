# SPDX-License-Identifier: Apache-2.0
"""Green contexts on the fake driver: SM resources, splits, green contexts,
their streams and events, and closing them (tests/fake/green.c models a
device of 4 SMs, partitions of at least 2)."""

import copy
import gc
import struct

import pytest

import cuabi
from cuabi import driver

pytestmark = pytest.mark.fake

MODULE = "fakecuda-module\nkernel fill_u32\n"


class _closing:
    """``with _closing(gctx) as g:`` closes the green context after the block
    (``with gctx:`` only makes it current)."""

    def __init__(self, g):
        self.g = g

    def __enter__(self):
        return self.g

    def __exit__(self, *exc):
        self.g.close()


def test_device_sm_resource_and_its_split():
    """The device's 4 SMs split into groups of 2 (the minimum) with nothing left, or one group and a remainder."""
    r = cuabi.sm_resource(0)
    assert (r.sm_count, r.min_partition_size, r.coscheduled_alignment) == (4, 2, 2)
    assert r.device is cuabi.Device(0) and not r.from_split and len(bytes(r)) == 144
    groups, rest = r.split()
    assert [g.sm_count for g in groups] == [2, 2] and rest.sm_count == 0
    one, rest = r.split(1, min_sms=1)  # rounded up to the minimum, 2
    assert [g.sm_count for g in one] == [2] and rest.sm_count == 2 and rest.from_split
    big, rest = r.split(min_sms=3)  # rounded up to a multiple of 2: 4
    assert [g.sm_count for g in big] == [4] and rest.sm_count == 0
    fine, rest = r.split(3, min_sms=1, coscheduling=False)  # single SMs when co-scheduling is waived
    assert [g.sm_count for g in fine] == [1, 1, 1] and rest.sm_count == 1
    more, _rest = r.split(5, min_sms=2)  # more groups asked than fit: the ones that fit
    assert len(more) == 2
    assert "4 SMs of device 0" in repr(r)


def test_split_misuse_is_refused_with_the_reason():
    """min_sms outside the resource, a zero count and resplitting a group are ValueErrors; bad types TypeErrors."""
    r = cuabi.sm_resource(0)
    with pytest.raises(ValueError, match=r"min_sms=5 is outside 0..4"):
        r.split(min_sms=5)
    with pytest.raises(ValueError, match="count must be at least 1"):
        r.split(0)
    with pytest.raises(TypeError, match="min_sms must be an int"):
        r.split(min_sms=2.0)
    with pytest.raises(TypeError, match="count must be an int or None"):
        r.split("2")
    groups, _rest = r.split(min_sms=2)
    with pytest.raises(ValueError, match="does not split again"):
        groups[0].split()
    # the driver agrees: a split's output is refused as an input
    with pytest.raises(cuabi.CUDAError) as exc:
        driver.cuDevSmResourceSplitByCount(0, 0, bytes(groups[0]), 0, 0, 0)
    assert exc.value.name == "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"
    with pytest.raises(ValueError, match="144 bytes"):
        cuabi.SMResource(b"x", cuabi.Device(0))


def test_green_context_runs_its_stream_and_closes_what_it_made():
    """A green context on 2 SMs: its stream, a buffer and a kernel launched there, all closed with it."""
    groups, _rest = cuabi.sm_resource(0).split(1, min_sms=2)
    g = cuabi.GreenContext(groups[0])
    try:
        assert g.sm_count == 2 and g.device is cuabi.Device(0) and not g.closed
        assert g.handle != g.green_handle  # the CUcontext is not the CUgreenCtx
        assert driver.cuCtxFromGreenCtx(g.green_handle) == g.handle
        s = g.create_stream()
        assert s.context is g and s.flags == 1  # non-blocking, as the driver requires
        with g:
            assert cuabi.current_context() is g
            buf = cuabi.DeviceBuffer(4 * 64)
            mod = cuabi.Module(MODULE.encode())
            k = mod.get_kernel("fill_u32", "ptr, uint32, uint64")
            cuabi.launch(s, cuabi.LaunchConfig(1, 64), k, buf, 7, 64)
        s.sync()
        assert buf.context is g and mod.context is g
        assert struct.unpack("64I", buf.to_bytes()) == (7,) * 64
        ev = g.record()
        assert ev.context is g and ev.query()
        g.wait(ev)
        other = cuabi.Event(device=0)
        g.wait(other)  # an event of another context may be waited for
    finally:
        g.close()
    assert g.closed and s.closed and buf.closed and mod.closed and ev.closed
    assert not other.closed
    other.close()
    g.close()  # twice is fine
    with pytest.raises(cuabi.ClosedError):
        g.green_handle
    with pytest.raises(cuabi.ClosedError):
        g.create_stream()
    assert "closed" in repr(g)


def test_two_green_contexts_of_one_split_and_resplitting_one():
    """Both groups of a split make green contexts side by side; a green context's own SMs split again."""
    (a, b), _rest = cuabi.sm_resource(0).split(2, min_sms=2)
    with _closing(cuabi.GreenContext(a)) as ga, \
            _closing(cuabi.GreenContext(b)) as gb:
        assert ga.handle != gb.handle and ga.sm_count == gb.sm_count == 2
        assert driver.cuGreenCtxGetId(ga.green_handle) != driver.cuGreenCtxGetId(gb.green_handle)
        inner = ga.sm_resource
        assert inner.sm_count == 2 and not inner.from_split
        halves, rest = inner.split(min_sms=1, coscheduling=False)
        assert [h.sm_count for h in halves] == [1, 1] and rest.sm_count == 0
    # a group and the remainder of one split together make one green context
    (first,), rest = cuabi.sm_resource(0).split(1, min_sms=2)
    with _closing(cuabi.GreenContext([first, rest])) as whole:
        assert whole.sm_count == 4


def test_green_context_misuse():
    """Bad resources are ValueErrors or TypeErrors before the driver is asked; a GreenContext is not copyable."""
    r = cuabi.sm_resource(0)
    (a, b), _ = r.split(2, min_sms=2)
    (c,), _ = r.split(1, min_sms=2)
    with pytest.raises(ValueError, match="one split made them all"):
        cuabi.GreenContext([a, c])
    with pytest.raises(ValueError, match="at least one SMResource"):
        cuabi.GreenContext([])
    with pytest.raises(TypeError, match="takes SMResource"):
        cuabi.GreenContext([a, "b"])
    _, empty = r.split(min_sms=2)
    with pytest.raises(ValueError, match="hold no SM"):
        cuabi.GreenContext(empty)
    with _closing(cuabi.GreenContext(a)) as g:
        with pytest.raises(TypeError, match="cannot be copied"):
            copy.copy(g)
        with pytest.raises(TypeError, match="priority must be an int"):
            g.create_stream(priority=None)
        with pytest.raises(TypeError, match="must be a cuabi.Event"):
            g.record("event")
        with pytest.raises(TypeError, match="must be a cuabi.Event"):
            g.wait(None)


def test_green_context_refuses_to_close_while_its_memory_is_viewed():
    """Like a primary context, a green context with viewed memory refuses to close, and closes later."""
    (a,), _ = cuabi.sm_resource(0).split(1, min_sms=2)
    g = cuabi.GreenContext(a)
    with g:
        p = cuabi.PinnedBuffer(64)
    view = p.memoryview()
    with pytest.raises(BufferError, match="cannot close the context"):
        g.close()
    assert not g.closed and not p.closed
    view.release()
    del view
    g.close()
    assert g.closed and p.closed


def test_primary_context_close_leaves_green_contexts_alone():
    """A green context is no child of the primary context: closing that one leaves it and its objects working."""
    dev = cuabi.Device(0)
    (a,), _ = cuabi.sm_resource(dev).split(1, min_sms=2)
    g = cuabi.GreenContext(a)
    s = g.create_stream()
    dev.context.close()
    assert not g.closed and not s.closed
    s.sync()  # the green context retains the primary context itself, as the driver's does
    g.close()
    assert s.closed


def test_a_dropped_green_context_is_destroyed():
    """Garbage collection of an open green context destroys it (the fake counts live contexts)."""
    (a,), _ = cuabi.sm_resource(0).split(1, min_sms=2)
    g = cuabi.GreenContext(a)
    s = g.create_stream()
    handle = g.green_handle
    del g, s
    for _ in range(3):  # PyPy runs finalizers over several collections
        gc.collect()
    with pytest.raises(cuabi.CUDAError) as exc:
        driver.cuCtxFromGreenCtx(handle)
    assert exc.value.name == "CUDA_ERROR_INVALID_CONTEXT"


def test_driver_rules_the_fake_models():
    """The fake refuses what cuda.h rules out: a missing default-stream flag, blocking green streams, bad types."""
    (a,), _ = cuabi.sm_resource(0).split(1, min_sms=2)
    desc = driver.cuDevResourceGenerateDesc(bytearray(bytes(a)), 1)
    with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
        driver.cuGreenCtxCreate(desc, 0, 0)
    raw = bytearray(144)
    with pytest.raises(cuabi.CUDAError) as exc:
        driver.cuDeviceGetDevResource(0, raw, 2)
    assert exc.value.name == "CUDA_ERROR_INVALID_RESOURCE_TYPE"
    with _closing(cuabi.GreenContext(a)) as g:
        with pytest.raises(cuabi.CUDAError, match="INVALID_VALUE"):
            driver.cuGreenCtxStreamCreate(g.green_handle, 0, 0)
        driver.cuCtxGetDevResource(g.handle, raw, 1)
        assert struct.unpack_from("I", raw, 96)[0] == 2  # the converted context has the green context's SMs
