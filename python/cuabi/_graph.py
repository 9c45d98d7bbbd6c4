# SPDX-License-Identifier: Apache-2.0
"""CUDA graphs: stream capture, instantiation, launch and update."""

from __future__ import annotations

import struct
from typing import Any, Optional, Sequence

from . import driver as _d
from ._constants import (CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_RELAXED,
                         CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
from ._device import current_context
from ._interrupts import cleanup, deferred
from ._resource import NotCopyable, Resource
from ._stream import Stream, stream_handle
from ._structs import FORMATS
from .errors import CUDAError

_MODES = {"global": CU_STREAM_CAPTURE_MODE_GLOBAL, "thread_local": CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
          "relaxed": CU_STREAM_CAPTURE_MODE_RELAXED}
# fields: result, errorNode, errorFromNode
_UPDATE_INFO = struct.Struct(FORMATS["CUgraphExecUpdateResultInfo"])


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


class Graph(Resource):
    """A CUDA graph.  ``Graph()`` is empty; :meth:`capture` records one from
    the work queued on a stream."""

    __slots__ = ()

    def __init__(self, device: Any = None) -> None:
        Resource.__init__(self)
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
        self._h = h
        (ctx if ctx is not None and ctx._h is not None else current_context())._adopt(self)
        return self

    def _release(self, h: int) -> None:
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

    def instantiate(self, flags: int = 0) -> "GraphExec":
        """An executable graph (``cuGraphInstantiate``)."""
        return GraphExec(self, flags)


class GraphExec(Resource):
    """An executable graph: :meth:`launch` it on a stream, :meth:`update` it."""

    __slots__ = ()

    def __init__(self, graph: Graph, flags: int = 0):
        Resource.__init__(self)
        if not isinstance(graph, Graph):
            raise TypeError("graph must be a cuabi.Graph")
        ctx = graph._ctx or current_context()
        gh = graph.handle
        with deferred(), ctx._pushed():
            self._h = _d.cuGraphInstantiate(gh, flags)
            ctx._adopt(self)

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

