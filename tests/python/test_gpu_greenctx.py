# SPDX-License-Identifier: Apache-2.0
"""Green contexts and tensor maps on a real GPU (CUABI_TEST_REAL_GPU=1; the
H200 of the validation runs: compute capability 9.0, driver 580, NVRTC):
SM partitions that kernels really stay in, and TMA descriptors that the
driver encodes and a kernel receives by value and uses."""

import struct

import pytest

import cuabi

pytestmark = pytest.mark.gpu

WHERE_SRC = r'''
extern "C" __global__ void where(unsigned *smid, unsigned *ran, long long spin)
{
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    long long start = clock64();
    while (clock64() - start < spin) { }
    if (threadIdx.x == 0) {
        smid[blockIdx.x] = id;
        ran[blockIdx.x] = blockIdx.x + 1;
    }
}
'''

# A CUtensorMap as a kernel sees it (NVRTC has no cuda.h): 128 bytes, 64-byte aligned.
MAP_SRC = r'''
struct alignas(64) TensorMap { unsigned long long q[16]; };

__device__ unsigned shared_address(const void *p)
{
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (unsigned)a;
}

extern "C" __global__ void read_map(unsigned long long *out, const __grid_constant__ TensorMap map, int n)
{
    if (threadIdx.x < n) out[threadIdx.x] = map.q[threadIdx.x];
}

extern "C" __global__ void tma_tile(const __grid_constant__ TensorMap map, float *out, int x, int y)
{
    __shared__ alignas(128) float tile[16 * 16];
    __shared__ alignas(8) unsigned long long bar;
    unsigned bar_s = shared_address(&bar);
    unsigned tile_s = shared_address(tile);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_s) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar_s), "r"(16 * 16 * 4) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(tile_s), "l"((unsigned long long)&map), "r"(x), "r"(y), "r"(bar_s) : "memory");
    }
    asm volatile("{\n\t.reg .pred done;\n"
                 "WAIT_TILE:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
                 "@!done bra WAIT_TILE;\n}" :: "r"(bar_s) : "memory");
    for (int i = threadIdx.x; i < 16 * 16; i += blockDim.x)
        out[i] = tile[i];
}
'''


@pytest.fixture
def primary():
    ctx = cuabi.Device(0).set_current()
    yield ctx
    ctx.close()


def test_sm_resource_matches_the_device_and_splits(primary):
    """The device's SM resource has all its SMs; a split gives equal disjoint groups honouring the minimum."""
    dev = cuabi.Device(0)
    r = cuabi.sm_resource(dev)
    assert r.sm_count == dev.multiprocessor_count
    assert r.min_partition_size >= 1 and r.coscheduled_alignment >= 1
    groups, rest = r.split(min_sms=16)
    assert len(groups) >= 2
    sizes = {g.sm_count for g in groups}
    assert len(sizes) == 1 and sizes.pop() >= 16
    assert sum(g.sm_count for g in groups) + rest.sm_count <= r.sm_count
    assert all(g.sm_count % r.coscheduled_alignment == 0 for g in groups)
    with pytest.raises(ValueError, match="does not split again"):
        groups[0].split()


def test_kernel_on_a_green_context_stays_on_its_sms(primary):
    """1024 busy blocks: in a 16-SM green context they all run, on at most its SMs; in the primary context on more."""
    (group,), _rest = cuabi.sm_resource(0).split(1, min_sms=16)
    obj = cuabi.Program(WHERE_SRC).compile()
    nblocks, spin = 1024, 20000
    g = cuabi.GreenContext(group)
    try:
        assert g.sm_count == group.sm_count >= 16
        s = g.create_stream()
        with g:
            k = obj.load().get_kernel("where", "ppq")
            smid = cuabi.DeviceBuffer(4 * nblocks)
            ran = cuabi.DeviceBuffer(4 * nblocks)
            ran.fill(0, width=4)
            cuabi.launch(s, cuabi.LaunchConfig(nblocks, 64), k, smid, ran, spin)
        done = g.record()
        s.sync()
        done.sync()
        assert struct.unpack("%dI" % nblocks, ran.to_bytes()) == tuple(range(1, nblocks + 1))
        green_sms = set(struct.unpack("%dI" % nblocks, smid.to_bytes()))
        assert 1 <= len(green_sms) <= g.sm_count
    finally:
        g.close()
    assert s.closed and smid.closed

    k = obj.load().get_kernel("where", "ppq")
    smid = cuabi.DeviceBuffer(4 * nblocks)
    ran = cuabi.DeviceBuffer(4 * nblocks)
    ps = cuabi.Stream()
    cuabi.launch(ps, cuabi.LaunchConfig(nblocks, 64), k, smid, ran, spin)
    ps.sync()
    all_sms = set(struct.unpack("%dI" % nblocks, smid.to_bytes()))
    assert len(all_sms) > len(green_sms)


