# SPDX-License-Identifier: Apache-2.0
"""libcuabi's own API from Python, driver-loading failures and `python -m cuabi`."""

import os
import sys

import pytest

from conftest import FAKE, NOGPA, STUB, run_json, run_py

import cuabi
from cuabi import errors


def test_status_and_report_after_load():
    """After load() the status is 0 and the report names the driver used."""
    cuabi.load()
    assert cuabi.driver_status() == 0
    report = cuabi.driver_report()
    assert "using" in report
    if FAKE:
        assert cuabi.driver_path() == FAKE
        assert FAKE in report


def test_driver_version_and_stream_mode():
    """driver_version() is a CUDA version, default_stream_mode() one of the two modes."""
    assert cuabi.driver_version() >= 12000
    assert cuabi.default_stream_mode() in ("legacy", "per_thread")


def test_error_name_and_string():
    """error_name() and error_string() describe the driver's and libcuabi's codes."""
    assert cuabi.error_name(0) == "CUDA_SUCCESS"
    assert cuabi.error_name(100001) == "CUABI_ERROR_DRIVER_NOT_FOUND"
    assert cuabi.error_string(100004)


def test_error_name_takes_a_curesult():
    """error_name() refuses a str (TypeError) and values outside CUresult's range (OverflowError)."""
    with pytest.raises(TypeError):
        cuabi.error_name("1")
    with pytest.raises(OverflowError):
        cuabi.error_string(-1)


def test_get_proc():
    """get_proc() returns an address, with or without version and flags."""
    assert cuabi.get_proc("cuMemAlloc", 3020) != 0
    assert cuabi.get_proc("cuInit") != 0
    assert cuabi.get_proc("cuInit", flags="per_thread") != 0


def test_get_proc_of_a_missing_entry_point():
    """get_proc() of a name the driver lacks raises EntryPointNotFoundError (an EntryPointError)."""
    with pytest.raises(errors.EntryPointNotFoundError) as ei:
        cuabi.get_proc("cuNoSuchEntryPoint")
    assert isinstance(ei.value, errors.EntryPointError)


def test_get_proc_arguments_are_checked():
    """get_proc() refuses unknown flags, a bytes name and a str version."""
    with pytest.raises(ValueError):
        cuabi.get_proc("cuInit", flags="sometimes")
    with pytest.raises(TypeError):
        cuabi.get_proc(b"cuInit")
    with pytest.raises(TypeError):
        cuabi.get_proc("cuInit", version="12")


@pytest.mark.fake
def test_get_proc_passes_version_and_flags(fake):
    """get_proc asks the driver with the version and the flags it was given, not others."""
    cuabi.get_proc("cuMemcpyHtoD", 7000, flags="per_thread")
    assert fake.request("cuMemcpyHtoD")[1:] == (7000, 2)  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
    cuabi.get_proc("cuMemcpyHtoD", 3020, flags="legacy")
    assert fake.request("cuMemcpyHtoD")[1:] == (3020, 1)  # CU_GET_PROC_ADDRESS_LEGACY_STREAM
    cuabi.get_proc("cuMemcpyHtoD", 3020)  # the process's mode: legacy here
    assert fake.request("cuMemcpyHtoD")[1:] == (3020, 1)


@pytest.mark.fake
def test_get_proc_defaults_to_the_process_mode():
    """Without flags, get_proc asks for the per-thread variant in a per-thread process."""
    data = run_json("""
        import ctypes, json, os, cuabi
        cuabi.get_proc("cuMemcpyHtoD", 7000)
        info = (ctypes.c_uint64 * 4)()
        ctypes.CDLL(os.environ["CUABI_LIBCUDA"]).fakecuda_request_info(b"cuMemcpyHtoD", info)
        print(json.dumps(bytes(info)[8:16].hex()))
    """, env={"CUABI_PER_THREAD_DEFAULT_STREAM": "1"})
    assert int.from_bytes(bytes.fromhex(data), sys.byteorder) == 2  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM


@pytest.mark.fake
def test_call_passes_every_letter(fake):
    """cuabi.call hands each signature letter to the callee at its C type and full width."""
    sig = "dqzfiIQp"
    args = [-2.0e100, -(1 << 40) - 5, (1 << 40) + 7, 1.25, -123456, 0x89ABCDEF, 0xFEDCBA9876543210,
            0x7F0011223344]
    cuabi.call("fakecuda_echo_" + sig, sig, *args)
    import struct

    expected = [struct.unpack("=Q", struct.pack("=d", args[0]))[0], args[1] & (2**64 - 1), args[2],
                struct.unpack("=I", struct.pack("=f", args[3]))[0], args[4] & (2**32 - 1), args[5],
                args[6], args[7]]
    assert fake.last_call() == ("fakecuda_echo_" + sig, expected)


def test_call_dynamic():
    """call() calls an entry point by name; a buffer receives its output."""
    cuabi.call("cuInit", "I", 0)
    out = bytearray(4)
    cuabi.call("cuDriverGetVersion", "p", out)
    assert int.from_bytes(out, sys.byteorder) == cuabi.driver_version()


