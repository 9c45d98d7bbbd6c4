#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Round trip of the generator: regenerating every generated file from the
header set of each version node's CUDA version (the installed toolkit's, and
the newer ones tools/fetch_cuda_headers.py fetches) gives the committed files
byte for byte (tools/gen_driver_api.py --check). Skipped, saying so, where a
header set is absent (CMake makes the test a placeholder then).

usage: check_generator.py SOURCE_DIR CUDA_INCLUDE_DIR [--headers VERSION=DIR ...]
"""
import os
import subprocess
import sys

SKIPPED = 77


def main():
    source, cuda_include, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    folders = [cuda_include] + [arg.partition("=")[2] for arg in rest if "=" in arg]
    for folder in folders:
        missing = [h for h in ("cuda.h", "cudaTypedefs.h", "cudaProfiler.h")
                   if not os.path.exists(os.path.join(folder, h))]
        if missing:
            print(f"skipped: {', '.join(missing)} not found in {folder}; "
                  "the generated files cannot be regenerated here")
            return SKIPPED
    command = [sys.executable, os.path.join(source, "tools", "gen_driver_api.py"),
               "--cuda-include", cuda_include, *rest, "--check"]
    print("running:", " ".join(command))
    result = subprocess.run(command, cwd=source)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
