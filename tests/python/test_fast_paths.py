"""The fast paths: kernel argument packing for every parameter code, and the
one-output getters.  Every backend runs these; with the compiled speedups
module (python/build_modules.py --compiled) they check that its C launcher and C
getters behave exactly like the Python ones.  ``CUABI_TEST_EXPECT_SPEEDUPS=1``
(set by ./test for that pass) makes sure the C versions are really in use."""

import os
import struct

import pytest

import cuabi
from cuabi.errors import ClosedError, CUDAError

from test_module_launch import PTX

EXPECT_SPEEDUPS = os.environ.get("CUABI_TEST_EXPECT_SPEEDUPS") == "1"


@pytest.fixture
def store(ctx):
    m = cuabi.Module.from_ptx(PTX)
    yield m
    m.close()


def _u64(fmt, value):
    raw = struct.pack("=" + fmt, value)
    return int.from_bytes(raw.ljust(8, b"\0"), "little")


# store_mixed(u8 a, f64 b, u16 c, i32 d, u64 *out) writes out = [a, bits(b), c, sext(d)];
# other codes of the same sizes reinterpret those slots, so each lands bit-exactly.
@pytest.mark.parametrize("codes, values", [
    ("BdHip", (200, -2.5, 65000, -7)),
    ("bqhIp", (-5, -(1 << 62), -300, 4_000_000_000)),
    ("?QeIp", (True, (1 << 64) - 1, 1.5, 0)),
    ("?pHfp", (0, 0xDEADBEEF, 7, 2.5)),
])
def test_every_parameter_code_packs_exactly(store, codes, values):
    k = store.get_kernel("store_mixed", codes)
    out = cuabi.DeviceBuffer(32)
    cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, *values, out)
    cuabi.Stream.legacy().sync()
    got = struct.unpack("4Q", out.to_bytes())
    a, b, c, d = values
    assert got[0] == _u64(codes[0], a) & 0xFF
    assert got[1] == _u64(codes[1] if codes[1] != "p" else "Q", b)
    assert got[2] == _u64(codes[2], c) & 0xFFFF
    d32 = struct.unpack("=i", struct.pack("=" + codes[3], d))[0]
    assert got[3] == d32 & 0xFFFFFFFFFFFFFFFF


def test_argument_errors_are_the_same_on_every_path(store):
    k = store.get_kernel("store_mixed", "BdHip")
    out = cuabi.DeviceBuffer(32)
    cfg = cuabi.LaunchConfig(1, 1)
    for bad in ((256, 1.0, 1, 1, out), (1, "x", 1, 1, out), (1, 1.0, -1, 1, out),
                (1, 1.0, 1, 2.5, out), (1, 1.0, 1, 1 << 31, out), (1, 1.0, 1, 1, -1)):
        with pytest.raises(TypeError, match="bad argument for kernel 'store_mixed'"):
            cuabi.launch(None, cfg, k, *bad)
    with pytest.raises(TypeError, match="pointer kernel argument"):
        cuabi.launch(None, cfg, k, 1, 1.0, 1, 1, object())
    with pytest.raises(TypeError, match="takes 5 arguments, 4 given"):
        cuabi.launch(None, cfg, k, 1, 1.0, 1, 1)
    with pytest.raises(TypeError, match="LaunchConfig"):
        cuabi.launch(None, (1, 1), k, 1, 1.0, 1, 1, out)
    with pytest.raises(TypeError, match="Kernel"):
        cuabi.launch(None, cfg, "store_mixed", 1)
    s = cuabi.Stream()
    s.close()
    with pytest.raises(ClosedError, match="Stream is closed"):
        cuabi.launch(s, cfg, k, 1, 1.0, 1, 1, out)
    # and the kernel still works, on an int stream handle and a foreign stream
    cuabi.launch(0, cfg, k, 1, 1.0, 1, 1, out)
    cuabi.launch(cuabi.Stream(), cfg, k, 1, 1.0, 1, 1, out)
    cuabi.Stream.legacy().sync()


def test_launch_needs_stream_config_and_kernel(store):
    with pytest.raises(TypeError):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1))


def _registered_contract():
    """The LaunchContract cuabi.launch handed the speedups module."""
    from cuabi import _launch

    assert _launch._chosen is not None
    return _launch._registered


def test_register_launch_refuses_a_name_that_is_no_slot():
    if not EXPECT_SPEEDUPS:
        pytest.skip("set CUABI_TEST_EXPECT_SPEEDUPS=1 when the speedups module is built")
    from cuabi import _cuabi_speedups as sp

    cuabi.launch  # noqa: B018 - registers the contract
    good = _registered_contract()
    with pytest.raises(TypeError, match="is not a __slots__ attribute"):
        sp.register_launch(good.replace(kernel_layout_slot="name_of_no_slot"))
    with pytest.raises(TypeError, match="is not a __slots__ attribute"):
        sp.register_launch(good.replace(memory_slot="size"))  # a property, not a slot
    with pytest.raises(TypeError, match="must be callable"):
        sp.register_launch(good.replace(device_pointer=None))
    with pytest.raises(TypeError, match="tuple of at most"):
        sp.register_launch(good.replace(memory_types=list(good.memory_types)))


