# SPDX-License-Identifier: Apache-2.0
"""``python -m cuabi``: report what cuabi finds on this machine.

Exit codes (also in docs/python.md):

* 0 - a GPU works: a device's context was created and memory allocated;
* 2 - libcuabi.so.1 could not be opened, or cuabi's configuration is invalid;
* 3 - no usable CUDA driver (not installed, only the toolkit stub, too old,
  or a bad ``CUABI_LIBCUDA``);
* 4 - the driver loaded but reports no usable device (``cuInit`` failed or
  no devices);
* 5 - a device is present but using it failed;
* 1 - anything unexpected (the report still says what happened).

It never ends with a traceback.
"""

from __future__ import annotations

import os
import platform
import sys

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_NO_LIBRARY = 2
EXIT_NO_DRIVER = 3
EXIT_NO_DEVICE = 4
EXIT_DEVICE_FAILED = 5


def _line(out, label, value):
    out.append("%-22s %s" % (label + ":", value))


def report(out):
    """Fill ``out`` with report lines; return the exit code."""
    import cuabi

    _line(out, "cuabi", cuabi.__version__)
    _line(out, "python", "%s %s (%s)" % (platform.python_implementation(), platform.python_version(),
                                        sys.executable))
    _line(out, "platform", platform.platform())
    for var in ("CUABI_PY_BACKEND", "CUABI_LIBRARY", "CUABI_LIBCUDA", "CUABI_PER_THREAD_DEFAULT_STREAM",
                "CUABI_LIBNVRTC", "CUABI_LIBNVJITLINK", "CUABI_LIBNVML"):
        if var in os.environ:
            _line(out, var, os.environ[var])
    from cuabi._backend import backend
    from cuabi.errors import ConfigurationError, LibraryNotFoundError

    try:
        b = backend()
    except ConfigurationError as exc:
        _line(out, "backend", "invalid configuration: %s" % exc)
        return EXIT_NO_LIBRARY
    except LibraryNotFoundError as exc:
        _line(out, "libcuabi", "NOT FOUND")
        out.append(str(exc))
        return EXIT_NO_LIBRARY
    except ImportError as exc:
        _line(out, "backend", "unavailable: %s" % exc)
        return EXIT_NO_LIBRARY
    _line(out, "backend", b.name)
    _line(out, "libcuabi", b.library_path)
    for cand, why in b.tried:
        out.append("  (skipped %s: %s)" % (cand, why))
    major, minor, patch = cuabi.library_version()
    _line(out, "libcuabi version", "%d.%d.%d" % (major, minor, patch))

    status = cuabi.driver_status()
    out.append("")
    out.append("driver loader report:")
    for ln in cuabi.driver_report().rstrip().splitlines():
        out.append("  " + ln)
    if status != 0:
        _line(out, "driver", "%s (%d): %s" % (cuabi.error_name(status), status, cuabi.error_string(status)))
        _nvrtc(out)
        return EXIT_NO_DRIVER
    _line(out, "driver", cuabi.driver_path())
    try:
        v = cuabi.driver_version()
        _line(out, "driver CUDA version", "%d.%d" % (v // 1000, (v % 1000) // 10))
    except cuabi.CUDAError as exc:
        _line(out, "driver CUDA version", "unknown (%s)" % exc)
    _line(out, "default stream", cuabi.default_stream_mode())

    from cuabi import driver as d

    try:
        d.cuInit(0)
        count = d.cuDeviceGetCount()
    except cuabi.CUDAError as exc:
        _line(out, "cuInit", "FAILED: %s" % exc)
        _nvrtc(out)
        return EXIT_NO_DEVICE
    _line(out, "devices", count)
    if count == 0:
        _nvrtc(out)
        return EXIT_NO_DEVICE
    code = EXIT_OK
    for i in range(count):
        try:
            dev = cuabi.Device(i)
            major, minor = dev.compute_capability
            out.append("  [%d] %s" % (i, dev.name))
            out.append("      compute capability %d.%d, %d SMs, %.1f GiB, uuid %s"
                       % (major, minor, dev.multiprocessor_count, dev.total_memory / 2**30, dev.uuid))
            out.append("      pci %s" % dev.pci_bus_id)
            ctx = dev.set_current()
            free, total = dev.mem_info()
            buf = cuabi.DeviceBuffer(1 << 20)
            buf.fill(0x5A)
            ok = buf.to_bytes()[:4] == b"\x5a" * 4
            buf.close()
            out.append("      free %.1f GiB; context, allocation and copy %s"
                       % (free / 2**30, "OK" if ok else "gave wrong data"))
            if not ok:
                code = EXIT_DEVICE_FAILED
            del ctx
        except cuabi.CUDAError as exc:
            out.append("      FAILED: %s" % exc)
            code = EXIT_DEVICE_FAILED
    _nvrtc(out)
    return code


def _nvrtc(out):
    """The toolkit's libraries the Python layer uses: NVRTC, nvJitLink, NVML."""
    from cuabi import _linker, _program, nvjitlink, system
    from cuabi.errors import FamilyError

    def version_of(label, query, path):
        try:
            major, minor = query()
            _line(out, label, "%d.%d (%s)" % (major, minor, path()))
        except FamilyError as exc:
            _line(out, label, "not found")
            for ln in str(exc).splitlines()[1:]:
                out.append("  " + ln.strip())
        except Exception as exc:  # a broken library must not spoil the report
            _line(out, label, "unusable: %s" % exc)

    version_of("nvrtc", _program.nvrtc_version, _program.nvrtc_path)
    version_of("nvjitlink", _linker.nvjitlink_version, nvjitlink.library_path)
    try:
        _line(out, "nvml", "driver %s, %d GPU(s)" % (system.driver_version(), system.device_count()))
    except FamilyError as exc:
        _line(out, "nvml", "not found (%s)" % exc.name)
    except Exception as exc:
        _line(out, "nvml", "unusable: %s" % exc)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return EXIT_OK
    if argv:
        print("usage: python -m cuabi [--help]", file=sys.stderr)
        return EXIT_UNEXPECTED
    out = []
    try:
        code = report(out)
    except BaseException as exc:  # never a traceback: say what happened instead
        if isinstance(exc, KeyboardInterrupt):
            raise
        out.append("unexpected error: %s: %s" % (type(exc).__name__, exc))
        code = EXIT_UNEXPECTED
    out.append("")
    out.append({EXIT_OK: "result: a GPU works (exit 0)",
                EXIT_NO_LIBRARY: "result: libcuabi unavailable (exit 2)",
                EXIT_NO_DRIVER: "result: no usable CUDA driver (exit 3)",
                EXIT_NO_DEVICE: "result: no usable CUDA device (exit 4)",
                EXIT_DEVICE_FAILED: "result: a device failed its check (exit 5)"}.get(
                    code, "result: unexpected failure (exit %d)" % code))
    print("\n".join(out))
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
