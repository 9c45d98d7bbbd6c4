# SPDX-License-Identifier: Apache-2.0
"""CUDA graphs: stream capture, explicit construction (kernel, memset,
memcpy, host, child-graph, event and conditional nodes), instantiation,
launch, whole-graph and per-node update."""

from __future__ import annotations

import struct
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import driver as _d
from ._address import device_pointer
from ._backend import backend
from ._constants import (CU_GRAPH_COND_ASSIGN_DEFAULT, CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_SWITCH,
                         CU_GRAPH_COND_TYPE_WHILE, CU_GRAPH_NODE_TYPE_CONDITIONAL,
                         CU_MEMORYTYPE_UNIFIED, CU_STREAM_CAPTURE_MODE_GLOBAL,
                         CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                         CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
from ._device import current_context
from ._interrupts import cleanup, deferred
from ._resource import NotCopyable, Resource
from ._stream import Stream, stream_handle
from ._structs import FORMATS, SIZES
from .errors import CUDAError

_MODES = {"global": CU_STREAM_CAPTURE_MODE_GLOBAL, "thread_local": CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
          "relaxed": CU_STREAM_CAPTURE_MODE_RELAXED}
# fields: result, errorNode, errorFromNode
_UPDATE_INFO = struct.Struct(FORMATS["CUgraphExecUpdateResultInfo"])
# func, grid x y z, block x y z, sharedMemBytes, kernelParams, extra, kern, ctx
_KERNEL_NODE = struct.Struct(FORMATS["CUDA_KERNEL_NODE_PARAMS_v2"])
# dst, pitch, value, elementSize, width, height
_MEMSET_NODE = struct.Struct(FORMATS["CUDA_MEMSET_NODE_PARAMS_v1"])
# fn, userData
_HOST_NODE = struct.Struct(FORMATS["CUDA_HOST_NODE_PARAMS_v1"])
_MEMCPY3D = struct.Struct(FORMATS["CUDA_MEMCPY3D_v2"])
# handle, type, size, phGraph_out, ctx: the union member of CUgraphNodeParams at offset 16
_CONDITIONAL = struct.Struct(FORMATS["CUDA_CONDITIONAL_NODE_PARAMS"])
_NODE_PARAMS_SIZE = SIZES["CUgraphNodeParams"]


def _mode(mode: str) -> int:
    m = _MODES.get(mode)
    if m is None:
        raise ValueError("capture mode must be one of %s, got %r" % (", ".join(_MODES), mode))
    return m


class Capture(NotCopyable):
    """``with Graph.capture(stream) as cap:`` - ``cap.graph`` holds the result.

    However the block ends (an exception, a Ctrl-C, even one that arrives
    while the capture starts), the stream leaves capture mode; the graph of
    a block that raised is discarded.
    """

    __slots__ = ("stream", "mode", "graph", "_open")

    def __init__(self, stream: Stream, mode: str) -> None:
        if not isinstance(stream, Stream):
            raise TypeError("stream must be a cuabi.Stream, got %s" % type(stream).__name__)
        _mode(mode)
        self.stream = stream
        self.mode = mode
        self.graph: Optional[Graph] = None
        self._open = False  # between the start of the capture and its end

    def __enter__(self) -> "Capture":
        try:
            with deferred():
                Graph.begin_capture(self.stream, self.mode)
                self._open = True
        except BaseException:
            # a Ctrl-C noted while the capture started: end it before raising
            cleanup(self._discard)
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        cleanup(self._end, exc_type is not None)
        return False

    def __del__(self) -> None:
        # the one gap: a Ctrl-C raised as __exit__ is entered, before any of
        # its code runs; the capture then ends when the interrupted frame goes
        try:
            if self._open:
                self._discard()
        except Exception:
            pass

    def _discard(self) -> None:
        self._open = False
        _end_if_capturing(self.stream)

    def _end(self, failed: bool) -> None:
        """End the capture: keep the graph, or discard it when the block raised."""
        if not self._open:
            return  # ended already (this is a second try after a Ctrl-C)
        self._open = False
        try:
            g = Graph.end_capture(self.stream)
        except CUDAError:
            if failed:
                return  # the body's error is the interesting one
            raise
        if failed:
            g.close()
        else:
            self.graph = g


def _end_if_capturing(stream: Stream) -> None:
    """End a capture of ``stream`` that is under way, discarding its graph."""
    h = stream._h
    if h is None:
        return
    with stream._in_context():
        try:
            if _d.cuStreamIsCapturing(h):
                g = _d.cuStreamEndCapture(h)
                if g:
                    _d.cuGraphDestroy(g)
        except CUDAError:
            pass


Dependencies = Sequence[Union["GraphNode", int]]


def _dependencies(graph: "Graph", after: Dependencies) -> Tuple[Optional[bytearray], int]:
    """``after`` (nodes of ``graph``, or node handles) as a handle array."""
    if isinstance(after, GraphNode):
        after = (after,)
    hs = []
    for n in after:
        if isinstance(n, GraphNode):
            if n.graph is not graph:
                raise ValueError("a dependency must be a node of the same graph")
            hs.append(n.handle)
        elif isinstance(n, int):
            hs.append(n)
        else:
            raise TypeError("dependencies are GraphNodes or node handles, got %s" % type(n).__name__)
    return (bytearray(struct.pack("=%dQ" % len(hs), *hs)) if hs else None), len(hs)


def _kernel_node_params(kernel: Any, config: Any, args: Tuple[Any, ...], ctx: int) -> Tuple[bytearray, Any]:
    """A CUDA_KERNEL_NODE_PARAMS for ``kernel`` launched with ``config`` and
    ``args`` (packed as a launch packs them) in the context ``ctx`` (a
    handle; 0: the current one), and what keeps the memory it points to
    alive until the driver has copied it."""
    from ._kernel import pack_params
    from ._launch_config import LaunchConfig

    if config.__class__ is not LaunchConfig:
        raise TypeError("config must be a LaunchConfig, got %s" % type(config).__name__)
    if config._ex:
        raise ValueError("launch attributes (cluster, cooperative, priority, programmatic) are not "
                         "supported on graph kernel nodes; capture a launch with them instead")
    block, offsets = pack_params(kernel, args)
    block_buf = bytearray(block) or bytearray(1)
    block_addr, keep_b = backend().buffer_address(block_buf)
    params, keep_p = _kernel_node_struct(kernel._h, config, block_addr, offsets, ctx)
    return params, (keep_b, keep_p, block_buf)


def _kernel_node_struct(function: int, config: Any, block_addr: int, offsets: Tuple[int, ...],
                        ctx: int) -> Tuple[bytearray, Any]:
    """The CUDA_KERNEL_NODE_PARAMS of ``function`` launched with ``config``,
    its ``kernelParams`` pointing at each parameter (``offsets``) of the packed
    block at ``block_addr``, and the keeper of that pointer array."""
    keep = None
    pointers = 0  # NULL for a kernel without parameters
    if offsets:
        array = bytearray(struct.pack("=%dQ" % len(offsets), *(block_addr + o for o in offsets)))
        pointers, keep_a = backend().buffer_address(array)
        keep = (keep_a, array)
    gx, gy, gz, bx, by, bz, shmem, _ = config._hdr
    return bytearray(_KERNEL_NODE.pack(function, gx, gy, gz, bx, by, bz, shmem, pointers, 0, 0, ctx)), keep


def _host_function(fn: Callable[[], Any]) -> Tuple[int, Any]:
    """A C ``CUhostFn`` calling ``fn()``: an exception it raises cannot travel
    into the driver's thread, so it is reported with ``sys.unraisablehook``
    (printed to stderr by default) and the graph goes on."""
    def call(_user_data: int) -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: B036 - nothing above this frame could catch it
            hook = sys.unraisablehook
            hook(_Unraisable(exc, "Exception ignored in the host node of a cuabi graph calling", fn))

    return backend().callback(None, "p", call)


class _Unraisable:
    """What ``sys.unraisablehook`` receives (its ``UnraisableHookArgs`` fields)."""

    __slots__ = ("exc_type", "exc_value", "exc_traceback", "err_msg", "object")

    def __init__(self, exc: BaseException, msg: str, obj: Any) -> None:
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = msg
        self.object = obj


class GraphNode(NotCopyable):
    """A node of a :class:`Graph`, as its ``add_*`` methods return it.

    ``kind`` says what it does (``"kernel"``, ``"memset"``, ``"memcpy"``,
    ``"host"``, ``"graph"``, ``"event_record"``, ``"event_wait"``, ``"if"``,
    ``"while"``, ``"switch"``); ``bodies`` holds a conditional node's body
    graphs (``body`` the first), to fill with nodes.  Pass nodes as
    ``after=`` of later ``add_*`` calls, and to the per-node methods of a
    :class:`GraphExec` instantiated from the graph.
    """

    __slots__ = ("graph", "_h", "kind", "kernel", "config", "bodies")

    def __init__(self, graph: "Graph", handle: int, kind: str, kernel: Any = None, config: Any = None,
                 bodies: Tuple["Graph", ...] = ()) -> None:
        self.graph = graph
        self._h = handle
        self.kind = kind
        self.kernel = kernel  # a kernel node's kernel and launch config
        self.config = config
        self.bodies = bodies

    @property
    def handle(self) -> int:
        """The ``CUgraphNode``, as an integer (valid while its graph is open)."""
        self.graph.handle  # raises ClosedError once the graph is closed
        return self._h

    @property
    def body(self) -> "Graph":
        """The first body graph of a conditional node (``if``: run when the
        condition is non-zero; ``while``: the loop's body)."""
        if not self.bodies:
            raise TypeError("a %s node has no body graph" % self.kind)
        return self.bodies[0]

    def __repr__(self) -> str:
        return "<cuabi.GraphNode %s 0x%x>" % (self.kind, self._h)


class Graph(Resource):
    """A CUDA graph.  ``Graph()`` is empty: fill it with the ``add_*``
    methods, whose ``after=`` names the nodes a new node depends on;
    :meth:`capture` records one from the work queued on a stream instead.

    The graph keeps what its host nodes call alive (so do executable graphs
    made from it).  The body graphs of conditional nodes belong to their
    node: closing the graph closes them too; the driver allows kernel,
    memset, memcpy, empty, child-graph and conditional nodes in them (no
    host or event nodes, also not inside child graphs).
    """

    __slots__ = ("_keep", "_owner", "_bodies")

    def __init__(self, device: Any = None) -> None:
        Resource.__init__(self)
        self._keep: List[Any] = []
        self._owner: Optional[Graph] = None
        self._bodies: List[Graph] = []
        ctx = current_context(device)
        with deferred(), ctx._pushed():
            self._h = _d.cuGraphCreate(0)
            ctx._adopt(self)

    @staticmethod
    def capture(stream: Stream, mode: str = "global") -> Capture:
        """Context manager capturing the work queued on ``stream`` inside it:
        ``with Graph.capture(stream) as cap: ...`` then ``cap.graph``.

        ``mode``: ``"global"``, ``"thread_local"`` or ``"relaxed"``
        (``CUstreamCaptureMode``).
        """
        return Capture(stream, mode)

    @staticmethod
    def begin_capture(stream: Stream, mode: str = "global") -> None:
        """Start capturing ``stream`` (what entering :meth:`capture` does)."""
        if not isinstance(stream, Stream):
            raise TypeError("stream must be a cuabi.Stream, got %s" % type(stream).__name__)
        m = _mode(mode)
        h = stream.handle
        with stream._in_context():
            _d.cuStreamBeginCapture(h, m)

    @staticmethod
    def end_capture(stream: Stream) -> "Graph":
        """Stop capturing ``stream``; the captured work as a new graph."""
        if not isinstance(stream, Stream):
            raise TypeError("stream must be a cuabi.Stream, got %s" % type(stream).__name__)
        h = stream.handle
        with deferred(), stream._in_context():
            return Graph._wrap(_d.cuStreamEndCapture(h), stream._ctx)

    @classmethod
    def _wrap(cls, h: int, ctx: Any = None) -> "Graph":
        """A Graph owning the handle ``h`` (call with Ctrl-C deferred)."""
        self = cls.__new__(cls)
        Resource.__init__(self)
        self._keep = []
        self._owner = None
        self._bodies = []
        self._h = h
        (ctx if ctx is not None and ctx._h is not None else current_context())._adopt(self)
        return self

    def _body(self, h: int) -> "Graph":
        """A body graph of a conditional node of this graph: the driver's,
        closed with this graph, never destroyed by itself."""
        body = Graph._wrap(h, self._ctx)
        body._owner = self
        self._bodies.append(body)
        return body

    def _release(self, h: int) -> None:
        for body in self._bodies:
            body.close()
        if self._owner is None:
            _d.cuGraphDestroy(h)

    @property
    def node_count(self) -> int:
        """How many nodes the graph has."""
        h = self.handle
        with self._in_context():
            return _d.cuGraphGetNodes(h, None, 0)

    def clone(self) -> "Graph":
        """A copy of the graph, as a new driver graph (``cuGraphClone``)."""
        h = self.handle
        with deferred(), self._in_context():
            return Graph._wrap(_d.cuGraphClone(h), self._ctx)

    def add_empty_node(self, dependencies: Sequence[int] = ()) -> int:
        """Add an empty node depending on the given node handles; returns its handle."""
        deps = list(dependencies)
        arr = bytearray(struct.pack("=%dQ" % len(deps), *deps)) if deps else None
        h = self.handle
        with self._in_context():
            return _d.cuGraphAddEmptyNode(h, arr, len(deps))

    def add_kernel(self, kernel: Any, config: Any, *args: Any, after: Dependencies = ()) -> GraphNode:
        """Add a node launching ``kernel`` with ``config`` (a
        :class:`cuabi.LaunchConfig` without launch attributes) and ``args``,
        converted as :func:`cuabi.launch` converts them
        (``cuGraphAddKernelNode``).  The driver copies the arguments now."""
        deps, n = _dependencies(self, after)
        params, keep = _kernel_node_params(kernel, config, args, self._ctx_handle())
        h = self.handle
        with self._in_context():
            node = _d.cuGraphAddKernelNode(h, deps, n, params)
        del keep
        return GraphNode(self, node, "kernel", kernel, config)

    def add_memset(self, dst: Any, value: int, count: int, element_size: int = 1,
                   after: Dependencies = ()) -> GraphNode:
        """Add a node setting ``count`` elements of ``element_size`` (1, 2 or
        4) bytes at ``dst`` (a buffer or device address) to ``value``
        (``cuGraphAddMemsetNode``)."""
        if element_size not in (1, 2, 4):
            raise ValueError("element_size must be 1, 2 or 4, got %r" % (element_size,))
        if count <= 0:
            raise ValueError("count must be positive, got %r" % (count,))
        deps, n = _dependencies(self, after)
        params = bytearray(_MEMSET_NODE.pack(device_pointer(dst), 0, value & 0xFFFFFFFF, element_size, count, 1))
        h, ctx = self.handle, self._ctx_handle()
        with self._in_context():
            node = _d.cuGraphAddMemsetNode(h, deps, n, params, ctx)
        return GraphNode(self, node, "memset")

    def add_memcpy(self, dst: Any, src: Any, nbytes: int, after: Dependencies = ()) -> GraphNode:
        """Add a node copying ``nbytes`` from ``src`` to ``dst`` (buffers or
        addresses of memory the driver allocated: device, pinned or managed)
        (``cuGraphAddMemcpyNode``)."""
        if nbytes <= 0:
            raise ValueError("nbytes must be positive, got %r" % (nbytes,))
        deps, n = _dependencies(self, after)
        d, s_ = device_pointer(dst), device_pointer(src)
        # one row: unified addresses on both sides, so any kind of driver memory goes
        params = bytearray(_MEMCPY3D.pack(0, 0, 0, 0, CU_MEMORYTYPE_UNIFIED, 0, s_, 0, 0, nbytes, 1,
                                          0, 0, 0, 0, CU_MEMORYTYPE_UNIFIED, 0, d, 0, 0, nbytes, 1,
                                          nbytes, 1, 1))
        h, ctx = self.handle, self._ctx_handle()
        with self._in_context():
            node = _d.cuGraphAddMemcpyNode(h, deps, n, params, ctx)
        return GraphNode(self, node, "memcpy")

    def add_host(self, fn: Callable[[], Any], after: Dependencies = ()) -> GraphNode:
        """Add a node calling ``fn()`` on a driver thread (``cuGraphAddHostNode``).

        The graph keeps ``fn`` alive.  ``fn`` must not call CUDA.  An
        exception it raises cannot reach the code that launched the graph
        (the launch returned long before): it goes to ``sys.unraisablehook``,
        which prints it by default, and the rest of the graph runs on.
        """
        if not callable(fn):
            raise TypeError("fn must be callable, got %s" % type(fn).__name__)
        deps, n = _dependencies(self, after)
        address, keep = _host_function(fn)
        params = bytearray(_HOST_NODE.pack(address, 0))
        h = self.handle
        with self._in_context():
            node = _d.cuGraphAddHostNode(h, deps, n, params)
        self._keep.append(keep)
        return GraphNode(self, node, "host")

    def add_child(self, graph: "Graph", after: Dependencies = ()) -> GraphNode:
        """Add a node running ``graph``, as it is now: the driver copies it,
        so later changes of ``graph`` do not reach the node
        (``cuGraphAddChildGraphNode``)."""
        if not isinstance(graph, Graph):
            raise TypeError("graph must be a cuabi.Graph, got %s" % type(graph).__name__)
        if graph is self:
            raise ValueError("a graph cannot be its own child")
        deps, n = _dependencies(self, after)
        h, gh = self.handle, graph.handle
        with self._in_context():
            node = _d.cuGraphAddChildGraphNode(h, deps, n, gh)
        self._keep.extend(graph._keep)
        return GraphNode(self, node, "graph")

    def add_event_record(self, event: Any, after: Dependencies = ()) -> GraphNode:
        """Add a node recording ``event`` (a :class:`cuabi.Event`)."""
        return self._event_node(_d.cuGraphAddEventRecordNode, event, after, "event_record")

    def add_event_wait(self, event: Any, after: Dependencies = ()) -> GraphNode:
        """Add a node waiting for ``event`` (a :class:`cuabi.Event`)."""
        return self._event_node(_d.cuGraphAddEventWaitNode, event, after, "event_wait")

    def _event_node(self, add: Any, event: Any, after: Dependencies, kind: str) -> GraphNode:
        from ._event import Event

        if not isinstance(event, Event):
            raise TypeError("event must be a cuabi.Event, got %s" % type(event).__name__)
        deps, n = _dependencies(self, after)
        h, eh = self.handle, event.handle
        with self._in_context():
            node = add(h, deps, n, eh)
        return GraphNode(self, node, kind)

    def conditional(self, default: Optional[int] = None) -> int:
        """A new conditional handle for the conditional nodes of this graph
        (``cuGraphConditionalHandleCreate``), as an int: pass it to
        :meth:`add_if`, :meth:`add_while` or :meth:`add_switch`, and to the
        kernels that set the condition (``cudaGraphSetConditional(handle,
        value)`` in device code, an ``unsigned long long`` parameter).

        ``default``: the value the condition takes at the start of every
        launch; None: no reset, it keeps the value last set (0 before the
        first, cuGraphConditionalHandleCreate's initial value).
        """
        if default is not None and not 0 <= default <= 0xFFFFFFFF:
            raise ValueError("default must be an unsigned 32-bit value, got %r" % (default,))
        flags = 0 if default is None else CU_GRAPH_COND_ASSIGN_DEFAULT
        h, ctx = self.handle, self._ctx_handle()
        with self._in_context():
            return _d.cuGraphConditionalHandleCreate(h, ctx, default or 0, flags)

    def add_if(self, condition: int, with_else: bool = False, after: Dependencies = ()) -> GraphNode:
        """Add a node running its ``body`` when ``condition`` is non-zero at
        that point; ``with_else``: and ``bodies[1]`` when it is zero (CUDA 12.8+)."""
        return self._conditional(condition, CU_GRAPH_COND_TYPE_IF, 2 if with_else else 1, after, "if")

    def add_while(self, condition: int, after: Dependencies = ()) -> GraphNode:
        """Add a node running its ``body`` again and again for as long as
        ``condition`` is non-zero (tested before each round): a kernel in the
        body sets it to 0 to end the loop."""
        return self._conditional(condition, CU_GRAPH_COND_TYPE_WHILE, 1, after, "while")

    def add_switch(self, condition: int, cases: int, after: Dependencies = ()) -> GraphNode:
        """Add a node running ``bodies[n]`` for ``condition == n``, nothing
        for ``n >= cases`` (CUDA 12.8+)."""
        if not isinstance(cases, int) or cases < 1:
            raise ValueError("cases must be a positive int, got %r" % (cases,))
        return self._conditional(condition, CU_GRAPH_COND_TYPE_SWITCH, cases, after, "switch")

    def _conditional(self, condition: int, ctype: int, size: int, after: Dependencies, kind: str) -> GraphNode:
        """A conditional node through ``cuGraphAddNode``, its body graphs wrapped."""
        if not isinstance(condition, int) or condition <= 0:
            raise TypeError("condition must be a handle from Graph.conditional(), got %r" % (condition,))
        deps, n = _dependencies(self, after)
        h, ctx = self.handle, self._ctx_handle()
        params = bytearray(_NODE_PARAMS_SIZE)
        struct.pack_into("=I", params, 0, CU_GRAPH_NODE_TYPE_CONDITIONAL)
        _CONDITIONAL.pack_into(params, 16, condition, ctype, size, 0, ctx)
        with deferred(), self._in_context():
            node = _d.cuGraphAddNode(h, deps, None, n, params)
            # phGraph_out is the driver's: it writes the address of its own array of the
            # body graphs into the parameters (valid while the node lives)
            array = _CONDITIONAL.unpack_from(params, 16)[3]
            if not array:
                raise RuntimeError("cuGraphAddNode made the conditional node but returned no body graphs")
            handles = struct.unpack("=%dQ" % size, backend().string_at(array, 8 * size))
            bodies = tuple(self._body(b) for b in handles)
        return GraphNode(self, node, kind, bodies=bodies)

    def dot(self, path: str, flags: int = 0) -> None:
        """Write the graph as a Graphviz dot file to ``path``
        (``cuGraphDebugDotPrint``; ``flags``: ``CUgraphDebugDot_flags``, 0
        for the default detail)."""
        h = self.handle
        with self._in_context():
            _d.cuGraphDebugDotPrint(h, str(path), flags)

    def _ctx_handle(self) -> int:
        ctx = self._ctx
        return ctx.handle if ctx is not None else 0

    def instantiate(self, flags: int = 0) -> "GraphExec":
        """An executable graph (``cuGraphInstantiate``)."""
        if self._owner is not None:
            raise ValueError("the body graph of a conditional node runs only as part of its graph; "
                             "instantiate that graph")
        return GraphExec(self, flags)


class GraphExec(Resource):
    """An executable graph: :meth:`launch` it on a stream, :meth:`update` it
    whole, or change single nodes (:meth:`set_kernel_args`,
    :meth:`set_enabled`, :meth:`launch_with`).  The per-node methods take
    nodes of the graph it was instantiated from."""

    __slots__ = ("_keep", "_source", "_fast")

    def __init__(self, graph: Graph, flags: int = 0):
        Resource.__init__(self)
        self._fast: Dict[int, _NodeParams] = {}  # launch_with's kept parameter buffers, per node
        if not isinstance(graph, Graph):
            raise TypeError("graph must be a cuabi.Graph")
        ctx = graph._ctx or current_context()
        gh = graph.handle
        # the host nodes' functions, which the snapshot calls, live as long as it
        self._keep = list(graph._keep)
        self._source = graph
        with deferred(), ctx._pushed():
            self._h = _d.cuGraphInstantiate(gh, flags)
            ctx._adopt(self)

    def _node(self, node: GraphNode, kinds: Tuple[str, ...], what: str) -> int:
        """``node``'s handle, checked: of the source graph, of one of ``kinds``."""
        if not isinstance(node, GraphNode):
            raise TypeError("node must be a cuabi.GraphNode, got %s" % type(node).__name__)
        if node.graph is not self._source:
            raise ValueError("node is not a node of the graph this GraphExec was instantiated from")
        if node.kind not in kinds:
            raise TypeError("%s needs a %s node, got a %s node" % (what, " or ".join(kinds), node.kind))
        return node.handle

    def set_kernel_args(self, node: GraphNode, *args: Any) -> None:
        """Give the kernel node ``node`` new arguments (same kernel, same
        launch config) for the next launches (``cuGraphExecKernelNodeSetParams``);
        the graph itself is unchanged."""
        nh = self._node(node, ("kernel",), "set_kernel_args")
        params, keep = _kernel_node_params(node.kernel, node.config, args, node.graph._ctx_handle())
        h = self.handle
        with self._in_context():
            _d.cuGraphExecKernelNodeSetParams(h, nh, params)
        del keep

    def launch_with(self, stream: Any, node: GraphNode, *args: Any) -> None:
        """Give the kernel node ``node`` new arguments and launch the graph
        on ``stream``: :meth:`set_kernel_args` and :meth:`launch` in one
        call, for a graph replayed with new inputs each time.

        For a kernel with a parameter signature the node's parameter
        buffers are made once and kept: a call packs the arguments into
        them and makes the two driver calls, nothing else.
        """
        kernel = node.kernel if node.__class__ is GraphNode else None
        if kernel is None or kernel._params is None or kernel._h is None:
            # not a kernel node, a kernel without a signature or unloaded: the general way
            nh = self._node(node, ("kernel",), "launch_with")
            params, keep = _kernel_node_params(node.kernel, node.config, args, node.graph._ctx_handle())
            h, s = self.handle, stream_handle(stream)
            with self._in_context():
                _d.cuGraphExecKernelNodeSetParams(h, nh, params)
                _d.cuGraphLaunch(h, s)
            del keep
            return
        nh = node._h
        entry = self._fast.pop(nh, None)  # taken while in use: a concurrent call makes its own
        if entry is None:
            self._node(node, ("kernel",), "launch_with")
            entry = _NodeParams(node)
        h, s = self.handle, stream_handle(stream)
        if len(args) != entry.layout.nparams:
            raise TypeError("kernel %r takes %d arguments, %d given" % (kernel.name, entry.layout.nparams, len(args)))
        entry.layout.pack(entry.packet, args, kernel)
        ctx = self._ctx
        if ctx is None or ctx._h is None or _d.cuCtxGetCurrent() == ctx._h:
            # the graph's context is current (the usual case): no push and pop around the calls
            _d.cuGraphExecKernelNodeSetParams(h, nh, entry.address)
            _d.cuGraphLaunch(h, s)
        else:
            with ctx._pushed():
                _d.cuGraphExecKernelNodeSetParams(h, nh, entry.address)
                _d.cuGraphLaunch(h, s)
        self._fast[nh] = entry

    def set_enabled(self, node: GraphNode, enabled: bool) -> None:
        """Switch a kernel, memset or memcpy node off (it then does nothing
        at launch) or on again (``cuGraphNodeSetEnabled``)."""
        nh = self._node(node, _SWITCHABLE, "set_enabled")
        h = self.handle
        with self._in_context():
            _d.cuGraphNodeSetEnabled(h, nh, 1 if enabled else 0)

    def is_enabled(self, node: GraphNode) -> bool:
        """Whether a kernel, memset or memcpy node runs at launch (``cuGraphNodeGetEnabled``)."""
        nh = self._node(node, _SWITCHABLE, "is_enabled")
        h = self.handle
        with self._in_context():
            return bool(_d.cuGraphNodeGetEnabled(h, nh))

    def _release(self, h: int) -> None:
        _d.cuGraphExecDestroy(h)

    def launch(self, stream: Any = None) -> None:
        """Queue the whole graph on ``stream``."""
        h, s = self.handle, stream_handle(stream)
        with self._in_context():
            _d.cuGraphLaunch(h, s)

    def upload(self, stream: Any = None) -> None:
        """Upload the graph's work to the device ahead of the first launch."""
        h, s = self.handle, stream_handle(stream)
        with self._in_context():
            _d.cuGraphUpload(h, s)

    def update(self, graph: Graph) -> None:
        """Update this executable graph in place to match ``graph`` (same topology).

        Raises :class:`cuabi.CUDAError` whose ``update_result`` names the
        ``CUgraphExecUpdateResult`` when the update is not possible.
        """
        if not isinstance(graph, Graph):
            raise TypeError("graph must be a cuabi.Graph")
        info = bytearray(_UPDATE_INFO.size)
        h, gh = self.handle, graph.handle
        self._keep.extend(graph._keep)
        try:
            with self._in_context():
                _d.cuGraphExecUpdate(h, gh, info)
        except CUDAError as exc:
            if exc.code != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE:
                raise  # another failure: the update result says nothing about it
            result = _UPDATE_INFO.unpack(info)[0]
            try:
                exc.update_result = _d.CUgraphExecUpdateResult(result)
            except ValueError:
                exc.update_result = result
            exc.args = (exc.args[0] + " (update result: %s)" % (exc.update_result,),)
            raise



_SWITCHABLE = ("kernel", "memset", "memcpy")


class _NodeParams:
    """A kernel node's CUDA_KERNEL_NODE_PARAMS with its parameter buffer,
    kept by :meth:`GraphExec.launch_with`: ``layout.pack(packet, args,
    kernel)`` writes new arguments, ``address`` is the struct's address."""

    __slots__ = ("layout", "packet", "address", "_keep")

    def __init__(self, node: GraphNode) -> None:
        from ._kernel_args import HEADER_SIZE, param_offsets, python_layout
        from ._launch_config import LaunchConfig

        config = node.config
        if config.__class__ is not LaunchConfig or config._ex:
            raise TypeError("a kernel node's config is a LaunchConfig without launch attributes")
        params, offsets = node.kernel._params, node.kernel._offsets
        self.layout = python_layout(params, offsets)
        b = backend()
        # the packet as a launch has it: a header (unused here), then the parameters
        self.packet = bytearray(self.layout.size)
        packet_addr, keep_p = b.buffer_address(self.packet)
        node_params, keep_a = _kernel_node_struct(node.kernel._h, config, packet_addr + HEADER_SIZE,
                                                  param_offsets(params, offsets), node.graph._ctx_handle())
        self.address, keep_k = b.buffer_address(node_params)
        self._keep = (keep_p, keep_a, keep_k, node_params)