def test_call_failure_raises():
    """A failing call() raises the status's CUDAError."""
    with pytest.raises(errors.CUDAError):
        cuabi.call("cuMemFree", "Q", 0x1234)


def test_call_arguments_are_checked():
    """call() checks argument count, signature letters, ranges and types before calling."""
    with pytest.raises(TypeError, match="1 parameters but 2"):
        cuabi.call("cuInit", "I", 0, 1)
    with pytest.raises(ValueError):
        cuabi.call("cuInit", "X", 0)
    with pytest.raises(OverflowError):
        cuabi.call("cuInit", "I", -1)
    with pytest.raises(TypeError):
        cuabi.call("cuInit", "I", "0")


def test_call_malformed_signature_reaches_library():
    """A signature with letters the Python layer does not pass is refused before the call."""
    with pytest.raises(ValueError):
        cuabi.call("cuInit", "{I}", (0,))


def test_set_default_stream_mode_after_load():
    """Changing the stream mode after the load raises AlreadyLoadedError."""
    cuabi.load()
    with pytest.raises(errors.AlreadyLoadedError):
        cuabi.set_default_stream_mode(cuabi.default_stream_mode() != "per_thread")


def test_per_thread_mode_before_load():
    """set_default_stream_mode(True) before the load gives per-thread streams."""
    data = run_json("""
        import json, cuabi
        cuabi.set_default_stream_mode(True)
        cuabi.load()
        print(json.dumps(cuabi.default_stream_mode()))
    """)
    assert data == "per_thread"


def test_per_thread_mode_from_environment():
    """CUABI_PER_THREAD_DEFAULT_STREAM=1 gives per-thread streams."""
    data = run_json("""
        import json, cuabi
        cuabi.load()
        print(json.dumps(cuabi.default_stream_mode()))
    """, env={"CUABI_PER_THREAD_DEFAULT_STREAM": "1"})
    assert data == "per_thread"


def test_bad_stream_mode_environment():
    """An unusable CUABI_PER_THREAD_DEFAULT_STREAM fails the load with BadEnvironmentError."""
    data = run_json("""
        import json, cuabi
        try:
            cuabi.driver.cuInit(0)
            print(json.dumps("no error"))
        except cuabi.errors.BadEnvironmentError as e:
            print(json.dumps([e.name, isinstance(e, cuabi.errors.DriverLoadError), bool(e.report)]))
    """, env={"CUABI_PER_THREAD_DEFAULT_STREAM": "yes"})
    assert data == ["CUABI_ERROR_BAD_ENVIRONMENT", True, True]


def test_load_argument_checks():
    """load() refuses a relative path and a non-str."""
    with pytest.raises(ValueError):
        cuabi.load("relative/libcuda.so.1")
    with pytest.raises(TypeError):
        cuabi.load(5)


LOAD_PROBE = """
    import json, cuabi
    try:
        cuabi.driver.cuInit(0)
        print(json.dumps(["ok"]))
    except cuabi.errors.CUDAError as e:
        print(json.dumps([type(e).__name__, e.name, isinstance(e, cuabi.errors.DriverLoadError),
                          e.report or "", str(e)]))
"""


