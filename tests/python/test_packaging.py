# SPDX-License-Identifier: Apache-2.0
"""The wheels: tags, contents, size, metadata; each installs into a fresh folder and works there."""

import os
import subprocess
import sys
import zipfile

import pytest

from conftest import FAKE, LIBCUABI, PYDIR, ROOT

pytestmark = pytest.mark.skipif(os.environ.get("CUABI_TEST_INSTALLED") == "1",
                                reason="testing an installed copy")


def _release_like_library(out):
    """LIBCUABI without its debug information, as a Release build (what pip and
    tools/build-wheels make) has it: the size budget is about what users get."""
    import shutil
    lib = os.path.join(str(out), "lib", "libcuabi.so.1")
    os.makedirs(os.path.dirname(lib))
    shutil.copy(LIBCUABI, lib)
    if shutil.which("strip"):
        subprocess.run(["strip", "--strip-debug", lib], check=True)
    return lib


def _build_wheel(out, **env):
    code = ("import sys; sys.path.insert(0, %r); import build_backend; "
            "print(build_backend.build_wheel(%r))" % (PYDIR, str(out)))
    env = dict(os.environ, CUABI_PREBUILT_LIBRARY=_release_like_library(out), **env)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return os.path.join(str(out), p.stdout.strip().splitlines()[-1])


COMPILED = sys.implementation.name == "cpython" and sys.version_info >= (3, 10)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel a plain build makes here: the compiled tier on CPython >= 3.10."""
    pytest.importorskip("cffi")
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def pure_wheel(tmp_path_factory):
    """The wheel CUABI_BUILD_COMPILED=0 makes: nothing compiled against Python."""
    pytest.importorskip("cffi")
    return _build_wheel(tmp_path_factory.mktemp("pure"), CUABI_BUILD_COMPILED="0")


def _check_wheel(path, tag):
    name = os.path.basename(path)
    assert name.startswith("cuabi-1.1.0-" + tag + "-linux_") and name.endswith(".whl"), name
    assert os.path.getsize(path) < 1_000_000
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        for required in ("cuabi/__init__.py", "cuabi/driver.py", "cuabi/py.typed",
                         "cuabi/libcuabi.so.1", "cuabi/_cuabi_cffi.py",
                         "cuabi-1.1.0.dist-info/METADATA", "cuabi-1.1.0.dist-info/WHEEL",
                         "cuabi-1.1.0.dist-info/RECORD", "cuabi-1.1.0.dist-info/licenses/LICENSE"):
            assert required in names, required
        wheel_meta = z.read("cuabi-1.1.0.dist-info/WHEEL").decode()
        assert "Root-Is-Purelib: false" in wheel_meta and "Tag: %s-linux_" % tag in wheel_meta
        record = z.read("cuabi-1.1.0.dist-info/RECORD").decode()
        for n in names:
            assert n in record
        assert not any(n.endswith(".pyc") for n in names)
        meta = z.read("cuabi-1.1.0.dist-info/METADATA").decode()
        assert "License-Expression: Apache-2.0\nLicense-File: LICENSE\n" in meta
        assert ('Requires-Dist: cffi>=1.15; platform_python_implementation == "CPython" or '
                'platform_python_implementation == "PyPy"') in meta
        assert z.read("cuabi-1.1.0.dist-info/licenses/LICENSE").startswith(
            open(os.path.join(ROOT, "LICENSE"), "rb").read()[:200])
        return names


def test_pure_wheel_tag_contents_and_size(pure_wheel):
    """The pure wheel is py3-none-linux, under 1 MB, with package, library, license and metadata, nothing compiled."""
    names = _check_wheel(pure_wheel, "py3-none")
    assert not any(n.endswith(".so") for n in names)


def test_default_wheel_is_abi3_on_cpython(wheel):
    """A plain build is cp310-abi3 with both compiled modules on CPython >= 3.10, pure elsewhere."""
    if not COMPILED:
        names = _check_wheel(wheel, "py3-none")
        assert not any(n.endswith(".so") for n in names)
        return
    names = _check_wheel(wheel, "cp310-abi3")
    assert "cuabi/_cuabi_cffi_api.abi3.so" in names and "cuabi/_cuabi_speedups.abi3.so" in names
    # only stable-ABI modules in an abi3 wheel
    assert not any(n.endswith(".so") and "cpython-" in n for n in names), names


def _unpacked(wheel, tmp_path):
    """The wheel unpacked into a fresh folder, and the environment that runs it from there."""
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)  # what pip does for a purelib-less wheel, minus bookkeeping
    os.chmod(target / "cuabi" / "libcuabi.so.1", 0o755)
    # the wheel's own copy of libcuabi, and the backend it picks by itself
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUABI_LIBRARY", "PYTHONPATH", "CUABI_PY_BACKEND")}
    # keep only what supplies cffi (if anything): not the source tree
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and os.path.abspath(p) != os.path.abspath(PYDIR)]
    env["PYTHONPATH"] = os.pathsep.join([str(target)] + extra)
    if FAKE:
        env["CUABI_LIBCUDA"] = FAKE
    return target, env


def test_installed_wheel_works_without_the_source_tree(wheel, tmp_path):
    """`python -m cuabi` from the unpacked wheel alone finds the wheel's libcuabi (and its compiled tier)."""
    target, env = _unpacked(wheel, tmp_path)
    p = subprocess.run([sys.executable, "-m", "cuabi"], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert "Traceback" not in p.stdout + p.stderr
    assert str(target / "cuabi" / "libcuabi.so.1") in p.stdout
    if FAKE:
        assert p.returncode == 0, p.stdout
    if COMPILED:
        assert "cffi-compiled" in p.stdout, p.stdout


def test_installed_wheel_without_cffi_warns_and_uses_ctypes(wheel, tmp_path):
    """An installed compiled tier without cffi (pip --no-deps) runs on ctypes with a warning; forced cffi names cffi."""
    target, env = _unpacked(wheel, tmp_path)
    code = "import cuabi; print(cuabi.backend_name())"
    # -S: no site-packages, so no cffi
    p = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=str(target)), cwd=str(tmp_path))
    if sys.implementation.name == "pypy":  # cffi is built into PyPy
        assert p.returncode == 0 and p.stdout.strip() == "cffi", p.stdout + p.stderr
        return
    assert p.returncode == 0 and p.stdout.strip() == "ctypes", p.stdout + p.stderr
    if not COMPILED:  # nothing compiled installed: nothing to warn about
        assert "compiled tier" not in p.stderr, p.stderr
        return
    assert "compiled tier is installed but unusable" in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=str(target), CUABI_PY_BACKEND="cffi"),
                       cwd=str(tmp_path))
    assert p.returncode != 0
    assert "cffi backend is unavailable: cffi is not installed" in p.stderr, p.stderr


