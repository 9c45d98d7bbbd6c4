# SPDX-License-Identifier: Apache-2.0
"""cuabi.driver: the generated layer over every entry point."""

import json
import os
import pickle
import subprocess
import sys

import pytest

from conftest import PYDIR, ROOT, needs, run_json

import cuabi
from cuabi import driver as d
from cuabi import errors


def test_generated_files_are_current():
    """tools/gen_python.py --check finds every generated Python file up to date."""
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_python.py"), "--check"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_every_table_entry_point_is_wrapped():
    """cuabi.driver has a function for every entry point of the JSON table."""
    with open(os.path.join(ROOT, "include", "cuabi", "driver_api.json")) as f:
        table = json.load(f)
    names = sorted(e["name"] for e in table["entry_points"])
    assert d.entry_points() == names
    assert len(names) >= 443
    for n in names:
        assert n in dir(d)


def test_every_wrapper_binds_to_an_exported_symbol():
    """Each wrapper resolves its libcuabi symbol and carries its C prototype as docstring."""
    data = run_json("""
        import json
        from cuabi import driver as d
        bad = []
        for n in d.entry_points():
            try:
                f = getattr(d, n)
                assert callable(f) and f.__name__ == n and f.__doc__.startswith(n + "(")
            except Exception as e:
                bad.append("%s: %s" % (n, e))
        print(json.dumps(bad))
    """)
    assert data == []


@pytest.fixture
def primary():
    """Device 0's primary context, pushed current through the driver layer only."""
    d.cuInit(0)
    dev = d.cuDeviceGet(0)
    ctx = d.cuDevicePrimaryCtxRetain(dev)
    d.cuCtxPushCurrent(ctx)
    yield ctx
    assert d.cuCtxPopCurrent() == ctx
    d.cuDevicePrimaryCtxRelease(dev)


def test_one_output_is_returned(primary):
    """An entry point with one output parameter returns its value."""
    assert d.cuDriverGetVersion() >= 12000
    assert d.cuCtxGetCurrent() == primary


def test_several_outputs_are_returned_as_a_tuple(primary):
    """An entry point with two outputs returns both, in declaration order."""
    free, total = d.cuMemGetInfo()
    assert 0 < free <= total


def test_memory_round_trip_through_the_driver_layer(primary):
    """cuMemAlloc, cuMemcpyHtoD and cuMemcpyDtoH move bytes there and back."""
    ptr = d.cuMemAlloc(64)
    assert isinstance(ptr, int) and ptr
    d.cuMemcpyHtoD(ptr, b"0123456789", 10)
    out = bytearray(10)
    d.cuMemcpyDtoH(out, ptr, 10)
    assert out == b"0123456789"
    d.cuMemFree(ptr)


def test_caller_buffer_stays_an_argument():
    """A buffer the caller provides (cuDeviceGetName) is filled in place."""
    d.cuInit(0)
    name = bytearray(128)
    d.cuDeviceGetName(name, len(name), d.cuDeviceGet(0))
    assert bytes(name).rstrip(b"\0")


def test_string_outputs_come_back_as_str():
    """const char ** outputs (cuGetErrorName, cuGetErrorString) are returned as str."""
    assert d.cuGetErrorName(1) == "CUDA_ERROR_INVALID_VALUE"
    assert "invalid" in d.cuGetErrorString(1).lower()


def test_inout_parameter(ctx):
    """An in-out parameter is passed in and its new value returned (cuGraphGetNodes' count)."""
    g = d.cuGraphCreate(0)
    try:
        assert d.cuGraphGetNodes(g, None, 0) == 0
    finally:
        d.cuGraphDestroy(g)


def test_enum_members_are_intenums():
    """Enumerators are module attributes and members of their IntEnum class."""
    attr = d.CU_DEVICE_ATTRIBUTE_WARP_SIZE
    assert isinstance(attr, d.CUdevice_attribute)
    assert attr.name == "CU_DEVICE_ATTRIBUTE_WARP_SIZE"
    assert d.CUresult.CUDA_SUCCESS == 0
    assert "CUresult" in dir(d)
    d.cuInit(0)
    assert d.cuDeviceGetAttribute(attr, d.cuDeviceGet(0)) == 32


