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
