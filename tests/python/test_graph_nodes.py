# SPDX-License-Identifier: Apache-2.0
"""Explicit graphs: kernel, memset, memcpy, host, child, event and conditional
nodes; dot print; per-node update and enabling of executable graphs."""

import struct
import sys

import pytest

from conftest import needs

import cuabi
from cuabi.errors import ClosedError, CUDAError

pytestmark = pytest.mark.fake  # the kernels are the fake driver's (tests/fake/kernels.c)

IMAGE = ("fakecuda-module\nkernel fill_u32\nkernel add_u32\nkernel iota_u32\n"
         "kernel set_condition\nkernel count_to\n")
N = 64
CFG = cuabi.LaunchConfig(grid=1, block=N)


@pytest.fixture
def kernels(ctx, fake):
    m = cuabi.Module(IMAGE)
    yield {"fill": m.get_kernel("fill_u32", "pIQ"), "add": m.get_kernel("add_u32", "pIQ"),
           "iota": m.get_kernel("iota_u32", "pQ"), "set": m.get_kernel("set_condition", "QI"),
           "count": m.get_kernel("count_to", "QpI")}
    m.close()


def words(buf, n=N):
    return list(struct.unpack("%dI" % n, buf.to_bytes()[:4 * n]))


def run(graph):
    ge = graph.instantiate()
    ge.launch()
    return ge


def test_kernel_nodes_run_in_dependency_order(kernels):
    """fill then add (after fill): every element is fill's value plus add's."""
    buf = cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    fill = g.add_kernel(kernels["fill"], CFG, buf, 5, N)
    add = g.add_kernel(kernels["add"], CFG, buf, 3, N, after=[fill])
    assert (fill.kind, add.kind, g.node_count) == ("kernel", "kernel", 2)
    run(g)
    assert words(buf) == [8] * N


def test_kernel_node_copies_its_arguments(kernels):
    """The arguments are taken when the node is added: a later launch uses those."""
    a, b = cuabi.DeviceBuffer(4 * N), cuabi.DeviceBuffer(4 * N)
    b.fill(0, width=4)
    g = cuabi.Graph()
    g.add_kernel(kernels["fill"], CFG, a, 7, N)
    run(g)
    assert words(a) == [7] * N and words(b) == [0] * N


def test_kernel_node_argument_errors(kernels):
    """Bad arguments, a non-LaunchConfig, launch attributes and a block the driver refuses add no node."""
    g = cuabi.Graph()
    buf = cuabi.DeviceBuffer(4 * N)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        g.add_kernel(kernels["fill"], CFG, buf, 1)
    with pytest.raises(TypeError, match="bad argument"):
        g.add_kernel(kernels["fill"], CFG, buf, "x", N)
    with pytest.raises(TypeError, match="LaunchConfig"):
        g.add_kernel(kernels["fill"], (1, N), buf, 1, N)
    with pytest.raises(ValueError, match="launch attributes"):
        g.add_kernel(kernels["fill"], cuabi.LaunchConfig(grid=1, block=N, priority=-1), buf, 1, N)
    with pytest.raises(CUDAError):  # the driver's launch checks: a block of 2048 threads
        g.add_kernel(kernels["fill"], cuabi.LaunchConfig(grid=1, block=2048), buf, 1, N)
    assert g.node_count == 0


def test_memset_and_memcpy_nodes(kernels):
    """A 4-byte memset, a copy after it and a byte memset after that leave their combined result."""
    src, dst = cuabi.DeviceBuffer(4 * N), cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    ms = g.add_memset(src, 0x01020304, N, element_size=4)
    mc = g.add_memcpy(dst, src, 4 * N, after=ms)
    half = g.add_memset(dst, 0xAB, 8, after=[mc])  # the first 8 bytes, byte-wise
    assert (ms.kind, mc.kind, half.kind) == ("memset", "memcpy", "memset")
    run(g)
    assert dst.to_bytes()[:8] == b"\xab" * 8
    assert words(dst)[2:] == [0x01020304] * (N - 2)
    with pytest.raises(ValueError, match="element_size"):
        g.add_memset(dst, 0, N, element_size=3)
    with pytest.raises(ValueError, match="nbytes"):
        g.add_memcpy(dst, src, 0)
    with pytest.raises(CUDAError):  # past the end of the allocation
        g.add_memset(dst, 0, N + 1, element_size=4)


