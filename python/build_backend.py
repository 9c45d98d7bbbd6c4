# SPDX-License-Identifier: Apache-2.0
"""cuabi's PEP 517 build backend: libcuabi.so.1, the Python package and, on
CPython, the compiled tier.

It builds the C library with CMake (the project's own CMakeLists.txt), writes
cffi's out-of-line ABI module (no compiler needed for that step) and, on
CPython 3.10 and later, compiles cffi's API-mode module and the speedups
module against the stable ABI (python/build_modules.py), then packs the
wheel by hand:

* ``cp310-abi3-<platform>``: the compiled tier, for every CPython from 3.10
  (build_modules.LIMITED_API says why 3.10);
* ``py3-none-<platform>``: no module compiled against Python (cffi's ABI
  mode, ctypes where cffi is missing), for PyPy, CPython 3.8 and 3.9 and the
  rest.

Both declare cffi as a dependency wherever cffi installs (CPython, PyPy).

Environment knobs (for CI, tools/build-wheels and packagers):

* ``CUABI_BUILD_COMPILED``: ``1`` requires the compiled tier (an error where
  it cannot be built), ``0`` builds the pure wheel; unset: compiled on
  CPython >= 3.10, pure elsewhere;
* ``CUABI_PREBUILT_LIBRARY``: absolute path of an already built libcuabi.so.1
  to bundle instead of running CMake;
* ``CUABI_CMAKE_ARGS``: extra arguments for the CMake configure step (a
  toolchain, a static libffi: see tools/build-wheels);
* ``CUABI_WHEEL_PLATFORM``: the wheel's platform tag (e.g.
  ``manylinux_2_28_x86_64``, which tools/build-wheels sets after building for
  that glibc; auditwheel checks it); default: this interpreter's
  (``linux_x86_64``), right for a wheel built and installed on one machine;
* ``CC``, ``CUABI_PYTHON_INCLUDE``: the compiler and the target CPython's
  headers for the compiled tier (build_modules.py).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "cuabi"
VERSION = "1.1.0"
SUMMARY = "The CUDA driver API through a stable C ABI, from any Python 3 (CPython, PyPy)"
REQUIRES_PYTHON = ">=3.8"
LICENSE_EXPRESSION = "Apache-2.0"
# cffi wherever it installs; elsewhere the package runs on ctypes
CFFI = "cffi>=1.15"
CFFI_MARKER = 'platform_python_implementation == "CPython" or platform_python_implementation == "PyPy"'

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PKG = os.path.join(HERE, "cuabi")

# files that live in the package folder during development but are build products
_BUILD_PRODUCTS = ("libcuabi.so", "_cuabi_cffi", "_cuabi_speedups")


def _log(msg):
    print("build_backend: " + msg, file=sys.stderr)
    sys.stderr.flush()


def _which(*names):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


# -- PEP 517 hooks -------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    reqs = [CFFI]
    if not os.environ.get("CUABI_PREBUILT_LIBRARY"):
        if _which("cmake") is None:
            reqs.append("cmake>=3.18")
        if _which("make", "ninja") is None:
            reqs.append("ninja")
    return reqs


def get_requires_for_build_editable(config_settings=None):
    return get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return []


def _metadata():
    readme = os.path.join(ROOT, "docs", "python.md")
    lines = [
        "Metadata-Version: 2.4",
        "Name: " + NAME,
        "Version: " + VERSION,
        "Summary: " + SUMMARY,
        "License-Expression: " + LICENSE_EXPRESSION,
        "License-File: LICENSE",
        "Requires-Python: " + REQUIRES_PYTHON,
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Programming Language :: Python :: Implementation :: CPython",
        "Classifier: Programming Language :: Python :: Implementation :: PyPy",
        "Classifier: Operating System :: POSIX :: Linux",
        "Requires-Dist: %s; %s" % (CFFI, CFFI_MARKER),
        # kept so that `pip install cuabi[cffi]` from 1.0 instructions still works
        "Provides-Extra: cffi",
        'Requires-Dist: %s; extra == "cffi"' % CFFI,
    ]
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _platform_tag():
    plat = os.environ.get("CUABI_WHEEL_PLATFORM")
    if plat:
        return plat
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _modules():
    sys.path.insert(0, HERE)
    try:
        import build_modules
    finally:
        sys.path.remove(HERE)
    return build_modules


def _compiled():
    """Whether this build makes the compiled tier (CUABI_BUILD_COMPILED)."""
    want = os.environ.get("CUABI_BUILD_COMPILED", "")
    if want not in ("", "0", "1"):
        raise RuntimeError("CUABI_BUILD_COMPILED=%r: use 1 (compiled tier), 0 (pure package) or "
                           "leave it unset (compiled on CPython >= 3.10)" % want)
    if want == "0":
        return False
    oldest = _modules().LIMITED_API
    able = sys.implementation.name == "cpython" and sys.version_info[:2] >= oldest
    if want == "1" and not able:
        raise RuntimeError("CUABI_BUILD_COMPILED=1: the compiled tier needs CPython >= %d.%d, this "
                           "is %s %d.%d" % (oldest + (sys.implementation.name,)
                                            + sys.version_info[:2]))
    return able


def _tag(compiled):
    if not compiled:
        return "py3-none-" + _platform_tag()
    abi = "cp%d%d" % _modules().LIMITED_API
    return "%s-abi3-%s" % (abi, _platform_tag())


def _dist_info():
    return "%s-%s.dist-info" % (NAME, VERSION)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(_wheel_file(_tag(_compiled())))
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def _wheel_file(tag):
    return ("Wheel-Version: 1.0\nGenerator: build_backend %s\nRoot-Is-Purelib: false\nTag: %s\n"
            % (VERSION, tag))


# -- building the pieces ---------------------------------------------------------------

def _preflight(compiled):
    """Every missing build tool at once, before anything is built: a RuntimeError
    that says what is missing and how to get it."""
    missing = []
    if not os.environ.get("CUABI_PREBUILT_LIBRARY"):
        extra = os.environ.get("CUABI_CMAKE_ARGS", "")
        cc = os.environ.get("CC", "").split()
        if "CMAKE_C_COMPILER" not in extra and not (_which(cc[0]) if cc else
                                                    _which("cc", "gcc", "clang")):
            missing.append("a C compiler%s (Debian/Ubuntu: apt install build-essential; "
                           "Fedora/RHEL: dnf install gcc), or set CC"
                           % (" (CC=%s was not found)" % cc[0] if cc else ""))
        if "CUABI_FFI_LIBRARY" not in extra:
            pc = _which("pkg-config", "pkgconf")
            if pc is None:
                missing.append("pkg-config, to find libffi (apt install pkg-config; "
                               "dnf install pkgconf-pkg-config)")
            elif subprocess.run([pc, "--exists", "libffi"]).returncode != 0:
                missing.append("libffi's development files, for cuabi_call (apt install libffi-dev; "
                               "dnf install libffi-devel), or name a libffi with "
                               "CUABI_CMAKE_ARGS='-DCUABI_FFI_LIBRARY=... -DCUABI_FFI_INCLUDE_DIR=...'")
    if compiled:
        checks = [_modules().python_includes]
        if not missing:  # else the compiler is already named
            checks.insert(0, _modules().compiler)
        for check in checks:
            try:
                check()
            except RuntimeError as exc:
                missing.append(str(exc))
    if missing:
        raise RuntimeError("cannot build cuabi here; missing:\n  - " + "\n  - ".join(missing))


def build_library(workdir):
    """Build libcuabi.so.1 with CMake and return the path of the real file."""
    pre = os.environ.get("CUABI_PREBUILT_LIBRARY")
    if pre:
        if not os.path.isabs(pre) or not os.path.isfile(pre):
            raise RuntimeError("CUABI_PREBUILT_LIBRARY must be the absolute path of an existing "
                               "libcuabi.so.1, got %r" % pre)
        return os.path.realpath(pre)
    if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
        raise RuntimeError("CMakeLists.txt not found in %s: cannot build libcuabi" % ROOT)
    cmake = _which("cmake")
    if cmake is None:
        raise RuntimeError("cmake was not found (it is a build requirement)")
    build = os.path.join(workdir, "cmake-build")
    args = [cmake, "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
            "-DCUABI_BUILD_TESTS=OFF", "-DCUABI_BUILD_BENCH=OFF", "-DBUILD_TESTING=OFF"]
    if _which("make") is None and _which("ninja") is not None:
        args += ["-G", "Ninja"]
    extra = os.environ.get("CUABI_CMAKE_ARGS")
    if extra:
        args += extra.split()
    _log(" ".join(args))
    subprocess.check_call(args, stdout=sys.stderr)
    jobs = str(max(1, os.cpu_count() or 1))
    subprocess.check_call([cmake, "--build", build, "--target", "cuabi", "--parallel", jobs],
                          stdout=sys.stderr)
    for dirpath, _dirs, files in os.walk(build):
        if "libcuabi.so.1" in files:
            return os.path.realpath(os.path.join(dirpath, "libcuabi.so.1"))
    raise RuntimeError("the CMake build did not produce libcuabi.so.1 under %s" % build)


def _package_files():
    """(archive name, source path) for the package's Python files."""
    out = []
    for name in sorted(os.listdir(PKG)):
        path = os.path.join(PKG, name)
        if not os.path.isfile(path) or name.startswith(_BUILD_PRODUCTS):
            continue
        if name.endswith((".py", ".typed", ".pyi")):
            out.append(("cuabi/" + name, path))
    return out