def test_struct_arguments_must_have_their_exact_size(store):
    k = store.get_kernel("store_mixed", [(1, 1), (8, 8), "H", "i", "p"])
    out = cuabi.DeviceBuffer(32)
    cfg = cuabi.LaunchConfig(1, 1)
    for bad in (b"", b"\x01\x02", "a", 1):
        with pytest.raises(TypeError, match="struct's size"):
            cuabi.launch(None, cfg, k, bad, bytes(8), 1, 2, out)
    cuabi.launch(None, cfg, k, bytearray(b"\x09"), bytes(8), 1, 2, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("4Q", out.to_bytes())[0] == 9


class _MyBuffer(cuabi.DeviceBuffer):
    __slots__ = ()


@pytest.mark.parametrize("make, read", [
    (cuabi.DeviceBuffer, lambda b: b.to_bytes()),
    (cuabi.ManagedBuffer, lambda b: b.to_bytes()),
    (cuabi.PinnedBuffer, lambda b: b.tobytes()),
    (_MyBuffer, lambda b: b.to_bytes()),
    (lambda n: cuabi.DeviceBuffer(n).view("u8"), lambda v: v.to_bytes()),
])
def test_memory_arguments_of_every_kind(store, make, read):
    # cuabi's own memory classes are read directly by the compiled launch;
    # a subclass and an array view go through the Python helper: same result
    k = store.get_kernel("store_mixed", "BdHip")
    out = make(32)
    cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, 7, 1.0, 2, 3, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("4Q", read(out)) == (7, _u64("d", 1.0), 2, 3)


@pytest.mark.parametrize("make", [cuabi.DeviceBuffer, cuabi.ManagedBuffer, cuabi.PinnedBuffer,
                                  _MyBuffer])
def test_closed_memory_argument_raises(store, make):
    k = store.get_kernel("store_mixed", "BdHip")
    out = make(32)
    out.close()
    with pytest.raises(ClosedError, match="is closed"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, 7, 1.0, 2, 3, out)


def test_launch_after_module_unload_raises(ctx):
    m = cuabi.Module.from_ptx(PTX)
    k = m.get_kernel("empty", "")
    m.close()
    with pytest.raises(ClosedError, match="'empty' is closed"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k)


def test_config_switching_and_cooperative_path(store):
    k = store.get_kernel("launch_info", "p")
    out = cuabi.DeviceBuffer(28)
    configs = [cuabi.LaunchConfig(grid=(2, 1, 1), block=4), cuabi.LaunchConfig(grid=3, block=(8, 2), shmem=64)]
    for cfg in configs + configs:
        cuabi.launch(None, cfg, k, out)
        cuabi.Stream.legacy().sync()
        assert struct.unpack("7I", out.to_bytes()) == cfg.grid + cfg.block + (cfg.shmem,)


def test_one_output_getters(ctx):
    d = cuabi.driver
    assert d.cuCtxGetCurrent() == ctx.handle
    n = d.cuDeviceGetCount()
    assert d.cuDeviceGet(ordinal=0) == d.cuDeviceGet(0) == 0
    attr = int(d.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    assert d.cuDeviceGetAttribute(attr, 0) == d.cuDeviceGetAttribute(dev=0, attrib=attr) > 0
    s = cuabi.Stream()
    assert d.cuStreamGetPriority(s) == d.cuStreamGetPriority(s.handle)  # object or handle
    with pytest.raises(CUDAError) as info:
        d.cuDeviceGet(n + 5)
    assert info.value.code == 101  # CUDA_ERROR_INVALID_DEVICE
    with pytest.raises(TypeError):
        d.cuDeviceGet("0")
    with pytest.raises(TypeError):
        d.cuDeviceGet(0.0)
    with pytest.raises(OverflowError):
        d.cuDeviceGet(1 << 40)
    with pytest.raises(OverflowError):
        d.cuDeviceGetAttribute(-1, 0)
    with pytest.raises(TypeError):
        d.cuDeviceGet()
    with pytest.raises(TypeError):
        d.cuDeviceGet(0, 1)
    with pytest.raises(TypeError):
        d.cuDeviceGet(nope=0)
    with pytest.raises(TypeError):
        d.cuCtxGetCurrent(1)
    assert d.cuDeviceGet.__doc__.splitlines()[0].startswith("cuDeviceGet(ordinal)")


def test_speedups_in_use_where_built():
    if not EXPECT_SPEEDUPS:
        pytest.skip("set CUABI_TEST_EXPECT_SPEEDUPS=1 when the speedups module is built")
    import inspect

    assert cuabi.backend_name() == "cffi-compiled"
    f = cuabi.driver.cuDeviceGetAttribute
    assert type(f).__name__ == "builtin_function_or_method"
    assert str(inspect.signature(f)) == "(attrib, dev)"
    assert "Calls the driver's cuDeviceGetAttribute" in f.__doc__
    assert type(cuabi.launch).__name__ == "builtin_function_or_method"


@pytest.mark.skipif(not hasattr(__import__("sys"), "getrefcount"), reason="needs reference counts")
def test_no_reference_leaks(store):
    import sys

    s = cuabi.Stream()
    cfg = cuabi.LaunchConfig(1, 1)
    k = store.get_kernel("store_mixed", "BdHip")
    out = cuabi.DeviceBuffer(32)

    def work():
        cuabi.driver.cuStreamGetPriority(s)
        cuabi.launch(s, cfg, k, 1, 1.0, 1, 1, out)
        cuabi.launch(s, cfg, k, 1, 1.0, 1, 1, out.ptr)
        with pytest.raises(TypeError):
            cuabi.launch(s, cfg, k, 1, "x", 1, 1, out)
        with pytest.raises(OverflowError):
            cuabi.driver.cuDeviceGetAttribute(-1, 0)

    work()  # warm-up: caches (a launcher keeps its last config) are filled once
    objs = (s, cfg, k, out)
    before = [sys.getrefcount(x) for x in objs]
    for _ in range(1000):
        work()
    s.sync()
    assert [sys.getrefcount(x) for x in objs] == before
