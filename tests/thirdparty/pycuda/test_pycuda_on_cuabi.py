# SPDX-License-Identifier: Apache-2.0
"""PyCUDA, built unchanged against cuabi's compat header and -lcuabi, checked without a GPU.

Run by ``tests/thirdparty/pycuda/run``, which builds PyCUDA and sets the environment:
``CUABI_PYCUDA_TREE`` (the built PyCUDA, also on ``PYTHONPATH``), ``CUABI_BUILD_DIR``
(cuabi's build folder, also on ``LD_LIBRARY_PATH``) and ``CUABI_LIBCUDA`` (the test
suite's fake driver, for the checks that run PyCUDA in this process).

1. How it is linked: ``_driver*.so`` needs ``libcuabi.so.1`` and no libcuda, and every
   driver entry point it imports is a versioned ``cuabi_cu*`` symbol that cuabi exports.
2. Without a usable driver, ``pycuda.driver.init()`` and ``import pycuda.autoinit``
   raise PyCUDA's own exception whose text is cuabi's description of what is wrong.
3. On the fake driver: devices, contexts, memory, copies, streams, events, PTX kernels
   launched through each of PyCUDA's call interfaces, gpuarray, memory pools, and
   the errors a driver returns.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

TREE = Path(os.environ["CUABI_PYCUDA_TREE"])
BUILD = Path(os.environ["CUABI_BUILD_DIR"])
FAKE = Path(os.environ["CUABI_LIBCUDA"])
LIBCUABI = BUILD / "libcuabi.so.1"

# cuabi's own result codes (docs/abi.md), as PyCUDA sees them.
DRIVER_NOT_FOUND, DRIVER_STUB, DRIVER_UNUSABLE, ENTRY_POINT_NOT_FOUND = 100001, 100002, 100003, 100004
BAD_ENVIRONMENT = 100006


def driver_module() -> Path:
    """PyCUDA's compiled driver wrapper, the one that calls the CUDA driver API."""
    found = sorted((TREE / "pycuda").glob("_driver*.so"))
    assert found, "no pycuda/_driver*.so in %s: the build did not produce it" % TREE
    return found[0]


def tool_output(*cmd: str) -> str:
    """Stdout of a binutils command; fails the test with its stderr if it fails."""
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, "%s failed: %s" % (" ".join(cmd), result.stderr)
    return result.stdout


def cuabi_text(code: int) -> str:
    """cuabi_error_string(code): cuabi's own description, from the library PyCUDA uses."""
    lib = ctypes.CDLL(str(LIBCUABI))
    lib.cuabi_error_string.restype = ctypes.c_char_p
    lib.cuabi_error_string.argtypes = [ctypes.c_int]
    return lib.cuabi_error_string(code).decode()


# ------------------------------------------------------------------ 1. linkage

def test_driver_module_needs_libcuabi_and_no_libcuda() -> None:
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                        tool_output("readelf", "-d", str(driver_module())))
    assert "libcuabi.so.1" in needed, "PyCUDA is not linked with cuabi: NEEDED %s" % needed
    assert not [n for n in needed if n.startswith("libcuda")], \
        "PyCUDA needs libcuda at load time; it must need only libcuabi.so.1: %s" % needed


def test_driver_entry_points_are_versioned_cuabi_symbols() -> None:
    undefined = tool_output("nm", "-D", "--undefined-only", str(driver_module())).split()
    imported = [s for s in undefined if re.match(r"cu[A-Z_]|cuabi_", s)]
    plain = [s for s in imported if not s.startswith("cuabi_cu")]
    assert not plain, "PyCUDA calls the driver directly, not through cuabi: %s" % plain[:10]
    unversioned = [s for s in imported if "@CUABI_" not in s]
    assert not unversioned, "imports without a cuabi version node: %s" % unversioned[:10]
    assert len(imported) > 100, "only %d cuabi imports: PyCUDA calls hundreds" % len(imported)
    exported = set(re.findall(r"\b(cuabi_\w+)@@?CUABI_",
                              tool_output("nm", "-D", "--defined-only", str(LIBCUABI))))
    missing = sorted({s.split("@")[0] for s in imported} - exported)
    assert not missing, "PyCUDA imports what libcuabi.so.1 does not export: %s" % missing