def test_green_context_events_order_work_across_contexts(primary):
    """Work of a green context recorded in an event is waited for by a primary-context stream, and the reverse."""
    (group,), _rest = cuabi.sm_resource(0).split(1, min_sms=8)
    with cuabi.GreenContext(group) as g:  # current for the block
        gs = g.create_stream()
        buf = cuabi.DeviceBuffer(4 * 1024)
        buf.fill(0x01010101, width=4, stream=gs)
        ev = g.record()
    ps = cuabi.Stream(device=0)
    ps.wait(ev)
    out = cuabi.DeviceBuffer(4 * 1024)
    cuabi.copy(out, buf, stream=ps)
    ps.sync()
    assert out.to_bytes() == b"\x01" * 4096
    mark = ps.record()
    g.wait(mark)
    g.sync()
    g.close()
    assert gs.closed and buf.closed


def test_tensor_map_of_a_real_buffer_encodes_and_reaches_a_kernel_by_value(primary):
    """The driver encodes a map of a real buffer; a kernel taking it after a pointer reads the same 128 bytes."""
    buf = cuabi.DeviceBuffer(4 * 64 * 64)
    t = cuabi.TensorMap(buf.view("<f4", (64, 64)), (16, 16), swizzle="64B", l2_promotion="128B")
    assert len(t.data) == 128 and t.data != bytes(128)
    k = cuabi.Program(MAP_SRC).compile().load().get_kernel("read_map", ["p", cuabi.TensorMap.PARAM, "i"])
    out = cuabi.DeviceBuffer(8 * 16)
    s = cuabi.Stream()
    cuabi.launch(s, cuabi.LaunchConfig(1, 32), k, out, t.data, 16)
    s.sync()
    assert out.to_bytes() == t.data
    # a box beyond cuda.h's rules is refused in Python, before the driver
    with pytest.raises(ValueError, match="1..256"):
        cuabi.TensorMap(buf.view("<f4", (64, 64)), (16, 512))


def test_im2col_map_of_a_real_buffer_encodes(primary):
    """The driver encodes an im2col map of an NHWC half-precision buffer (a 3x3 convolution's window)."""
    buf = cuabi.DeviceBuffer(2 * 2 * 16 * 16 * 64)
    t = cuabi.TensorMap.im2col(buf.view("<f2", (2, 16, 16, 64)), lower_corner=(-1, -1), upper_corner=(-1, -1),
                               channels_per_pixel=64, pixels_per_column=128, swizzle="128B")
    assert t.mode == "im2col" and len(t.data) == 128 and t.data != bytes(128)


def test_tma_copies_a_tile_into_shared_memory(primary):
    """cp.async.bulk.tensor with the map loads the 16x16 tile at row 32, column 16 of a 64x64 array."""
    n = 64
    buf = cuabi.DeviceBuffer(4 * n * n)
    buf.copy_from(struct.pack("%df" % (n * n), *range(n * n)))
    t = cuabi.TensorMap(cuabi.StridedMemoryView(buf.view("<f4", (n, n))), (16, 16))
    k = cuabi.Program(MAP_SRC).compile().load().get_kernel("tma_tile", [cuabi.TensorMap.PARAM, "p", "i", "i"])
    out = cuabi.DeviceBuffer(4 * 16 * 16)
    s = cuabi.Stream()
    cuabi.launch(s, cuabi.LaunchConfig(1, 128), k, t.data, out, 16, 32)  # x (column) first, then y (row)
    s.sync()
    got = struct.unpack("256f", out.to_bytes())
    want = tuple(float((32 + r) * n + 16 + c) for r in range(16) for c in range(16))
    assert got == want
