# SPDX-License-Identifier: Apache-2.0
"""The rules of issue 10 in process: which context a call uses, copying and
pickling, views and close, capture and update results, compile options.
(The misuse corpus runs the crashing reproducers in processes of their own.)"""

import copy
import gc
import pickle

import pytest

import cuabi
from conftest import in_thread
from cuabi import _program
from cuabi import driver as d
from cuabi.errors import CUDAError


def test_with_context_pushes_and_pops(ctx):
    """with ctx: makes it current for the block and restores the previous current context after."""
    d.cuCtxSetCurrent(0)
    b = cuabi.DeviceBuffer(16, device=0)
    with ctx:
        assert d.cuCtxGetCurrent() == ctx.handle
    assert d.cuCtxGetCurrent() == 0 and not ctx.closed and not b.closed


def test_device_argument_leaves_the_current_context_alone(ctx):
    """A constructor given device= creates in that device's context without making it current."""
    d.cuCtxSetCurrent(0)
    s = cuabi.Stream(device=0)
    assert d.cuCtxGetCurrent() == 0 and s.context is cuabi.Device(0).context


def test_methods_run_in_their_objects_context_from_any_thread(ctx):
    """In a thread with no context current, methods of existing objects work and change nothing there."""
    s, e, b = cuabi.Stream(), cuabi.Event(), cuabi.DeviceBuffer(8)
    b.fill(3)

    def use():
        s.record(e)
        e.sync()
        s.sync()
        return b.to_bytes(), d.cuCtxGetCurrent()

    data, current = in_thread(use)
    assert data == b"\3" * 8 and current == 0


def test_a_new_object_in_a_new_thread_uses_device_0(ctx):
    """A constructor in a thread with no context current uses device 0's primary context, as the runtime does."""
    b = in_thread(lambda: cuabi.DeviceBuffer(8))
    assert b.context is cuabi.Device(0).context


@pytest.mark.parametrize("make", [lambda: cuabi.Device(0).context, lambda: cuabi.DeviceBuffer(8),
                                  lambda: cuabi.PinnedBuffer(8), lambda: cuabi.Stream(), lambda: cuabi.Event(),
                                  lambda: cuabi.Graph(), lambda: cuabi.MemoryPool()],
                         ids=["context", "device", "pinned", "stream", "event", "graph", "pool"])
def test_copies_and_pickles_are_refused(ctx, make):
    """copy.copy, copy.deepcopy and pickle.dumps of an owning object raise TypeError saying why."""
    obj = make()
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot be (copied|pickled)"):
            attempt(obj)


def test_a_launch_config_copies_and_pickles():
    """LaunchConfig is immutable plain data: a copy is itself, a pickle gives an equal config."""
    c = cuabi.LaunchConfig(grid=2, block=32, shmem=16)
    assert copy.copy(c) is c and copy.deepcopy(c) is c
    r = pickle.loads(pickle.dumps(c))
    assert (r.grid, r.block, r.shmem) == ((2, 1, 1), (32, 1, 1), 16)


def test_host_views_keep_memory_after_the_buffer_is_collected(ctx, fake):
    """A slice of a collected pinned buffer stays valid; its memory is freed when the slice goes."""
    gc.collect()
    before = fake.live_allocations()
    s = cuabi.PinnedBuffer(64)[8:16]
    gc.collect()
    s[0] = 42
    assert s[0] == 42 and fake.live_allocations() == before + 1
    del s
    gc.collect()
    assert fake.live_allocations() == before


def test_context_close_waits_for_orphaned_views(ctx):
    """A context refuses to close while a view of a collected buffer in it lives."""
    s = cuabi.ManagedBuffer(64)[0:8]
    gc.collect()
    with pytest.raises(BufferError, match="collected ManagedBuffer"):
        ctx.close()
    del s
    gc.collect()
    ctx.close()
    assert ctx.closed


def test_copy_from_and_copy_to_take_equal_sizes(ctx):
    """copy_to and copy_from refuse a host buffer of another size unless nbytes says how much."""
    b = cuabi.DeviceBuffer(16)
    with pytest.raises(ValueError, match="size mismatch"):
        b.copy_to(bytearray(4))
    with pytest.raises(ValueError, match="size mismatch"):
        b.copy_from(b"1234")
    out = bytearray(4)
    b.fill(7)
    b.copy_to(out, 4)
    assert out == b"\7" * 4


def test_record_without_an_event_times_only_when_asked(ctx):
    """Stream.record() makes an event without timing, record(timing=True) one whose end - start is a float."""
    s = cuabi.Stream()
    a, b = s.record(timing=True), s.record(timing=True)
    assert a.timing and isinstance(b - a, float)
    plain = s.record()
    assert not plain.timing and not cuabi.Event().timing
    with pytest.raises(ValueError, match="timing=True"):
        plain - a  # noqa: B018
    with pytest.raises(ValueError, match="timing= is for the event record"):
        s.record(plain, timing=True)


def test_unrecorded_event_timing_says_so(ctx):
    """end - start with an unrecorded event names it in the error."""
    s = cuabi.Stream()
    a = s.record(timing=True)
    with pytest.raises(CUDAError, match="end event was never recorded"):
        cuabi.Event(timing=True) - a


@pytest.mark.fake  # uses a destroyed handle, which only the fake is sure to refuse
def test_update_failure_for_another_reason_has_no_update_result(ctx):
    """GraphExec.update appends the update result only to update failures."""
    g = cuabi.Graph()
    e = g.instantiate()
    other = cuabi.Graph()
    d.cuGraphDestroy(other.handle)  # destroyed behind cuabi's back: an invalid handle
    with pytest.raises(CUDAError) as ei:
        e.update(other)
    assert "update result" not in str(ei.value) and not hasattr(ei.value, "update_result")
    other._h = None


class _FakeNVRTC:
    """Stands for cuabi.nvrtc in _program: records the options compile() hands to
    nvrtcCompileProgram (read from the native array it builds)."""

    def __init__(self):
        self.options = None

    def __getattr__(self, name):
        return lambda *a: 0

    def nvrtcCompileProgram(self, prog, n, opts):
        import ctypes

        self.options = [s.decode() for s in (ctypes.c_char_p * n).from_address(opts)] if n else []

    def nvrtcGetNumSupportedArchs(self):
        return 0


@pytest.mark.parametrize("options, arch, expected", [
    (["-arch=sm_80"], None, ["-arch=sm_80"]),
    (["--gpu-architecture=compute_90"], None, ["--gpu-architecture=compute_90"]),
    ([], "sm_75", ["-arch=compute_75"]),
], ids=["short option", "long option", "arch="])
def test_compile_keeps_the_callers_architecture(monkeypatch, options, arch, expected):
    """An -arch in compile()'s options is used as given; arch= adds one; never both."""
    lib = _FakeNVRTC()
    monkeypatch.setattr(_program, "_nvrtc", lib)
    cuabi.Program("").compile(options, arch=arch)
    assert [o for o in lib.options if "arch" in o] == expected
