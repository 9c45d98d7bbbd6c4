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
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_python.py"), "--check"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_every_table_entry_point_is_wrapped():
    with open(os.path.join(ROOT, "include", "cuabi", "driver_api.json")) as f:
        table = json.load(f)
    names = sorted(e["name"] for e in table["entry_points"])
    assert d.entry_points() == names
    assert len(names) >= 443
    for n in names:
        assert n in dir(d)


def test_every_wrapper_binds_to_an_exported_symbol():
    # resolving the native symbol for each is what the first call does
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


def test_outputs_returned():
    d.cuInit(0)
    assert d.cuDriverGetVersion() >= 12000
    dev = d.cuDeviceGet(0)
    ctx = d.cuDevicePrimaryCtxRetain(dev)
    try:
        d.cuCtxPushCurrent(ctx)
        assert d.cuCtxGetCurrent() == ctx
        free, total = d.cuMemGetInfo()  # two outputs -> tuple
        assert 0 < free <= total
        ptr = d.cuMemAlloc(64)
        assert isinstance(ptr, int) and ptr
        d.cuMemcpyHtoD(ptr, b"0123456789", 10)
        out = bytearray(10)
        d.cuMemcpyDtoH(out, ptr, 10)
        assert out == b"0123456789"
        d.cuMemFree(ptr)
        assert d.cuCtxPopCurrent() == ctx
    finally:
        d.cuDevicePrimaryCtxRelease(dev)


def test_buffer_parameter_and_string_output():
    d.cuInit(0)
    name = bytearray(128)
    d.cuDeviceGetName(name, len(name), d.cuDeviceGet(0))
    assert bytes(name).rstrip(b"\0")
    assert d.cuGetErrorName(1) == "CUDA_ERROR_INVALID_VALUE"
    assert "invalid" in d.cuGetErrorString(1).lower()


def test_inout_parameter(ctx):
    g = d.cuGraphCreate(0)
    try:
        # numNodes is in-out: 0 in, the node count out
        assert d.cuGraphGetNodes(g, None, 0) == 0
    finally:
        d.cuGraphDestroy(g)


def test_enums_and_defines():
    attr = d.CU_DEVICE_ATTRIBUTE_WARP_SIZE
    assert isinstance(attr, d.CUdevice_attribute)
    assert attr.name == "CU_DEVICE_ATTRIBUTE_WARP_SIZE"
    assert d.CUresult.CUDA_SUCCESS == 0
    assert d.CUDA_VERSION == 13000
    assert d.CU_STREAM_LEGACY == 1
    assert "CUresult" in dir(d)
    with pytest.raises(AttributeError):
        d.CU_NOT_A_THING  # noqa: B018
    d.cuInit(0)
    assert d.cuDeviceGetAttribute(attr, d.cuDeviceGet(0)) == 32


def test_error_classes():
    with pytest.raises(errors.CUDAError) as ei:
        d.cuMemFree(0x12345)
    e = ei.value
    assert isinstance(e, errors.by_code(e.code))
    assert e.name.startswith("CUDA_ERROR_")
    assert e.function == "cuMemFree"
    assert str(e).startswith("cuMemFree: ")
    cls = errors.by_code(2)
    assert cls.__name__ == "OutOfMemoryError" and cls is errors.OutOfMemoryError
    assert errors.by_code(2) is cls  # stable identity
    assert errors.by_code(100004) is errors.EntryPointNotFoundError
    assert errors.by_code(987654) is errors.CUDAError
    assert issubclass(errors.DriverStubError, errors.DriverLoadError)
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is type(e) and e2.code == e.code and str(e2) == str(e)
    assert "OutOfMemoryError" in dir(errors)
    with pytest.raises(AttributeError):
        errors.NoSuchThingError  # noqa: B018
    assert errors.class_name_for("CUDA_ERROR_NOT_READY") == "NotReadyError"


def test_bad_argument_types_and_values():
    d.cuInit(0)
    with pytest.raises(TypeError):
        d.cuDeviceGet("0")
    with pytest.raises(TypeError):
        d.cuDeviceGet(1.5)
    with pytest.raises(OverflowError):
        d.cuDeviceGet(1 << 40)
    with pytest.raises(OverflowError):
        d.cuMemAlloc(-1)
    with pytest.raises(TypeError):
        d.cuMemFree(object())
    with pytest.raises(TypeError):
        d.cuCtxSetCurrent(1.0)
    with pytest.raises(OverflowError):
        d.cuCtxSetCurrent(-5)
    with pytest.raises(TypeError):
        d.cuDeviceGetCount(1)  # no inputs
    with pytest.raises(TypeError):
        d.cuMemsetD8(0, 1)  # missing argument


