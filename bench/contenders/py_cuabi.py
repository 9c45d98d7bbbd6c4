# SPDX-License-Identifier: Apache-2.0
"""cuabi, the package under test, on the backend CUABI_PY_BACKEND chooses.

Trivial calls, copies and stream-ordered memory go through cuabi.driver (the
layer the issue's target names, and the one that matches cuda.bindings);
launches go through the Pythonic Kernel/launch fast path, with a parameter
signature set once on the kernel; graphs through Graph's stream capture and
Graph/GraphExec, and new arguments for a graph through GraphExec.launch_with."""

from functools import cached_property

from common import ALLOC, BIG, GRAPH_NODES, KERNELS, SMALL, Op
from contenders import shared


def load():
    import cuabi
    return cuabi


def ready(cuabi):
    """`import cuabi` loads nothing; this loads the backend and libcuabi."""
    cuabi.backend_name()
    cuabi.driver.cuInit


def version(cuabi):
    return f"{cuabi.__version__} ({cuabi.backend_name()} backend)"


def first_call(cuabi):
    cuabi.driver.cuInit(0)
    cuabi.driver.cuDeviceGet(0)


def first_use(cuabi):
    dev = cuabi.Device(0)
    dev.set_current()
    return cuabi.DeviceBuffer(ALLOC)


def _event_create_destroy(flags, create, destroy):
    destroy(create(flags))


def _alloc_free(size, stream, alloc, free):
    free(alloc(size, stream), stream)


def _instantiate_close(instantiate):
    instantiate().close()


# parameter signatures of the kernels in bench/kernels.ptx, in cuabi's letters
SIGNATURES = {"u64": "p", "u32": "I", "f32": "f"}


class Bench(shared.CopyOps):
    def __init__(self, cuabi, ptx):
        self.cuabi = cuabi
        self.d = cuabi.driver
        self.dev = cuabi.Device(0)
        self.dev.set_current()
        self.stream = cuabi.Stream(self.dev)
        self.s = self.stream.handle
        self.ptx = ptx
        self.dev_small = self.d.cuMemAlloc(SMALL)
        values = shared.kernel_values(self.dev_small)
        self.kernel_args = [()] + [tuple(v for _, v in vals) for vals in values]
        self.signatures = [""] + ["".join(SIGNATURES[k] for k, _ in vals) for vals in values]
        self.config = cuabi.LaunchConfig(grid=1, block=1)
        self.device_buffers = {SMALL: self.dev_small}
        self.host_buffers = {}

    @cached_property
    def kernels(self):
        self.module = self.cuabi.Module.from_ptx(self.ptx)
        return [self.module.get_kernel(name, params=sig)
                for name, sig in zip(KERNELS, self.signatures)]

    def sync(self):
        self.d.cuCtxSynchronize()

    def check(self, result):
        pass  # cuabi raises on failure

    def op_ctx_get_current(self):
        return Op(self.d.cuCtxGetCurrent, (), "driver.cuCtxGetCurrent()")

    def op_device_get_attribute(self):
        attr = int(self.d.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        return Op(self.d.cuDeviceGetAttribute, (attr, self.dev.handle),
                  "driver.cuDeviceGetAttribute(attr, dev)")

    def op_event_create_destroy(self):
        return Op(_event_create_destroy, (2, self.d.cuEventCreate, self.d.cuEventDestroy),
                  "driver.cuEventDestroy(driver.cuEventCreate(DISABLE_TIMING))")

    def op_event_query(self):
        self.event = self.d.cuEventCreate(2)
        self.d.cuEventRecord(self.event, self.s)
        self.sync()
        return Op(self.d.cuEventQuery, (self.event,), "driver.cuEventQuery(event)")

    def op_stream_query(self):
        return Op(self.d.cuStreamQuery, (self.s,), "driver.cuStreamQuery(stream)")

    def _launch(self, index):
        return Op(self.cuabi.launch,
                  (self.stream, self.config, self.kernels[index]) + self.kernel_args[index],
                  "launch(stream, LaunchConfig(grid=1, block=1), kernel, *ints/floats)")

    def op_launch_0(self):
        return self._launch(0)

    def op_launch_3(self):
        return self._launch(1)

    def op_launch_16(self):
        return self._launch(2)

    def _graph(self):
        if not hasattr(self, "graph"):
            kernel = self.kernels[0]
            self.cuabi.Graph.begin_capture(self.stream, "thread_local")
            try:
                for _ in range(GRAPH_NODES):
                    self.cuabi.launch(self.stream, self.config, kernel)
            finally:
                graph = self.cuabi.Graph.end_capture(self.stream)  # ends it even after a failure
            self.graph = graph
        return self.graph

    def op_graph_instantiate(self):
        return Op(_instantiate_close, (self._graph().instantiate,), "graph.instantiate().close()")

    def op_graph_launch(self):
        self.graph_exec = self._graph().instantiate()
        return Op(self.graph_exec.launch, (self.stream,), "graph_exec.launch(stream)")

    def op_graph_new_args(self):
        # one kernel node, added explicitly; launch_with sets its arguments and
        # launches in one call (cuGraphExecKernelNodeSetParams + cuGraphLaunch)
        graph = self.cuabi.Graph()
        node = graph.add_kernel(self.kernels[1], self.config, *self.kernel_args[1])
        self.args_exec = graph.instantiate()
        return Op(self.args_exec.launch_with, (self.stream, node) + self.kernel_args[1],
                  "graph_exec.launch_with(stream, node, *ints/floats)")

    def _device(self, size, key=None):
        key = key or size
        if key not in self.device_buffers:
            self.device_buffers[key] = self.d.cuMemAlloc(size)
        return self.device_buffers[key]

    def _host(self, size, pinned):
        if (size, pinned) not in self.host_buffers:
            self.host_buffers[size, pinned] = (self.d.cuMemHostAlloc(size, 0) if pinned
                                               else shared.pageable(size))
        return shared.address(self.host_buffers[size, pinned])

    def _h2d(self, size, pinned):
        return Op(self.d.cuMemcpyHtoD, (self._device(size), self._host(size, pinned), size),
                  "driver.cuMemcpyHtoD(dptr, host address, n)")

    def _d2h(self, size, pinned):
        return Op(self.d.cuMemcpyDtoH, (self._host(size, pinned), self._device(size), size),
                  "driver.cuMemcpyDtoH(host address, dptr, n)")

    def op_d2d_256m(self):
        return Op(self.d.cuMemcpyDtoD, (self._device(BIG, "d2d"), self._device(BIG), BIG),
                  "driver.cuMemcpyDtoD(dst, src, n)")

    def op_alloc_free_1m(self):
        return Op(_alloc_free, (ALLOC, self.s, self.d.cuMemAllocAsync, self.d.cuMemFreeAsync),
                  "driver.cuMemFreeAsync(driver.cuMemAllocAsync(1 MiB, stream), stream)")
