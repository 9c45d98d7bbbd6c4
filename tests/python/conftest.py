# SPDX-License-Identifier: Apache-2.0
"""Shared set-up for cuabi's Python tests.

Libraries: ``CUABI_LIBRARY`` (libcuabi.so.1) and ``CUABI_LIBCUDA`` (the fake
driver, libfakecuda.so) are taken from the environment, else looked for in the
build folder (``build/`` or ``CUABI_BUILD_DIR``).  The backend is whatever
``CUABI_PY_BACKEND`` says (CI runs the suite once per backend).

``CUABI_TEST_REAL_GPU=1`` runs against the system's real driver instead of the
fake: tests that need the fake's introspection are skipped, tests marked
``gpu`` run.  Without it, ``gpu`` tests are skipped.

Expected-skip budget: a skip is only allowed for a reason listed in
``_ALLOWED_SKIPS`` whose condition holds in this configuration (no GPU, not
CPython, no NVRTC, ...).  Any other skip fails the session at the end, so a
test that must run on the fake driver cannot quietly skip.  ``needs()``
fails on the fake: the fake implements what the tests need.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYDIR = os.path.join(ROOT, "python")
REAL_GPU = os.environ.get("CUABI_TEST_REAL_GPU") == "1"


def _find(name, env):
    value = os.environ.get(env)
    if value:
        if not os.path.isabs(value) or not os.path.exists(value):
            raise pytest.UsageError("%s=%r: not an existing absolute path" % (env, value))
        return value
    build = os.environ.get("CUABI_BUILD_DIR", os.path.join(ROOT, "build"))
    for dirpath, _dirs, files in os.walk(build):
        if name in files:
            return os.path.realpath(os.path.join(dirpath, name))
    return None


INSTALLED = os.environ.get("CUABI_TEST_INSTALLED") == "1"


def _installed_library():
    """With CUABI_TEST_INSTALLED=1: the library the installed package brings (the
    suite tests that copy, not the build tree's), unless CUABI_LIBRARY names one."""
    import importlib.util

    spec = importlib.util.find_spec("cuabi")
    if spec is None or spec.origin is None:
        raise pytest.UsageError("CUABI_TEST_INSTALLED=1 but no cuabi package is installed")
    pkg = os.path.dirname(spec.origin)
    if os.path.abspath(pkg).startswith(os.path.abspath(PYDIR) + os.sep):
        raise pytest.UsageError("CUABI_TEST_INSTALLED=1 but cuabi is imported from the source "
                                "tree (%s): run from outside it, without python/ on sys.path" % pkg)
    path = os.path.join(pkg, "libcuabi.so.1")
    return path if os.path.exists(path) else None


if INSTALLED and not os.environ.get("CUABI_LIBRARY"):
    LIBCUABI = _installed_library()
else:
    LIBCUABI = _find("libcuabi.so.1", "CUABI_LIBRARY")
FAKE = None if REAL_GPU else _find("libfakecuda.so", "CUABI_LIBCUDA")
NOGPA = None
if FAKE:
    cand = os.path.join(os.path.dirname(FAKE), "libfakecuda_nogpa.so")
    NOGPA = os.environ.get("CUABI_TEST_NOGPA") or (cand if os.path.exists(cand) else None)


def _fake_family(family, variant=""):
    """The families' fake libraries (tests/fake/family.c): libfakenvrtc.so, ...
    (``variant`` "_partial": the one lacking a few functions), next to the fake
    driver or in the build folder; None when not built."""
    name = "libfake%s%s.so" % (family, variant)
    if FAKE:
        cand = os.path.join(os.path.dirname(FAKE), name)
        if os.path.exists(cand):
            return cand
    return _find(name, "CUABI_TEST_FAKE%s%s" % (family.upper(), variant.upper()))


FAMILIES = ("nvrtc", "nvjitlink", "nvvm", "nvml")
# the variables that choose each family's library (docs/families.md)
FAMILY_ENV = {"nvrtc": "CUABI_LIBNVRTC", "nvjitlink": "CUABI_LIBNVJITLINK", "nvvm": "CUABI_LIBNVVM",
              "nvml": "CUABI_LIBNVML"}


def _same_machine(path):
    """Whether the ELF file at path is for this interpreter's machine (an x86_64
    toolkit's stub cannot stand for a stub in an aarch64 run under qemu)."""
    import platform

    machines = {"x86_64": 62, "aarch64": 183}
    with open(path, "rb") as f:
        head = f.read(20)
    want = machines.get(platform.machine())
    return want is None or int.from_bytes(head[18:20], "little") == want


STUB = next((p for p in ("/usr/local/cuda/lib64/stubs/libcuda.so",
                         "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so")
             if os.path.exists(p) and _same_machine(p)), None)

if LIBCUABI is None:
    raise pytest.UsageError(
        "libcuabi.so.1 not found: build the project (cmake -B build && cmake --build build) "
        "or set CUABI_LIBRARY to its absolute path")
if FAKE is None and not REAL_GPU:
    raise pytest.UsageError(
        "libfakecuda.so not found: build the tests (cmake --build build) or set CUABI_LIBCUDA, "
        "or set CUABI_TEST_REAL_GPU=1 to test against a real driver")

if not INSTALLED or os.environ.get("CUABI_LIBRARY"):
    os.environ["CUABI_LIBRARY"] = LIBCUABI
if FAKE:
    os.environ["CUABI_LIBCUDA"] = FAKE
if not INSTALLED:
    # test the source tree: make sure cffi's generated module is current
    sys.path.insert(0, PYDIR)
    try:
        import cffi  # noqa: F401

        sys.path.insert(0, PYDIR)
        import build_modules

        target = os.path.join(PYDIR, "cuabi", "_cuabi_cffi.py")
        src = [os.path.join(PYDIR, "cdef", name) for name in ("own.h", "driver.h", "families.h")]
        src.append(os.path.join(PYDIR, "build_modules.py"))
        if not os.path.exists(target) or os.path.getmtime(target) < max(map(os.path.getmtime, src)):
            build_modules.build_abi(os.path.join(PYDIR, "cuabi"))
    except ImportError:
        pass

import cuabi  # noqa: E402


def pytest_report_header(config):
    from cuabi._backend import backend

    b = backend()
    return ["cuabi backend: %s; libcuabi: %s; driver: %s" % (b.name, b.library_path,
                                                              FAKE or "system (real GPU)")]


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a real GPU (set CUABI_TEST_REAL_GPU=1 on a GPU machine)")
    skip_fake = pytest.mark.skip(reason="needs the fake driver's introspection")
    for item in items:
        if "gpu" in item.keywords and not REAL_GPU:
            item.add_marker(skip_gpu)
        if "fake" in item.keywords and REAL_GPU:
            item.add_marker(skip_fake)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a real NVIDIA GPU and driver")
    config.addinivalue_line("markers", "fake: needs the fake driver's introspection functions")
    config.addinivalue_line("markers", "slow: long-running leak checks")


class Fake:
    """The fake driver's test API (same library handle libcuabi opened)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        for name in ("fakecuda_live_allocations", "fakecuda_launch_count", "fakecuda_record_count"):
            f = getattr(self.lib, name)
            f.restype = ctypes.c_uint64
            f.argtypes = []
        f = self.lib.fakecuda_live_objects
        f.restype = ctypes.c_uint64
        f.argtypes = [ctypes.c_char_p]

    def live_allocations(self):
        return self.lib.fakecuda_live_allocations()

    def live_objects(self, kind):
        return self.lib.fakecuda_live_objects(kind.encode())

    def launch_count(self):
        return self.lib.fakecuda_launch_count()

    def last_launch(self):
        """What the last successful launch asked for (struct fakecuda_launch), as a dict."""
        raw = (ctypes.c_int * 15)()
        assert self.lib.fakecuda_last_launch(raw)
        v = list(raw)
        return dict(grid=tuple(v[0:3]), block=tuple(v[3:6]), shared=v[6], cluster=tuple(v[7:10]),
                    extended=v[10], cooperative=v[11], programmatic=v[12],
                    priority=v[14] if v[13] else None)

    def request(self, name):
        """(count, version, flags) of the driver's cuGetProcAddress_v2 requests for ``name``."""
        info = (ctypes.c_uint64 * 4)()  # struct fakecuda_request: unsigned, int, u64 flags, int, int
        if not self.lib.fakecuda_request_info(name.encode(), info):
            return (0, 0, 0)
        raw = bytes(info)
        return (int.from_bytes(raw[0:4], sys.byteorder), int.from_bytes(raw[4:8], sys.byteorder, signed=True),
                int.from_bytes(raw[8:16], sys.byteorder))

    def last_call(self):
        """(name, args) of the last call a recording closure saw (record mode, echo entry points)."""

        class Call(ctypes.Structure):
            _fields_ = [("name", ctypes.c_char * 96), ("requested_version", ctypes.c_int),
                        ("requested_flags", ctypes.c_ulonglong), ("impl_version", ctypes.c_int),
                        ("per_thread", ctypes.c_int), ("nargs", ctypes.c_uint),
                        ("signature", ctypes.c_char * 33), ("args", ctypes.c_uint64 * 32)]

        c = Call()
        assert self.lib.fakecuda_record_last(ctypes.byref(c))
        return c.name.decode(), list(c.args[:c.nargs])


@pytest.fixture(scope="session")
def fake():
    if FAKE is None:
        pytest.skip("needs the fake driver")
    cuabi.load()
    return Fake(FAKE)


@pytest.fixture
def ctx():
    """Device 0's primary context, current; closed (with everything in it) afterwards."""
    c = cuabi.Device(0).set_current()
    yield c
    c.close()


@pytest.fixture
def module(ctx):
    """tests/python/data/kernels.ptx loaded in device 0's primary context (the fake's kernels)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kernels.ptx")) as f:
        m = cuabi.Module.from_ptx(f.read())
    yield m
    m.close()


def needs(entry_point):
    """Skip unless the loaded driver provides ``entry_point``; on the fake driver,
    which implements everything the tests use, fail instead."""
    try:
        cuabi.get_proc(entry_point)
    except (cuabi.errors.EntryPointNotFoundError, cuabi.errors.DriverTooOldError) as e:
        if FAKE is not None:
            pytest.fail("the fake driver must provide %s for this test (%s)" % (entry_point, e.name))
        pytest.skip("the driver in use does not provide %s" % entry_point)


def needs_clusters(entry_point):
    """needs(entry_point), and skip below compute capability 9.0 (no thread block clusters)."""
    needs(entry_point)
    if cuabi.Device(0).compute_capability < (9, 0):
        pytest.skip("thread block clusters need compute capability 9.0")


# ---------------------------------------------------------- expected skips

def _nvrtc_missing():
    try:
        cuabi.nvrtc_version()
        return False
    except cuabi.errors.NVRTCError:
        return True


def _nvjitlink_missing():
    try:
        cuabi.nvjitlink_version()
        return False
    except cuabi.errors.NVJitLinkError:
        return True


def _nvvm_missing():
    try:
        cuabi.nvvm_version()
        return False
    except cuabi.errors.NVVMError:
        return True


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _system_libcuabi():
    """Whether the system loader finds a libcuabi.so.1 for a fresh interpreter
    (without CUABI_LIBRARY), as a package lacking its own copy would."""
    env = {k: v for k, v in os.environ.items() if k != "CUABI_LIBRARY"}
    code = "import ctypes; ctypes.CDLL('libcuabi.so.1')"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True).returncode == 0


def cudadevrt_path():
    """The toolkit's libcudadevrt.a (device code calling cudaGraphSetConditional
    links it), or None: CUABI_TEST_CUDADEVRT, then CUDA_HOME/CUDA_PATH and
    /usr/local/cuda*, then the CUDA 13 wheels' nvidia/cu13/lib."""
    import glob
    import site

    given = os.environ.get("CUABI_TEST_CUDADEVRT")
    if given:
        return given if os.path.exists(given) else None
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    roots += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    cands = [os.path.join(r, "lib64", "libcudadevrt.a") for r in roots if r]
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        cands += [os.path.join(sp, "nvidia", "cu13", "lib", "libcudadevrt.a"),
                  os.path.join(sp, "nvidia", "cuda_runtime", "lib", "libcudadevrt.a")]
    return next((c for c in cands if os.path.exists(c)), None)