def test_host_node_calls_the_function_each_launch(kernels):
    """A host node calls its function once per launch; a non-callable is refused."""
    calls = []
    g = cuabi.Graph()
    g.add_host(lambda: calls.append(1))
    ge = run(g)
    ge.launch()
    assert calls == [1, 1]
    with pytest.raises(TypeError, match="callable"):
        g.add_host(42)


def test_host_node_function_outlives_graph_in_exec(kernels):
    """The executable graph keeps the function alive after the graph is closed."""
    calls = []
    g = cuabi.Graph()
    g.add_host(lambda: calls.append("ran"))
    ge = g.instantiate()
    g.close()
    import gc
    gc.collect()
    ge.launch()
    assert calls == ["ran"]


def test_host_node_exception_is_reported_and_graph_goes_on(kernels, monkeypatch):
    """A raising callback goes to sys.unraisablehook; the later nodes still run."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u))
    buf = cuabi.DeviceBuffer(4 * N)

    def boom():
        raise RuntimeError("callback failed")

    g = cuabi.Graph()
    h = g.add_host(boom)
    g.add_kernel(kernels["fill"], CFG, buf, 9, N, after=h)
    run(g)
    assert len(seen) == 1 and isinstance(seen[0].exc_value, RuntimeError)
    assert seen[0].object is boom and "host node" in seen[0].err_msg
    assert words(buf) == [9] * N


def test_child_graph_is_copied_when_added(kernels):
    """A child node runs the child graph as it was when added, before the nodes that depend on it."""
    buf = cuabi.DeviceBuffer(4 * N)
    child = cuabi.Graph()
    child.add_kernel(kernels["fill"], CFG, buf, 2, N)
    g = cuabi.Graph()
    node = g.add_child(child)
    child.add_kernel(kernels["add"], CFG, buf, 100, N)  # after the copy: not in g
    g.add_kernel(kernels["add"], CFG, buf, 1, N, after=node)
    assert node.kind == "graph"
    run(g)
    assert words(buf) == [3] * N
    with pytest.raises(ValueError, match="own child"):
        g.add_child(g)
    with pytest.raises(TypeError):
        g.add_child("graph")


def test_child_graph_keeps_host_functions(kernels):
    """A parent graph keeps its child's host functions alive after the child is closed."""
    calls = []
    child = cuabi.Graph()
    child.add_host(lambda: calls.append("child"))
    g = cuabi.Graph()
    g.add_child(child)
    child.close()
    run(g)
    assert calls == ["child"]


def test_event_nodes(kernels):
    """Record nodes record their events at launch (timing between them then works)."""
    start, end = cuabi.Event(timing=True), cuabi.Event(timing=True)
    g = cuabi.Graph()
    rec = g.add_event_record(start)
    wait = g.add_event_wait(start, after=rec)
    g.add_event_record(end, after=wait)
    assert (rec.kind, wait.kind) == ("event_record", "event_wait")
    with pytest.raises(CUDAError):
        end - start  # neither is recorded yet
    run(g)
    end.sync()
    assert end - start >= 0.0
    with pytest.raises(TypeError, match="Event"):
        g.add_event_record(object())


def test_dependencies_must_be_nodes_of_the_same_graph(kernels):
    """A node of another graph is refused as a dependency, by cuabi or by the driver."""
    g1, g2 = cuabi.Graph(), cuabi.Graph()
    n1 = g1.add_empty_node()
    e1 = g1.add_host(lambda: None)
    with pytest.raises(ValueError, match="same graph"):
        g2.add_host(lambda: None, after=[e1])
    with pytest.raises(CUDAError):  # a raw handle of another graph: the driver refuses
        g2.add_host(lambda: None, after=[n1])
    with pytest.raises(TypeError, match="dependencies"):
        g2.add_host(lambda: None, after=["x"])