def _stage(workdir, compiled):
    """Everything that goes under cuabi/ in the wheel: [(arcname, path)]."""
    build_modules = _modules()
    gen = os.path.join(workdir, "gen")
    os.makedirs(gen, exist_ok=True)
    files = _package_files()
    files.append(("cuabi/_cuabi_cffi.py", build_modules.build_abi(gen)))
    if compiled:
        for path in (build_modules.build_compiled(gen), build_modules.build_speedups(gen)):
            files.append(("cuabi/" + os.path.basename(path), path))
    files.append(("cuabi/libcuabi.so.1", build_library(workdir)))
    return files


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _write_wheel(wheel_directory, tag, entries):
    """entries: [(arcname, bytes, mode)]; returns the wheel's file name."""
    name = "%s-%s-%s.whl" % (NAME, VERSION, tag)
    path = os.path.join(wheel_directory, name)
    di = _dist_info()
    entries = list(entries)
    entries.append((di + "/METADATA", _metadata().encode("utf-8"), 0o644))
    entries.append((di + "/WHEEL", _wheel_file(tag).encode(), 0o644))
    entries.append((di + "/top_level.txt", b"cuabi\n", 0o644))
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        entries.append((di + "/licenses/LICENSE", f.read(), 0o644))
    record = [_record_line(a, d) for a, d, _m in entries] + [di + "/RECORD,,"]
    entries.append((di + "/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data, mode in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    compiled = _compiled()
    _preflight(compiled)
    with tempfile.TemporaryDirectory(prefix="cuabi-wheel-") as work:
        entries = []
        for arcname, src in _stage(work, compiled):
            with open(src, "rb") as f:
                data = f.read()
            mode = 0o755 if arcname.endswith((".so", ".so.1")) else 0o644
            entries.append((arcname, data, mode))
        name = _write_wheel(wheel_directory, _tag(compiled), entries)
    _log("wrote " + name)
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """Editable install: a .pth pointing at python/, with the built pieces placed in
    the source package folder (they are ignored by git)."""
    with tempfile.TemporaryDirectory(prefix="cuabi-editable-") as work:
        for arcname, src in _stage(work, _compiled()):
            base = arcname.split("/", 1)[1]
            if base.startswith(_BUILD_PRODUCTS):
                shutil.copyfile(src, os.path.join(PKG, base))
    entries = [("cuabi_editable.pth", (HERE + "\n").encode(), 0o644)]
    name = _write_wheel(wheel_directory, _tag(False), entries)
    _log("wrote " + name)
    return name


_SDIST_PATHS = ("pyproject.toml", "CMakeLists.txt", "cmake", "abi.map", "include", "lib", "loader",
                "python/cuabi", "python/cdef", "python/speedups", "python/build_modules.py",
                "tools/gen_python.py",
                "python/build_backend.py", "cuabi.pc.in", "README.md", "LICENSE", "docs/python.md")


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    name = base + ".tar.gz"
    path = os.path.join(sdist_directory, name)

    def keep(tarinfo):
        n = tarinfo.name
        leaf = os.path.basename(n)
        if "__pycache__" in n or leaf.endswith(".pyc") or leaf.startswith(_BUILD_PRODUCTS):
            return None
        tarinfo.uid = tarinfo.gid = 0
        tarinfo.uname = tarinfo.gname = ""
        tarinfo.mtime = 1577836800
        return tarinfo

    with tarfile.open(path, "w:gz") as tf:
        for rel in _SDIST_PATHS:
            src = os.path.join(ROOT, rel)
            if os.path.exists(src):
                tf.add(src, arcname=base + "/" + rel, filter=keep)
        pkg_info = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        ti.mtime = 1577836800
        tf.addfile(ti, io.BytesIO(pkg_info))
    return name
