# SPDX-License-Identifier: Apache-2.0
"""Tests for a real GPU (CUABI_TEST_REAL_GPU=1): NVRTC-compiled kernels, a real
graph, and interop with PyTorch and CuPy where they are installed."""

import struct

import pytest

import cuabi

pytestmark = pytest.mark.gpu

SRC = r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void add_one(float *p, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1.0f;
}
'''


@pytest.fixture(scope="module")
def kernels():
    dev = cuabi.Device(0)
    ctx = dev.set_current()
    obj = cuabi.Program(SRC).compile()  # the device's own architecture
    mod = obj.load()
    cubin = cuabi.Program(SRC).compile(target="cubin").load()
    yield mod, cubin
    ctx.close()


def test_real_device_properties():
    """A real device has a plausible compute capability and memory; the driver is a libcuda."""
    dev = cuabi.Device(0)
    assert dev.compute_capability >= (5, 0)
    assert dev.total_memory > (1 << 30)
    assert cuabi.driver_path() and "libcuda" in cuabi.driver_path()


@pytest.mark.parametrize("which", [0, 1], ids=["ptx", "cubin"])
def test_saxpy_on_gpu(kernels, which):
    """NVRTC-compiled SAXPY (PTX and cubin) computes the right result on the GPU."""
    k = kernels[which].get_kernel("saxpy", "fppi")
    n = 1 << 20
    x = cuabi.DeviceBuffer(4 * n)
    y = cuabi.DeviceBuffer(4 * n)
    x.copy_from(struct.pack("%df" % n, *range(n)))
    y.fill(0x3F800000, width=4)  # 1.0f
    s = cuabi.Stream()
    cuabi.launch(s, cuabi.LaunchConfig((n + 255) // 256, 256), k, 0.5, x, y, n)
    s.sync()
    out = struct.unpack("%df" % n, y.to_bytes())
    assert out[0] == 1.0 and out[1000] == 501.0 and out[-1] == 0.5 * (n - 1) + 1.0


def test_inferred_params_on_gpu(kernels):
    """A kernel without a signature launches with parameters from cuFuncGetParamInfo."""
    k = kernels[0].get_kernel("saxpy")
    assert [size for _off, size in k.param_info()] == [4, 8, 8, 4]
    b = cuabi.DeviceBuffer(16)
    b.fill(0, width=4)
    cuabi.launch(None, cuabi.LaunchConfig(1, 4), k, 2.0, b, b, 4)
    cuabi.Stream.legacy().sync()


def test_graph_on_gpu(kernels):
    """A captured graph replays real kernels on the GPU."""
    k = kernels[0].get_kernel("add_one", "pq")
    n = 4096
    b = cuabi.DeviceBuffer(4 * n)
    b.fill(0, width=4)
    s = cuabi.Stream()
    with cuabi.Graph.capture(s) as cap:
        for _ in range(10):
            cuabi.launch(s, cuabi.LaunchConfig(n // 256, 256), k, b, n)
    ge = cap.graph.instantiate()
    ge.launch(s)
    ge.launch(s)
    s.sync()
    assert set(struct.unpack("%df" % n, b.to_bytes())) == {20.0}


def test_events_time_real_work(kernels):
    """Events around real work measure a positive time."""
    k = kernels[0].get_kernel("add_one", "pq")
    n = 1 << 22
    b = cuabi.DeviceBuffer(4 * n)
    s = cuabi.Stream()
    start = s.record(cuabi.Event(timing=True))
    for _ in range(20):
        cuabi.launch(s, cuabi.LaunchConfig(n // 256, 256), k, b, n)
    end = s.record(cuabi.Event(timing=True))
    end.sync()
    assert end - start > 0.0


def test_pinned_async_copy_and_pool_on_gpu():
    """Async copies from pinned memory and pool allocations work on the GPU."""
    cuabi.Device(0).set_current()
    s = cuabi.Stream()
    p = cuabi.PinnedBuffer(1 << 20)
    p.memoryview()[:] = b"\x42" * (1 << 20)
    pool = cuabi.MemoryPool.default()
    d = pool.allocate(1 << 20, s)
    d.copy_from(p, stream=s)
    q = cuabi.PinnedBuffer(1 << 20)
    d.copy_to(q, stream=s)
    s.sync()
    assert q.to_bytes() == p.to_bytes()
    d.close()


def test_torch_interop(kernels):
    """Memory goes to PyTorch and back through DLPack and __cuda_array_interface__."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    cuabi.Device(0).set_current()
    k = kernels[0].get_kernel("add_one", "pq")
    # a torch tensor used by a cuabi kernel, on torch's current stream
    t = torch.arange(1024, dtype=torch.float32, device="cuda")
    ts = torch.cuda.current_stream()
    cuabi.launch(ts.cuda_stream, cuabi.LaunchConfig(4, 256), k, t, t.numel())
    ts.synchronize()
    assert torch.equal(t.cpu(), torch.arange(1024, dtype=torch.float32) + 1)
    # a cuabi buffer seen by torch through DLPack, computed on both sides
    b = cuabi.DeviceBuffer(4 * 1024)
    b.copy_from(struct.pack("1024f", *range(1024)))
    tt = torch.from_dlpack(b.view("f4"))
    tt.mul_(2)
    torch.cuda.synchronize()
    assert struct.unpack("1024f", b.to_bytes())[5] == 10.0
    # and back: a torch tensor imported into cuabi through DLPack
    arr = cuabi.from_dlpack(t)
    assert arr.ptr == t.data_ptr() and arr.shape == (1024,)
    cuabi.launch(None, cuabi.LaunchConfig(4, 256), k, arr, 1024)
    torch.cuda.synchronize()
    assert float(t[0]) == 2.0
    arr.close()


def test_cupy_interop(kernels):
    """Memory goes to CuPy and back through DLPack and __cuda_array_interface__."""
    cp = pytest.importorskip("cupy")
    cuabi.Device(0).set_current()
    k = kernels[0].get_kernel("add_one", "pq")
    a = cp.arange(512, dtype=cp.float32)
    arr = cuabi.from_cuda_array_interface(a)
    cuabi.launch(None, cuabi.LaunchConfig(2, 256), k, arr, 512)
    cp.cuda.runtime.deviceSynchronize()
    assert float(a[3]) == 4.0
    b = cuabi.DeviceBuffer(4 * 512)
    b.copy_from(struct.pack("512f", *([1.0] * 512)))
    c = cp.asarray(b.view("f4"))  # consumes __cuda_array_interface__
    c += 1
    cp.cuda.runtime.deviceSynchronize()
    assert struct.unpack("512f", b.to_bytes())[0] == 2.0
    d = cp.from_dlpack(b.view("f4"))
    assert float(d.sum()) == 1024.0


def test_peer_access_on_gpus():
    """Peer access between the first two GPUs, where they have a peer path (one GPU: skipped)."""
    if cuabi.Device.count() < 2:
        pytest.skip("needs two GPUs (one GPU shows only the device-itself path, tested elsewhere)")
    a, b = cuabi.Device(0), cuabi.Device(1)
    if not a.can_access_peer(b):
        with pytest.raises(ValueError, match="cannot reach"):
            a.enable_peer_access(b)
        return
    a.enable_peer_access(b)
    a.enable_peer_access(b)  # a second time is a no-op
    a.disable_peer_access(b)


SHARED_SRC = r'''
extern "C" __global__ void reverse_in_shared(const int *in, int *out, int n)
{
    extern __shared__ int tile[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = in[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[n - 1 - i];
}
'''


def test_more_than_48k_dynamic_shared_memory_on_gpu():
    """A kernel uses 100 KiB of dynamic shared memory once max_dynamic_shared_size_bytes allows it."""
    ctx = cuabi.Device(0).set_current()
    try:
        k = cuabi.Program(SHARED_SRC).compile().load().get_kernel("reverse_in_shared", "ppi")
        n = 100 * 1024 // 4
        src, dst = cuabi.DeviceBuffer(4 * n), cuabi.DeviceBuffer(4 * n)
        src.copy_from(struct.pack("%di" % n, *range(n)))
        cfg = cuabi.LaunchConfig(1, 256, shmem=4 * n)
        with pytest.raises(cuabi.CUDAError):
            cuabi.launch(None, cfg, k, src, dst, n)
        k.max_dynamic_shared_size_bytes = 4 * n
        cuabi.launch(None, cfg, k, src, dst, n)
        cuabi.Stream.legacy().sync()
        assert struct.unpack("%di" % n, dst.to_bytes()) == tuple(range(n - 1, -1, -1))
        assert k.max_active_blocks_per_multiprocessor(256, 4 * n) >= 1
        assert k.available_dynamic_shared_memory_per_block(1, 256) >= 4 * n
    finally:
        ctx.close()


PDL_SRC = r'''
extern "C" __global__ void produce(int *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = 2 * i;
    __syncthreads();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
extern "C" __global__ void consume(const int *data, int *out, int n)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = data[i] + 1;
}
'''


def test_programmatic_dependent_launch_on_gpu():
    """A PDL launch (programmatic=True) after its producer reads the producer's results once it waits."""
    dev = cuabi.Device(0)
    if dev.compute_capability < (9, 0):
        pytest.skip("programmatic dependent launch needs compute capability 9.0")
    ctx = dev.set_current()
    try:
        mod = cuabi.Program(PDL_SRC).compile().load()
        produce, consume = mod.get_kernel("produce", "pi"), mod.get_kernel("consume", "ppi")
        n = 1 << 16
        data, out = cuabi.DeviceBuffer(4 * n), cuabi.DeviceBuffer(4 * n)
        s = cuabi.Stream()
        for _ in range(3):
            out.fill(0)
            cuabi.launch(s, cuabi.LaunchConfig(n // 256, 256), produce, data, n)
            cuabi.launch(s, cuabi.LaunchConfig(n // 256, 256, programmatic=True, priority=0), consume, data, out, n)
            s.sync()
            got = struct.unpack("%di" % n, out.to_bytes())
            assert got[0] == 1 and got[12345] == 2 * 12345 + 1 and got[-1] == 2 * (n - 1) + 1
    finally:
        ctx.close()


# -- the library families on the GPU (issue 14): NVRTC + nvJitLink LTO, NVML.
# Needs NVRTC and nvJitLink 13 (the toolkit, or `pip install nvidia-cuda-nvrtc
# nvidia-nvjitlink cuda-pathfinder` for the CUDA 13 wheels) and the driver's NVML.

TWICE = r'''extern "C" __device__ float twice(float x) { return 2.0f * x; }'''
TWICE_PLUS_ONE = r'''
extern "C" __device__ float twice(float x);
extern "C" __global__ void twice_plus_one(float *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = twice(p[i]) + 1.0f;
}
'''


def test_ltoir_linked_loaded_and_launched():
    """Two units compiled to LTO IR, linked with nvJitLink (-lto), load as a Module and compute right."""
    dev = cuabi.Device(0)
    ctx = dev.set_current()
    try:
        a = cuabi.Program(TWICE, name="twice.cu").compile(["-rdc=true"], target="ltoir")
        b = cuabi.Program(TWICE_PLUS_ONE, name="kernel.cu").compile(["-rdc=true"], target="ltoir")
        assert a.arch == b.arch == dev.arch
        linker = cuabi.Linker(a, b)
        assert linker.link_options()[:2] == ["-arch=%s" % dev.arch, "-lto"]
        cubin = linker.link()
        assert cubin.kind == "cubin" and cubin.code[:4] == b"\x7fELF"
        k = cubin.load().get_kernel("twice_plus_one", "pi")
        n = 1 << 16
        buf = cuabi.DeviceBuffer(4 * n)
        buf.copy_from(struct.pack("%df" % n, *range(n)))
        s = cuabi.Stream()
        cuabi.launch(s, cuabi.LaunchConfig((n + 255) // 256, 256), k, buf, n)
        s.sync()
        out = struct.unpack("%df" % n, buf.to_bytes())
        assert out[0] == 1.0 and out[1000] == 2001.0 and out[-1] == 2.0 * (n - 1) + 1.0
    finally:
        ctx.close()


def test_linker_reports_an_undefined_function():
    """Linking a call to an undefined device function raises NVJitLinkError with the log naming it."""
    dev = cuabi.Device(0)
    b = cuabi.Program(TWICE_PLUS_ONE, name="kernel.cu").compile(["-rdc=true"], target="ltoir", arch=dev.arch)
    with pytest.raises(cuabi.NVJitLinkError) as ei:
        cuabi.Linker(b).link()
    assert ei.value.code and ei.value.log and "twice" in ei.value.log


def test_nvml_sees_this_gpu():
    """cuabi.system finds the CUDA device by UUID with the same name and memory, and plausible readings."""
    from cuabi import system

    dev = cuabi.Device(0)
    ctx = dev.set_current()
    try:
        keep = cuabi.DeviceBuffer(64 << 20)  # this process now uses the GPU
        assert system.device_count() >= 1
        major, minor = system.cuda_driver_version()
        v = cuabi.driver_version()
        assert (major, minor) == (v // 1000, v % 1000 // 10)
        version = system.driver_version()
        assert version[:1].isdigit() and "." in version
        by_uuid = {g.uuid: g for g in system.gpus()}
        gpu = by_uuid["GPU-%s" % dev.uuid]
        assert gpu.name == dev.name
        mem = gpu.memory
        # NVML's total and the driver's may differ by what the firmware keeps: a few percent
        assert abs(mem.total - dev.total_memory) <= 0.05 * dev.total_memory
        assert 0 < mem.used <= mem.total and 0 <= mem.free <= mem.total
        assert mem.used + mem.free + mem.reserved <= 1.01 * mem.total
        util = gpu.utilization
        assert 0 <= util.gpu <= 100 and 0 <= util.memory <= 100
        assert 0 < gpu.temperature < 120
        assert 0 < gpu.power_usage <= gpu.power_limit * 1.5 and gpu.power_limit > 10
        procs = gpu.processes
        assert all(isinstance(p, system.Process) for p in procs)
        import os

        mine = [p for p in procs if p.pid == os.getpid()]
        # in a container NVML may list this process under the host's pid: then not found here
        for p in mine:
            assert p.kind == "compute" and (p.used_memory is None or p.used_memory >= 64 << 20)
        snap = system.snapshot()
        assert snap["gpus"][gpu.index]["uuid"] == gpu.uuid
        keep.close()
    finally:
        ctx.close()
