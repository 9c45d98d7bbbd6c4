# SPDX-License-Identifier: Apache-2.0
"""The other process of the interprocess tests (test_ipc.py on the fake,
test_gpu_ipc.py on a GPU): ``python ipc_peer.py SOCKET_FD MODE``.

It receives over the Unix socket SOCKET_FD (inherited through pass_fds) the
exported pool's file descriptor (cuabi.send_fd), then a pickled dict {"buffer": IpcBufferDescriptor,
"event": IpcEventHandle or None, "pattern": bytes}, imports the pool and the
buffer, and then, by MODE:

* ``write``: reads the buffer (the parent filled it with ``expect``), writes
  ``pattern`` into it on a stream, records the imported event after the
  write, and reports; waits for the parent's "done" before closing.
* ``kernel`` (GPU only): compiles SLOW_FILL with NVRTC, launches it on the
  buffer (it spins first, so the write lands well after the launch
  returns), records the imported event after it, and reports at once: only
  the event tells the parent when the data is there;
* ``misuse``: tries what must be refused in an importing process and reports
  each error message.

Every report is one pickled dict sent on the socket.  The tests start it
with :class:`Peer`.
"""

import gc
import os
import pickle
import socket
import subprocess
import sys
import traceback

import cuabi


def _error(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the message is the result
        return "%s: %s" % (type(exc).__name__, exc)
    return None


def write(pool, buf, job, report):
    before = buf.to_bytes()
    ev = cuabi.Event.from_ipc_handle(job["event"])
    s = cuabi.Stream()
    pattern = job["pattern"]
    buf.copy_from(pattern, stream=s)
    s.record(ev)
    report({"read": before, "recorded": True, "ptr": buf.ptr, "event_timing": ev.timing})
    return [ev, s]


# Spins for `spin` clock cycles, then writes p[i] = expected(i) (see expected()).
SLOW_FILL = r'''
extern "C" __global__ void slow_fill(unsigned *p, long long n, long long spin)
{
    long long start = clock64();
    while (clock64() - start < spin) { }
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] = (unsigned)(i * 2654435761u) ^ 0x5a5a5a5au;
}
'''


def expected(n):
    """What slow_fill writes into n 32-bit words."""
    import array

    return array.array("I", [((i * 2654435761) & 0xFFFFFFFF) ^ 0x5A5A5A5A for i in range(n)]).tobytes()


def kernel(pool, buf, job, report):
    mod = cuabi.Program(SLOW_FILL).compile().load()
    k = mod.get_kernel("slow_fill", "pqq")
    ev = cuabi.Event.from_ipc_handle(job["event"])
    s = cuabi.Stream()
    n = buf.size // 4
    cuabi.launch(s, cuabi.LaunchConfig((n + 255) // 256, 256), k, buf, n, job["spin"])
    s.record(ev)
    report({"recorded": True, "done_at_report": ev.query()})
    return [ev, s, mod]


def misuse(pool, buf, job, report):
    out = {
        "twice": _error(lambda: pool.import_buffer(job["buffer"])),
        "allocate": _error(lambda: pool.allocate(256)),
        "direct": _error(lambda: cuabi.DeviceBuffer(256, pool=pool)),
        "reexport_pool": _error(pool.export_fd),
        "reexport_buffer": _error(buf.ipc_descriptor),
        "not_a_descriptor": _error(lambda: pool.import_buffer(b"x" * 80)),
    }
    buf.close()
    gone = pool.import_buffer(job["buffer"])  # allowed once the first import is closed
    del gone  # collected: the pool forgets it (weakly held)
    for _ in range(3):  # PyPy runs finalizers over several collections
        gc.collect()
    out["table_after_collect"] = len(pool._imports)
    again = pool.import_buffer(job["buffer"])
    out["again_size"] = again.size
    out["again_bytes"] = again.to_bytes()[:8]
    pool.close()  # closes `again` first: an imported pointer goes before its pool
    out["again_closed_with_pool"] = again.closed
    out["after_pool_close"] = _error(lambda: again.to_bytes())
    report(out)
    return []


class Peer:
    """The test's side: starts ``ipc_peer.py MODE`` with one end of a socket
    pair, sends it the pool's descriptor and the job, and reads its reports."""

    def __init__(self, mode, pythonpath):
        self.sock, theirs = socket.socketpair()
        env = dict(os.environ, PYTHONPATH=pythonpath)
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(theirs.fileno()), mode],
                                     pass_fds=[theirs.fileno()], env=env, stderr=subprocess.PIPE)
        theirs.close()
        self.sock.settimeout(120)

    def send(self, pool_fd, job):
        cuabi.send_fd(self.sock, pool_fd)
        data = pickle.dumps(job)
        self.sock.sendall(len(data).to_bytes(4, "little") + data)

    def report(self):
        head = self._exactly(4)
        d = pickle.loads(self._exactly(int.from_bytes(head, "little")))
        assert "error" not in d, "the peer process failed:\n" + d["error"]
        return d

    def _exactly(self, n):
        try:
            return _exactly(self.sock, n)
        except EOFError:
            self.proc.wait(timeout=60)
            raise AssertionError("the peer process ended early (%r):\n%s"
                                 % (self.proc.returncode, self.proc.stderr.read().decode())) from None

    def finish(self):
        """Tell the peer that the test is done with it; its last report, and its exit status 0."""
        self.sock.sendall(b"done")
        last = self.report()
        assert self.proc.wait(timeout=60) == 0, self.proc.stderr.read().decode()
        self.proc.stderr.close()
        self.sock.close()
        return last


def run_example(pythonpath):
    """Run examples/python/ipc.py (it starts its own child process): (returncode, output)."""
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python", "ipc.py")
    p = subprocess.run([sys.executable, example], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=pythonpath), timeout=300)
    return p.returncode, p.stdout + p.stderr


def _exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("the other process closed the socket")
        data += chunk
    return data


def main():
    sock = socket.socket(fileno=int(sys.argv[1]))
    mode = sys.argv[2]

    def report(d):
        data = pickle.dumps(d)
        sock.sendall(len(data).to_bytes(4, "little") + data)

    try:
        fd = cuabi.recv_fd(sock)
        job = pickle.loads(_exactly(sock, int.from_bytes(_exactly(sock, 4), "little")))
        cuabi.Device(0).set_current()
        pool = cuabi.MemoryPool.import_fd(fd)
        os.close(fd)  # the pool keeps what it needs
        buf = pool.import_buffer(job["buffer"])
        keep = {"write": write, "kernel": kernel, "misuse": misuse}[mode](pool, buf, job, report)
        sock.recv(16)  # the parent's "done": it no longer needs this process's side
        del keep
        if not pool.closed:
            buf.close()
            pool.close()
        report({"closed": True})
    except Exception:  # noqa: BLE001 - reported to the parent, which fails the test
        report({"error": traceback.format_exc()})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
