#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""find_wheel_library.py NAME: the absolute path of NVIDIA's libNAME.so.13 (else .so.12) that a pip
wheel installed (nvidia-cuda-nvrtc, nvidia-nvjitlink), for CUABI_LIBNVRTC / CUABI_LIBNVJITLINK.

NAME is nvrtc or nvJitLink. Asks cuda.pathfinder first where it is installed, then looks in the
folders of the `nvidia` namespace package (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib, ...). Prints
the path and exits 0, or says on stderr what was tried and exits 1.
"""
import glob
import os
import sys


def from_pathfinder(name, tried):
    try:
        from cuda import pathfinder  # type: ignore
    except ImportError:
        tried.append("cuda.pathfinder: not installed")
        return None
    try:
        path = pathfinder.load_nvidia_dynamic_lib(name).abs_path
    except Exception as exc:  # its own not-found error, whose class changed between releases
        tried.append("cuda.pathfinder: %s" % exc)
        return None
    if path and os.path.isabs(path):
        return path
    tried.append("cuda.pathfinder: found %r, not an absolute path (a system library)" % (path,))
    return None


def from_wheels(name, tried):
    try:
        import nvidia  # type: ignore  (the namespace package NVIDIA's wheels install into)
    except ImportError:
        tried.append("no NVIDIA wheel installed (no `nvidia` package)")
        return None
    for major in ("13", "12"):
        for folder in list(nvidia.__path__):
            hits = sorted(glob.glob(os.path.join(folder, "**", "lib", "lib%s.so.%s" % (name, major)),
                                    recursive=True))
            if hits:
                return os.path.abspath(hits[0])
    tried.append("lib%s.so.13 or .12 in none of %s" % (name, ", ".join(nvidia.__path__)))
    return None


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("nvrtc", "nvJitLink"):
        sys.exit("usage: find_wheel_library.py nvrtc|nvJitLink")
    name, tried = sys.argv[1], []
    path = from_pathfinder(name, tried) or from_wheels(name, tried)
    if path is None:
        print("lib%s from a wheel: %s" % (name, "; ".join(tried)), file=sys.stderr)
        sys.exit(1)
    print(path)


main()