def test_no_driver():
    """A missing driver raises DriverNotFoundError carrying the report, also in its message."""
    data = run_json(LOAD_PROBE, env={"CUABI_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert data[0] == "DriverNotFoundError" and data[2] is True
    assert "/nonexistent/libcuda.so.1" in data[3]
    assert "/nonexistent/libcuda.so.1" in data[4]  # the report is in the message


def test_relative_driver_path():
    """A relative CUABI_LIBCUDA fails the load."""
    data = run_json(LOAD_PROBE, env={"CUABI_LIBCUDA": "libcuda.so.1"})
    assert data[1] in ("CUABI_ERROR_BAD_ENVIRONMENT", "CUABI_ERROR_DRIVER_NOT_FOUND")


@pytest.mark.skipif(STUB is None, reason="no toolkit stub libcuda.so here")
def test_toolkit_stub_only():
    """Only the toolkit's stub found raises DriverStubError saying so."""
    data = run_json(LOAD_PROBE, env={"CUABI_LIBCUDA": STUB})
    assert data[0] == "DriverStubError" and data[2] is True
    assert "stub" in data[3].lower()


@pytest.mark.skipif(NOGPA is None, reason="libfakecuda_nogpa.so not built")
def test_driver_without_get_proc_address():
    """A library without cuGetProcAddress_v2 raises DriverUnusableError."""
    data = run_json(LOAD_PROBE, env={"CUABI_LIBCUDA": NOGPA})
    assert data[0] == "DriverUnusableError" and data[2] is True


@pytest.mark.fake
def test_old_driver():
    """An entry point newer than the driver raises DriverTooOldError (or not found)."""
    data = run_json("""
        import json, cuabi
        from cuabi import driver as d
        out = [cuabi.driver_version()]
        d.cuInit(0)
        try:
            d.cuMemGetDefaultMemPool(None, 0)   # CUDA 13.0 entry point
            out.append("ok")
        except cuabi.errors.CUDAError as e:
            out.append(type(e).__name__)
        print(json.dumps(out))
    """, env={"FAKECUDA_DRIVER_VERSION": "12040"})
    assert data[0] == 12040
    assert data[1] in ("DriverTooOldError", "EntryPointNotFoundError")


@pytest.mark.fake
def test_no_device():
    """With no device, cuInit raises NoDeviceError."""
    data = run_json(LOAD_PROBE, env={"FAKECUDA_DEVICE_COUNT": "0"})
    assert data[0] == "NoDeviceError"


def _main(env=None, drop=()):
    import subprocess

    e = dict(os.environ)
    for k in drop:
        e.pop(k, None)
    e.update(env or {})
    from conftest import subprocess_pythonpath

    e["PYTHONPATH"] = subprocess_pythonpath()
    p = subprocess.run([sys.executable, "-m", "cuabi"], env=e, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stdout + p.stderr
    return p.returncode, p.stdout


@pytest.mark.fake
def test_main_ok():
    """`python -m cuabi` on a working driver exits 0 and reports backend, devices, NVRTC, nvJitLink, NVML."""
    rc, out = _main()
    assert rc == 0, out
    assert "a GPU works" in out and "backend:" in out and "devices:" in out and "nvrtc:" in out
    assert "nvjitlink:" in out and "nvml:" in out


@pytest.mark.fake
def test_main_reports_nvml():
    """`python -m cuabi` reports NVML's driver version and GPU count, or that NVML is absent."""
    from conftest import _fake_family

    rc, out = _main(env={"CUABI_LIBNVML": _fake_family("nvml")})
    assert rc == 0 and "nvml:                  driver 580.65.06-fake, 1 GPU(s)" in out
    rc, out = _main(env={"CUABI_LIBNVML": "/nonexistent/libnvidia-ml.so.1"})
    assert rc == 0 and "nvml:                  not found (NVML_ERROR_LIBRARY_NOT_FOUND)" in out


def test_main_no_library():
    """Without libcuabi, `python -m cuabi` exits 2 saying NOT FOUND."""
    rc, out = _main(env={"CUABI_LIBRARY": "/nonexistent/libcuabi.so.1"})
    assert rc == 2 and "NOT FOUND" in out


def test_main_bad_backend():
    """A bad CUABI_PY_BACKEND makes `python -m cuabi` exit 2 naming it."""
    rc, out = _main(env={"CUABI_PY_BACKEND": "fortran"})
    assert rc == 2 and "fortran" in out


def test_main_no_driver():
    """Without a driver, `python -m cuabi` exits 3."""
    rc, out = _main(env={"CUABI_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert rc == 3 and "no usable CUDA driver" in out


@pytest.mark.skipif(STUB is None, reason="no toolkit stub libcuda.so here")
def test_main_stub():
    """With only the toolkit stub, `python -m cuabi` exits 3."""
    rc, out = _main(env={"CUABI_LIBCUDA": STUB})
    assert rc == 3


@pytest.mark.fake
def test_main_no_device():
    """With no device, `python -m cuabi` exits 4 naming cuInit."""
    rc, out = _main(env={"FAKECUDA_DEVICE_COUNT": "0"})
    assert rc == 4 and "cuInit" in out


def _main_with(*args):
    import subprocess

    from conftest import subprocess_pythonpath

    return subprocess.run([sys.executable, "-m", "cuabi"] + list(args), capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=subprocess_pythonpath()))


def test_main_help():
    """`python -m cuabi --help` prints the exit codes and exits 0."""
    p = _main_with("--help")
    assert p.returncode == 0 and "Exit codes" in p.stdout


def test_main_unknown_option():
    """An unknown option prints the usage and exits 1."""
    p = _main_with("--bogus")
    assert p.returncode == 1 and "usage" in p.stderr


def test_get_proc_address_is_callable():
    """An address from get_proc() can be called through ctypes."""
    import ctypes

    addr = cuabi.get_proc("cuDriverGetVersion")
    fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int))(addr)
    v = ctypes.c_int()
    assert fn(ctypes.byref(v)) == 0 and v.value == cuabi.driver_version()


def test_open_resources_at_interpreter_exit():
    """Objects left open (and cycles holding them) must not crash or print at exit."""
    rc, out, err = run_py("""
        import os, cuabi
        dev = cuabi.Device(0)
        dev.set_current()
        keep = [cuabi.Stream(), cuabi.Event(), cuabi.DeviceBuffer(64), cuabi.PinnedBuffer(64),
                cuabi.ManagedBuffer(64), cuabi.MemoryPool(), cuabi.Graph()]
        s = keep[0]
        keep.append(cuabi.DeviceBuffer(32, stream=s))
        keep.append(keep)  # a cycle, collected at shutdown
        view = keep[3].memoryview()
        print("done")
    """)
    assert rc == 0 and out.strip() == "done", (out, err)
    assert err == ""
