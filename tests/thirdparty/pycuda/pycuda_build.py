#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fetch PyCUDA's sdist from PyPI and build it, unchanged, against cuabi or libcuda.

PyCUDA is configured the way its users configure it, with a ``siteconf.py``: for
cuabi the CUDA include folders are cuabi's compat folder and ``include/``, and the
driver library is ``cuabi`` in cuabi's build folder; for libcuda (the GPU
comparison's reference) they are the toolkit's ``include/`` and its stub
``libcuda.so``. Nothing in PyCUDA's sources is patched.

Run it with the Python of the virtual environment the build is for: it runs
PyCUDA's ``setup.py`` with ``sys.executable``, which must have setuptools, wheel
and numpy (``requirements.txt``).

    pycuda_build.py fetch --cache DIR
    pycuda_build.py build --variant cuabi --repo ROOT --lib-dir BUILD --work DIR
    pycuda_build.py build --variant libcuda --cuda-home /usr/local/cuda --work DIR

``build`` prints the folder PyCUDA was built in (importable: it holds the
``pycuda`` package with its compiled modules, and PyCUDA's ``test/``) as its
last line. Both steps are cached: the download is checked against its sha256
and kept, and a build is redone only when one of its inputs changed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import NoReturn

PYCUDA_VERSION = "2026.1"
PYCUDA_SHA256 = "759516160628ba06f32ce7e563e3f5b9214691dc9528a03ea99ea1073f4e14ba"
SDIST_NAME = "pycuda-%s.tar.gz" % PYCUDA_VERSION
STAMP_NAME = ".cuabi-build-stamp.json"


def fail(message: str) -> NoReturn:
    """Print a message for the person running the build and exit with status 1."""
    print("pycuda_build: " + message, file=sys.stderr)
    sys.exit(1)


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(cache: Path) -> Path:
    """Download PyCUDA's sdist with pip into ``cache`` (once) and check its sha256."""
    sdist = cache / SDIST_NAME
    if sdist.is_file() and sha256_of(sdist) == PYCUDA_SHA256:
        return sdist
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        requirement = Path(tmp) / "requirement.txt"
        requirement.write_text("pycuda==%s --hash=sha256:%s\n" % (PYCUDA_VERSION, PYCUDA_SHA256))
        # pip prepares the sdist's metadata even for a download; without build
        # isolation it uses this environment's setuptools and numpy instead of
        # installing them again.
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
               "--no-deps", "--no-binary", "pycuda", "--no-build-isolation",
               "--require-hashes", "-r", str(requirement), "--dest", tmp]
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
            fail("pip could not download %s from PyPI (command: %s); check the network "
                 "connection to pypi.org, or put the file in %s by hand"
                 % (SDIST_NAME, " ".join(cmd), cache))
        got = Path(tmp) / SDIST_NAME
        if not got.is_file() or sha256_of(got) != PYCUDA_SHA256:
            fail("the downloaded %s is not the file this script pins (sha256 %s); "
                 "refusing to build it" % (SDIST_NAME, PYCUDA_SHA256))
        os.replace(got, sdist)
    return sdist


def siteconf_text(include_dirs: list[str], lib_dirs: list[str], libnames: list[str]) -> str:
    """PyCUDA's siteconf.py: shipped Boost, no GL, no CURAND, the given driver library."""
    values: dict[str, object] = {
        "BOOST_INC_DIR": [], "BOOST_LIB_DIR": [], "BOOST_COMPILER": "gcc",
        "USE_SHIPPED_BOOST": True, "BOOST_PYTHON_LIBNAME": [], "BOOST_THREAD_LIBNAME": [],
        "CUDA_TRACE": False, "CUDA_ROOT": None, "CUDA_ENABLE_GL": False,
        "CUDA_ENABLE_CURAND": False,
        "CUDA_INC_DIR": include_dirs,
        "CUDADRV_LIB_DIR": lib_dirs, "CUDADRV_LIBNAME": libnames,
        "CUDART_LIB_DIR": [], "CUDART_LIBNAME": [], "CURAND_LIB_DIR": [], "CURAND_LIBNAME": [],
        "CXXFLAGS": [], "LDFLAGS": [],
    }
    return "".join("%s = %r\n" % item for item in values.items())