def test_build_used_the_compat_header_and_no_libcuda() -> None:
    """The compiler and linker lines setup.py ran: cuabi's folders, never the toolkit's."""
    lines = [ln for ln in (TREE / "build.log").read_text(errors="replace").splitlines()
             if re.match(r"\s*(\S*/)?(gcc|g\+\+|cc|c\+\+|x86_64-linux-gnu-g(cc|\+\+))\s", ln)]
    link = [ln for ln in lines if "-shared" in ln and "_driver" in ln]
    assert len(link) == 1, "expected one link line for _driver in build.log, found %d" % len(link)
    tokens = link[0].split()
    assert "-lcuabi" in tokens, "the link line lacks -lcuabi: %s" % link[0]
    libcuda = [t for t in tokens if re.match(r"-l(:lib)?cuda\b", t) or "stubs" in t]
    assert not libcuda, "libcuda is on PyCUDA's link line (build.log): %s" % libcuda
    for line in lines:
        for folder in re.findall(r"-I(\S+)", line):
            if Path(folder, "cuda.h").is_file():
                assert Path(folder).resolve().parts[-2:] == ("cuabi", "compat"), \
                    "a cuda.h other than cuabi's compat header was on the include path: " + folder


# ------------------------------------------------------------- 2. no driver

NO_DRIVER_PROGRAM = textwrap.dedent("""
    import json, sys
    out = {}
    import pycuda.driver as drv
    try:
        drv.init()
        out["init"] = "no error"
    except drv.Error as e:
        out["init"] = [type(e).__name__, str(e)]
    try:
        import pycuda.autoinit
        out["autoinit"] = "no error"
    except drv.Error as e:
        out["autoinit"] = [type(e).__name__, str(e)]
    print(json.dumps(out))
""")

NO_DRIVER_SCENARIOS = {
    "no file at CUABI_LIBCUDA": ("/nonexistent/cuabi-test/libcuda.so.1", DRIVER_NOT_FOUND),
    "a library without cuGetProcAddress_v2": (str(BUILD / "tests" / "libfakecuda_nogpa.so"),
                                              DRIVER_UNUSABLE),
    "a relative CUABI_LIBCUDA": ("libcuda.so.1", BAD_ENVIRONMENT),
    "the toolkit's stub": ("/usr/local/cuda/lib64/stubs/libcuda.so", DRIVER_STUB),
}