def test_defines_are_module_attributes():
    """cuda.h's integer #defines are module attributes; unknown names raise AttributeError."""
    assert d.CUDA_VERSION == 13050
    assert d.CU_STREAM_LEGACY == 1
    with pytest.raises(AttributeError):
        d.CU_NOT_A_THING  # noqa: B018


def test_failing_call_raises_its_class():
    """A failing call raises the CUDAError subclass of its code, naming the function."""
    with pytest.raises(errors.CUDAError) as ei:
        d.cuMemFree(0x12345)
    e = ei.value
    assert isinstance(e, errors.by_code(e.code))
    assert e.name.startswith("CUDA_ERROR_")
    assert e.function == "cuMemFree"
    assert str(e).startswith("cuMemFree: ")


def test_error_classes_by_code():
    """by_code() gives one stable class per CUresult, own codes included; unknown codes CUDAError."""
    cls = errors.by_code(2)
    assert cls.__name__ == "OutOfMemoryError" and cls is errors.OutOfMemoryError
    assert errors.by_code(2) is cls
    assert errors.by_code(100004) is errors.EntryPointNotFoundError
    assert errors.by_code(987654) is errors.CUDAError
    assert issubclass(errors.DriverStubError, errors.DriverLoadError)


def test_errors_pickle():
    """A CUDAError survives pickling with its class, code and message."""
    with pytest.raises(errors.CUDAError) as ei:
        d.cuMemFree(0x12345)
    e = ei.value
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is type(e) and e2.code == e.code and str(e2) == str(e)


def test_error_class_names_are_module_attributes():
    """cuabi.errors lists and resolves the classes by name; unknown names raise."""
    assert "OutOfMemoryError" in dir(errors)
    with pytest.raises(AttributeError):
        errors.NoSuchThingError  # noqa: B018
    assert errors.class_name_for("CUDA_ERROR_NOT_READY") == "NotReadyError"


def test_bad_integer_arguments():
    """Integers of the wrong type raise TypeError, out of range OverflowError, before the call."""
    d.cuInit(0)
    with pytest.raises(TypeError):
        d.cuDeviceGet("0")
    with pytest.raises(TypeError):
        d.cuDeviceGet(1.5)
    with pytest.raises(OverflowError):
        d.cuDeviceGet(1 << 40)
    with pytest.raises(OverflowError):
        d.cuMemAlloc(-1)


def test_bad_pointer_arguments():
    """Pointer and handle arguments refuse objects, floats and negative ints."""
    with pytest.raises(TypeError):
        d.cuMemFree(object())
    with pytest.raises(TypeError):
        d.cuCtxSetCurrent(1.0)
    with pytest.raises(OverflowError):
        d.cuCtxSetCurrent(-5)


def test_wrong_argument_count():
    """Too many or too few arguments raise TypeError."""
    with pytest.raises(TypeError):
        d.cuDeviceGetCount(1)  # no inputs
    with pytest.raises(TypeError):
        d.cuMemsetD8(0, 1)  # missing argument


def test_struct_by_value_arguments(ctx):
    """A struct passed by value must be a tuple of its members or bytes of its size."""
    f = d.cuMemAdvise
    for bad, exc in (((1,), ValueError), ((1, 2, 3), ValueError), ("xx", TypeError),
                     ((1.5j, 0), TypeError), (b"\0" * 3, ValueError)):
        with pytest.raises(exc):
            f(0, 0, 0, bad)
    with pytest.raises(ValueError):
        d.cuIpcOpenMemHandle(b"\0" * 10, 0)  # a 64-byte IPC handle


def test_pointer_arguments_accept_cuabi_objects_and_buffers(ctx):
    """Pointer arguments take cuabi objects (their address), memoryviews and arrays."""
    import array

    buf = cuabi.DeviceBuffer(16)
    d.cuMemsetD8(buf, 7, 16)
    arr = bytearray(16)
    d.cuMemcpyDtoH(memoryview(arr), buf.ptr, 16)
    assert arr == b"\x07" * 16
    a = array.array("I", [0] * 4)
    d.cuMemcpyDtoH(a, buf, 16)
    assert list(a) == [0x07070707] * 4


