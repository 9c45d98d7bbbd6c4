# SPDX-License-Identifier: Apache-2.0
"""No leaks: 100,000 allocate/free and create/destroy cycles return the fake driver's
live counts to zero and keep the process's resident memory flat."""

import gc
import sys

import pytest

import cuabi

N = 100_000
pytestmark = [pytest.mark.fake, pytest.mark.slow]


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _cycle(fn, fake, kinds=()):
    """Run fn N times; check live counts and that RSS after a warm-up stays flat."""
    gc.collect()
    allocs0 = fake.live_allocations()
    objs0 = {k: fake.live_objects(k) for k in kinds}
    # warm up (caches, allocator pools, PyPy's JIT and nursery), then watch the RSS
    # over two later windows: a leak grows it in every window, while one-off growth
    # (a JIT trace compiled late, a heap threshold raised once) shows in one at most
    for _ in range(N // 2):
        fn()
    gc.collect()
    marks = [_rss_kib()]
    for _window in range(2):
        for _ in range(N // 4):
            fn()
        gc.collect()
        marks.append(_rss_kib())
    growth = min(marks[1] - marks[0], marks[2] - marks[1])
    assert fake.live_allocations() == allocs0
    for k in kinds:
        assert fake.live_objects(k) == objs0[k], k
    # PyPy's collector frees in larger steps; give it more slack than CPython
    limit = 2048 if sys.implementation.name == "cpython" else 8192
    assert growth < limit, "RSS grew in every window: %r KiB" % (marks,)


def test_device_buffer_alloc_free(ctx, fake):
    """Allocating and closing device buffers leaks neither driver memory nor RSS."""
    def one():
        b = cuabi.DeviceBuffer(256)
        b.close()
    _cycle(one, fake)


def test_device_buffer_freed_by_gc(ctx, fake):
    """Device buffers left to the garbage collector are all freed."""
    if sys.implementation.name == "cpython":
        def one():
            cuabi.DeviceBuffer(64)
    else:
        # PyPy finalizes unreachable objects only at its (rare) major collections, so
        # unclosed buffers pile up until then; collect now and then, as a program
        # relying on the GC there would have to
        count = [0]

        def one():
            cuabi.DeviceBuffer(64)
            count[0] += 1
            if count[0] % 2000 == 0:
                gc.collect()
    _cycle(one, fake)


def test_stream_ordered_alloc_free(ctx, fake):
    """Stream-ordered allocations closed on their stream leak nothing."""
    s = cuabi.Stream()

    def one():
        cuabi.DeviceBuffer(128, stream=s).close()
    _cycle(one, fake)
    s.sync()


def test_raw_driver_alloc_free(ctx, fake):
    """cuMemAlloc/cuMemFree through cuabi.driver leak nothing."""
    from cuabi import driver as d

    def one():
        d.cuMemFree(d.cuMemAlloc(64))
    _cycle(one, fake)


def test_stream_and_event_create_destroy(ctx, fake):
    """Creating, recording and closing streams and events leaks nothing."""
    def one():
        with cuabi.Stream() as s:
            e = cuabi.Event(timing=False)
            s.record(e)
            e.close()
    _cycle(one, fake, kinds=("streams", "events"))


def test_pinned_alloc_free(ctx, fake):
    """Pinned buffers with a host view, closed, leak nothing."""
    def one():
        p = cuabi.PinnedBuffer(64)
        p.memoryview()[0] = 1
        p.close()
    _cycle(one, fake)


def test_launch_has_no_growth(ctx, fake):
    """Repeated launches leave memory and driver objects unchanged."""
    import os

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kernels.ptx")) as f:
        m = cuabi.Module.from_ptx(f.read())
    k = m.get_kernel("saxpy", "fppi")
    b = cuabi.DeviceBuffer(16)
    cfg = cuabi.LaunchConfig(1, 4)

    def one():
        cuabi.launch(None, cfg, k, 1.0, b, b, 4)
    _cycle(one, fake, kinds=("modules",))