def test_sdist(tmp_path):
    """The sdist holds the sources to build from and no build products."""
    code = ("import sys; sys.path.insert(0, %r); import build_backend; "
            "print(build_backend.build_sdist(%r))" % (PYDIR, str(tmp_path)))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    import tarfile

    with tarfile.open(tmp_path / p.stdout.strip().splitlines()[-1]) as tf:
        names = tf.getnames()
    assert "cuabi-1.1.0/pyproject.toml" in names
    assert "cuabi-1.1.0/python/build_backend.py" in names
    assert any(n.startswith("cuabi-1.1.0/lib/") for n in names)
    assert not any("__pycache__" in n or n.endswith("libcuabi.so.1") for n in names)


def test_pyproject_matches_the_backend():
    """The backend writes the metadata itself: pyproject.toml must say the same."""
    tomllib = pytest.importorskip("tomllib")
    sys.path.insert(0, PYDIR)
    import build_backend

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["name"] == build_backend.NAME and project["version"] == build_backend.VERSION
    assert project["description"] == build_backend.SUMMARY
    assert project["requires-python"] == build_backend.REQUIRES_PYTHON
    assert project["license"] == build_backend.LICENSE_EXPRESSION
    assert project["license-files"] == ["LICENSE"] and os.path.exists(os.path.join(ROOT, "LICENSE"))
    assert project["dependencies"] == ["%s; %s" % (build_backend.CFFI, build_backend.CFFI_MARKER)]
    meta = build_backend._metadata()
    for c in project["classifiers"]:
        assert "Classifier: " + c in meta


def test_missing_build_tools_are_named(monkeypatch):
    """A build without a compiler or Python's headers names each missing tool and how to get it."""
    sys.path.insert(0, PYDIR)
    import build_backend

    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("CUABI_PYTHON_INCLUDE", "/nonexistent/include")
    monkeypatch.delenv("CUABI_PREBUILT_LIBRARY", raising=False)
    monkeypatch.delenv("CUABI_CMAKE_ARGS", raising=False)
    with pytest.raises(RuntimeError) as e:
        build_backend._preflight(compiled=True)
    msg = str(e.value)
    assert "a C compiler (CC=/nonexistent/cc was not found)" in msg
    assert "Python.h was not found in /nonexistent/include" in msg and "python3-dev" in msg


def test_bad_build_compiled_setting_is_refused(monkeypatch):
    """CUABI_BUILD_COMPILED other than 0, 1 or unset is an error, not a guess."""
    sys.path.insert(0, PYDIR)
    import build_backend

    monkeypatch.setenv("CUABI_BUILD_COMPILED", "yes")
    with pytest.raises(RuntimeError, match="CUABI_BUILD_COMPILED='yes'"):
        build_backend._compiled()


def test_build_requirements_and_metadata():
    """The build backend asks for cffi, writes the metadata and refuses a relative prebuilt library."""
    sys.path.insert(0, PYDIR)
    import build_backend

    reqs = build_backend.get_requires_for_build_wheel()
    assert reqs[0].startswith("cffi")
    meta = build_backend._metadata()
    assert "Name: cuabi" in meta and "Version: 1.1.0" in meta
    with pytest.raises(RuntimeError):
        os.environ["CUABI_PREBUILT_LIBRARY"] = "relative/lib.so"
        try:
            build_backend.build_library(str(ROOT))
        finally:
            del os.environ["CUABI_PREBUILT_LIBRARY"]
