# SPDX-License-Identifier: Apache-2.0
"""cuabi.system: what nvidia-smi users check from scripts, over cuabi's NVML family;
on the fake NVML (tests/fake/family.c), each case in an interpreter of its own."""

import pytest

from conftest import _fake_family, run_json

GIB = 1 << 30


def _env(**extra):
    path = _fake_family("nvml")
    if path is None:
        pytest.fail("libfakenvml.so not built: cmake --build build")
    env = {"CUABI_LIBNVML": path}
    env.update(extra)
    return env


def test_snapshot_reports_every_query():
    """snapshot() holds the driver versions and each GPU's name, uuid, memory, load, heat, power, processes."""
    res = run_json("""
        import json
        from cuabi import system
        print(json.dumps([system.snapshot(), system.device_count(), repr(system.gpus()[0]),
                          system.GPU(0).handle != 0]))
    """, env=_env())
    snap, count, rep, handle = res
    assert snap["driver_version"] == "580.65.06-fake" and snap["cuda_driver_version"] == [13, 0]
    assert count == 1 and rep == "<cuabi.system.GPU 0>" and handle
    (g,) = snap["gpus"]
    assert g["index"] == 0 and g["name"] == "Fake GPU 0"
    assert g["uuid"] == "GPU-fa4e0000-1111-2222-3333-444455556666"
    assert g["memory"] == {"total": 80 * GIB, "used": GIB + GIB // 2, "free": 78 * GIB, "reserved": GIB // 2}
    assert g["utilization"] == {"gpu": 37, "memory": 12}
    assert g["temperature"] == 41
    assert g["power_usage"] == 123.456 and g["power_limit"] == 700.0
    assert g["processes"] == [
        {"pid": 4242, "name": "fake-process-4242", "used_memory": 256 << 20, "kind": "compute"},
        {"pid": 4243, "name": "fake-process-4243", "used_memory": 512 << 20, "kind": "compute"}]


def test_unsupported_queries():
    """An unsupported query raises NOT_SUPPORTED, is None in snapshot(); memory falls back to the first query."""
    res = run_json("""
        import json
        import cuabi
        from cuabi import system
        gpu = system.GPU(0)
        try:
            gpu.power_usage
        except cuabi.NVMLError as e:
            err = [e.name, e.code, e.function]
        print(json.dumps([err, gpu.snapshot()["power_usage"], gpu.memory]))
    """, env=_env(FAKEFAM_NVML_UNSUPPORTED="nvmlDeviceGetPowerUsage,nvmlDeviceGetMemoryInfo_v2"))
    err, power, memory = res
    assert err == ["NVML_ERROR_NOT_SUPPORTED", 3, "nvmlDeviceGetPowerUsage"]
    assert power is None
    assert memory == [80 * GIB, GIB, 79 * GIB, 0]


def test_no_nvml_says_what_to_do():
    """Without NVML every query raises NVMLError with NVML_ERROR_LIBRARY_NOT_FOUND and libcuabi's report."""
    res = run_json("""
        import json
        import cuabi
        from cuabi import system
        out = []
        for q in (system.device_count, system.driver_version, system.gpus):
            try:
                q()
            except cuabi.NVMLError as e:
                out.append([e.code, e.name, str(e)])
        print(json.dumps(out))
    """, env={"CUABI_LIBNVML": "/nonexistent/cuabi-test/libnvidia-ml.so.1"})
    assert len(res) == 3
    for code, name, msg in res:
        assert (code, name) == (12, "NVML_ERROR_LIBRARY_NOT_FOUND")
        assert "/nonexistent/cuabi-test/libnvidia-ml.so.1" in msg and "what to do" in msg


def test_gpu_index_is_checked():
    """A GPU index NVML does not have, or not an int, is refused with the valid range."""
    res = run_json("""
        import json
        from cuabi import system
        out = []
        for bad in (1, -1, "0", True):
            try:
                system.GPU(bad)
            except (IndexError, TypeError) as e:
                out.append([type(e).__name__, str(e)])
        print(json.dumps(out))
    """, env=_env())
    assert res[0] == ["IndexError", "no GPU 1: NVML sees 1 GPU(s) (indices 0 to 0)"]
    assert res[1][0] == "IndexError" and res[2][0] == res[3][0] == "TypeError"


def test_nvml_initialised_once():
    """nvmlInit is called once however many queries follow."""
    res = run_json("""
        import ctypes, json, os
        from cuabi import system
        for _ in range(3):
            system.device_count()
            system.GPU(0).name
        fake = ctypes.CDLL(os.environ["CUABI_LIBNVML"])
        fake.fakefam_calls.restype = ctypes.c_uint64
        print(json.dumps([fake.fakefam_calls(b"nvmlInit_v2"), fake.fakefam_calls(b"nvmlDeviceGetCount_v2")]))
    """, env=_env())
    assert res == [1, 6]


def test_importing_system_loads_nothing():
    """import cuabi.system opens no library."""
    res = run_json("""
        import json
        import cuabi.system
        from cuabi import _backend
        print(json.dumps(_backend.loaded_backend() is None))
    """)
    assert res is True


def test_many_processes_are_all_listed():
    """More processes than the first array holds are all listed: cuabi asks again with room for them."""
    res = run_json("""
        import json
        from cuabi import system
        print(json.dumps([[p.pid, p.used_memory] for p in system.GPU(0).processes]))
    """, env=_env(FAKEFAM_NVML_PROCESSES="40"))
    assert res == [[4242 + k, (k + 1) << 28] for k in range(40)]
