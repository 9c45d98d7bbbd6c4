# SPDX-License-Identifier: Apache-2.0
"""Plain ctypes on libcuda.so.1: what a Python program with no binding at all does.

Entry points are looked up with the driver's cuGetProcAddress_v2 at the same
versions cuabi pins (so every contender calls the same driver functions) and
called as ctypes function pointers with argtypes set.  Output arguments and
kernel parameter arrays are made once and passed again and again, as a
careful ctypes user would."""

import os

from functools import cached_property

from common import ALLOC, BIG, GRAPH_NODES, KERNELS, SMALL, Op
from contenders import shared


def load():
    import ctypes
    return ctypes.CDLL(os.environ.get("CUABI_LIBCUDA") or "libcuda.so.1")


def version(lib):
    import ctypes
    v = ctypes.c_int()
    lib.cuDriverGetVersion(ctypes.byref(v))
    return f"ctypes {ctypes.__version__}, driver {v.value}"


def _ok(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} failed: CUresult {rc}")


def first_call(lib):
    import ctypes
    lib.cuInit.argtypes = [ctypes.c_uint]
    _ok(lib.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    _ok(_Driver(lib).cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")


def first_use(lib):
    import ctypes
    d = _Driver(lib)
    dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    _ok(d.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    _ok(d.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    _ok(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    _ok(d.cuMemAlloc(ctypes.byref(ptr), ALLOC), "cuMemAlloc")
    return ptr


def _entry_points(ctypes):
    """name -> (driver name, ABI version, argument types) of the entry points used."""
    from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p
    P, PP, PD = c_void_p, POINTER(c_void_p), POINTER(c_uint64)
    return {
        "cuDeviceGet": ("cuDeviceGet", 2000, (POINTER(c_int), c_int)),
        "cuDeviceGetAttribute": ("cuDeviceGetAttribute", 2000, (POINTER(c_int), c_int, c_int)),
        "cuDevicePrimaryCtxRetain": ("cuDevicePrimaryCtxRetain", 7000, (PP, c_int)),
        "cuCtxSetCurrent": ("cuCtxSetCurrent", 4000, (P,)),
        "cuCtxGetCurrent": ("cuCtxGetCurrent", 4000, (PP,)),
        "cuCtxSynchronize": ("cuCtxSynchronize", 2000, ()),
        "cuStreamCreate": ("cuStreamCreate", 2000, (PP, c_uint)),
        "cuStreamQuery": ("cuStreamQuery", 2000, (P,)),
        "cuEventCreate": ("cuEventCreate", 2000, (PP, c_uint)),
        "cuEventDestroy": ("cuEventDestroy", 4000, (P,)),
        "cuEventQuery": ("cuEventQuery", 2000, (P,)),
        "cuEventRecord": ("cuEventRecord", 2000, (P, P)),
        "cuModuleLoadData": ("cuModuleLoadData", 2000, (PP, c_char_p)),
        "cuModuleGetFunction": ("cuModuleGetFunction", 2000, (PP, P, c_char_p)),
        "cuLaunchKernel": ("cuLaunchKernel", 4000,
                           (P, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, P, P, P)),
        "cuStreamBeginCapture": ("cuStreamBeginCapture", 10010, (P, c_uint)),
        "cuStreamEndCapture": ("cuStreamEndCapture", 10000, (P, PP)),
        "cuGraphInstantiate": ("cuGraphInstantiateWithFlags", 11040, (PP, P, c_uint64)),
        "cuGraphLaunch": ("cuGraphLaunch", 10000, (P, P)),
        "cuGraphExecDestroy": ("cuGraphExecDestroy", 10000, (P,)),
        "cuMemAlloc": ("cuMemAlloc", 3020, (PD, c_size_t)),
        "cuMemHostAlloc": ("cuMemHostAlloc", 2020, (PP, c_size_t, c_uint)),
        "cuMemcpyHtoD": ("cuMemcpyHtoD", 3020, (c_uint64, P, c_size_t)),
        "cuMemcpyDtoH": ("cuMemcpyDtoH", 3020, (P, c_uint64, c_size_t)),
        "cuMemcpyDtoD": ("cuMemcpyDtoD", 3020, (c_uint64, c_uint64, c_size_t)),
        "cuMemAllocAsync": ("cuMemAllocAsync", 11020, (PD, c_size_t, P)),
        "cuMemFreeAsync": ("cuMemFreeAsync", 11020, (c_uint64, P)),
    }


class _Driver:
    """The entry points used, as ctypes function pointers with argtypes, each
    looked up on first use (attribute access) and kept."""

    def __init__(self, lib):
        import ctypes
        self._ct = ctypes
        self._table = _entry_points(ctypes)
        self._get = lib.cuGetProcAddress_v2
        self._get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                              ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]

    def __getattr__(self, name):
        ct = self._ct
        driver_name, abi_version, argtypes = self._table[name]
        fn, status = ct.c_void_p(), ct.c_int()
        rc = self._get(driver_name.encode(), ct.byref(fn), abi_version, 1, ct.byref(status))
        if rc != 0 or not fn.value:
            raise RuntimeError(f"cuGetProcAddress_v2({driver_name}) failed: {rc}/{status.value}")
        function = ct.CFUNCTYPE(ct.c_int, *argtypes)(fn.value)
        setattr(self, name, function)
        return function


def _event_create_destroy(out, event, create, destroy):
    create(out, 2)  # CU_EVENT_DISABLE_TIMING
    return destroy(event)


def _alloc_free(out, ptr, stream, alloc, free):
    alloc(out, ALLOC, stream)
    return free(ptr, stream)


def _instantiate_destroy(out, exec_, graph, instantiate, destroy):
    instantiate(out, graph, 0)
    return destroy(exec_)


class Bench(shared.CopyOps):
    def __init__(self, lib, ptx):
        import ctypes
        self.ct = ctypes
        self.d = d = _Driver(lib)
        byref = ctypes.byref
        self.dev, self.ctx = ctypes.c_int(), ctypes.c_void_p()
        _ok(d.cuDeviceGet(byref(self.dev), 0), "cuDeviceGet")
        _ok(d.cuDevicePrimaryCtxRetain(byref(self.ctx), self.dev), "cuDevicePrimaryCtxRetain")
        _ok(d.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.stream = ctypes.c_void_p()
        _ok(d.cuStreamCreate(byref(self.stream), 1), "cuStreamCreate")
        self.ptx = ptx
        self.device_buffers = {}
        self.host_buffers = {}
        self.args = shared.Prepacked(self._device(SMALL).value)

    @cached_property
    def kernels(self):
        byref = self.ct.byref
        self.module = self.ct.c_void_p()
        _ok(self.d.cuModuleLoadData(byref(self.module), self.ptx), "cuModuleLoadData")
        kernels = []
        for name in KERNELS:
            f = self.ct.c_void_p()
            _ok(self.d.cuModuleGetFunction(byref(f), self.module, name.encode()), name)
            kernels.append(f)
        return kernels

    def sync(self):
        _ok(self.d.cuCtxSynchronize(), "cuCtxSynchronize")

    def check(self, rc):
        _ok(rc, "the call")

    def op_ctx_get_current(self):
        self.ctx_out = self.ct.c_void_p()
        return Op(self.d.cuCtxGetCurrent, (self.ct.byref(self.ctx_out),),
                  "cuCtxGetCurrent(byref(ctx))")

    def op_device_get_attribute(self):
        self.attr_out = self.ct.c_int()
        return Op(self.d.cuDeviceGetAttribute, (self.ct.byref(self.attr_out), 16, self.dev),
                  "cuDeviceGetAttribute(byref(v), MULTIPROCESSOR_COUNT, dev)")

    def op_event_create_destroy(self):
        event = self.ct.c_void_p()
        return Op(_event_create_destroy,
                  (self.ct.byref(event), event, self.d.cuEventCreate, self.d.cuEventDestroy),
                  "cuEventCreate(byref(e), DISABLE_TIMING); cuEventDestroy(e)")

    def op_event_query(self):
        self.event = self.ct.c_void_p()
        _ok(self.d.cuEventCreate(self.ct.byref(self.event), 2), "cuEventCreate")
        _ok(self.d.cuEventRecord(self.event, self.stream), "cuEventRecord")
        self.sync()
        return Op(self.d.cuEventQuery, (self.event,), "cuEventQuery(e)")

    def op_stream_query(self):
        return Op(self.d.cuStreamQuery, (self.stream,), "cuStreamQuery(s)")

    def _launch(self, index):
        return Op(self.d.cuLaunchKernel,
                  (self.kernels[index], 1, 1, 1, 1, 1, 1, 0, self.stream,
                   self.args.addresses[index] or None, None),
                  "cuLaunchKernel(f, 1,1,1, 1,1,1, 0, s, prepacked void**, None)")

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
            graph = self.ct.c_void_p()
            _ok(d.cuStreamBeginCapture(self.stream, 1), "cuStreamBeginCapture")  # THREAD_LOCAL
            try:
                for _ in range(GRAPH_NODES):
                    _ok(d.cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, self.stream, None, None),
                        "cuLaunchKernel")
            finally:
                # ends the capture even after a failure
                rc = d.cuStreamEndCapture(self.stream, self.ct.byref(graph))
            _ok(rc, "cuStreamEndCapture")
            self.graph = graph
        return self.graph

    def op_graph_instantiate(self):
        exec_ = self.ct.c_void_p()
        return Op(_instantiate_destroy,
                  (self.ct.byref(exec_), exec_, self._graph(), self.d.cuGraphInstantiate,
                   self.d.cuGraphExecDestroy),
                  "cuGraphInstantiate(byref(g), graph, 0); cuGraphExecDestroy(g)")

    def op_graph_launch(self):
        self.graph_exec = self.ct.c_void_p()
        _ok(self.d.cuGraphInstantiate(self.ct.byref(self.graph_exec), self._graph(), 0),
            "cuGraphInstantiate")
        return Op(self.d.cuGraphLaunch, (self.graph_exec, self.stream), "cuGraphLaunch(g, s)")

    def _device(self, size, key=None):
        key = key or size
        if key not in self.device_buffers:
            ptr = self.ct.c_uint64()
            _ok(self.d.cuMemAlloc(self.ct.byref(ptr), size), "cuMemAlloc")
            self.device_buffers[key] = ptr
        return self.device_buffers[key]

    def _host(self, size, pinned):
        if (size, pinned) not in self.host_buffers:
            if pinned:
                ptr = self.ct.c_void_p()
                _ok(self.d.cuMemHostAlloc(self.ct.byref(ptr), size, 0), "cuMemHostAlloc")
                self.host_buffers[size, pinned] = ptr.value
            else:
                self.host_buffers[size, pinned] = shared.pageable(size)
        return shared.address(self.host_buffers[size, pinned])

    def _h2d(self, size, pinned):
        return Op(self.d.cuMemcpyHtoD, (self._device(size).value, self._host(size, pinned), size),
                  "cuMemcpyHtoD(dptr, host address, n)")

    def _d2h(self, size, pinned):
        return Op(self.d.cuMemcpyDtoH, (self._host(size, pinned), self._device(size).value, size),
                  "cuMemcpyDtoH(host address, dptr, n)")

    def op_d2d_256m(self):
        return Op(self.d.cuMemcpyDtoD,
                  (self._device(BIG, "d2d").value, self._device(BIG).value, BIG),
                  "cuMemcpyDtoD(dst, src, n)")

    def op_alloc_free_1m(self):
        ptr = self.ct.c_uint64()
        return Op(_alloc_free, (self.ct.byref(ptr), ptr, self.stream, self.d.cuMemAllocAsync,
                                self.d.cuMemFreeAsync),
                  "cuMemAllocAsync(byref(p), 1 MiB, s); cuMemFreeAsync(p, s)")
