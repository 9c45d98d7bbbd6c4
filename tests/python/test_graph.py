"""Graphs: capture, instantiate, launch, update."""

import os
import struct

import pytest

from conftest import needs

import cuabi
from cuabi.errors import ClosedError, CUDAError

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kernels.ptx")) as _f:
    PTX = _f.read()


@pytest.fixture
def saxpy(ctx):
    m = cuabi.Module.from_ptx(PTX)
    yield m.get_kernel("saxpy", "fppi")
    m.close()


def test_capture_instantiate_replay(saxpy):
    n = 256
    s = cuabi.Stream()
    x = cuabi.DeviceBuffer(4 * n)
    y = cuabi.DeviceBuffer(4 * n)
    x.copy_from(struct.pack("%df" % n, *([1.0] * n)))
    y.fill(0, width=4)
    cfg = cuabi.LaunchConfig(grid=2, block=128)
    with cuabi.Graph.capture(s) as cap:
        cuabi.launch(s, cfg, saxpy, 1.0, x, y, n)
        cuabi.launch(s, cfg, saxpy, 2.0, x, y, n)
    g = cap.graph
    assert isinstance(g, cuabi.Graph) and g.node_count == 2
    assert struct.unpack("%df" % n, y.to_bytes()) == (0.0,) * n  # captured, not run
    ge = g.instantiate()
    for _ in range(3):
        ge.launch(s)
    s.sync()
    assert struct.unpack("%df" % n, y.to_bytes()) == (9.0,) * n
    ge.close()
    ge.close()
    with pytest.raises(ClosedError):
        ge.launch(s)
    g.close()
    with pytest.raises(ClosedError):
        g.instantiate()


def test_capture_with_begin_end(saxpy):
    s = cuabi.Stream()
    b = cuabi.DeviceBuffer(16)
    cuabi.Graph.begin_capture(s, "thread_local")
    cuabi.launch(s, cuabi.LaunchConfig(1, 4), saxpy, 1.0, b, b, 4)
    g = cuabi.Graph.end_capture(s)
    assert g.node_count == 1
    with pytest.raises(ValueError):
        cuabi.Graph.begin_capture(s, "sometimes")
    with pytest.raises(TypeError):
        cuabi.GraphExec("graph")


def test_capture_body_error_discards_graph(saxpy, fake):
    s = cuabi.Stream()
    before = fake.live_objects("graphs")
    with pytest.raises(RuntimeError, match="boom"):
        with cuabi.Graph.capture(s):
            raise RuntimeError("boom")
    assert fake.live_objects("graphs") == before
    assert s.query()  # the stream is usable again


def test_empty_graph_and_nodes(ctx):
    g = cuabi.Graph()
    assert g.node_count == 0
    needs("cuGraphAddEmptyNode")
    a = g.add_empty_node()
    g.add_empty_node([a])
    assert g.node_count == 2
    needs("cuGraphClone")
    assert g.clone().node_count == 2


def test_update(saxpy):
    needs("cuGraphExecUpdate")
    s = cuabi.Stream()
    n = 64
    x = cuabi.DeviceBuffer(4 * n)
    y = cuabi.DeviceBuffer(4 * n)
    x.copy_from(struct.pack("%df" % n, *([1.0] * n)))
    y.fill(0, width=4)
    cfg = cuabi.LaunchConfig(1, n)
    with cuabi.Graph.capture(s) as c1:
        cuabi.launch(s, cfg, saxpy, 1.0, x, y, n)
    with cuabi.Graph.capture(s) as c2:
        cuabi.launch(s, cfg, saxpy, 5.0, x, y, n)
    ge = c1.graph.instantiate()
    ge.update(c2.graph)
    ge.launch(s)
    s.sync()
    assert struct.unpack("%df" % n, y.to_bytes()) == (5.0,) * n
    g3 = cuabi.Graph()
    with pytest.raises(CUDAError) as ei:
        ge.update(g3)  # different topology
    assert hasattr(ei.value, "update_result")
    with pytest.raises(TypeError):
        ge.update("graph")
