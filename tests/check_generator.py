#!/usr/bin/env python3
"""Round trip of the generator: regenerating every generated file from the
toolkit's headers gives the committed files byte for byte
(tools/gen_driver_api.py --check). Skipped, saying so, where the toolkit's
headers are absent.

usage: check_generator.py SOURCE_DIR CUDA_INCLUDE_DIR
"""
import os
import subprocess
import sys

SKIPPED = 77


def main():
    source, cuda_include = sys.argv[1], sys.argv[2]
    missing = [h for h in ("cuda.h", "cudaTypedefs.h", "cudaProfiler.h")
               if not os.path.exists(os.path.join(cuda_include, h))]
    if missing:
        print(f"skipped: {', '.join(missing)} not found in {cuda_include}; "
              "the generated files cannot be regenerated here")
        return SKIPPED
    command = [sys.executable, os.path.join(source, "tools", "gen_driver_api.py"),
               "--cuda-include", cuda_include, "--check"]
    print("running:", " ".join(command))
    result = subprocess.run(command, cwd=source)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
