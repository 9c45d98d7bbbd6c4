# SPDX-License-Identifier: Apache-2.0
"""Import cost, backend selection and library search."""

import os
import sys

import pytest

from conftest import LIBCUABI, PYDIR, run_json, run_py

import cuabi
from cuabi import _backend


def test_import_loads_nothing():
    """`import cuabi` imports neither cffi, ctypes nor any cuabi submodule."""
    data = run_json("""
        import sys, json
        import cuabi
        heavy = [m for m in ("cffi", "_cffi_backend", "ctypes", "cuabi.driver", "cuabi._device",
                             "cuabi._tables", "cuabi._backend") if m in sys.modules]
        print(json.dumps(heavy))
    """)
    assert data == []


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="the 15 ms target is for CPython")
def test_import_time_under_15ms():
    """`import cuabi` takes under 15 ms (best of five fresh interpreters)."""
    # best of several fresh interpreters, measuring only `import cuabi`
    times = []
    for _ in range(5):
        t = run_json("""
            import time, json
            t0 = time.perf_counter()
            import cuabi
            print(json.dumps(time.perf_counter() - t0))
        """)
        times.append(t)
    assert min(times) < 0.015, times


def test_version_matches_packaging():
    """cuabi.__version__, pyproject.toml, the build backend and libcuabi agree."""
    import re

    with open(os.path.join(os.path.dirname(PYDIR), "pyproject.toml")) as f:
        text = f.read()
    assert re.search(r'^version = "%s"$' % re.escape(cuabi.__version__), text, re.M)
    sys.path.insert(0, PYDIR)
    import build_backend

    assert build_backend.VERSION == cuabi.__version__
    assert cuabi.library_version() == tuple(int(x) for x in cuabi.__version__.split("."))


def test_lazy_attributes_and_dir():
    """Public names resolve on first access and are listed by dir(); others raise."""
    assert "Device" in dir(cuabi)
    assert cuabi.Device is cuabi._device.Device
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cuabi.nope  # noqa: B018


def test_backend_in_use_matches_request():
    """The backend in use is the one CUABI_PY_BACKEND asks for, on the library found."""
    wanted = os.environ.get("CUABI_PY_BACKEND")
    name = cuabi.backend_name()
    if wanted == "ctypes":
        assert name == "ctypes"
    elif wanted == "cffi":
        assert name.startswith("cffi")
    else:
        assert name in ("cffi", "cffi-compiled", "ctypes")
    assert cuabi.library_path() == LIBCUABI


@pytest.mark.parametrize("backend", ["cffi", "ctypes"])
def test_forced_backend(backend):
    """CUABI_PY_BACKEND=cffi|ctypes selects that backend in a fresh process."""
    data = run_json("""
        import json, cuabi
        print(json.dumps([cuabi.backend_name(), cuabi.driver.cuDriverGetVersion()]))
    """, env={"CUABI_PY_BACKEND": backend})
    assert data[0].startswith(backend)
    assert data[1] >= 12000


def test_bad_backend_value_is_a_clear_error():
    """An unknown CUABI_PY_BACKEND raises ConfigurationError listing the choices."""
    rc, out, err = run_py("""
        import cuabi
        try:
            cuabi.driver.cuDriverGetVersion()
        except cuabi.ConfigurationError as e:
            print("CONFIG", e)
    """, env={"CUABI_PY_BACKEND": "numba"})
    assert rc == 0, err
    assert "CONFIG" in out and "'numba'" in out and "cffi, ctypes" in out


def test_auto_falls_back_to_ctypes_without_cffi():
    """Without cffi's module the automatic choice is ctypes."""
    data = run_json("""
        import sys, json
        sys.modules["cuabi._cuabi_cffi"] = None     # as if cffi's module were not built
        sys.modules["cuabi._cuabi_cffi_api"] = None
        import cuabi
        print(json.dumps(cuabi.backend_name()))
    """, drop=("CUABI_PY_BACKEND",))
    assert data == "ctypes"


def test_forced_cffi_unavailable_says_so():
    """CUABI_PY_BACKEND=cffi without cffi's module raises ImportError saying so."""
    rc, out, err = run_py("""
        import sys
        sys.modules["cuabi._cuabi_cffi"] = None
        sys.modules["cuabi._cuabi_cffi_api"] = None
        import cuabi
        try:
            cuabi.backend_name()
        except ImportError as e:
            print("IMPORT", e)
    """, env={"CUABI_PY_BACKEND": "cffi"})
    assert "IMPORT" in out and "CUABI_PY_BACKEND=cffi" in out, (out, err)


def test_library_not_found_lists_candidates():
    """A bad CUABI_LIBRARY is reported as the only candidate, even beside a bundled copy."""
    rc, out, err = run_py("""
        import cuabi
        try:
            cuabi.driver.cuInit(0)
        except cuabi.LibraryNotFoundError as e:
            print("NOTFOUND", e.tried)
            print(e)
    """, env={"CUABI_LIBRARY": "/nonexistent/libcuabi.so.1"})
    assert rc == 0, err
    assert "NOTFOUND" in out
    assert "/nonexistent/libcuabi.so.1 (CUABI_LIBRARY)" in out
    assert "nothing else was tried" in out
    assert "next to the package" not in out


def test_library_not_found_without_the_bundled_copy(tmp_path):
    """Without CUABI_LIBRARY a package lacking its copy reports it, then the system loader."""
    import shutil

    pkg = os.path.dirname(cuabi.__file__)
    shutil.copytree(pkg, str(tmp_path / "cuabi"),
                    ignore=shutil.ignore_patterns("libcuabi.so*", "__pycache__"))
    rc, out, err = run_py("""
        import cuabi
        try:
            print("LOADED", cuabi.library_path())
        except cuabi.LibraryNotFoundError as e:
            print("NOTFOUND", [k for k, _r in e.tried])
            print(e)
    """, env={"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))},
        drop=("CUABI_LIBRARY",))  # the copy first; the caller's path still finds cffi where it lives
    assert rc == 0, err
    if "LOADED" in out:
        pytest.skip("a libcuabi.so.1 is installed system-wide: %s" % out)
    assert str(tmp_path / "cuabi" / "libcuabi.so.1") + " (next to the package): no such file" in out
    assert "(system loader)" in out and "set CUABI_LIBRARY" in out


def test_relative_library_path_refused():
    """A relative CUABI_LIBRARY is refused with the reason."""
    rc, out, err = run_py("""
        import cuabi
        try:
            cuabi.backend_name()
        except cuabi.LibraryNotFoundError as e:
            print(e)
    """, env={"CUABI_LIBRARY": "libcuabi.so.1"})
    assert "must be an absolute path" in out, (out, err)


def test_candidates_without_cuabi_library(monkeypatch):
    """Without CUABI_LIBRARY libcuabi is searched next to the package, then by the system loader."""
    monkeypatch.delenv("CUABI_LIBRARY", raising=False)
    kinds = [k for k, _p in _backend.candidates()]
    assert kinds == ["next to the package", "system loader"]


def test_cuabi_library_is_the_only_candidate(monkeypatch):
    """CUABI_LIBRARY, when set, is the only place libcuabi is looked for."""
    monkeypatch.setenv("CUABI_LIBRARY", "/somewhere/libcuabi.so.1")
    assert _backend.candidates() == [("CUABI_LIBRARY", "/somewhere/libcuabi.so.1")]
