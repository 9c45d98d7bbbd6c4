# SPDX-License-Identifier: Apache-2.0
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
    """Each parameter code's value reaches the kernel bit-exactly."""
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


# float16 values around every rounding case: ties to even, the largest finite
# value and what rounds to it, subnormals and what rounds into the normals.
HALVES = [0.0, -0.0, 1.0, -1.5, 65504.0, 65519.0, -65519.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25,
          2.0 ** -14, 2.0 ** -14 - 2.0 ** -25, 2.0 ** -14 - 2.0 ** -26, 1 + 2.0 ** -11,
          1 + 3 * 2.0 ** -11, 1e-10, 0.1, 3.14159, float("inf"), float("-inf"), float("nan")]


def test_float16_packs_like_struct(store):
    """Code e packs each value as struct.pack("e") does (the compiled launch has its own conversion)."""
    k = store.get_kernel("store_mixed", "?QeIp")
    out = cuabi.DeviceBuffer(32)
    for v in HALVES:
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, True, 0, v, 0, out)
        cuabi.Stream.legacy().sync()
        got = struct.unpack("4Q", out.to_bytes())[2] & 0xFFFF
        assert got == struct.unpack("=H", struct.pack("=e", v))[0], (v, hex(got))


@pytest.mark.parametrize("value", [65520.0, -1e300])
def test_float16_out_of_range_names_the_kernel(store, value):
    """A finite value too large for float16 raises TypeError naming the kernel."""
    k = store.get_kernel("store_mixed", "?QeIp")
    with pytest.raises(TypeError, match="bad argument for kernel 'store_mixed'"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, True, 0, value, 0, cuabi.DeviceBuffer(32))


@pytest.mark.parametrize("bad", [
    (256, 1.0, 1, 1), (1, "x", 1, 1), (1, 1.0, -1, 1), (1, 1.0, 1, 2.5), (1, 1.0, 1, 1 << 31)])
def test_bad_scalar_argument_names_the_kernel(store, bad):
    """A scalar argument of the wrong type or out of range raises TypeError naming the kernel."""
    k = store.get_kernel("store_mixed", "BdHip")
    with pytest.raises(TypeError, match="bad argument for kernel 'store_mixed'"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, *bad, cuabi.DeviceBuffer(32))


def test_negative_pointer_argument_names_the_kernel(store):
    """A negative int for a pointer parameter raises TypeError naming the kernel."""
    k = store.get_kernel("store_mixed", "BdHip")
    with pytest.raises(TypeError, match="bad argument for kernel 'store_mixed'"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, 1, 1.0, 1, 1, -1)


def test_pointer_argument_must_be_memory(store):
    """An object that is not memory (or an int) for a pointer parameter raises TypeError."""
    k = store.get_kernel("store_mixed", "BdHip")
    with pytest.raises(TypeError, match="pointer kernel argument"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, 1, 1.0, 1, 1, object())


def test_argument_count_is_checked(store):
    """Too few arguments raise TypeError with both counts."""
    k = store.get_kernel("store_mixed", "BdHip")
    with pytest.raises(TypeError, match="takes 5 arguments, 4 given"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, 1, 1.0, 1, 1)


def test_config_must_be_a_launch_config(store):
    """A tuple is no LaunchConfig."""
    k = store.get_kernel("store_mixed", "BdHip")
    with pytest.raises(TypeError, match="LaunchConfig"):
        cuabi.launch(None, (1, 1), k, 1, 1.0, 1, 1, cuabi.DeviceBuffer(32))


def test_kernel_must_be_a_kernel(store):
    """A kernel's name is no Kernel."""
    with pytest.raises(TypeError, match="Kernel"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), "store_mixed", 1)


def test_closed_stream_refuses_a_launch(store):
    """Launching on a closed Stream raises ClosedError."""
    k = store.get_kernel("store_mixed", "BdHip")
    s = cuabi.Stream()
    s.close()
    with pytest.raises(ClosedError, match="Stream is closed"):
        cuabi.launch(s, cuabi.LaunchConfig(1, 1), k, 1, 1.0, 1, 1, cuabi.DeviceBuffer(32))


def test_kernel_works_after_argument_errors(store):
    """After refused launches a kernel still launches, on an int handle and on a Stream."""
    k = store.get_kernel("store_mixed", "BdHip")
    out = cuabi.DeviceBuffer(32)
    cfg = cuabi.LaunchConfig(1, 1)
    with pytest.raises(TypeError):
        cuabi.launch(None, cfg, k, 1, "x", 1, 1, out)
    cuabi.launch(0, cfg, k, 1, 1.0, 1, 1, out)
    cuabi.launch(cuabi.Stream(), cfg, k, 1, 1.0, 1, 1, out)
    cuabi.Stream.legacy().sync()


