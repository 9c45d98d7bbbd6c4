# SPDX-License-Identifier: Apache-2.0
"""A corpus of misuse: bad input and wrong use of the Pythonic layer and of
cuabi.driver, each case run in a process of its own (see :func:`run_case`).

A case is ``(name, expected, code)``: ``code`` runs with ``cuabi``, ``d``
(cuabi.driver), ``np`` (numpy, or None), ``gc``, ``threading``, ``os`` and
``fake`` (the fake driver's live counters) in scope.  ``expected`` is the
exception class name it must end with, or ``"ok"``.  After the code the child
closes device 0's primary context and collects garbage, and the case fails if
any allocation or driver object of the fake is left (``check_leaks``), or if
the process dies of a signal (a crash is a failure, not a lost test run).
"""

from __future__ import annotations

import json
import os
import sys
import traceback

# (name, expected, code)
CASES = [
    # -- the reproducers of issue 10, item by item
    ("pinned temporary slice outlives its buffer", "ok",
     "h = cuabi.PinnedBuffer(64 << 20)[0:16]; gc.collect(); h[0] = 1; assert h[0] == 1; del h"),
    ("pinned memoryview of a temporary is usable", "ok",
     "m = cuabi.PinnedBuffer(64).memoryview(); m[0] = 7; assert m[0] == 7; del m"),
    ("close refuses while a numpy array of a view lives", "BufferError",
     "p = cuabi.PinnedBuffer(64 << 20); a = np.frombuffer(p.memoryview(), np.uint8); p.close()"),
    ("close refuses while np.asarray(pinned) lives", "BufferError",
     "p = cuabi.PinnedBuffer(64 << 20); a = np.asarray(p); p.close()"),
    ("close refuses while a slice lives", "BufferError",
     "p = cuabi.PinnedBuffer(1 << 20); s = p[0:8]; p.close()"),
    ("close refuses while memoryview(view) lives", "BufferError",
     "p = cuabi.PinnedBuffer(1 << 20); m = memoryview(p.memoryview()); p.close()"),
    ("close refuses while a cast lives", "BufferError",
     "p = cuabi.PinnedBuffer(1 << 20); m = p.memoryview().cast('I'); p.close()"),
    ("managed close refuses while a slice lives", "BufferError",
     "m = cuabi.ManagedBuffer(1 << 20); s = m[0:8]; m.close()"),
    ("managed temporary slice outlives its buffer", "ok",
     "s = cuabi.ManagedBuffer(1 << 20)[0:8]; gc.collect(); s[0] = 3; assert s[0] == 3; del s"),
    ("a view released lets close free", "ok",
     "p = cuabi.PinnedBuffer(64); s = p[0:8]; del s; p.close(); assert p.closed"),
    ("cuMemcpyDtoH into a too small buffer", "ValueError",
     "cuabi.Device(0).set_current(); p = d.cuMemAlloc(1 << 20)\n"
     "try:\n    d.cuMemcpyDtoH(bytearray(16), p, 1 << 20)\nfinally:\n    d.cuMemFree(p)"),
    ("cuMemcpyHtoD from a too small buffer", "ValueError",
     "cuabi.Device(0).set_current(); p = d.cuMemAlloc(1 << 20)\n"
     "try:\n    d.cuMemcpyHtoD(p, b'x' * 16, 1 << 20)\nfinally:\n    d.cuMemFree(p)"),
    ("cuDeviceGetName into a too small buffer", "ValueError",
     "d.cuInit(0); d.cuDeviceGetName(bytearray(2), 256, 0)"),
    ("cuDeviceGetUuid into a too small buffer", "ValueError",
     "d.cuInit(0); d.cuDeviceGetUuid(bytearray(4), 0)"),
    ("cuGraphGetNodes into a too small array", "ValueError",
     "cuabi.Device(0).set_current(); g = cuabi.Graph(); g.add_empty_node()\n"
     "d.cuGraphGetNodes(g.handle, bytearray(4), 1)"),
    ("copy.copy of a context", "TypeError",
     "import copy; copy.copy(cuabi.Device(0).set_current())"),
    ("copy.copy of a buffer", "TypeError", "import copy; copy.copy(cuabi.DeviceBuffer(16))"),
    ("copy.deepcopy of a stream", "TypeError", "import copy; copy.deepcopy(cuabi.Stream())"),
    ("pickling a buffer", "TypeError", "import pickle; pickle.dumps(cuabi.DeviceBuffer(16))"),
    ("pickling a pinned buffer", "TypeError", "import pickle; pickle.dumps(cuabi.PinnedBuffer(16))"),
    ("pickling a kernel", "TypeError",
     "import pickle; m = cuabi.Module('fakecuda-module\\nkernel empty\\n'); pickle.dumps(m.get_kernel('empty', ''))"),
    ("np.from_dlpack of device memory raises the consumer's error", "RuntimeError",
     "from cuabi import _dlpack\ntry:\n    np.from_dlpack(cuabi.DeviceBuffer(16))\n"
     "finally:\n    assert _dlpack.exported_count() == 0"),
    ("managed memory is kDLCUDAManaged", "ok",
     "assert cuabi.ManagedBuffer(16).__dlpack_device__() == (13, 0)"),
    ("pinned memory exports kDLCUDAHost", "ok",
     "p = cuabi.PinnedBuffer(16); p[0] = 9; a = np.from_dlpack(p); assert a[0] == 9; del a; p.close()"),
    ("with dev.context pushes and pops", "ok",
     "dev = cuabi.Device(0); b = cuabi.DeviceBuffer(16)\nwith dev.context:\n    pass\n"
     "assert not b.closed and not dev.context.closed; b.close()"),
    ("device= does not make the device current", "ok",
     "cuabi.init(); s = cuabi.Stream(device=0); assert d.cuCtxGetCurrent() == 0; s.close()"),
    ("methods of objects work from a new thread", "ok",
     "s = cuabi.Stream(); b = cuabi.DeviceBuffer(16); out = []\n"
     "def t():\n    s.sync(); out.append(b.to_bytes()); out.append(d.cuCtxGetCurrent())\n"
     "th = threading.Thread(target=t); th.start(); th.join(); assert len(out[0]) == 16 and out[1] == 0"),
    ("copy_to a smaller host buffer", "ValueError", "cuabi.DeviceBuffer(16).copy_to(bytearray(4))"),
    ("a view larger than its buffer", "ValueError", "cuabi.DeviceBuffer(16).view('f4', (5,))"),
    ("events from Stream.record() time", "ok",
     "s = cuabi.Stream(); a = s.record(timing=True); b = s.record(timing=True); assert (b - a) >= 0.0"),
    ("events from Stream.record() without timing= do not time", "ValueError",
     "s = cuabi.Stream(); a = s.record(); b = s.record(); b - a"),
    ("MemoryPool(max_size=2**70)", "OverflowError", "cuabi.MemoryPool(max_size=2 ** 70)"),
    ("GraphExec.update with a closed graph says closed", "ClosedError",
     "g = cuabi.Graph(); e = g.instantiate(); h = cuabi.Graph(); h.close(); e.update(h)"),
    # -- wrong types
    ("DeviceBuffer of a float size", "TypeError", "cuabi.DeviceBuffer(1.5)"),
    ("DeviceBuffer of a negative size", "ValueError", "cuabi.DeviceBuffer(-1)"),
    ("DeviceBuffer of 2**64 bytes", "OverflowError", "cuabi.DeviceBuffer(2 ** 64)"),
    ("DeviceBuffer with a str stream", "TypeError", "cuabi.DeviceBuffer(16, stream='s')"),
    ("DeviceBuffer with a bool size", "TypeError", "cuabi.DeviceBuffer(True)"),
    ("Device of a str", "TypeError", "cuabi.Device('0')"),
    ("Device out of range", "ValueError", "cuabi.Device(99)"),
    ("Stream with a str priority", "TypeError", "cuabi.Stream(priority='high')"),
    ("fill with a too large value", "ValueError", "cuabi.DeviceBuffer(16).fill(256)"),
    ("fill with width 3", "ValueError", "cuabi.DeviceBuffer(16).fill(1, width=3)"),
    ("copy between two host buffers", "TypeError", "cuabi.copy(bytearray(4), b'abcd')"),
    ("copy into read-only bytes", "TypeError", "cuabi.DeviceBuffer(4).copy_to(b'abcd')"),
    ("copy with a negative nbytes", "ValueError", "cuabi.copy(cuabi.DeviceBuffer(4), b'abcd', -1)"),
    ("launch with a non-kernel", "TypeError", "cuabi.launch(None, cuabi.LaunchConfig(), object())"),
    ("LaunchConfig with block 0", "ValueError", "cuabi.LaunchConfig(grid=1, block=0)"),
    ("LaunchConfig is immutable", "AttributeError", "cuabi.LaunchConfig().grid = (2, 1, 1)"),
    ("driver call with a float handle", "TypeError", "d.cuStreamSynchronize(1.5)"),
    ("driver call with a negative size", "OverflowError",
     "cuabi.Device(0).set_current(); d.cuMemAlloc(-1)"),
    ("driver call with too many arguments", "TypeError", "d.cuCtxGetCurrent(1)"),
    ("an unknown driver function", "AttributeError", "d.cuNoSuchFunction"),
    ("Program of an int", "TypeError", "cuabi.Program(42)"),
    ("Program with the architecture twice", "ValueError",
     "cuabi.Program('').compile(['-arch=sm_80'], arch='sm_90')"),
    ("Module of an empty image", "ValueError", "cuabi.Module(b'')"),
    ("view with a negative stride", "ValueError", "cuabi.DeviceBuffer(16).view('u1', (4,), (-1,))"),
    ("Event interprocess with timing", "ValueError", "cuabi.Event(interprocess=True, timing=True)"),
    ("capture mode misspelt", "ValueError", "cuabi.Graph.capture(cuabi.Stream(), 'globl')"),
    ("capture of a non-stream", "TypeError", "cuabi.Graph.capture(0)"),
    # -- double close, use after close
    ("closing everything twice", "ok",
     "objs = [cuabi.DeviceBuffer(8), cuabi.PinnedBuffer(8), cuabi.ManagedBuffer(8), cuabi.Stream(), "
     "cuabi.Event(), cuabi.Graph(), cuabi.MemoryPool()]\nfor o in objs:\n    o.close(); o.close()"),
    ("a closed buffer's ptr", "ClosedError", "b = cuabi.DeviceBuffer(8); b.close(); b.ptr"),
    ("a closed pinned buffer's view", "ClosedError", "p = cuabi.PinnedBuffer(8); p.close(); p.memoryview()"),
    ("a closed stream's sync", "ClosedError", "s = cuabi.Stream(); s.close(); s.sync()"),
    ("a closed stream in launch", "ClosedError",
     "m = cuabi.Module('fakecuda-module\\nkernel empty\\n'); k = m.get_kernel('empty', '')\n"
     "s = cuabi.Stream(); s.close(); cuabi.launch(s, cuabi.LaunchConfig(), k)"),
    ("a kernel of an unloaded module", "ClosedError",
     "m = cuabi.Module('fakecuda-module\\nkernel empty\\n'); k = m.get_kernel('empty', ''); m.close()\n"
     "cuabi.launch(None, cuabi.LaunchConfig(), k)"),
    ("a view of a closed buffer", "ClosedError", "b = cuabi.DeviceBuffer(8); v = b.view(); b.close(); v.ptr"),
    ("a closed event in wait", "ClosedError", "e = cuabi.Event(); e.close(); cuabi.Stream().wait(e)"),
    ("entering a closed stream", "ClosedError", "s = cuabi.Stream(); s.close()\nwith s:\n    pass"),
    ("a closed context's handle", "ClosedError", "c = cuabi.Device(0).set_current(); c.close(); c.handle"),
    ("close(stream=) of a cuMemAlloc buffer", "ValueError", "cuabi.DeviceBuffer(8).close(stream=cuabi.Stream())"),
    ("close of a DLPack-exported buffer", "BufferError",
     "b = cuabi.DeviceBuffer(16); a = cuabi.from_dlpack(b); b.close()"),
    ("close after a DLPack import is released", "ok",
     "b = cuabi.DeviceBuffer(16); a = cuabi.from_dlpack(b); a.close(); b.close()"),
    ("an unconsumed capsule is freed", "ok",
     "from cuabi import _dlpack\nb = cuabi.DeviceBuffer(16); c = b.__dlpack__(); del c\n"
     "assert _dlpack.exported_count() == 0; b.close()"),
    ("context close refuses while a view lives", "BufferError",
     "c = cuabi.Device(0).set_current(); p = cuabi.PinnedBuffer(8); s = p[0:2]; c.close()"),
    ("context close after views go", "ok",
     "c = cuabi.Device(0).set_current(); p = cuabi.PinnedBuffer(8); s = p[0:2]; del s, p; gc.collect(); c.close()"),
    # -- a foreign context destroyed underneath, threads, fork, exit
    ("a context destroyed by another library", "ok",
     "cuabi.init(); ctx = d.cuCtxCreate(None, 0, 0); d.cuCtxSetCurrent(ctx)\n"
     "b = cuabi.DeviceBuffer(16); d.cuCtxDestroy(ctx)\n"
     "try:\n    b.to_bytes()\nexcept cuabi.CUDAError:\n    pass\nb.close()"),
    ("buffers made and freed in many threads", "ok",
     "def w():\n    for _ in range(50):\n        cuabi.DeviceBuffer(64).close()\n"
     "ts = [threading.Thread(target=w) for _ in range(4)]\n[t.start() for t in ts]; [t.join() for t in ts]"),
    ("a buffer freed from another thread", "ok",
     "b = cuabi.DeviceBuffer(64); t = threading.Thread(target=b.close); t.start(); t.join(); assert b.closed"),
    ("fork with objects open", "ok",
     "b = cuabi.DeviceBuffer(64); pid = os.fork()\nif pid == 0:\n    os._exit(0)\n"
     "assert os.waitpid(pid, 0)[1] == 0; b.close()"),
    ("exit with everything open", "ok",
     "import atexit\nkeep = [cuabi.DeviceBuffer(8), cuabi.PinnedBuffer(8)[0:4], cuabi.Stream(), cuabi.Graph()]\n"
     "atexit.register(lambda: keep)\nos.environ['CUABI_CORPUS_NO_LEAK_CHECK'] = '1'"),
    ("garbage collection frees what was left open", "ok",
     "for _ in range(20):\n    cuabi.DeviceBuffer(8); cuabi.Stream(); cuabi.Event(); cuabi.PinnedBuffer(8)"),
]


