"""The wheel: tag, contents, size; installs into a fresh folder and works there."""

import os
import subprocess
import sys
import zipfile

import pytest

from conftest import FAKE, LIBCUABI, PYDIR, ROOT

pytestmark = pytest.mark.skipif(os.environ.get("CUABI_TEST_INSTALLED") == "1",
                                reason="testing an installed copy")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("cffi")
    out = tmp_path_factory.mktemp("wheel")
    code = ("import sys; sys.path.insert(0, %r); import build_backend; "
            "print(build_backend.build_wheel(%r))" % (PYDIR, str(out)))
    env = dict(os.environ, CUABI_PREBUILT_LIBRARY=LIBCUABI)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return os.path.join(str(out), p.stdout.strip().splitlines()[-1])


def test_wheel_tag_contents_and_size(wheel):
    """The wheel is py3-none-linux, under 1 MB, and holds the package, library and metadata."""
    name = os.path.basename(wheel)
    assert name.startswith("cuabi-1.1.0-py3-none-linux_") and name.endswith(".whl")
    assert os.path.getsize(wheel) < 1_000_000
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for required in ("cuabi/__init__.py", "cuabi/driver.py", "cuabi/py.typed",
                         "cuabi/libcuabi.so.1", "cuabi/_cuabi_cffi.py",
                         "cuabi-1.1.0.dist-info/METADATA", "cuabi-1.1.0.dist-info/WHEEL",
                         "cuabi-1.1.0.dist-info/RECORD"):
            assert required in names, required
        wheel_meta = z.read("cuabi-1.1.0.dist-info/WHEEL").decode()
        assert "Root-Is-Purelib: false" in wheel_meta and "Tag: py3-none-linux_" in wheel_meta
        record = z.read("cuabi-1.1.0.dist-info/RECORD").decode()
        for n in names:
            assert n in record
        assert not any(n.endswith(".pyc") for n in names)


def test_installed_wheel_works_without_the_source_tree(wheel, tmp_path):
    """`python -m cuabi` from the unpacked wheel alone finds the wheel's libcuabi."""
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
    p = subprocess.run([sys.executable, "-m", "cuabi"], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert "Traceback" not in p.stdout + p.stderr
    assert str(target / "cuabi" / "libcuabi.so.1") in p.stdout
    if FAKE:
        assert p.returncode == 0, p.stdout


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
