"""Graphs: capture, instantiate, launch, update."""

import os
import struct

import pytest

from conftest import needs

import cuabi
from cuabi import driver as d
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
    with s.capture() as cap:
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
    s.begin_capture("thread_local")
    cuabi.launch(s, cuabi.LaunchConfig(1, 4), saxpy, 1.0, b, b, 4)
    g = s.end_capture()
    assert g.node_count == 1
    with pytest.raises(ValueError):
        s.begin_capture("sometimes")
    with pytest.raises(TypeError):
        cuabi.GraphExec("graph")


def test_capture_body_error_discards_graph(saxpy, fake):
    s = cuabi.Stream()
    before = fake.live_objects("graphs")
    with pytest.raises(RuntimeError, match="boom"):
        with s.capture():
            raise RuntimeError("boom")
    assert fake.live_objects("graphs") == before
    assert s.query()  # the stream is usable again


def _dependencies(node):
    n = d.cuGraphNodeGetDependencies(node, None, None, 0)
    out = bytearray(8 * n)
    d.cuGraphNodeGetDependencies(node, out, None, n)
    return list(struct.unpack("=%dQ" % n, out))


def test_empty_graph_and_nodes(ctx):
    """Empty nodes join a graph after the nodes given; a clone has the same nodes."""
    g = cuabi.Graph()
    assert g.node_count == 0
    needs("cuGraphAddEmptyNode")
    a = g.add_empty_node()
    b = g.add_empty_node([a])
    c = g.add_empty_node([b, a])
    assert g.node_count == 3
    assert d.cuGraphNodeGetType(c) == d.CU_GRAPH_NODE_TYPE_EMPTY
    assert _dependencies(a) == [] and _dependencies(b) == [a] and _dependencies(c) == [b, a]
    with pytest.raises(CUDAError):
        g.add_empty_node([a, a])  # a dependency named twice
    assert g.node_count == 3
    needs("cuGraphClone")
    clone = g.clone()
    assert clone.node_count == 3
    c2 = d.cuGraphNodeFindInClone(c, clone.handle)
    assert c2 != c and len(_dependencies(c2)) == 2
    g.instantiate().launch()  # nothing to do, but it runs


def test_update(saxpy):
    """An executable graph takes a same-shaped graph's parameters; other shapes are refused by result."""
    needs("cuGraphExecUpdate")
    s = cuabi.Stream()
    n = 64
    x = cuabi.DeviceBuffer(4 * n)
    y = cuabi.DeviceBuffer(4 * n)
    x.copy_from(struct.pack("%df" % n, *([1.0] * n)))
    y.fill(0, width=4)
    cfg = cuabi.LaunchConfig(1, n)
    with s.capture() as c1:
        cuabi.launch(s, cfg, saxpy, 1.0, x, y, n)
    with s.capture() as c2:
        cuabi.launch(s, cfg, saxpy, 5.0, x, y, n)
    ge = c1.graph.instantiate()
    ge.update(c2.graph)
    ge.launch(s)
    s.sync()
    assert struct.unpack("%df" % n, y.to_bytes()) == (5.0,) * n
    g3 = cuabi.Graph()
    with pytest.raises(CUDAError) as ei:
        ge.update(g3)  # different topology
    assert ei.value.code == d.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
    assert ei.value.update_result == d.CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
    with pytest.raises(CUDAError) as ei:
        ge.update(_one_empty_node())  # same count, another node type
    assert ei.value.update_result == d.CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
    ge.launch(s)  # refused updates left it as it was
    s.sync()
    assert struct.unpack("%df" % n, y.to_bytes()) == (10.0,) * n
    with pytest.raises(TypeError):
        ge.update("graph")


def _one_empty_node():
    g = cuabi.Graph()
    g.add_empty_node()
    return g