def test_closed_graph_refuses_nodes(kernels):
    """A closed graph refuses new nodes and the dot print; its nodes' handles raise ClosedError."""
    g = cuabi.Graph()
    n = g.add_empty_node()
    node = g.add_host(lambda: None, after=[n])
    g.close()
    with pytest.raises(ClosedError):
        g.add_host(lambda: None)
    with pytest.raises(ClosedError):
        node.handle
    with pytest.raises(ClosedError):
        g.dot("/tmp/never.dot")


def test_dot_print(kernels, tmp_path):
    """Graph.dot writes dot text naming the kernel and the memset with an edge; an unwritable path raises."""
    g = cuabi.Graph()
    buf = cuabi.DeviceBuffer(4 * N)
    k = g.add_kernel(kernels["fill"], CFG, buf, 1, N)
    g.add_memset(buf, 0, N, element_size=4, after=k)
    path = tmp_path / "g.dot"
    g.dot(path)
    text = path.read_text()
    assert text.startswith("digraph") and "fill_u32" in text and "memset" in text and "->" in text
    with pytest.raises(CUDAError):
        g.dot(tmp_path / "missing" / "g.dot")


# ------------------------------------------------------------- conditionals

def test_while_loop_counts_on_the_device(kernels):
    """A while node whose body increments a counter until it reaches 10."""
    needs("cuGraphConditionalHandleCreate")
    counter = cuabi.DeviceBuffer(4)
    g = cuabi.Graph()
    reset = g.add_memset(counter, 0, 1, element_size=4)
    cond = g.conditional(default=1)
    loop = g.add_while(cond, after=reset)
    assert loop.kind == "while" and len(loop.bodies) == 1
    loop.body.add_kernel(kernels["count"], cuabi.LaunchConfig(), cond, counter, 10)
    ge = run(g)
    assert words(counter, 1) == [10]
    ge.launch()  # the default (1) is given again at each launch: the loop runs again
    assert words(counter, 1) == [10]


def test_condition_without_default_keeps_its_value(kernels):
    """Without a default the value a kernel set stays for the next launch; with one it is reset."""
    buf = cuabi.DeviceBuffer(4 * N)
    for default, second in ((None, [5] * N), (0, [0] * N)):
        buf.fill(0, width=4)
        g = cuabi.Graph()
        cond = g.conditional(default=default)
        node = g.add_if(cond)
        node.body.add_kernel(kernels["fill"], CFG, buf, 5, N)
        g.add_kernel(kernels["set"], cuabi.LaunchConfig(), cond, 1, after=node)  # for the next launch
        ge = g.instantiate()
        ge.launch()
        assert words(buf) == [0] * N  # 0 at first: the body was skipped
        ge.launch()
        assert words(buf) == second


def test_if_else_and_switch(kernels):
    """if/else runs the body matching the condition; switch runs body n, or none past the last case."""
    buf = cuabi.DeviceBuffer(4 * N)
    for value, want in ((1, 11), (0, 22)):
        g = cuabi.Graph()
        cond = g.conditional(default=value)
        node = g.add_if(cond, with_else=True)
        assert node.kind == "if" and len(node.bodies) == 2
        node.bodies[0].add_kernel(kernels["fill"], CFG, buf, 11, N)
        node.bodies[1].add_kernel(kernels["fill"], CFG, buf, 22, N)
        run(g)
        assert words(buf) == [want] * N
    for value, want in ((0, 100), (2, 102), (7, 102)):  # 7: no case, nothing runs
        g = cuabi.Graph()
        cond = g.conditional(default=value)
        sw = g.add_switch(cond, 3)
        assert len(sw.bodies) == 3
        for i, body in enumerate(sw.bodies):
            body.add_kernel(kernels["fill"], CFG, buf, 100 + i, N)
        run(g)
        assert words(buf) == [want] * N