def test_struct_by_value_arguments(ctx):
    f = d.cuMemAdvise
    for bad, exc in (((1,), ValueError), ((1, 2, 3), ValueError), ("xx", TypeError),
                     ((1.5j, 0), TypeError), (b"\0" * 3, ValueError)):
        with pytest.raises(exc):
            f(0, 0, 0, bad)
    # a 64-byte IPC handle: wrong sizes are refused before the call
    with pytest.raises(ValueError):
        d.cuIpcOpenMemHandle(b"\0" * 10, 0)


def test_pointer_arguments_accept_buffers_and_objects(ctx):
    buf = cuabi.DeviceBuffer(16)
    d.cuMemsetD8(buf, 7, 16)  # a cuabi object passes its address
    arr = bytearray(16)
    d.cuMemcpyDtoH(memoryview(arr), buf.ptr, 16)
    assert arr == b"\x07" * 16
    import array

    a = array.array("I", [0] * 4)
    d.cuMemcpyDtoH(a, buf, 16)
    assert list(a) == [0x07070707] * 4
    with pytest.raises(ValueError):
        d.cuMemcpyDtoH(memoryview(bytearray(32))[::2], buf, 16)  # not contiguous
    with pytest.raises(TypeError):
        d.cuMemcpyDtoH(True, buf, 16)


def test_missing_entry_point_raises_not_crashes():
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


RECORD_CHECK = r"""
import ctypes, json, math, struct, sys
import cuabi
from cuabi import driver as d
from cuabi._signature import split_signature

class Call(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 96), ("requested_version", ctypes.c_int),
                ("requested_flags", ctypes.c_ulonglong), ("impl_version", ctypes.c_int),
                ("per_thread", ctypes.c_int), ("nargs", ctypes.c_uint),
                ("signature", ctypes.c_char * 33), ("args", ctypes.c_uint64 * 32)]

fake = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else __import__("os").environ["CUABI_LIBCUDA"])
fake.fakecuda_record_last.argtypes = [ctypes.POINTER(Call)]
table = json.load(open(TABLE))
problems = []
checked = 0
for ep in table["entry_points"]:
    toks = split_signature(ep["signature"])
    args, expect = [], {}
    for i, (tok, p) in enumerate(zip(toks, ep["params"])):
        if p["direction"] in ("out", "inout"):
            if p["direction"] == "inout":
                args.append(3)
            continue
        k = i + 1
        if tok.startswith("{"):
            n = len(cuabi._backend.backend().struct_type(tok)._fields_) if cuabi.backend_name() == "ctypes" else None
            members = tok[1:-1]
            args.append(b"\x11" * 64 if members.startswith("[") else (5, -6))
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
    try:
        getattr(d, ep["name"])(*args)
    except Exception as e:
        problems.append("%s raised %r" % (ep["name"], e))
        continue
    c = Call()
    if not fake.fakecuda_record_last(ctypes.byref(c)):
        problems.append("%s: nothing recorded" % ep["name"])
        continue
    if c.name.decode() != ep["driver_name"]:
        problems.append("%s: recorded as %s" % (ep["name"], c.name.decode()))
    if c.nargs != len(toks):
        problems.append("%s: %d args recorded" % (ep["name"], c.nargs))
    for i, bits in expect.items():
        if c.args[i] != bits:
            problems.append("%s arg %d: sent %#x got %#x" % (ep["name"], i, bits, c.args[i]))
    for i, (tok, p) in enumerate(zip(toks, ep["params"])):
        if p["direction"] in ("out", "inout") and not c.args[i]:
            problems.append("%s arg %d: output cell passed as NULL" % (ep["name"], i))
    checked += 1
print(json.dumps([checked, problems]))
"""


@pytest.mark.fake
def test_every_entry_point_passes_arguments_unchanged():
    """In the fake's record mode every entry point records the raw argument bits."""
    code = RECORD_CHECK.replace("TABLE", repr(os.path.join(ROOT, "include", "cuabi", "driver_api.json")))
    checked, problems = run_json(code, env={"FAKECUDA_MODE": "record"})
    assert problems == []
    assert checked >= 443


@pytest.mark.fake
def test_failing_status_maps_to_class_in_record_mode():
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
    needs("cuMemAlloc")  # present everywhere: must not skip
