#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/fetch_cuda_headers.py uses a wheel only when its SHA-256 is the pinned one, and then
unpacks its headers into the cache and marks them with the pins, so that a later run is a
no-op and other pins make it fetch again. Offline: the wheels are made up here and put where
the script keeps downloads, so pip is never run (a run that would need it fails the check).

usage: check_fetch_headers.py SOURCE_DIR
"""
import hashlib
import io
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path


def wheel(files: dict[str, bytes]) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return data.getvalue()


def main() -> int:
    sys.path.insert(0, str(Path(sys.argv[1]) / "tools"))
    import fetch_cuda_headers as fetch

    def no_pip(*args, **kwargs):
        raise AssertionError(f"pip would run: {args[0] if args else kwargs}")

    fetch.subprocess = types.SimpleNamespace(run=no_pip, CalledProcessError=subprocess.CalledProcessError)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        fetch.CACHE = Path(tmp) / "cuda-headers"
        (fetch.CACHE / "wheels").mkdir(parents=True)
        prefix = fetch.INCLUDE_PREFIX
        good = wheel({prefix + name: f"/* {name} */\n".encode() for name in fetch.REQUIRED})
        path = fetch.CACHE / "wheels" / "made-up-1.0-py3-none-any.whl"
        path.write_bytes(good)
        pin = {"project": "made-up", "version": "1.0", "file": path.name,
               "sha256": hashlib.sha256(good).hexdigest()}
        fetch.PINS = {"99.9": {"cuda_version": 99090, "wheels": [pin]}}

        got = fetch.fetch("99.9")
        if got != fetch.headers_dir("99.9") or not (got / "cuda.h").is_file():
            failures.append(f"the pinned wheel's headers are not in {fetch.headers_dir('99.9')}")
        if not fetch.is_cached("99.9"):
            failures.append("after a fetch, the cache does not say it holds the pinned headers")

        # another file under the same name: refused, and not kept
        path.write_bytes(wheel({prefix + name: b"/* not NVIDIA's */\n" for name in fetch.REQUIRED}))
        fetch.PINS = {"99.9": {"cuda_version": 99090, "wheels": [dict(pin, version="1.1")]}}
        if fetch.is_cached("99.9"):
            failures.append("the cache still counts as current after the pins changed")
        try:
            fetch.fetch("99.9")
            failures.append("a wheel whose SHA-256 is not the pinned one was used")
        except AssertionError:
            failures.append("the wheel was fetched again by pip instead of being checked")
        except RuntimeError as exc:
            if "refusing" not in str(exc):
                failures.append(f"unexpected refusal: {exc}")
        if path.exists():
            failures.append("a wheel that failed its hash check was kept")

    cli = subprocess.run([sys.executable, str(Path(sys.argv[1]) / "tools" / "fetch_cuda_headers.py"),
                          "--print-dir"], capture_output=True, text=True)
    if cli.returncode != 0 or not cli.stdout.strip().endswith("/include"):
        failures.append(f"--print-dir: {cli.returncode} {cli.stdout!r} {cli.stderr!r}")
    print("\n".join(failures) or "fetch_cuda_headers: 6 checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