def test_launch_needs_stream_config_and_kernel(store):
    """launch() with fewer than three arguments raises TypeError."""
    with pytest.raises(TypeError):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1))


def _registered_contract():
    """The LaunchContract cuabi.launch handed the speedups module."""
    from cuabi import _launch

    cuabi.launch  # noqa: B018 - chooses the launch, registering the contract
    assert _launch._registered is not None
    return _launch._registered


@pytest.mark.parametrize("change, message", [
    (dict(kernel_layout_slot="name_of_no_slot"), "is not a __slots__ attribute"),
    (dict(memory_slot="size"), "is not a __slots__ attribute"),  # a property, not a slot
    (dict(device_pointer=None), "must be callable"),
    (dict(memory_types=[cuabi.DeviceBuffer]), "tuple of at most"),
])
def test_register_launch_refuses_a_contract_it_cannot_honour(change, message):
    """The compiled launch refuses slot names that are no slots, and fields of the wrong kind."""
    if not EXPECT_SPEEDUPS:
        pytest.skip("set CUABI_TEST_EXPECT_SPEEDUPS=1 when the speedups module is built")
    from cuabi import _cuabi_speedups as sp

    with pytest.raises(TypeError, match=message):
        sp.register_launch(_registered_contract().replace(**change))


def test_compiled_launch_reads_the_named_slots_itself(store):
    """The compiled launch takes streams' and memory's handles from the slots at the offsets it measured."""
    if not EXPECT_SPEEDUPS:
        pytest.skip("set CUABI_TEST_EXPECT_SPEEDUPS=1 when the speedups module is built")
    from cuabi import _cuabi_speedups as sp

    def unused(obj):
        raise AssertionError("the contract's Python fallback was called for %r" % (obj,))

    contract = _registered_contract()
    k = store.get_kernel("store_mixed", "BdHip")
    stream = cuabi.Stream()
    outs = [cls(32) for cls in contract.memory_types]
    sp.register_launch(contract.replace(device_pointer=unused, stream_handle=unused))
    try:
        for out in outs:
            cuabi.launch(stream, cuabi.LaunchConfig(1, 1), k, 7, 1.0, 2, 3, out)
    finally:
        sp.register_launch(contract)
    stream.sync()
    for out in outs:
        assert struct.unpack("4Q", out.to_bytes()) == (7, _u64("d", 1.0), 2, 3)


def test_contract_names_each_memory_class_address(store):
    """Each memory class the contract lists keeps its kernel address in the slot it names."""
    from cuabi import _launch

    contract = _registered_contract() if EXPECT_SPEEDUPS else None
    if contract is None:
        pytest.skip("the contract is registered with the compiled tier only")
    for cls in contract.memory_types:
        obj = cls(32)
        assert getattr(obj, contract.memory_slot) == obj._cuabi_address()
    assert _launch.LaunchConfig is contract.config_type


