# SPDX-License-Identifier: Apache-2.0
"""Ctrl-C at every point of an alloc/stream/event/launch/capture loop.

A profile hook counts the calls and returns (of Python and C functions) of
one pass of the loop; then the pass is run again once per chosen point, and
at that point the hook raises SIGINT for real (``signal.raise_signal``), so
Python raises KeyboardInterrupt at its next check, exactly as a user's Ctrl-C
would.  After each interrupted pass: no stream is left capturing, the
thread's current context is the one it had, and once the pass's objects are
collected the fake driver holds nothing more than before.  Bounded: at most
``POINTS`` points per pass (spread over the pass), a few seconds in all.
"""

import gc
import signal
import sys
import traceback

import pytest

import cuabi
from cuabi import driver as d

pytestmark = [pytest.mark.fake,
              pytest.mark.skipif(sys.implementation.name != "cpython",
                                 reason="interrupt injection needs CPython's signal checks "
                                        "(PyPy looks for signals at other points)")]
POINTS = 400
MODULE = "fakecuda-module\nkernel fill_u32\n"


def one_pass(made):
    """The loop body: what a user does, with every object also put in ``made``
    (so the test can look at them after an interrupt)."""
    k = made["kernel"]
    s = cuabi.Stream()
    made["streams"].append(s)
    b = cuabi.DeviceBuffer(64)
    made["objects"].append(b)
    p = cuabi.PinnedBuffer(64)
    made["objects"].append(p)
    e = s.record()
    made["objects"].append(e)
    cuabi.launch(s, made["config"], k, b, 7, 16)
    with cuabi.Graph.capture(s) as cap:
        cuabi.launch(s, made["config"], k, b, 8, 16)
    made["objects"].append(cap.graph)
    ge = cap.graph.instantiate()
    made["objects"].append(ge)
    ge.launch(s)
    with cuabi.Stream() as s2:
        made["streams"].append(s2)
        s2.wait(s)
    b.copy_to(p)
    view = p[0:4]
    del view
    s.sync()
    for obj in (ge, cap.graph, e, p, b, s):
        obj.close()


def _counts(fake):
    kinds = ("streams", "events", "graphs", "graph_execs", "pools", "modules")
    return (fake.live_allocations(),) + tuple(fake.live_objects(k) for k in kinds)


class _Hook:
    """A profile hook counting events; at event ``fire`` it raises SIGINT."""

    def __init__(self, fire=-1):
        self.n = 0
        self.fire = fire

    def __call__(self, frame, event, arg):
        self.n += 1
        if self.n == self.fire:
            signal.raise_signal(signal.SIGINT)


def _run(made, hook, body=None):
    sys.setprofile(hook)
    try:
        (body or one_pass)(made)
    finally:
        sys.setprofile(None)


@pytest.fixture
def setup(ctx, fake):
    """The kernel and config every pass uses; the context, its handle and the fake's counts."""
    # Python's own handler (a run started in the background inherits SIGINT ignored)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    mod = cuabi.Module(MODULE)
    kernel = mod.get_kernel("fill_u32", "ptr, uint32, uint64")
    yield {"kernel": kernel, "config": cuabi.LaunchConfig(grid=1, block=16), "ctx": ctx}
    mod.close()
    signal.signal(signal.SIGINT, old)


def _fresh(setup):
    return dict(setup, streams=[], objects=[])


def test_ctrl_c_anywhere_leaves_nothing_half_made(setup, fake):
    """Interrupted anywhere in the loop: no capture left on, the context as it was, nothing leaked."""
    ctx_handle = setup["ctx"].handle
    gc.collect()
    before = _counts(fake)
    counter = _Hook()
    _run(_fresh(setup), counter)
    gc.collect()
    assert _counts(fake) == before, "an uninterrupted pass leaks"
    total = counter.n
    step = max(1, total // POINTS)
    interrupted = 0
    for point in range(1, total + 1, step):
        made = _fresh(setup)
        where = "not interrupted"
        try:
            _run(made, _Hook(point))
        except KeyboardInterrupt:
            interrupted += 1
            where = traceback.format_exc(limit=-4)
        capturing = [s for s in made["streams"] if not s.closed and d.cuStreamIsCapturing(s.handle)]
        assert not capturing, "a stream left capturing (point %d):\n%s" % (point, where)
        del capturing
        assert d.cuCtxGetCurrent() == ctx_handle, "the current context changed (point %d)" % point
        made.clear()
        gc.collect()
        assert _counts(fake) == before, "leak after an interrupt at point %d of %d:\n%s" % (point, total, where)
    # (a KeyboardInterrupt that CPython raises inside the profile hook itself
    # is dropped for some kinds of event: not every point interrupts its pass)
    assert interrupted > POINTS // 4, "too few passes were interrupted (%d)" % interrupted


def capture_pass(made):
    """Only a capture: the stream, the captured launch, the graph."""
    s = cuabi.Stream()
    made["streams"].append(s)
    with cuabi.Graph.capture(s) as cap:
        cuabi.launch(s, made["config"], made["kernel"], made["buffer"], 1, 16)
    cap.graph.close()
    s.close()


def test_ctrl_c_at_every_point_of_a_capture_ends_it(setup, fake):
    """Interrupted at any single point of a capture, the stream is not left capturing."""
    buf = cuabi.DeviceBuffer(64)
    counter = _Hook()
    _run(dict(_fresh(setup), buffer=buf), counter, capture_pass)
    for point in range(1, counter.n + 1):
        made = dict(_fresh(setup), buffer=buf)
        try:
            _run(made, _Hook(point), capture_pass)
        except KeyboardInterrupt:
            pass
        capturing = [s for s in made["streams"] if not s.closed and d.cuStreamIsCapturing(s.handle)]
        assert not capturing, "a stream left capturing (point %d of %d)" % (point, counter.n)
        del capturing
    buf.close()


def test_ctrl_c_while_a_capture_starts_ends_it(setup, fake):
    """A Ctrl-C noted while cuStreamBeginCapture runs ends the capture before it is raised."""
    s = cuabi.Stream()
    from cuabi import _interrupts

    with pytest.raises(KeyboardInterrupt):
        with _interrupts.deferred():
            cap = cuabi.Graph.capture(s)
            with _interrupts.deferred():
                cap.__enter__()
            signal.raise_signal(signal.SIGINT)  # noted, raised when the outer block ends
    assert d.cuStreamIsCapturing(s.handle) == 1  # the capture was entered: the body owns it
    cap.__exit__(None, None, None)
    assert d.cuStreamIsCapturing(s.handle) == 0
    s.close()


def test_a_deferred_interrupt_is_raised_after_the_block(setup):
    """SIGINT inside deferred() runs the handler when the block ends, not inside it."""
    from cuabi import _interrupts

    seen = []
    with pytest.raises(KeyboardInterrupt):
        with _interrupts.deferred():
            signal.raise_signal(signal.SIGINT)
            seen.append("after the signal")
    assert seen == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