_CPYTHON = sys.implementation.name == "cpython"
# (start of the skip reason, condition under which that skip is expected)
_ALLOWED_SKIPS = [
    ("needs a real GPU", lambda: not REAL_GPU),
    ("needs the fake driver", lambda: REAL_GPU),
    ("the driver in use does not provide", lambda: REAL_GPU),
    ("thread block clusters need compute capability 9.0", lambda: REAL_GPU),
    ("set CUABI_TEST_EXPECT_SPEEDUPS=1", lambda: os.environ.get("CUABI_TEST_EXPECT_SPEEDUPS") != "1"),
    ("the contract is registered with the compiled tier only",
     lambda: os.environ.get("CUABI_TEST_EXPECT_SPEEDUPS") != "1"),
    ("checks the message on interpreters without ctypes.pythonapi", lambda: _CPYTHON),
    ("DLPack capsules need ctypes.pythonapi", lambda: not _CPYTHON),
    ("PyPy's memoryview.release() does not track exports", lambda: not _CPYTHON),
    ("the 15 ms target is for CPython", lambda: not _CPYTHON),
    ("needs reference counts", lambda: not hasattr(sys, "getrefcount")),
    ("NVRTC not installed", _nvrtc_missing),
    ("NVRTC or nvJitLink not installed", lambda: _nvrtc_missing() or _nvjitlink_missing()),
    ("libNVVM not found", _nvvm_missing),
    ("libcudadevrt.a not found", lambda: cudadevrt_path() is None),
    ("no toolkit stub libcuda.so here", lambda: STUB is None),
    ("libfakecuda_nogpa.so not built", lambda: NOGPA is None),
    ("testing an installed copy", lambda: os.environ.get("CUABI_TEST_INSTALLED") == "1"),
    ("a libcuabi.so.1 is installed system-wide", _system_libcuabi),
    ("could not import 'cffi'", lambda: not _importable("cffi")),
    ("could not import 'tomllib'", lambda: not _importable("tomllib")),  # before Python 3.11
    ("could not import 'torch'", lambda: not _importable("torch")),
    ("could not import 'cupy'", lambda: not _importable("cupy")),
    ("PyTorch without CUDA", lambda: True),
    ("needs two GPUs", lambda: REAL_GPU),  # peer access on a one-GPU machine
    # CI installs these for CPython (.ci/setup.sh); PyPy's venv has none of them, nor
    # has the fresh venv that tests an installed wheel (the wheel and pytest only)
    ("could not import 'numpy'", lambda: not _CPYTHON or INSTALLED),
    ("could not import 'hypothesis'", lambda: not _CPYTHON or INSTALLED),
    ("could not import 'mypy'", lambda: not _CPYTHON or INSTALLED),
    ("interrupt injection needs CPython's signal checks", lambda: not _CPYTHON),
]
_skipped = []


