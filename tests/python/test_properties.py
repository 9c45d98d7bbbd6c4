# SPDX-License-Identifier: Apache-2.0
"""Stateful property tests: random sequences of create, use, copy, view,
close, collect and thread hops over the Pythonic objects, on the fake driver.

The machine keeps a model of what each buffer holds and which views of host
memory are alive, and checks after every step that reads agree with the
model, that close() refuses exactly while a view lives, that copying and
pickling are refused, and at the end that the fake holds nothing more than
before (no leak).  Bounded: a few dozen sequences of up to 25 steps.
"""

import copy
import gc
import pickle

import pytest

import cuabi
from conftest import in_thread

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule  # noqa: E402

pytestmark = pytest.mark.fake
SIZES = st.sampled_from([1, 8, 64, 4096])


class Objects(RuleBasedStateMachine):
    """The Pythonic layer under random use, against a model of its contents."""

    device = Bundle("device")
    host = Bundle("host")
    views = Bundle("views")
    streams = Bundle("streams")

    def __init__(self):
        super().__init__()
        self.ctx = cuabi.Device(0).set_current()
        self.fake = _FAKE
        self.before = self.fake.counts()
        self.content = {}   # id(buffer) -> bytes it holds
        self.views_of = {}  # id(host buffer) -> number of live views
        self.hosts = []     # every host buffer made
        self.live_views = {}  # token -> (buffer, view, start)
        self.tokens = []

    # -- create
    @rule(target=device, size=SIZES, fill=st.integers(0, 255))
    def new_device_buffer(self, size, fill):
        b = cuabi.DeviceBuffer(size)
        b.fill(fill)
        self.content[id(b)] = bytes([fill]) * size
        return b

    @rule(target=host, size=SIZES, managed=st.booleans(), fill=st.integers(0, 255))
    def new_host_buffer(self, size, managed, fill):
        b = cuabi.ManagedBuffer(size) if managed else cuabi.PinnedBuffer(size)
        b.memoryview()[:] = bytes([fill]) * size
        self.content[id(b)] = bytes([fill]) * size
        self.views_of[id(b)] = 0
        self.hosts.append(b)
        return b

    @rule(target=streams)
    def new_stream(self):
        return cuabi.Stream()

    # -- use
    @rule(dst=device, src=host)
    def copy_host_to_device(self, dst, src):
        if dst.closed or src.closed:
            return
        n = min(dst.size, src.size)
        cuabi.copy(dst, src, n)
        self.content[id(dst)] = self.content[id(src)][:n] + self.content[id(dst)][n:]

    @rule(dst=host, src=device, s=streams)
    def copy_device_to_host_on_a_stream(self, dst, src, s):
        if dst.closed or src.closed or s.closed:
            return
        n = min(dst.size, src.size)
        cuabi.copy(dst, src, n, stream=s)
        s.sync()
        self.content[id(dst)] = self.content[id(src)][:n] + self.content[id(dst)][n:]

    @rule(b=device)
    def read_device_from_another_thread(self, b):
        if b.closed:
            return
        assert in_thread(b.to_bytes) == self.content[id(b)]

    @rule(b=host, at=st.integers(0, 4095), value=st.integers(0, 255))
    def write_host_byte(self, b, at, value):
        if b.closed:
            return
        at %= b.size
        b[at] = value
        c = self.content[id(b)]
        self.content[id(b)] = c[:at] + bytes([value]) + c[at + 1:]

    # -- views
    @rule(target=views, b=host, start=st.integers(0, 4095))
    def take_a_view(self, b, start):
        # the bundle holds a token: the view itself lives only in live_views, so
        # that dropping it really drops it (the machine keeps what rules return)
        if b.closed:
            return None
        start %= b.size
        token = len(self.tokens)
        self.tokens.append(token)
        self.live_views[token] = (b, b[start:], start)
        self.views_of[id(b)] += 1
        return token

    @rule(token=consumes(views))
    def drop_a_view(self, token):
        entry = self.live_views.pop(token, None)
        if entry is None:
            return
        b, v, start = entry
        assert bytes(v) == self.content[id(b)][start:]
        del v, entry
        self.views_of[id(b)] -= 1

    # -- ownership
    @rule(obj=st.one_of(device, host, streams))
    def copying_is_refused(self, obj):
        with pytest.raises(TypeError):
            copy.copy(obj)
        with pytest.raises(TypeError):
            pickle.dumps(obj)

    # -- close and collect
    @rule(b=host)
    def close_host(self, b):
        if b.closed:
            return
        if self.views_of[id(b)]:
            with pytest.raises(BufferError):
                b.close()
            assert not b.closed
        else:
            b.close()
            assert b.closed

    @rule(b=device, from_thread=st.booleans())
    def close_device(self, b, from_thread):
        if from_thread:
            in_thread(b.close)
        else:
            b.close()
        assert b.closed

    @rule(s=streams)
    def close_stream(self, s):
        s.close()

    @rule()
    def collect(self):
        gc.collect()

    @invariant()
    def contents_agree(self):
        for b in self.hosts:
            if not b.closed:
                assert b.to_bytes() == self.content[id(b)]

    def teardown(self):
        self.live_views.clear()
        self.hosts.clear()
        self.content.clear()
        gc.collect()
        gc.collect()
        self.ctx.close()
        assert self.fake.counts() == self.before


class _Counts:
    """What the fake driver holds: allocations and each kind of object."""

    def __init__(self, fake):
        self.fake = fake

    def counts(self):
        kinds = ("streams", "events", "graphs", "pools", "modules")
        return (self.fake.live_allocations(),) + tuple(self.fake.live_objects(k) for k in kinds)


_FAKE = None


@pytest.fixture(autouse=True)
def _fake_counts(fake):
    global _FAKE
    _FAKE = _Counts(fake)


Objects.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None,
                                     suppress_health_check=list(HealthCheck))
TestObjects = Objects.TestCase