def digest_files(paths: list[Path]) -> str:
    """One sha256 over the names and contents of the given files, in order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def compiler_version() -> str:
    """The first line of ``c++ --version`` (the compiler setuptools will use)."""
    cxx = os.environ.get("CXX", "c++")
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    except OSError:
        fail("no C++ compiler (%s) found: install g++ (Debian: build-essential)" % cxx)
    return out.splitlines()[0] if out else cxx


def extract(sdist: Path, dest: Path) -> None:
    """Unpack the sdist's top folder as ``dest`` (replacing it)."""
    if dest.exists():
        shutil.rmtree(dest)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent))
    try:
        with tarfile.open(sdist) as tar:
            try:
                tar.extractall(tmp, filter="data")
            except TypeError:  # a Python without extraction filters
                tar.extractall(tmp)
        os.replace(tmp / ("pycuda-%s" % PYCUDA_VERSION), dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def built_driver_module(tree: Path) -> Path | None:
    """The compiled ``pycuda/_driver*.so`` in a tree, if there is one."""
    found = sorted((tree / "pycuda").glob("_driver*.so"))
    return found[0] if found else None


def build(variant: str, sdist: Path, tree: Path, include_dirs: list[str], lib_dirs: list[str],
          libnames: list[str], stamp_files: list[Path], jobs: int) -> Path:
    """Build PyCUDA in place in ``tree``, unless the same inputs built it already."""
    siteconf = siteconf_text(include_dirs, lib_dirs, libnames)
    stamp = {
        "variant": variant, "pycuda": PYCUDA_VERSION, "sdist_sha256": PYCUDA_SHA256,
        "python": sys.version, "executable": sys.executable, "compiler": compiler_version(),
        "siteconf": siteconf, "headers": digest_files(stamp_files),
    }
    stamp_path = tree / STAMP_NAME
    if built_driver_module(tree) is not None and stamp_path.is_file():
        try:
            if json.loads(stamp_path.read_text()) == stamp:
                print("pycuda_build: %s is up to date" % tree, file=sys.stderr)
                return tree
        except ValueError:
            pass
    tree.parent.mkdir(parents=True, exist_ok=True)
    extract(sdist, tree)
    (tree / "siteconf.py").write_text(siteconf)
    log = tree / "build.log"
    print("pycuda_build: building PyCUDA %s against %s in %s (log: %s)"
          % (PYCUDA_VERSION, variant, tree, log), file=sys.stderr)
    with open(log, "w") as out:
        rc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-j", str(jobs)],
                            cwd=tree, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0 or built_driver_module(tree) is None:
        lines = log.read_text(errors="replace").splitlines()
        errors = [line for line in lines if "error" in line.lower()][:20]
        sys.stderr.write("\n".join(errors or lines[-30:]) + "\n")
        fail("PyCUDA did not build against %s (setup.py exit status %d); the first errors are "
             "above, the whole log is %s" % (variant, rc, log))
    stamp_path.write_text(json.dumps(stamp, indent=1) + "\n")
    return tree


def cuabi_inputs(repo: Path, lib_dir: Path) -> tuple[list[str], list[str], list[str], list[Path]]:
    """Include folders, library folders, library names and stamped headers for cuabi."""
    compat = repo / "include" / "cuabi" / "compat"
    if not (compat / "cuda.h").is_file():
        fail("%s has no cuda.h: is --repo the root of a cuabi checkout?" % compat)
    if not (lib_dir / "libcuabi.so").exists():
        fail("%s has no libcuabi.so: build cuabi first "
             "(cmake -S . -B build && cmake --build build)" % lib_dir)
    headers = sorted(p for p in (repo / "include").rglob("*.h"))
    return [str(compat), str(repo / "include")], [str(lib_dir)], ["cuabi"], headers


def libcuda_inputs(cuda_home: Path) -> tuple[list[str], list[str], list[str], list[Path]]:
    """Include folders, library folders, library names and stamped headers for libcuda."""
    cuda_h = cuda_home / "include" / "cuda.h"
    stubs = [d for d in (cuda_home / "lib64" / "stubs", cuda_home / "lib" / "stubs")
             if (d / "libcuda.so").exists()]
    if not cuda_h.is_file() or not stubs:
        fail("%s lacks include/cuda.h or lib64/stubs/libcuda.so: point --cuda-home at a CUDA "
             "13.0 toolkit" % cuda_home)
    return [str(cuda_h.parent)], [str(stubs[0])], ["cuda"], [cuda_h]


def main() -> None:
    """Command line: ``fetch`` or ``build``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_fetch = sub.add_parser("fetch", help="download the sdist (once) and print its path")
    p_fetch.add_argument("--cache", type=Path, required=True)
    p_build = sub.add_parser("build", help="build PyCUDA and print the folder it is in")
    p_build.add_argument("--variant", choices=["cuabi", "libcuda"], required=True)
    p_build.add_argument("--work", type=Path, required=True,
                         help="folder for the download and the build trees")
    p_build.add_argument("--repo", type=Path, help="cuabi checkout (variant cuabi)")
    p_build.add_argument("--lib-dir", type=Path, help="folder of libcuabi.so (variant cuabi)")
    p_build.add_argument("--cuda-home", type=Path, default=Path("/usr/local/cuda"),
                         help="CUDA toolkit (variant libcuda)")
    p_build.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()

    if args.command == "fetch":
        print(fetch(args.cache.resolve()))
        return
    work = args.work.resolve()
    if args.variant == "cuabi":
        if args.repo is None or args.lib_dir is None:
            parser.error("--variant cuabi needs --repo and --lib-dir")
        inputs = cuabi_inputs(args.repo.resolve(), args.lib_dir.resolve())
    else:
        inputs = libcuda_inputs(args.cuda_home.resolve())
    sdist = fetch(work / "download")
    tree = work / ("%s-py%d%d" % (args.variant, *sys.version_info[:2]))
    print(build(args.variant, sdist, tree, *inputs, jobs=max(1, args.jobs)))


if __name__ == "__main__":
    main()