def test_pointer_arguments_refuse_strided_buffers_and_bools(ctx):
    """A non-contiguous memoryview or a bool is not an address."""
    buf = cuabi.DeviceBuffer(16)
    with pytest.raises(ValueError):
        d.cuMemcpyDtoH(memoryview(bytearray(32))[::2], buf, 16)
    with pytest.raises(TypeError):
        d.cuMemcpyDtoH(True, buf, 16)


def test_missing_entry_point_raises_not_crashes():
    """Calling an entry point the driver lacks raises EntryPointNotFoundError."""
    rc = run_json("""
        import json, cuabi
        try:
            cuabi.call("cuDefinitelyNotAnEntryPoint", "")
            print(json.dumps("no error"))
        except cuabi.errors.EntryPointNotFoundError as e:
            print(json.dumps([e.code, e.name]))
    """)
    assert rc == [100004, "CUABI_ERROR_ENTRY_POINT_NOT_FOUND"]


def test_thread_safety_of_cached_outputs(ctx):
    """Four threads calling the same wrappers each read their own outputs."""
    import threading

    errors_seen = []

    def work():
        try:
            d.cuCtxSetCurrent(ctx.handle)
            for _ in range(2000):
                p = d.cuMemAlloc(8)
                assert d.cuCtxGetCurrent() == ctx.handle
                d.cuMemFree(p)
        except Exception as e:  # pragma: no cover - reported below
            errors_seen.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors_seen == []


RECORD_PRELUDE = r"""
import ctypes, json, os, struct, sys
import cuabi
from cuabi import driver as d

class Call(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 96), ("requested_version", ctypes.c_int),
                ("requested_flags", ctypes.c_ulonglong), ("impl_version", ctypes.c_int),
                ("per_thread", ctypes.c_int), ("nargs", ctypes.c_uint),
                ("signature", ctypes.c_char * 33), ("args", ctypes.c_uint64 * 32)]

fake = ctypes.CDLL(os.environ["CUABI_LIBCUDA"])
fake.fakecuda_record_last.argtypes = [ctypes.POINTER(Call)]
fake.fakecuda_record_struct_arg.restype = ctypes.c_size_t
fake.fakecuda_record_struct_arg.argtypes = [ctypes.c_uint, ctypes.c_void_p, ctypes.c_size_t]

def last():
    c = Call()
    return c if fake.fakecuda_record_last(ctypes.byref(c)) else None

def struct_arg(i):
    buf = ctypes.create_string_buffer(128)
    n = fake.fakecuda_record_struct_arg(i, buf, 128)
    return buf.raw[:n]

def tokens(sig):
    out, i = [], 0
    while i < len(sig):
        j = sig.index("}", i) + 1 if sig[i] == "{" else i + 1
        out.append(sig[i:j])
        i = j
    return out
"""