def test_condition_set_by_a_kernel_before_the_node(kernels):
    """A kernel setting the condition before the node overrides the handle's default."""
    buf = cuabi.DeviceBuffer(4 * N)
    buf.fill(0, width=4)
    g = cuabi.Graph()
    cond = g.conditional(default=1)
    setter = g.add_kernel(kernels["set"], cuabi.LaunchConfig(), cond, 0)
    g.add_if(cond, after=setter).body.add_kernel(kernels["fill"], CFG, buf, 5, N)
    run(g)
    assert words(buf) == [0] * N  # the kernel's 0 wins over the default


def test_conditional_misuse(kernels):
    """Bad defaults, handles, case counts, another graph's handle, body of a non-conditional and instantiating a body raise."""
    g = cuabi.Graph()
    with pytest.raises(ValueError, match="unsigned"):
        g.conditional(default=-1)
    with pytest.raises(TypeError, match="handle"):
        g.add_while(0)
    with pytest.raises(ValueError, match="cases"):
        g.add_switch(g.conditional(), 0)
    other = cuabi.Graph()
    with pytest.raises(CUDAError):  # a handle of another graph
        g.add_if(other.conditional())
    node = g.add_while(g.conditional())
    host = g.add_host(lambda: None)
    with pytest.raises(TypeError, match="no body"):
        host.body
    with pytest.raises(ValueError, match="body graph"):
        node.body.instantiate()


def test_body_graphs_close_with_their_graph(kernels):
    """Closing a graph closes its conditional bodies, which then refuse use."""
    g = cuabi.Graph()
    body = g.add_if(g.conditional(default=1)).body
    g.close()
    assert body.closed
    with pytest.raises(ClosedError):
        body.add_host(lambda: None)


def test_bodies_refuse_host_and_event_nodes(kernels):
    """The driver allows no host or event nodes in a conditional body, also not in a child graph there."""
    g = cuabi.Graph()
    body = g.add_if(g.conditional(default=1)).body
    with pytest.raises(CUDAError):
        body.add_host(lambda: None)
    with pytest.raises(CUDAError):
        body.add_event_record(cuabi.Event())
    child = cuabi.Graph()
    child.add_host(lambda: None)
    with pytest.raises(CUDAError):
        body.add_child(child)
    inner = body.add_while(body.conditional())  # nested conditionals: allowed, and restricted too
    with pytest.raises(CUDAError):
        inner.body.add_host(lambda: None)
    assert body.node_count == 1


# ------------------------------------------------------------- per-node update

def test_set_kernel_args_changes_only_the_exec(kernels):
    """set_kernel_args changes what the executable graph's kernel node does, not the graph."""
    buf = cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    node = g.add_kernel(kernels["fill"], CFG, buf, 1, N)
    ge = g.instantiate()
    ge.set_kernel_args(node, buf, 42, N)
    ge.launch()
    assert words(buf) == [42] * N
    g.instantiate().launch()  # the graph itself still has 1
    assert words(buf) == [1] * N


def test_launch_with_sets_arguments_and_launches(kernels):
    """launch_with gives the node new arguments each call and leaves the other nodes' as they were."""
    a, b = cuabi.DeviceBuffer(4 * N), cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    node = g.add_kernel(kernels["fill"], CFG, a, 0, N)
    g.add_kernel(kernels["add"], CFG, a, 1, N, after=node)
    ge = g.instantiate()
    s = cuabi.Stream()
    for i, buf in enumerate((a, b, a)):
        ge.launch_with(s, node, buf, 10 * i, N)
        s.sync()
    assert words(a) == [21] * N  # the add node always targets a
    assert words(b) == [10] * N


def test_launch_with_kernel_without_signature(ctx, fake):
    """A kernel without a signature: its parameters come from the driver, as for a launch."""
    m = cuabi.Module(IMAGE)
    fill = m.get_kernel("fill_u32")
    buf = cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    node = g.add_kernel(fill, CFG, buf, 1, N)
    ge = g.instantiate()
    ge.launch_with(None, node, buf, 6, N)
    assert words(buf) == [6] * N
    m.close()
    with pytest.raises(ClosedError):
        ge.launch_with(None, node, buf, 7, N)