def run_python(program: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Runs a program in a fresh interpreter (the driver load is once per process)."""
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env=full_env, timeout=120)


def assert_no_crash(result: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    """The child's JSON; a signal means PyCUDA crashed formatting an error."""
    assert result.returncode == 0, (
        "PyCUDA %s: exit status %d. A negative status is a signal: PyCUDA builds its "
        "message with cuGetErrorString(code, &text) and uses text without checking the "
        "result, so cuabi_cuGetErrorString must answer every code, cuabi's own included, "
        "with or without a driver.\nstderr:\n%s"
        % (what, result.returncode, result.stderr[-3000:]))
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("scenario", sorted(NO_DRIVER_SCENARIOS))
def test_without_a_driver_pycuda_reports_cuabis_reason(scenario: str) -> None:
    path, code = NO_DRIVER_SCENARIOS[scenario]
    if path.startswith("/usr/local/cuda") and not Path(path).exists():
        pytest.skip("the CUDA toolkit's stub libcuda.so is not installed here")
    out = assert_no_crash(run_python(NO_DRIVER_PROGRAM, CUABI_LIBCUDA=path),
                          "crashed in cuInit with " + scenario)
    text = cuabi_text(code)
    assert text != cuabi_text(100999), "cuabi has no text for its own code %d" % code
    for step in ("init", "autoinit"):
        assert out[step] != "no error", "%s succeeded with %s" % (step, scenario)
        kind, message = out[step]
        assert message == "cuInit failed: " + text, (
            "with %s, PyCUDA's %s error should carry cuabi's reason %r; it says %r"
            % (scenario, step, text, message))
        assert kind == "LogicError", "cuabi's codes are not among PyCUDA's special cases"


# --------------------------------------------------------- 3. the fake driver

# A real PTX kernel (x[i] *= s for i < n): on a GPU it runs as written; the fake
# driver runs its own host kernel of the same name and parameter layout.
SCALE_F64_PTX = """
.version 7.0
.target sm_50
.address_size 64
.visible .entry scale_f64(.param .u64 x_param, .param .f64 s_param, .param .u64 n_param)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<6>;
    .reg .f64 %fd<3>;
    ld.param.u64 %rd1, [x_param];
    ld.param.f64 %fd1, [s_param];
    ld.param.u64 %rd2, [n_param];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd3, %r4;
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    shl.b64 %rd5, %rd3, 3;
    add.s64 %rd4, %rd4, %rd5;
    ld.global.f64 %fd2, [%rd4];
    mul.f64 %fd2, %fd2, %fd1;
    st.global.f64 [%rd4], %fd2;
DONE:
    ret;
}
"""


class Fake:
    """The fake driver's test API (tests/fake/README.md), from the instance cuabi loaded."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(str(FAKE))
        self.lib.fakecuda_live_objects.restype = ctypes.c_uint64
        self.lib.fakecuda_live_objects.argtypes = [ctypes.c_char_p]
        self.lib.fakecuda_live_allocations.restype = ctypes.c_uint64
        self.lib.fakecuda_launch_count.restype = ctypes.c_uint64

    def live(self, kind: str) -> int:
        """Live contexts, streams, events, modules... (the fake's count)."""
        return int(self.lib.fakecuda_live_objects(kind.encode()))

    def allocations(self) -> int:
        """Allocations not yet freed."""
        return int(self.lib.fakecuda_live_allocations())

    def launches(self) -> int:
        """Kernel launches run so far."""
        return int(self.lib.fakecuda_launch_count())

    def error_string(self, code: int) -> str:
        """The fake driver's own cuGetErrorString text."""
        text = ctypes.c_char_p()
        assert self.lib.cuGetErrorString(code, ctypes.byref(text)) == 0
        return text.value.decode()


@pytest.fixture(scope="module")
def drv() -> Any:
    """pycuda.driver, initialised on the fake driver."""
    import pycuda.driver as driver
    driver.init()
    return driver


@pytest.fixture(scope="module")
def fake(drv: Any) -> Fake:
    """The fake's test API (after cuabi loaded the fake)."""
    return Fake()


@pytest.fixture
def ctx(drv: Any, fake: Fake) -> Iterator[Any]:
    """A context made by PyCUDA, detached (so destroyed in the driver) afterwards."""
    before = fake.live("contexts")
    context = drv.Device(0).make_context()
    yield context
    context.pop()
    context.detach()
    assert fake.live("contexts") == before, "PyCUDA's detach left the context alive"


def test_driver_and_header_versions(drv: Any) -> None:
    assert drv.get_version() == (13, 5, 0)  # CUDA_VERSION of the compat header (CUDA 13.5)
    assert drv.get_driver_version() == 13000  # the fake's default


def test_device_queries(drv: Any) -> None:
    assert drv.Device.count() == 1
    dev = drv.Device(0)
    assert dev.name() == "cuabi fake device 0"
    assert dev.compute_capability() == (9, 0)
    assert dev.total_memory() == 8 << 30
    assert dev.pci_bus_id() == "0000:10:00.0"
    attr = drv.device_attribute
    assert dev.get_attribute(attr.WARP_SIZE) == 32
    assert dev.get_attribute(attr.MULTIPROCESSOR_COUNT) == 4
    attributes = dev.get_attributes()
    assert attributes[attr.MAX_THREADS_PER_BLOCK] == 1024
    assert len(attributes) > 100


def test_contexts(drv: Any, fake: Fake, ctx: Any) -> None:
    assert drv.Context.get_current() == ctx
    assert drv.Context.get_device() == drv.Device(0)
    assert ctx.get_api_version() == 3020
    drv.Context.synchronize()
    ctx.pop()
    assert drv.Context.get_current() is None
    ctx.push()
    second = drv.Device(0).make_context()
    assert fake.live("contexts") == 2 and drv.Context.get_current() == second
    second.pop()
    second.detach()
    assert fake.live("contexts") == 1 and drv.Context.get_current() == ctx


def test_primary_context(drv: Any, fake: Fake) -> None:
    primary = drv.Device(0).retain_primary_context()
    primary.push()
    buf = drv.mem_alloc(64)
    assert drv.Context.get_device() == drv.Device(0)
    buf.free()
    primary.pop()
    primary.detach()


def test_memory_copies_and_memsets(drv: Any, fake: Fake, ctx: Any) -> None:
    allocations = fake.allocations()
    host = np.arange(1024, dtype=np.float32)
    a = drv.mem_alloc(host.nbytes)
    b = drv.to_device(host)
    assert fake.allocations() == allocations + 2
    free_after, total = drv.mem_get_info()
    assert total == 8 << 30 and free_after <= total - 2 * host.nbytes
    drv.memcpy_htod(a, host[::-1].copy())
    back = np.empty_like(host)
    drv.memcpy_dtoh(back, a)
    assert np.array_equal(back, host[::-1])
    drv.memcpy_dtod(a, b, host.nbytes)
    assert np.array_equal(drv.from_device_like(a, host), host)
    drv.memset_d32(a, 0x3F800000, host.size)  # 1.0f
    assert np.all(drv.from_device_like(a, host) == 1.0)
    drv.memset_d8(a, 0, host.nbytes)
    drv.memset_d16(int(a) + 2, 0x4000, 1)  # upper half of element 0: 2.0f
    assert drv.from_device_like(a, host)[:2].tolist() == [2.0, 0.0]
    assert drv.mem_get_address_range(int(b) + 100) == (int(b), host.nbytes)
    a.free()
    b.free()
    assert fake.allocations() == allocations


def test_streams_events_and_async_copies(drv: Any, fake: Fake, ctx: Any) -> None:
    streams, events = fake.live("streams"), fake.live("events")
    host = drv.pagelocked_empty(4096, np.uint32)
    host[:] = np.arange(4096, dtype=np.uint32)
    dev = drv.mem_alloc(host.nbytes)
    stream = drv.Stream()
    start, end = drv.Event(), drv.Event()
    start.record(stream)
    drv.memcpy_htod_async(dev, host, stream)
    back = drv.pagelocked_empty_like(host)
    drv.memcpy_dtoh_async(back, dev, stream)
    end.record(stream)
    stream.synchronize()
    end.synchronize()
    assert stream.is_done() and end.query()
    assert end.time_since(start) >= 0.0
    assert np.array_equal(back, host)
    assert (fake.live("streams"), fake.live("events")) == (streams + 1, events + 2)
    del stream, start, end
    assert (fake.live("streams"), fake.live("events")) == (streams, events)
    dev.free()


def test_managed_and_mapped_host_memory(drv: Any, ctx: Any) -> None:
    managed = drv.managed_zeros(256, np.float64, mem_flags=drv.mem_attach_flags.GLOBAL)
    managed[:] = 1.5
    assert managed.sum() == 384.0
    mapped = drv.pagelocked_empty(16, np.int32, mem_flags=drv.host_alloc_flags.DEVICEMAP)
    assert mapped.base.get_device_pointer() != 0


def test_ptx_kernel_through_each_call_interface(drv: Any, fake: Fake, ctx: Any) -> None:
    module = drv.module_from_buffer(SCALE_F64_PTX.encode())
    scale = module.get_function("scale_f64")
    assert scale.get_attribute(drv.function_attribute.MAX_THREADS_PER_BLOCK) == 1024
    x = np.linspace(-4.0, 4.0, 1000)
    dev = drv.to_device(x)
    launches = fake.launches()
    scale(dev, np.float64(2.5), np.uintp(x.size), block=(128, 1, 1), grid=(8, 1))
    assert np.array_equal(drv.from_device_like(dev, x), x * 2.5)
    scale.prepare("PdQ")
    scale.prepared_call((8, 1), (128, 1, 1), dev, 2.0, x.size)
    stream = drv.Stream()
    scale.prepared_async_call((8, 1), (128, 1, 1), stream, dev, -1.0, x.size)
    stream.synchronize()
    assert np.array_equal(drv.from_device_like(dev, x), x * -5.0)
    inout = x.copy()
    scale(drv.InOut(inout), np.float64(3.0), np.uintp(x.size), block=(256, 1, 1), grid=(4, 1))
    assert np.array_equal(inout, x * 3.0)
    assert fake.launches() == launches + 4
    invalid = fake.error_string(1)  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(drv.LogicError) as excinfo:  # 2048 threads per block
        scale(dev, np.float64(1.0), np.uintp(x.size), block=(2048, 1, 1), grid=(1, 1))
    assert str(excinfo.value) == "cuFuncSetBlockShape failed: " + invalid
    with pytest.raises(drv.LogicError) as excinfo:  # grid y above 65535
        scale(dev, np.float64(1.0), np.uintp(x.size), block=(1, 1, 1), grid=(1, 70000))
    assert str(excinfo.value) == "cuLaunchKernel failed: " + invalid
    assert fake.launches() == launches + 4
    dev.free()


def test_gpuarray_transfers_and_memory_pool(drv: Any, fake: Fake, ctx: Any) -> None:
    import pycuda.gpuarray as gpuarray
    import pycuda.tools as tools
    host = np.arange(60, dtype=np.int64).reshape(3, 4, 5)
    arr = gpuarray.to_gpu(host)
    assert arr.shape == (3, 4, 5) and arr.dtype == np.int64
    assert np.array_equal(arr.get(), host)
    assert arr.__cuda_array_interface__["data"][0] == int(arr.gpudata)
    arr.set(host * 2)
    assert np.array_equal(arr.get(), host * 2)
    pool = tools.DeviceMemoryPool()
    block = pool.allocate(4096)
    assert pool.active_blocks == 1
    block.free()
    assert pool.active_blocks == 0 and pool.held_blocks == 1
    pool.free_held()
    assert pool.held_blocks == 0


def test_driver_errors_carry_the_drivers_text(drv: Any, fake: Fake, ctx: Any) -> None:
    with pytest.raises(drv.MemoryError) as excinfo:
        drv.mem_alloc(1 << 50)
    assert str(excinfo.value) == "cuMemAlloc failed: " + fake.error_string(2)
    with pytest.raises(drv.LogicError) as excinfo:
        drv.module_from_buffer(b"not a module")
    assert str(excinfo.value).startswith("cuModuleLoadDataEx failed: " + fake.error_string(200))


def test_an_entry_point_the_driver_lacks_is_reported_not_crashed() -> None:
    """cuCtxGetLimit is not in the fake: cuabi answers its own code, PyCUDA must say so."""
    program = textwrap.dedent("""
        import json
        import pycuda.driver as drv
        drv.init()
        ctx = drv.Device(0).make_context()
        try:
            drv.Context.get_limit(drv.limit.STACK_SIZE)
            out = "no error"
        except drv.Error as e:
            out = [type(e).__name__, str(e)]
        ctx.pop()
        print(json.dumps(out))
    """)
    out = assert_no_crash(run_python(program), "crashed reporting an entry point the driver lacks")
    assert out == ["LogicError", "cuCtxGetLimit failed: " + cuabi_text(ENTRY_POINT_NOT_FOUND)]