RECORD_CHECK = RECORD_PRELUDE + r"""
table = json.load(open(TABLE))
# Struct arguments by value: a value whose members (or bytes) differ, and the bytes the
# driver must receive.
STRUCTS = {"{Ii}": ((5, -6), struct.pack("=Ii", 5, -6)),
           "{[64]}": (bytes(range(64)), bytes(range(64)))}
problems = []
checked = 0
for ep in table["entry_points"]:
    toks = tokens(ep["signature"])
    args, expect, structs = [], {}, {}
    for i, (tok, p) in enumerate(zip(toks, ep["params"])):
        if p["direction"] in ("out", "inout"):
            if p["direction"] == "inout":
                args.append(3)
            continue
        k = i + 1
        if tok.startswith("{"):
            value, structs[i] = STRUCTS[tok]
            args.append(value)
            continue
        v = {"i": -1000 - k, "I": 0x80000000 + k, "q": -(1 << 40) - k, "Q": (1 << 63) + k,
             "z": (1 << 40) + k, "p": 0x10000 + 16 * k, "f": 1.5 + k, "d": 2.25 + k,
             "B": 200 + k, "H": 60000 + k}[tok]
        if tok == "i":
            bits = v & 0xFFFFFFFF
        elif tok == "q":
            bits = v & 0xFFFFFFFFFFFFFFFF
        elif tok == "f":
            bits = struct.unpack("=I", struct.pack("=f", v))[0]
        elif tok == "d":
            bits = struct.unpack("=Q", struct.pack("=d", v))[0]
        else:
            bits = v
        args.append(v)
        expect[i] = bits
    fn = getattr(d, ep["name"])
    fake.fakecuda_record_set_result(0)
    try:
        fn(*args)
    except Exception as e:
        problems.append("%s raised %r" % (ep["name"], e))
        continue
    c = last()
    if c is None:
        problems.append("%s: nothing recorded" % ep["name"])
        continue
    if c.name.decode() != ep["driver_name"]:
        problems.append("%s: recorded as %s" % (ep["name"], c.name.decode()))
    if c.nargs != len(toks):
        problems.append("%s: %d args recorded" % (ep["name"], c.nargs))
    for i, bits in expect.items():
        if c.args[i] != bits:
            problems.append("%s arg %d: sent %#x got %#x" % (ep["name"], i, bits, c.args[i]))
    for i, raw in structs.items():
        if struct_arg(i) != raw:
            problems.append("%s arg %d (struct): sent %s got %s" % (ep["name"], i, raw.hex(), struct_arg(i).hex()))
    for i, (tok, p) in enumerate(zip(toks, ep["params"])):
        if p["direction"] in ("out", "inout") and not c.args[i]:
            problems.append("%s arg %d: output cell passed as NULL" % (ep["name"], i))
    # The driver's result reaches the caller: a failure raises, naming the function.
    fake.fakecuda_record_set_result(CODE)
    try:
        fn(*args)
        problems.append("%s: returned normally when the driver said %d" % (ep["name"], CODE))
    except cuabi.CUDAError as e:
        if e.code != CODE or e.function != ep["name"]:
            problems.append("%s: raised code %r for %r, not %d" % (ep["name"], e.code, e.function, CODE))
    except Exception as e:
        problems.append("%s: raised %r on failure" % (ep["name"], e))
    checked += 1
print(json.dumps([checked, problems]))
"""


@pytest.mark.fake
def test_every_entry_point_passes_arguments_and_results():
    """In record mode every entry point passes each argument's bits (structs too) and raises the driver's code."""
    code = (RECORD_CHECK.replace("TABLE", repr(os.path.join(ROOT, "include", "cuabi", "driver_api.json")))
            .replace("CODE", str(int(d.CUDA_ERROR_NOT_READY))))
    # a driver of CUDA 13.5, which has every entry point at its pinned version
    checked, problems = run_json(code, env={"FAKECUDA_MODE": "record", "FAKECUDA_DRIVER_VERSION": "13050"})
    assert problems == []
    assert checked >= 495


@pytest.mark.fake
def test_every_result_code_raises_its_class():
    """Every CUresult and libcuabi code (and an unknown one) raises CUDAError with that code."""
    failures = run_json(RECORD_PRELUDE + r"""
from cuabi import errors
codes = sorted({int(c) for c in d.CUresult if int(c) != 0} | set(range(100001, 100009)) | {987654})
bad = []
for code in codes:
    fake.fakecuda_record_set_result(code)
    try:
        d.cuCtxSynchronize()
        bad.append([code, "no exception"])
    except errors.CUDAError as e:
        if e.code != code or not isinstance(e, errors.by_code(code)):
            bad.append([code, "%s with code %r" % (type(e).__name__, e.code)])
print(json.dumps([len(codes), bad]))
""", env={"FAKECUDA_MODE": "record"})
    assert failures[1] == [] and failures[0] > 100


