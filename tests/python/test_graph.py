# SPDX-License-Identifier: Apache-2.0
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


def _saxpy_buffers(n, x_value=1.0):
    x = cuabi.DeviceBuffer(4 * n)
    y = cuabi.DeviceBuffer(4 * n)
    x.copy_from(struct.pack("%df" % n, *([x_value] * n)))
    y.fill(0, width=4)
    return x, y


N = 256


@pytest.fixture
def captured(saxpy):
    """Two SAXPY launches (a = 1, then 2) captured from a stream: (stream, graph, y)."""
    s = cuabi.Stream()
    x, y = _saxpy_buffers(N)
    cfg = cuabi.LaunchConfig(grid=2, block=128)
    with cuabi.Graph.capture(s) as cap:
        cuabi.launch(s, cfg, saxpy, 1.0, x, y, N)
        cuabi.launch(s, cfg, saxpy, 2.0, x, y, N)
    yield s, cap.graph, y
    x.close()  # the graph reads x: it stays allocated until here


def test_capture_records_without_running(captured):
    """Work launched inside Graph.capture() becomes graph nodes and does not run."""
    _s, g, y = captured
    assert isinstance(g, cuabi.Graph) and g.node_count == 2
    assert struct.unpack("%df" % N, y.to_bytes()) == (0.0,) * N


def test_instantiated_graph_replays(captured):
    """An instantiated graph launched three times runs its work three times."""
    s, g, y = captured
    ge = g.instantiate()
    for _ in range(3):
        ge.launch(s)
    s.sync()
    assert struct.unpack("%df" % N, y.to_bytes()) == (9.0,) * N


def test_closed_graphs_refuse_use(saxpy):
    """A closed GraphExec cannot launch (closing twice is fine), a closed Graph cannot instantiate."""
    s = cuabi.Stream()
    b = cuabi.DeviceBuffer(16)
    with cuabi.Graph.capture(s) as cap:
        cuabi.launch(s, cuabi.LaunchConfig(1, 4), saxpy, 1.0, b, b, 4)
    ge = cap.graph.instantiate()
    ge.close()
    ge.close()
    with pytest.raises(ClosedError):
        ge.launch(s)
    cap.graph.close()
    with pytest.raises(ClosedError):
        cap.graph.instantiate()


def test_capture_with_begin_end(saxpy):
    """Graph.begin_capture/end_capture capture like the context manager, in any mode."""
    s = cuabi.Stream()
    b = cuabi.DeviceBuffer(16)
    cuabi.Graph.begin_capture(s, "thread_local")
    cuabi.launch(s, cuabi.LaunchConfig(1, 4), saxpy, 1.0, b, b, 4)
    g = cuabi.Graph.end_capture(s)
    assert g.node_count == 1


def test_capture_arguments_are_checked(saxpy):
    """An unknown capture mode is a ValueError, a non-stream a TypeError."""
    s = cuabi.Stream()
    with pytest.raises(ValueError):
        cuabi.Graph.begin_capture(s, "sometimes")
    with pytest.raises(ValueError):
        cuabi.Graph.capture(s, "sometimes")
    with pytest.raises(TypeError):
        cuabi.Graph.begin_capture(0)
    with pytest.raises(TypeError):
        cuabi.GraphExec("graph")


def test_capture_body_error_discards_graph(saxpy, fake):
    """An exception inside a capture ends it, frees the graph and leaves the stream usable."""
    s = cuabi.Stream()
    before = fake.live_objects("graphs")
    with pytest.raises(RuntimeError, match="boom"):
        with cuabi.Graph.capture(s):
            raise RuntimeError("boom")
    assert fake.live_objects("graphs") == before
    assert s.query()


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


def test_update_with_the_same_topology(saxpy):
    """update() gives an executable graph the parameters of another graph of the same shape."""
    needs("cuGraphExecUpdate")
    s = cuabi.Stream()
    n = 64
    x, y = _saxpy_buffers(n)
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


def test_update_with_another_topology_fails(saxpy):
    """update() to a graph of another shape raises with the update result and changes nothing; a non-graph is a TypeError."""
    needs("cuGraphExecUpdate")
    s = cuabi.Stream()
    b = cuabi.DeviceBuffer(16)
    with cuabi.Graph.capture(s) as cap:
        cuabi.launch(s, cuabi.LaunchConfig(1, 4), saxpy, 1.0, b, b, 4)
    ge = cap.graph.instantiate()
    with pytest.raises(CUDAError) as ei:
        ge.update(cuabi.Graph())  # another topology
    assert ei.value.code == d.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
    assert ei.value.update_result == d.CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
    with pytest.raises(CUDAError) as ei:
        ge.update(_one_empty_node())  # as many nodes, of another type
    assert ei.value.update_result == d.CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
    ge.launch(s)  # refused updates left it as it was
    s.sync()
    with pytest.raises(TypeError):
        ge.update("graph")


def _one_empty_node():
    g = cuabi.Graph()
    g.add_empty_node()
    return g


@pytest.mark.parametrize("mode", ["global", "thread_local"])
def test_allocating_during_capture_is_refused_and_ends_the_capture(mode):
    """cuMemAlloc in a global or thread-local capture is refused and the capture is dropped."""
    s = cuabi.Stream()
    with pytest.raises(cuabi.errors.StreamCaptureUnsupportedError, match="cuMemAlloc"):
        with cuabi.Graph.capture(s, mode):
            cuabi.DeviceBuffer(16)
    assert cuabi.driver.cuStreamIsCapturing(s.handle) == 0  # CU_STREAM_CAPTURE_STATUS_NONE
    cuabi.DeviceBuffer(16).close()  # allowed again once the capture is over


def test_allocating_during_relaxed_capture_is_allowed():
    """A relaxed capture leaves unsafe calls allowed."""
    s = cuabi.Stream()
    with cuabi.Graph.capture(s, "relaxed") as cap:
        b = cuabi.DeviceBuffer(16)
    b.close()
    cap.graph.instantiate().close()