def test_launch_with_misuse_keeps_working(kernels):
    """Bad arguments raise before anything runs; the next good call works."""
    buf = cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    ms = g.add_memset(buf, 0, 4 * N)
    node = g.add_kernel(kernels["fill"], CFG, buf, 1, N, after=ms)
    ge = g.instantiate()
    with pytest.raises(TypeError, match="needs a kernel node"):
        ge.launch_with(None, ms)
    ge.launch_with(None, node, buf, 2, N)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        ge.launch_with(None, node, buf, 3)
    with pytest.raises(TypeError, match="bad argument"):
        ge.launch_with(None, node, buf, -1, N)
    assert words(buf) == [2] * N
    ge.launch_with(None, node, buf, 4, N)
    assert words(buf) == [4] * N
    ge.close()
    with pytest.raises(ClosedError):
        ge.launch_with(None, node, buf, 5, N)


def test_launch_with_pushes_the_graphs_context_when_needed(kernels, ctx):
    """With no context current, launch_with runs in the graph's context and leaves none current."""
    from cuabi import driver as d

    buf = cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    node = g.add_kernel(kernels["fill"], CFG, buf, 1, N)
    ge = g.instantiate()
    d.cuCtxSetCurrent(0)
    try:
        ge.launch_with(None, node, buf, 8, N)
        assert not d.cuCtxGetCurrent()
    finally:
        ctx.set_current()
    assert words(buf) == [8] * N


def test_set_enabled(kernels):
    """A disabled kernel node does nothing at launch and runs again once enabled."""
    buf = cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    fill = g.add_kernel(kernels["fill"], CFG, buf, 4, N)
    add = g.add_kernel(kernels["add"], CFG, buf, 1, N, after=fill)
    ge = g.instantiate()
    ge.set_enabled(add, False)
    assert not ge.is_enabled(add) and ge.is_enabled(fill)
    ge.launch()
    assert words(buf) == [4] * N
    ge.set_enabled(add, True)
    ge.launch()
    assert words(buf) == [5] * N


def test_per_node_misuse(kernels):
    """Per-node methods refuse other node kinds, raw handles, wrong argument counts, other graphs' nodes and a closed exec."""
    buf = cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    k = g.add_kernel(kernels["fill"], CFG, buf, 1, N)
    host = g.add_host(lambda: None)
    ms = g.add_memset(buf, 0, N)
    ge = g.instantiate()
    with pytest.raises(TypeError, match="needs a kernel node"):
        ge.set_kernel_args(ms, buf, 1, N)
    with pytest.raises(TypeError, match="needs a kernel or memset or memcpy node"):
        ge.set_enabled(host, False)
    with pytest.raises(TypeError, match="GraphNode"):
        ge.set_enabled(k.handle, False)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        ge.set_kernel_args(k, buf)
    other = cuabi.Graph()
    ok = other.add_kernel(kernels["fill"], CFG, buf, 1, N)
    with pytest.raises(ValueError, match="instantiated from"):
        ge.set_kernel_args(ok, buf, 1, N)
    ge.close()
    with pytest.raises(ClosedError):
        ge.set_kernel_args(k, buf, 2, N)


def test_whole_update_keeps_host_functions(kernels):
    """After update(), the executable graph calls the new graph's host function, kept alive by it."""
    calls = []
    g1 = cuabi.Graph()
    g1.add_host(lambda: calls.append(1))
    g2 = cuabi.Graph()
    g2.add_host(lambda: calls.append(2))
    ge = g1.instantiate()
    ge.update(g2)
    g1.close()
    g2.close()
    ge.launch()
    assert calls == [2]


def test_graphs_leave_nothing_behind(kernels, fake):
    """Body and child graphs belong to their nodes: no graph stays alive."""
    before = fake.live_objects("graphs")
    g = cuabi.Graph()
    child = cuabi.Graph()
    child.add_host(lambda: None)
    g.add_child(child)
    g.add_while(g.conditional())
    ge = g.instantiate()
    assert fake.live_objects("graphs") == before + 2
    ge.close()
    child.close()
    g.close()
    assert fake.live_objects("graphs") == before
