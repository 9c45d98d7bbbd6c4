#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fetch the driver headers of the CUDA versions newer than the installed toolkit.

cuabi's version nodes are generated from the headers of one CUDA version each (CUABI_1.0 from
CUDA 13.0's, CUABI_1.1 from 13.5's: docs/generator.md), the driver's and, from CUABI_1.1 on,
those of the library families NVRTC, nvJitLink, NVVM and NVML (docs/families.md). NVIDIA's licence does not let cuabi
commit those headers, so this script downloads them from PyPI, where NVIDIA publishes them in
wheels: each wheel pinned by version and by the SHA-256 of its file, checked before anything is
unpacked. The headers go to a cache in the source tree that git ignores:

    build/cuda-headers/<major.minor>/include/{cuda.h, cudaTypedefs.h, cudaProfiler.h, ...}

    python3 tools/fetch_cuda_headers.py              # every pinned version (a no-op when cached)
    python3 tools/fetch_cuda_headers.py 13.5         # one
    python3 tools/fetch_cuda_headers.py --print-dir 13.5   # where its headers are; fetch nothing

Needs network access to PyPI (pip download; pip's own settings, such as PIP_INDEX_URL, apply).
Exits 0 when every requested version is in the cache, 1 when a download or a hash check failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "build" / "cuda-headers"

# The pins: tools/cuda_headers.json, {"cuda": {"13.5": {"cuda_version": 13050, "wheels": [...]}}}.
PINS: dict[str, dict] = json.loads((REPO / "tools" / "cuda_headers.json").read_text())["cuda"]
INCLUDE_PREFIX = "nvidia/cu13/include/"
# The driver's headers, and those of the library families (NVRTC, nvJitLink, NVVM, NVML)
# whose forwarders CUABI_1.1 adds (docs/families.md).
REQUIRED = ("cuda.h", "cudaTypedefs.h", "cudaProfiler.h", "cudaProfilerTypedefs.h",
            "nvrtc.h", "nvJitLink.h", "nvvm.h", "nvml.h")


def version_of(cuda_version: int) -> str:
    """'13.5' for 13050."""
    return f"{cuda_version // 1000}.{cuda_version % 1000 // 10}"


def headers_dir(version: str) -> Path:
    """Where the headers of `version` ('13.5') are, once fetched."""
    return CACHE / version / "include"


def stamp_of(version: str) -> str:
    return json.dumps(PINS[version], sort_keys=True)


def is_cached(version: str) -> bool:
    stamp = CACHE / version / "STAMP"
    return stamp.is_file() and stamp.read_text() == stamp_of(version) and \
        all((headers_dir(version) / name).is_file() for name in REQUIRED)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def platforms_of(file: str) -> list[str]:
    """The platform tags of a wheel's file name, which pip must be told to accept it:
    ['manylinux2010_x86_64', 'manylinux_2_12_x86_64'] for ...-py3-none-manylinux2010_x86_64.
    manylinux_2_12_x86_64.whl (NVRTC's wheels are older manylinux than the runtime's)."""
    return file[:-len(".whl")].split("-")[-1].split(".")


def download(wheel: dict, into: Path) -> Path:
    """The pinned wheel, downloaded into `into` (or found there) and its hash checked."""
    path = into / wheel["file"]
    if not path.exists():
        platforms = [arg for tag in platforms_of(wheel["file"]) for arg in ("--platform", tag)]
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                   "--disable-pip-version-check", "--only-binary=:all:",
                   *platforms, "--python-version", "3",
                   "--implementation", "py", "--abi", "none", "--dest", str(into),
                   f"{wheel['project']}=={wheel['version']}"]
        print("running:", " ".join(command))
        subprocess.run(command, check=True)
    if not path.exists():
        raise RuntimeError(f"pip did not download {wheel['file']}")
    got = sha256(path)
    if got != wheel["sha256"]:
        path.unlink()
        raise RuntimeError(f"{wheel['file']}: SHA-256 {got}, pinned {wheel['sha256']}; "
                           "refusing to use it")
    return path


def fetch(version: str) -> Path:
    """The folder of `version`'s headers, fetched into the cache unless already there."""
    target = headers_dir(version)
    if is_cached(version):
        return target
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        staging = Path(tmp) / "include"
        staging.mkdir()
        for wheel in PINS[version]["wheels"]:
            with zipfile.ZipFile(download(wheel, wheels)) as archive:
                for info in archive.infolist():
                    name = info.filename
                    if not name.startswith(INCLUDE_PREFIX) or name.endswith("/"):
                        continue
                    rel = Path(name[len(INCLUDE_PREFIX):])
                    if rel.is_absolute() or ".." in rel.parts:
                        raise RuntimeError(f"{wheel['file']}: unexpected path {name}")
                    (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                    (staging / rel).write_bytes(archive.read(info))
        missing = [name for name in REQUIRED if not (staging / name).is_file()]
        if missing:
            raise RuntimeError(f"the pinned wheels of CUDA {version} lack {missing}")
        if target.parent.exists():
            shutil.rmtree(target.parent)
        target.parent.mkdir(parents=True)
        staging.rename(target)
    (CACHE / version / "STAMP").write_text(stamp_of(version))
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help=f"CUDA versions ({', '.join(PINS)}; default all)")
    parser.add_argument("--print-dir", action="store_true",
                        help="print the headers' folder of each version, fetch nothing")
    args = parser.parse_args()
    versions = args.versions or list(PINS)
    unknown = [v for v in versions if v not in PINS]
    if unknown:
        print(f"fetch_cuda_headers: no pins for CUDA {unknown}; pinned: {list(PINS)}",
              file=sys.stderr)
        return 2
    if args.print_dir:
        for version in versions:
            print(headers_dir(version))
        return 0
    status = 0
    for version in versions:
        try:
            path = fetch(version)
            print(f"CUDA {version} headers: {os.path.relpath(path, REPO)}")
        except (OSError, RuntimeError, subprocess.CalledProcessError, zipfile.BadZipFile) as exc:
            print(f"fetch_cuda_headers: CUDA {version}: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