@pytest.mark.fake
def test_integer_arguments_use_their_full_range_and_no_more():
    """Each integer letter takes its C type's whole range and no more (OverflowError, never a wrap)."""
    results = run_json(RECORD_PRELUDE + r"""
# letter: (entry point, its input arguments with None where the value goes, index in the call)
CASES = {
    "I": (d.cuInit, [None], 0, 0, 2**32 - 1),
    "i": (d.cuDeviceGet, [None], 1, -2**31, 2**31 - 1),
    "Q": (d.cuMemFree, [None], 0, 0, 2**64 - 1),
    "z": (d.cuMemAlloc, [None], 1, 0, 2**64 - 1),
    "B": (d.cuMemsetD8, [0x1000, None, 1], 1, 0, 255),
    "H": (d.cuMemsetD16, [0x1000, None, 1], 1, 0, 65535),
    "p": (d.cuCtxSetCurrent, [None], 0, 0, 2**64 - 1),
}
out = {}
for letter, (fn, template, position, lo, hi) in CASES.items():
    seen = []
    for value in (lo, hi, lo - 1, hi + 1):
        args = [value if a is None else a for a in template]
        try:
            fn(*args)
            seen.append(last().args[position])
        except OverflowError:
            seen.append("OverflowError")
        except Exception as e:
            seen.append(type(e).__name__)
    out[letter] = seen
print(json.dumps(out))
""", env={"FAKECUDA_MODE": "record"})
    width = {"I": 32, "i": 32, "Q": 64, "z": 64, "B": 8, "H": 16, "p": 64}
    for letter, seen in results.items():
        lo_bits = 0 if letter != "i" else 1 << 31
        hi_bits = (1 << width[letter]) - 1 if letter != "i" else (1 << 31) - 1
        assert seen == [lo_bits, hi_bits, "OverflowError", "OverflowError"], letter


@pytest.mark.fake
def test_failing_status_maps_to_class_in_record_mode():
    """A status the fake is told to return raises that status's class."""
    data = run_json("""
        import ctypes, json, os, cuabi
        from cuabi import driver as d
        fake = ctypes.CDLL(os.environ["CUABI_LIBCUDA"])
        fake.fakecuda_record_set_result(2)
        try:
            d.cuMemAlloc(1)
        except cuabi.errors.OutOfMemoryError as e:
            print(json.dumps([e.code, e.function]))
    """, env={"FAKECUDA_MODE": "record"})
    assert data == [2, "cuMemAlloc"]


def test_needs_helper_detects_missing():
    """conftest.needs() does not skip for an entry point every driver has."""
    needs("cuMemAlloc")


FAKE_IMAGE = b"fakecuda-module\nkernel saxpy\nglobal counter 16\n\0"


@pytest.mark.fake
def test_multiple_outputs_in_declaration_order(ctx):
    """Entry points with several outputs return them in the order cuda.h declares them."""
    held = cuabi.DeviceBuffer(1 << 20)
    free, total = d.cuMemGetInfo()
    assert total == 8 << 30 and free <= total - (1 << 20)  # the fake's default device memory
    held.close()
    assert d.cuCtxGetStreamPriorityRange() == (0, -5)  # least, greatest
    dev = d.cuDeviceGet(0)
    d.cuDevicePrimaryCtxSetFlags(dev, d.CU_CTX_SCHED_BLOCKING_SYNC)
    assert d.cuDevicePrimaryCtxGetState(dev) == (d.CU_CTX_SCHED_BLOCKING_SYNC, 1)  # flags, active
    d.cuDevicePrimaryCtxSetFlags(dev, 0)
    pfn, status = d.cuGetProcAddress("cuMemAlloc", 3020, 0)
    assert pfn and status == d.CU_GET_PROC_ADDRESS_SUCCESS
    ptr, pitch = d.cuMemAllocPitch(100, 3, 4)
    assert ptr and pitch == 512
    assert d.cuMemGetAddressRange(ptr + 10) == (ptr, 3 * 512)  # base, size
    d.cuMemFree(ptr)
    mod = d.cuModuleLoadData(FAKE_IMAGE)
    try:
        gptr, size = d.cuModuleGetGlobal(mod, "counter")
        assert gptr and size == 16
        f = d.cuModuleGetFunction(mod, "saxpy")
        assert d.cuFuncGetParamInfo(f, 0) == (0, 4)  # offset, size
        assert d.cuFuncGetParamInfo(f, 3) == (24, 4)
    finally:
        d.cuModuleUnload(mod)
    lib = d.cuLibraryLoadData(FAKE_IMAGE, None, None, 0, None, None, 0)
    try:
        gptr, size = d.cuLibraryGetGlobal(lib, "counter")
        assert gptr and size == 16
        k = d.cuLibraryGetKernel(lib, "saxpy")
        assert d.cuKernelGetParamInfo(k, 1) == (8, 8)
    finally:
        d.cuLibraryUnload(lib)
    s = d.cuStreamCreate(0)
    try:
        assert d.cuStreamGetCtx_v2(s) == (ctx.handle, 0)  # context, green context
    finally:
        d.cuStreamDestroy(s)
