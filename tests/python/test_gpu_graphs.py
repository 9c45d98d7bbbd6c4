# SPDX-License-Identifier: Apache-2.0
"""Explicit graphs on a real GPU (CUABI_TEST_REAL_GPU=1): kernel, memset,
memcpy, host and conditional nodes, per-node update, launch_with.

The while loop needs device code calling cudaGraphSetConditional, which lives
in the toolkit's libcudadevrt.a: compiled with -rdc to LTO IR and linked with
nvJitLink.  The other tests need NVRTC only."""

import struct
import sys
import threading

import pytest

from conftest import cudadevrt_path

import cuabi

pytestmark = pytest.mark.gpu

SRC = r'''
extern "C" __global__ void add_u32(unsigned *p, unsigned v, unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}
'''

LOOP_SRC = r'''
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);

// One round of a loop: ++*counter, and go on while *counter < limit.
extern "C" __global__ void count_to(cudaGraphConditionalHandle handle, unsigned *counter, unsigned limit)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        unsigned c = *counter + 1;
        *counter = c;
        cudaGraphSetConditional(handle, c < limit ? 1u : 0u);
    }
}
'''

N = 1 << 12
CFG = cuabi.LaunchConfig(grid=N // 256, block=256)


@pytest.fixture(scope="module")
def ctx():
    c = cuabi.Device(0).set_current()
    yield c
    c.close()


@pytest.fixture(scope="module")
def add_u32(ctx):
    return cuabi.Program(SRC).compile().load().get_kernel("add_u32", "pIQ")


def words(buf, n=N):
    return struct.unpack("%dI" % n, buf.to_bytes()[:4 * n])


def test_memset_kernel_memcpy_chain(add_u32):
    """memset 7 -> add 5 -> copy to a second buffer: both hold 12."""
    a, b = cuabi.DeviceBuffer(4 * N), cuabi.DeviceBuffer(4 * N)
    b.fill(0, width=4)
    g = cuabi.Graph()
    ms = g.add_memset(a, 7, N, element_size=4)
    k = g.add_kernel(add_u32, CFG, a, 5, N, after=ms)
    g.add_memcpy(b, a, 4 * N, after=k)
    s = cuabi.Stream()
    g.instantiate().launch(s)
    s.sync()
    assert words(a) == (12,) * N and words(b) == (12,) * N


def test_host_callback_runs_after_the_kernel(add_u32):
    """A host node after a kernel sees its result in pinned memory, off the launching thread; a raise is reported."""
    pinned = cuabi.PinnedBuffer(4 * N)
    view = pinned.memoryview()  # taken now: a host node must not call CUDA
    view[:] = bytes(4 * N)
    seen = []
    reported = []

    def check():
        seen.append((threading.get_ident(), struct.unpack_from("4I", view, 0)))

    def boom():
        raise ValueError("from the host node")

    g = cuabi.Graph()
    k = g.add_kernel(add_u32, CFG, pinned, 3, N)
    h = g.add_host(check, after=k)
    g.add_host(boom, after=h)
    ge = g.instantiate()
    s = cuabi.Stream()
    old = sys.unraisablehook
    sys.unraisablehook = reported.append
    try:
        ge.launch(s)
        s.sync()
    finally:
        sys.unraisablehook = old
    assert len(seen) == 1 and seen[0][1] == (3, 3, 3, 3)
    assert seen[0][0] != threading.get_ident()
    assert len(reported) == 1 and isinstance(reported[0].exc_value, ValueError)
    ge.close()
    g.close()
    view.release()  # the pinned memory can be freed again


def test_kernel_node_update_and_enable(add_u32):
    """set_kernel_args and launch_with change what one node adds; a disabled node adds nothing."""
    a = cuabi.DeviceBuffer(4 * N)
    g = cuabi.Graph()
    ms = g.add_memset(a, 0, N, element_size=4)
    k = g.add_kernel(add_u32, CFG, a, 1, N, after=ms)
    k2 = g.add_kernel(add_u32, CFG, a, 100, N, after=k)
    ge = g.instantiate()
    s = cuabi.Stream()
    ge.launch(s)
    s.sync()
    assert words(a) == (101,) * N
    ge.set_kernel_args(k, a, 20, N)
    ge.launch(s)
    s.sync()
    assert words(a) == (120,) * N
    ge.set_enabled(k2, False)
    assert not ge.is_enabled(k2)
    ge.launch_with(s, k, a, 33, N)
    s.sync()
    assert words(a) == (33,) * N


def test_if_and_switch_on_default_values(add_u32):
    """Conditionals whose value is the handle's default: the right body runs."""
    a = cuabi.DeviceBuffer(4 * N)
    s = cuabi.Stream()
    for value, want in ((1, 10), (0, 20)):
        g = cuabi.Graph()
        ms = g.add_memset(a, 0, N, element_size=4)
        node = g.add_if(g.conditional(default=value), with_else=True, after=ms)
        node.bodies[0].add_kernel(add_u32, CFG, a, 10, N)
        node.bodies[1].add_kernel(add_u32, CFG, a, 20, N)
        g.instantiate().launch(s)
        s.sync()
        assert words(a) == (want,) * N
    g = cuabi.Graph()
    ms = g.add_memset(a, 0, N, element_size=4)
    sw = g.add_switch(g.conditional(default=2), 3, after=ms)
    for i, body in enumerate(sw.bodies):
        body.add_kernel(add_u32, CFG, a, 1 << i, N)
    g.instantiate().launch(s)
    s.sync()
    assert words(a) == (4,) * N


def test_while_loop_counts_on_the_device(ctx, add_u32):
    """A while node whose body kernel counts to 10 and clears the condition there."""
    devrt = cudadevrt_path()
    if devrt is None:
        pytest.skip("libcudadevrt.a not found (set CUABI_TEST_CUDADEVRT)")
    obj = cuabi.Program(LOOP_SRC, name="loop.cu").compile(["-rdc=true"], target="ltoir")
    count_to = cuabi.Linker(obj).add_file(devrt).link().load().get_kernel("count_to", "QpI")
    counter = cuabi.DeviceBuffer(4)
    g = cuabi.Graph()
    reset = g.add_memset(counter, 0, 1, element_size=4)
    cond = g.conditional(default=1)
    loop = g.add_while(cond, after=reset)
    loop.body.add_kernel(count_to, cuabi.LaunchConfig(), cond, counter, 10)
    ge = g.instantiate()
    s = cuabi.Stream()
    for _ in range(2):  # the default is given again at every launch
        ge.launch(s)
        s.sync()
        assert words(counter, 1) == (10,)
