# SPDX-License-Identifier: Apache-2.0
"""cuda.core: NVIDIA's Pythonic layer over cuda.bindings.

Uses its own objects (Device, Stream, Event, ObjectCode/Kernel, launch,
GraphBuilder, Buffer and memory resources); older releases keep them in
cuda.core.experimental, which is used when cuda.core has no Device."""

from functools import cached_property

from common import ALLOC, BIG, GRAPH_NODES, KERNELS, SMALL, Op
from contenders import shared


def load():
    import cuda.core as core
    if not hasattr(core, "Device"):
        import cuda.core.experimental as core
    return core


def version(core):
    import cuda.core
    return getattr(cuda.core, "__version__", "?")


def first_call(core):
    core.Device(0).compute_capability


def first_use(core):
    dev = core.Device(0)
    dev.set_current()
    return dev.allocate(ALLOC, stream=dev.default_stream)


def _event_create_destroy(create):
    create().close()


def _alloc_free(size, stream, allocate):
    allocate(size, stream=stream).close(stream)


def _copy_and_wait(dst, src, stream):
    dst.copy_from(src, stream=stream)
    stream.sync()


class Bench:
    NO_EQUIVALENT = {
        "ctx_get_current": "cuda.core exposes no call that reads the current context",
        "device_get_attribute": "Device.properties caches each attribute after its first read",
        "stream_query": "cuda.core's Stream has no query",
    }

    def __init__(self, core, ptx):
        import numpy
        self.core, self.np = core, numpy
        self.dev = core.Device(0)
        self.dev.set_current()
        self.stream = self.dev.create_stream()
        self.ptx = ptx
        self.config = core.LaunchConfig(grid=1, block=1)
        self.buffers = {}

    @cached_property
    def kernels(self):
        code = self.core.ObjectCode.from_ptx(self.ptx)
        return [code.get_kernel(name) for name in KERNELS]

    def sync(self):
        self.stream.sync()  # every operation here runs on this one stream

    def check(self, result):
        pass  # cuda.core raises on failure

    def op_event_create_destroy(self):
        return Op(_event_create_destroy, (self.dev.create_event,),
                  "dev.create_event().close()")

    def op_event_query(self):
        self.event = self.stream.record()
        self.sync()
        from operator import attrgetter
        return Op(attrgetter("is_done"), (self.event,), "event.is_done")

    def _launch(self, index):
        np = self.np
        kinds = {"u64": np.uint64, "u32": np.uint32, "f32": np.float32}
        args = [()] + [tuple(kinds[k](v) for k, v in values)
                       for values in shared.kernel_values(int(self._device(SMALL).handle))]
        return Op(self.core.launch, (self.stream, self.config, self.kernels[index]) + args[index],
                  "launch(stream, LaunchConfig(grid=1, block=1), kernel, *numpy scalars)")

    def op_launch_0(self):
        return self._launch(0)

    def op_launch_3(self):
        return self._launch(1)

    def op_launch_16(self):
        return self._launch(2)

    def _builder(self):
        if not hasattr(self, "builder"):
            kernel = self.kernels[0]
            builder = self.stream.create_graph_builder()
            builder.begin_building()
            try:
                for _ in range(GRAPH_NODES):
                    self.core.launch(builder, self.config, kernel)
            finally:
                builder.end_building()  # ends the capture even after a failure
            self.builder = builder
        return self.builder

    def op_graph_instantiate(self):
        def complete_close(complete=self._builder().complete):
            complete().close()
        return Op(complete_close, (), "builder.complete().close()")

    def op_graph_launch(self):
        self.graph = self._builder().complete()
        return Op(self.graph.launch, (self.stream,), "graph.launch(stream)")

    def op_graph_new_args(self):
        # cuda.core changes an instantiated graph's arguments by building the
        # graph again and updating the executable graph from it
        np, core, stream, config = self.np, self.core, self.stream, self.config
        kinds = {"u64": np.uint64, "u32": np.uint32, "f32": np.float32}
        kernel = self.kernels[1]
        args = tuple(kinds[k](v) for k, v in shared.kernel_values(int(self._device(SMALL).handle))[0])

        def build():
            builder = stream.create_graph_builder()
            builder.begin_building()
            try:
                core.launch(builder, config, kernel, *args)
            finally:
                builder.end_building()
            return builder

        self.args_graph = build().complete()

        def update_launch(graph=self.args_graph):
            graph.update(build())
            graph.launch(stream)
        return Op(update_launch, (), "graph.update(rebuilt builder); graph.launch(stream)")

    def _device(self, size, key=None):
        key = key or size
        if key not in self.buffers:
            self.buffers[key] = self.dev.allocate(size, stream=self.stream)
            self.stream.sync()
        return self.buffers[key]

    def _pinned(self, size):
        key = (size, "pinned")
        if key not in self.buffers:
            self.buffers[key] = self.core.LegacyPinnedMemoryResource().allocate(size)
        return self.buffers[key]

    def _copy(self, dst, src):
        return Op(_copy_and_wait, (dst, src, self.stream),
                  "dst.copy_from(src, stream=s); s.sync()")

    def op_h2d_4k_pinned(self):
        return self._copy(self._device(SMALL), self._pinned(SMALL))

    def op_d2h_4k_pinned(self):
        return self._copy(self._pinned(SMALL), self._device(SMALL))

    def op_h2d_256m_pinned(self):
        return self._copy(self._device(BIG), self._pinned(BIG))

    def op_d2h_256m_pinned(self):
        return self._copy(self._pinned(BIG), self._device(BIG))

    def op_d2d_256m(self):
        return self._copy(self._device(BIG, "d2d"), self._device(BIG))

    def op_alloc_free_1m(self):
        return Op(_alloc_free, (ALLOC, self.stream, self.dev.memory_resource.allocate),
                  "dev.memory_resource.allocate(1 MiB, stream).close(stream)")


for _name in ("h2d_4k_pageable", "d2h_4k_pageable", "h2d_256m_pageable", "d2h_256m_pageable"):
    Bench.NO_EQUIVALENT[_name] = ("cuda.core copies only between its Buffers "
                                  "(no pageable host memory)")
