# SPDX-License-Identifier: Apache-2.0
"""cuda.bindings: NVIDIA's generated bindings of the driver API (Cython).

Every call returns a tuple whose first item is the CUresult.  Kernel arguments
are passed prepacked: the address of a void*[] built once (the fastest way
cuda.bindings offers), and host buffers as integer addresses."""

from functools import cached_property

from common import ALLOC, BIG, GRAPH_NODES, KERNELS, SMALL, Op
from contenders import shared


def load():
    from cuda.bindings import driver
    return driver


def version(driver):
    import cuda.bindings
    return getattr(cuda.bindings, "__version__", "?")


def _ok(result, what):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err!r}")
    return result[1] if isinstance(result, tuple) and len(result) == 2 else result


def first_call(driver):
    _ok(driver.cuInit(0), "cuInit")
    _ok(driver.cuDeviceGet(0), "cuDeviceGet")


def first_use(driver):
    dev = _ok(driver.cuDeviceGet(0), "cuDeviceGet")
    ctx = _ok(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    _ok(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return _ok(driver.cuMemAlloc(ALLOC), "cuMemAlloc")


def _event_create_destroy(flags, create, destroy):
    return destroy(create(flags)[1])


def _alloc_free(size, stream, alloc, free):
    return free(alloc(size, stream)[1], stream)


class Bench(shared.CopyOps):
    def __init__(self, driver, ptx):
        self.d = d = driver
        self.dev = _ok(d.cuDeviceGet(0), "cuDeviceGet")
        _ok(d.cuCtxSetCurrent(_ok(d.cuDevicePrimaryCtxRetain(self.dev), "retain")), "set")
        self.stream = _ok(d.cuStreamCreate(1), "cuStreamCreate")  # CU_STREAM_NON_BLOCKING
        self.ptx = ptx
        self.dev_small = _ok(d.cuMemAlloc(SMALL), "cuMemAlloc")
        self.args = shared.Prepacked(int(self.dev_small))

    @cached_property
    def kernels(self):
        self.module = _ok(self.d.cuModuleLoadData(self.ptx + b"\0"), "cuModuleLoadData")
        return [_ok(self.d.cuModuleGetFunction(self.module, name.encode()), name)
                for name in KERNELS]

    def sync(self):
        _ok(self.d.cuCtxSynchronize(), "cuCtxSynchronize")

    def check(self, result):
        _ok(result, "the call")

    def op_ctx_get_current(self):
        return Op(self.d.cuCtxGetCurrent, (), "driver.cuCtxGetCurrent()")

    def op_device_get_attribute(self):
        attr = self.d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        return Op(self.d.cuDeviceGetAttribute, (attr, self.dev),
                  "driver.cuDeviceGetAttribute(attr, dev)")

    def op_event_create_destroy(self):
        return Op(_event_create_destroy, (2, self.d.cuEventCreate, self.d.cuEventDestroy),
                  "driver.cuEventDestroy(driver.cuEventCreate(DISABLE_TIMING)[1])")

    def op_event_query(self):
        event = _ok(self.d.cuEventCreate(2), "cuEventCreate")
        _ok(self.d.cuEventRecord(event, self.stream), "cuEventRecord")
        self.sync()
        self.keep_event = event
        return Op(self.d.cuEventQuery, (event,), "driver.cuEventQuery(event)")

    def op_stream_query(self):
        return Op(self.d.cuStreamQuery, (self.stream,), "driver.cuStreamQuery(stream)")

    def _launch(self, index):
        params = self.args.addresses[index]
        return Op(self.d.cuLaunchKernel,
                  (self.kernels[index], 1, 1, 1, 1, 1, 1, 0, self.stream, params, 0),
                  "driver.cuLaunchKernel(f, 1,1,1, 1,1,1, 0, stream, prepacked void**, 0)")

    def op_launch_0(self):
        return self._launch(0)

    def op_launch_3(self):
        return self._launch(1)

    def op_launch_16(self):
        return self._launch(2)

    def _graph(self):
        if not hasattr(self, "graph"):
            d = self.d
            kernel = self.kernels[0]
            mode = d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
            _ok(d.cuStreamBeginCapture(self.stream, mode), "cuStreamBeginCapture")
            try:
                for _ in range(GRAPH_NODES):
                    _ok(d.cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, self.stream, 0, 0),
                        "cuLaunchKernel")
            finally:
                graph = d.cuStreamEndCapture(self.stream)  # ends the capture even after a failure
            self.graph = _ok(graph, "cuStreamEndCapture")
        return self.graph

    def op_graph_instantiate(self):
        def instantiate_destroy(graph, inst=self.d.cuGraphInstantiate,
                                destroy=self.d.cuGraphExecDestroy):
            return destroy(inst(graph, 0)[1])
        return Op(instantiate_destroy, (self._graph(),),
                  "driver.cuGraphExecDestroy(driver.cuGraphInstantiate(graph, 0)[1])")

    def op_graph_launch(self):
        self.graph_exec = _ok(self.d.cuGraphInstantiate(self._graph(), 0), "cuGraphInstantiate")
        return Op(self.d.cuGraphLaunch, (self.graph_exec, self.stream),
                  "driver.cuGraphLaunch(exec, stream)")

    # Copies: synchronous driver copies; host memory by integer address.
    def _device(self, size):
        cache = self.__dict__.setdefault("device_buffers", {SMALL: self.dev_small})
        if size not in cache:
            cache[size] = _ok(self.d.cuMemAlloc(size), "cuMemAlloc")
        return cache[size]

    def _host(self, size, pinned):
        cache = self.__dict__.setdefault("host_buffers", {})
        if (size, pinned) not in cache:
            cache[size, pinned] = (_ok(self.d.cuMemHostAlloc(size, 0), "cuMemHostAlloc")
                                   if pinned else shared.pageable(size))
        return shared.address(cache[size, pinned])

    def _h2d(self, size, pinned):
        return Op(self.d.cuMemcpyHtoD, (self._device(size), self._host(size, pinned), size),
                  "driver.cuMemcpyHtoD(dptr, host address, n)")

    def _d2h(self, size, pinned):
        return Op(self.d.cuMemcpyDtoH, (self._host(size, pinned), self._device(size), size),
                  "driver.cuMemcpyDtoH(host address, dptr, n)")

    def op_d2d_256m(self):
        self.d2d_dst = _ok(self.d.cuMemAlloc(BIG), "cuMemAlloc")
        return Op(self.d.cuMemcpyDtoD, (self.d2d_dst, self._device(BIG), BIG),
                  "driver.cuMemcpyDtoD(dst, src, n)")

    def op_alloc_free_1m(self):
        return Op(_alloc_free, (ALLOC, self.stream, self.d.cuMemAllocAsync, self.d.cuMemFreeAsync),
                  "driver.cuMemFreeAsync(driver.cuMemAllocAsync(1 MiB, stream)[1], stream)")