def test_struct_arguments_must_have_their_exact_size(store):
    """A struct parameter takes bytes (or bytearray) of exactly its size, nothing else."""
    k = store.get_kernel("store_mixed", [(1, 1), (8, 8), "H", "i", "p"])
    out = cuabi.DeviceBuffer(32)
    cfg = cuabi.LaunchConfig(1, 1)
    for bad in (b"", b"\x01\x02", "a", 1):
        with pytest.raises(TypeError, match="struct's size"):
            cuabi.launch(None, cfg, k, bad, bytes(8), 1, 2, out)
    cuabi.launch(None, cfg, k, bytearray(b"\x09"), bytes(8), 1, 2, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("4Q", out.to_bytes())[0] == 9


def _stored(out):
    cuabi.Stream.legacy().sync()
    return struct.unpack("4Q", out.to_bytes())


class _Changing:
    """An integer argument (``__index__``) whose value changes under the same object."""

    def __init__(self, value, on_index=None):
        self.value, self.on_index = value, on_index

    def __index__(self):
        if self.on_index is not None:
            self.on_index()
        return self.value


def test_arguments_given_again_pack_their_current_values(store):
    """Each launch packs what its arguments hold now, though the compiled launch skips objects it packed last time."""
    # the same objects again, a new object in one place, another buffer, a changed
    # __index__ value, a mutated bytearray struct, a buffer closed since its last launch
    k = store.get_kernel("store_mixed", "BdHip")
    cfg = cuabi.LaunchConfig(1, 1)
    out, other = cuabi.DeviceBuffer(32), cuabi.DeviceBuffer(32)
    a, b, c, d = 7, 2.5, 300, -4
    expect = (7, _u64("d", 2.5), 300, _u64("q", -4))
    for _ in range(2):
        cuabi.launch(None, cfg, k, a, b, c, d, out)
        assert _stored(out) == expect
    cuabi.launch(None, cfg, k, a, 0.5, c, d, out)            # a new float object
    assert _stored(out) == (7, _u64("d", 0.5), 300, _u64("q", -4))
    cuabi.launch(None, cfg, k, a, b, c, d, other)            # another buffer
    assert _stored(other) == expect
    cuabi.launch(None, cfg, k, a, b, c, d, other.ptr)        # its address as an int
    assert _stored(other) == expect
    n = _Changing(1)
    for value in (1, 2, 3):                                   # the same object, a new value
        n.value = value
        cuabi.launch(None, cfg, k, a, b, n, d, out)
        assert _stored(out)[2] == value
    ks = store.get_kernel("store_mixed", [(1, 1), (8, 8), "H", "i", "p"])
    s = bytearray(b"\x05")
    for value in (5, 6):                                      # a mutated struct
        s[0] = value
        cuabi.launch(None, cfg, ks, s, bytes(8), 1, 2, out)
        assert _stored(out)[0] == value
    with pytest.raises(TypeError):                           # fails after a new first argument
        cuabi.launch(None, cfg, k, 9, "x", c, d, out)
    cuabi.launch(None, cfg, k, a, b, c, d, out)
    assert _stored(out) == expect
    cuabi.launch(None, cfg, k, a, b, c, d, other)
    other.close()                                             # the same buffer object, now closed
    with pytest.raises(ClosedError, match="is closed"):
        cuabi.launch(None, cfg, k, a, b, c, d, other)


def test_a_launch_inside_argument_packing(store):
    """A launch of the same kernel from inside an argument's conversion leaves both launches their own values."""
    k = store.get_kernel("store_mixed", "BdHip")
    cfg = cuabi.LaunchConfig(1, 1)
    outer, inner = cuabi.DeviceBuffer(32), cuabi.DeviceBuffer(32)
    a, b, c, d = 7, 2.5, 300, -4
    cuabi.launch(None, cfg, k, a, b, c, d, outer)            # the kernel's last arguments

    def nested():
        cuabi.launch(None, cfg, k, 1, 9.5, 11, 12, inner)

    cuabi.launch(None, cfg, k, a, b, _Changing(33, nested), d, outer)
    assert _stored(inner) == (1, _u64("d", 9.5), 11, 12)
    assert _stored(outer) == (7, _u64("d", 2.5), 33, _u64("q", -4))
    cuabi.launch(None, cfg, k, a, b, c, d, outer)
    assert _stored(outer) == (7, _u64("d", 2.5), 300, _u64("q", -4))


def test_threads_launching_one_kernel_keep_their_arguments(store):
    """Threads launching one kernel, switching while arguments are converted, each launch with its own values."""
    import threading
    import time

    k = store.get_kernel("store_mixed", "BdHip")
    cfg = cuabi.LaunchConfig(1, 1)
    errors = []

    def work(t):
        try:
            cuabi.Device(0).set_current()
            out = cuabi.DeviceBuffer(32)
            stream = cuabi.Stream()
            x = float(t)
            for i in range(200):
                n = _Changing(i, lambda: time.sleep(0))       # lets another thread run
                cuabi.launch(stream, cfg, k, t, x, n, t, out)
                stream.sync()
                got = struct.unpack("4Q", out.to_bytes())
                if got != (t, _u64("d", x), i, t):
                    errors.append((t, i, got))
                    return
        except Exception as e:  # reported below, with the thread's number
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(1, 5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


class _MyBuffer(cuabi.DeviceBuffer):
    __slots__ = ()


@pytest.mark.parametrize("make, read", [
    (cuabi.DeviceBuffer, lambda b: b.to_bytes()),
    (cuabi.ManagedBuffer, lambda b: b.to_bytes()),
    (cuabi.PinnedBuffer, lambda b: b.to_bytes()),
    (_MyBuffer, lambda b: b.to_bytes()),
    (lambda n: cuabi.DeviceBuffer(n).view("u8"), lambda v: v.to_bytes()),
])
def test_memory_arguments_of_every_kind(store, make, read):
    """cuabi's memory classes, a subclass and an array view all pass their address."""
    k = store.get_kernel("store_mixed", "BdHip")
    out = make(32)
    cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, 7, 1.0, 2, 3, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("4Q", read(out)) == (7, _u64("d", 1.0), 2, 3)


@pytest.mark.parametrize("make", [cuabi.DeviceBuffer, cuabi.ManagedBuffer, cuabi.PinnedBuffer,
                                  _MyBuffer])
def test_closed_memory_argument_raises(store, make):
    """Closed memory passed as a pointer argument raises ClosedError."""
    k = store.get_kernel("store_mixed", "BdHip")
    out = make(32)
    out.close()
    with pytest.raises(ClosedError, match="is closed"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, 7, 1.0, 2, 3, out)


def test_launch_after_module_unload_raises(ctx):
    """A kernel of an unloaded module raises ClosedError naming it."""
    m = cuabi.Module.from_ptx(PTX)
    k = m.get_kernel("empty", "")
    m.close()
    with pytest.raises(ClosedError, match="'empty' is closed"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k)


def test_config_switching(store):
    """Alternating configs each put their own grid, block and shared memory in the header."""
    k = store.get_kernel("launch_info", "p")
    out = cuabi.DeviceBuffer(28)
    configs = [cuabi.LaunchConfig(grid=(2, 1, 1), block=4), cuabi.LaunchConfig(grid=3, block=(8, 2), shmem=64)]
    for cfg in configs + configs:
        cuabi.launch(None, cfg, k, out)
        cuabi.Stream.legacy().sync()
        assert struct.unpack("7I", out.to_bytes()) == cfg.grid + cfg.block + (cfg.shmem,)


def test_cooperative_launch_goes_through_launch_kernel_ex(store):
    """A cooperative config launches through cuLaunchKernelEx with the same geometry."""
    k = store.get_kernel("launch_info", "p")
    out = cuabi.DeviceBuffer(28)
    cfg = cuabi.LaunchConfig(grid=(2, 2), block=8, cooperative=True)
    cuabi.launch(None, cfg, k, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("7I", out.to_bytes()) == cfg.grid + cfg.block + (0,)


def test_getters_return_their_output(ctx):
    """The one-output getters return the value, positionally or by keyword."""
    d = cuabi.driver
    assert d.cuCtxGetCurrent() == ctx.handle
    assert d.cuDeviceGet(ordinal=0) == d.cuDeviceGet(0) == 0
    attr = int(d.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    assert d.cuDeviceGetAttribute(attr, 0) == d.cuDeviceGetAttribute(dev=0, attrib=attr) > 0


def test_getter_takes_an_object_or_its_handle(ctx):
    """A pointer-like input of a getter takes a cuabi object or its handle."""
    s = cuabi.Stream()
    assert cuabi.driver.cuStreamGetPriority(s) == cuabi.driver.cuStreamGetPriority(s.handle)


def test_getter_failure_raises_its_class(ctx):
    """A getter whose call fails raises the CUDAError of the status."""
    d = cuabi.driver
    with pytest.raises(CUDAError) as info:
        d.cuDeviceGet(d.cuDeviceGetCount() + 5)
    assert info.value.code == 101  # CUDA_ERROR_INVALID_DEVICE


def test_getter_argument_types_and_ranges(ctx):
    """Getters refuse non-ints (TypeError) and out-of-range ints (OverflowError)."""
    d = cuabi.driver
    with pytest.raises(TypeError):
        d.cuDeviceGet("0")
    with pytest.raises(TypeError):
        d.cuDeviceGet(0.0)
    with pytest.raises(OverflowError):
        d.cuDeviceGet(1 << 40)
    with pytest.raises(OverflowError):
        d.cuDeviceGetAttribute(-1, 0)


def test_getter_argument_count_and_names(ctx):
    """Getters refuse missing, extra and unknown keyword arguments."""
    d = cuabi.driver
    with pytest.raises(TypeError):
        d.cuDeviceGet()
    with pytest.raises(TypeError):
        d.cuDeviceGet(0, 1)
    with pytest.raises(TypeError):
        d.cuDeviceGet(nope=0)
    with pytest.raises(TypeError):
        d.cuCtxGetCurrent(1)


def test_getter_docstring_shows_its_signature(ctx):
    """A getter's docstring starts with its Python signature."""
    assert cuabi.driver.cuDeviceGet.__doc__.splitlines()[0].startswith("cuDeviceGet(ordinal)")


def test_speedups_in_use_where_built():
    """With the compiled tier built, the getters and cuabi.launch are its C functions."""
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
    """A thousand launches and getter calls, failing ones included, leave reference counts unchanged."""
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

    work()  # warm-up: caches (a layout keeps its last config) are filled once
    objs = (s, cfg, k, out)
    before = [sys.getrefcount(x) for x in objs]
    for _ in range(1000):
        work()
    s.sync()
    assert [sys.getrefcount(x) for x in objs] == before
