#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A trimmed nvcc 13.0, from NVIDIA's wheels on PyPI, as one .tar.xz to carry to a GPU machine.

PyCUDA compiles its kernels with nvcc (``.cu`` to cubin). A GPU machine without a
toolkit gets this archive, which holds only what ``nvcc --cubin`` needs:

- ``nvidia-cuda-nvcc``: ``bin/nvcc``, ``bin/nvcc.profile``, ``bin/cudafe++`` (the C++
  front end), ``bin/ptxas`` (PTX to SASS), ``bin/fatbinary``;
- ``nvidia-nvvm``: ``nvvm/bin/cicc`` (CUDA C++ to PTX) and ``nvvm/libdevice``;
- ``nvidia-cuda-crt`` and ``nvidia-cuda-runtime``: ``include/`` (``cuda_runtime.h``,
  ``crt/``, the vector and math headers nvcc includes in every compilation) and
  ``lib64/libcudadevrt.a`` (PyCUDA's DynamicSourceModule links it).

Left out: nvlink, the device-side libraries, CCCL, libnvvm.so, libcudart. The
archive is checked before it is written: its nvcc, with nothing else on PATH but
the system's, must compile a kernel to an sm_90 cubin.

    nvcc_carry.py --cache DIR --out nvcc.tar.xz
"""
from __future__ import annotations

import argparse
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import NoReturn

# pip requirement -> the members kept, as paths under nvidia/cu13/ in the wheel
WHEELS: dict[str, list[str]] = {
    "nvidia-cuda-nvcc==13.0.88": ["bin/nvcc", "bin/nvcc.profile", "bin/cudafe++", "bin/ptxas",
                                  "bin/fatbinary"],
    "nvidia-nvvm==13.0.88": ["nvvm/bin/cicc", "nvvm/libdevice/"],
    "nvidia-cuda-crt==13.0.88": ["include/"],
    "nvidia-cuda-runtime==13.0.96": ["include/", "lib/libcudadevrt.a"],
}
PREFIX = "nvidia/cu13/"

SMOKE_KERNEL = """
extern "C" __global__ void smoke(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = sinf(x[i]) * 2.0f;
}
"""


def fail(message: str) -> NoReturn:
    """Print a message for the person preparing the carry and exit with status 1."""
    print("nvcc_carry: " + message, file=sys.stderr)
    sys.exit(1)


def download(cache: Path) -> list[Path]:
    """The pinned wheels, downloaded with pip into ``cache`` unless already there."""
    cache.mkdir(parents=True, exist_ok=True)
    wheels = []
    for requirement in WHEELS:
        name, version = requirement.split("==")
        stem = "%s-%s-" % (name.replace("-", "_"), version)
        found = sorted(cache.glob(stem + "*.whl"))
        if not found:
            cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                   "--no-deps", "--only-binary", ":all:", requirement, "--dest", str(cache)]
            if subprocess.run(cmd).returncode != 0:
                fail("pip could not download %s (command: %s)" % (requirement, " ".join(cmd)))
            found = sorted(cache.glob(stem + "*.whl"))
        if not found:
            fail("pip downloaded no wheel named %s*.whl into %s" % (stem, cache))
        wheels.append(found[0])
    return wheels


def extract(wheels: list[Path], root: Path) -> None:
    """The kept members of each wheel under ``root``, with their executable bits."""
    for wheel, kept in zip(wheels, WHEELS.values()):
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                if not info.filename.startswith(PREFIX) or info.is_dir():
                    continue
                rel = info.filename[len(PREFIX):]
                if not any(rel == k or (k.endswith("/") and rel.startswith(k)) for k in kept):
                    continue
                if rel.startswith("lib/"):
                    rel = "lib64/" + rel[len("lib/"):]  # where nvcc.profile and PyCUDA look
                target = root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                mode = (info.external_attr >> 16) & 0o777
                os.chmod(target, mode if mode else 0o644)
    missing = [k for ks in WHEELS.values() for k in ks
               if not (root / k.replace("lib/", "lib64/")).exists()]
    if missing:
        fail("the wheels lack %s: did NVIDIA change their layout?" % missing)


def smoke_test(root: Path) -> None:
    """Compile a kernel to an sm_90 cubin with only this nvcc and the system on PATH."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "smoke.cu"
        source.write_text(SMOKE_KERNEL)
        env = {"PATH": "%s:/usr/bin:/bin" % (root / "bin"), "HOME": tmp}
        cmd = ["nvcc", "--cubin", "-arch", "sm_90", "-o", "smoke.cubin", "smoke.cu"]
        result = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        cubin = Path(tmp) / "smoke.cubin"
        if result.returncode != 0 or not cubin.is_file() or cubin.read_bytes()[:4] != b"\x7fELF":
            fail("the trimmed nvcc in %s cannot compile a kernel:\n%s%s"
                 % (root, result.stdout, result.stderr))


def main() -> None:
    """Command line: --cache DIR --out FILE."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="folder for the wheels")
    parser.add_argument("--out", type=Path, required=True, help="the .tar.xz to write")
    args = parser.parse_args()
    wheels = download(args.cache)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "nvcc"
        extract(wheels, root)
        smoke_test(root)
        partial = args.out.with_name(args.out.name + ".partial")
        with tarfile.open(partial, "w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
            tar.add(root, arcname="nvcc")
        os.replace(partial, args.out)
    print(args.out)


if __name__ == "__main__":
    main()