def run_case(code: str) -> dict:
    """Run ``code`` here (in the child process) and describe how it ended."""
    import gc
    import threading

    import cuabi
    from cuabi import driver as d

    try:
        import numpy as np
    except ImportError:
        np = None
    scope = {"cuabi": cuabi, "d": d, "np": np, "gc": gc, "threading": threading, "os": os}
    result = {"raised": None, "message": ""}
    try:
        exec(compile(code, "<case>", "exec"), scope)
    except BaseException as exc:  # noqa: BLE001 - the case says what it expects
        result["raised"] = type(exc).__name__
        result["message"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    scope.clear()
    gc.collect()
    return result


def check_leaks(fake_path: str) -> dict:
    """Close device 0's primary context and count what the fake still holds."""
    import ctypes
    import gc

    import cuabi

    gc.collect()
    try:
        ctx = cuabi.Device(0).context
        ctx.close()
    except Exception as exc:  # noqa: BLE001
        return {"close": "%s: %s" % (type(exc).__name__, exc)}
    lib = ctypes.CDLL(fake_path)
    lib.fakecuda_live_allocations.restype = ctypes.c_uint64
    lib.fakecuda_live_objects.restype = ctypes.c_uint64
    lib.fakecuda_live_objects.argtypes = [ctypes.c_char_p]
    out = {"allocations": lib.fakecuda_live_allocations()}
    for kind in ("contexts", "streams", "events", "modules", "graphs", "graph_execs", "pools"):
        out[kind] = lib.fakecuda_live_objects(kind.encode())
    return out


def _child(index: int, out_fd: int) -> None:
    name, expected, code = CASES[index]
    result = run_case(code)
    if os.environ.get("CUABI_CORPUS_NO_LEAK_CHECK") != "1":
        result["left"] = check_leaks(os.environ["CUABI_LIBCUDA"])
    os.write(out_fd, json.dumps(result).encode())


def serve() -> None:
    """The zygote: imports cuabi (loading nothing) and numpy once, then for
    each case number read on stdin forks a child that runs the case and
    reports; answers one JSON line per case with how the child ended."""
    import cuabi  # noqa: F401 - imported once, used by every child

    try:
        import numpy  # noqa: F401
    except ImportError:
        pass
    for line in sys.stdin:
        # a case number, or a JSON list [name, expected, code] run as an extra case
        if line.startswith("["):
            CASES.append(tuple(json.loads(line)))
            index = len(CASES) - 1
        else:
            index = int(line)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the case's own process
            os.close(r)
            try:
                _child(index, w)
            finally:
                os._exit(0)
        os.close(w)
        chunks = []
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(r)
        _pid, status = os.waitpid(pid, 0)
        reply = {"status": status, "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
                 "result": json.loads(b"".join(chunks) or b"null")}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