def _skip_reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return longrepr[2].split("Skipped: ", 1)[-1]
    return str(longrepr)


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append((report.nodeid, _skip_reason(report)))


def _unexpected_skips():
    return [(nodeid, reason) for nodeid, reason in _skipped
            if not any(reason.startswith(start) and cond() for start, cond in _ALLOWED_SKIPS)]


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _unexpected_skips():
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    unexpected = _unexpected_skips()
    terminalreporter.write_line("expected-skip budget: %d skipped, %d of them not expected here"
                                % (len(_skipped), len(unexpected)))
    for nodeid, reason in unexpected:
        terminalreporter.write_line("  UNEXPECTED SKIP %s: %s" % (nodeid, reason), red=True)


def subprocess_pythonpath():
    """PYTHONPATH for a child interpreter: the source tree first, unless the suite
    tests an installed package (CUABI_TEST_INSTALLED=1)."""
    parts = [] if INSTALLED else [PYDIR]
    return os.pathsep.join(filter(None, parts + [os.environ.get("PYTHONPATH")]))


def in_thread(fn):
    """Run ``fn`` in a new thread (where no context is current); return its
    result, or raise its exception here."""
    import threading

    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")


def run_py(code, env=None, drop=(), check=False):
    """Run ``code`` in a fresh interpreter (same backend, libraries, sys.path).

    Returns ``(returncode, stdout, stderr)``.  ``env`` adds variables, ``drop``
    removes some.
    """
    e = dict(os.environ)
    for k in drop:
        e.pop(k, None)
    e["PYTHONPATH"] = subprocess_pythonpath()
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e, capture_output=True,
                       text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("subprocess failed (%d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    return p.returncode, p.stdout, p.stderr


def run_json(code, env=None, drop=()):
    """Run ``code`` that prints one JSON document last; return it parsed."""
    rc, out, err = run_py(code, env=env, drop=drop)
    assert rc == 0, "subprocess failed (%d):\n%s\n%s" % (rc, out, err)
    return json.loads(out.strip().splitlines()[-1])
