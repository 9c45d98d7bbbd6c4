# SPDX-License-Identifier: Apache-2.0
"""CuPy: its low-level layer (cupy.cuda.runtime / driver, Module/Function).

CuPy calls the CUDA runtime for most things, so its trivial calls are the
runtime's equivalents (cudaDeviceGetAttribute, cudaEventCreateWithFlags...).
Kernel arguments are NumPy scalars of the kernel's parameter types, which is
what cupy's Function.__call__ expects."""

from functools import cached_property

from common import ALLOC, BIG, GRAPH_NODES, KERNELS, SMALL, Op
from contenders import shared

# cudaMemcpyKind and flags of the CUDA runtime
H2D, D2H, D2D = 1, 2, 3
EVENT_DISABLE_TIMING = 2
ATTR_MULTIPROCESSOR_COUNT = 16


def load():
    import cupy
    return cupy


def version(cupy):
    return cupy.__version__


def first_call(cupy):
    cupy.cuda.runtime.getDeviceCount()


def first_use(cupy):
    cupy.cuda.Device(0).use()
    return cupy.empty(ALLOC, dtype=cupy.uint8)


def _event_create_destroy(flags, create, destroy):
    destroy(create(flags))


def _alloc_free(size, stream, alloc, free):
    free(alloc(size, stream), stream)


class Bench:
    NO_EQUIVALENT = {
        "graph_instantiate": "CuPy instantiates inside Stream.end_capture(); no separate step",
    }

    def __init__(self, cupy, ptx):
        import numpy
        self.cp, self.np = cupy, numpy
        self.rt = cupy.cuda.runtime
        cupy.cuda.Device(0).use()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.ptx = ptx
        self.memory = {}

    @cached_property
    def kernels(self):
        self.module = self.cp.cuda.function.Module()
        self.module.load(self.ptx)
        return [self.module.get_function(name) for name in KERNELS]

    def sync(self):
        self.rt.deviceSynchronize()

    def check(self, result):
        pass  # cupy raises on failure

    def op_ctx_get_current(self):
        return Op(self.cp.cuda.driver.ctxGetCurrent, (), "cupy.cuda.driver.ctxGetCurrent()")

    def op_device_get_attribute(self):
        return Op(self.rt.deviceGetAttribute, (ATTR_MULTIPROCESSOR_COUNT, 0),
                  "runtime.deviceGetAttribute(cudaDevAttrMultiProcessorCount, 0)")

    def op_event_create_destroy(self):
        return Op(_event_create_destroy,
                  (EVENT_DISABLE_TIMING, self.rt.eventCreateWithFlags, self.rt.eventDestroy),
                  "runtime.eventDestroy(runtime.eventCreateWithFlags(cudaEventDisableTiming))")

    def op_event_query(self):
        self.event = self.rt.eventCreateWithFlags(EVENT_DISABLE_TIMING)
        self.rt.eventRecord(self.event, self.stream.ptr)
        self.sync()
        return Op(self.rt.eventQuery, (self.event,), "runtime.eventQuery(event)")

    def op_stream_query(self):
        return Op(self.rt.streamQuery, (self.stream.ptr,), "runtime.streamQuery(stream.ptr)")

    def _launch(self, index):
        np = self.np
        kinds = {"u64": np.uint64, "u32": np.uint32, "f32": np.float32}
        args = [()] + [tuple(kinds[k](v) for k, v in values)
                       for values in shared.kernel_values(self._device(SMALL))]
        return Op(self.kernels[index], ((1,), (1,), args[index], 0, self.stream),
                  "Function((1,), (1,), numpy scalars, 0, stream)")

    def op_launch_0(self):
        return self._launch(0)

    def op_launch_3(self):
        return self._launch(1)

    def op_launch_16(self):
        return self._launch(2)

    def op_graph_launch(self):
        kernel = self.kernels[0]
        self.stream.begin_capture()
        try:
            for _ in range(GRAPH_NODES):
                kernel((1,), (1,), (), 0, self.stream)
        finally:
            graph = self.stream.end_capture()  # ends the capture even after a failure
        self.graph = graph
        return Op(self.graph.launch, (self.stream,), "graph.launch(stream)")

    def _device(self, size, key=None):
        key = key or size
        if key not in self.memory:
            self.memory[key] = self.cp.cuda.alloc(size)
        return self.memory[key].ptr

    def _host(self, size, pinned):
        key = (size, pinned)
        if key not in self.memory:
            self.memory[key] = (self.cp.cuda.alloc_pinned_memory(size) if pinned
                                else shared.pageable(size))
        host = self.memory[key]
        return host.ptr if pinned else shared.address(host)

    def _copy(self, size, pinned, kind):
        dev, host = self._device(size), self._host(size, pinned)
        dst, src = (dev, host) if kind == H2D else (host, dev)
        return Op(self.rt.memcpy, (dst, src, size, kind), "runtime.memcpy(dst, src, n, kind)")

    def op_h2d_4k_pinned(self):
        return self._copy(SMALL, True, H2D)

    def op_h2d_4k_pageable(self):
        return self._copy(SMALL, False, H2D)

    def op_d2h_4k_pinned(self):
        return self._copy(SMALL, True, D2H)

    def op_d2h_4k_pageable(self):
        return self._copy(SMALL, False, D2H)

    def op_h2d_256m_pinned(self):
        return self._copy(BIG, True, H2D)

    def op_h2d_256m_pageable(self):
        return self._copy(BIG, False, H2D)

    def op_d2h_256m_pinned(self):
        return self._copy(BIG, True, D2H)

    def op_d2h_256m_pageable(self):
        return self._copy(BIG, False, D2H)

    def op_d2d_256m(self):
        return Op(self.rt.memcpy, (self._device(BIG, "d2d"), self._device(BIG), BIG, D2D),
                  "runtime.memcpy(dst, src, n, cudaMemcpyDeviceToDevice)")

    def op_alloc_free_1m(self):
        return Op(_alloc_free, (ALLOC, self.stream.ptr, self.rt.mallocAsync, self.rt.freeAsync),
                  "runtime.freeAsync(runtime.mallocAsync(1 MiB, stream.ptr), stream.ptr)")
