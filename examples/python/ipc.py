# SPDX-License-Identifier: Apache-2.0
"""Two processes share device memory and an event.

The parent allocates a buffer from an interprocess pool and starts a child;
the child imports the pool and the buffer, writes into it on its own stream
and records an interprocess event after the write; the parent waits for that
event on its stream and reads what the child wrote.

    python ipc.py          (it starts its own child: python ipc.py --child FD)
"""

import os
import pickle
import socket
import subprocess
import sys

import cuabi

N = 1 << 16
PATTERN = bytes(i % 251 for i in range(N))


def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("the other process closed the socket")
        data += chunk
    return data


def parent():
    cuabi.Device(0).set_current()
    s = cuabi.Stream()
    pool = cuabi.MemoryPool(ipc=True)  # a pool other processes can import
    buf = pool.allocate(N, s)
    buf.fill(0, stream=s)
    s.sync()  # the child must not touch the memory before its allocation is done
    written = cuabi.Event(interprocess=True)

    mine, theirs = socket.socketpair()
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", str(theirs.fileno())],
                             pass_fds=[theirs.fileno()])
    theirs.close()
    fd = pool.export_fd()
    cuabi.send_fd(mine, fd)  # the pool travels as a file descriptor (SCM_RIGHTS)
    os.close(fd)
    job = pickle.dumps((buf.ipc_descriptor(), written.ipc_handle()))  # the rest is plain data
    mine.sendall(len(job).to_bytes(4, "little") + job)

    assert recv_exactly(mine, 8) == b"recorded"
    s.wait(written)  # the parent's stream waits for the child's write
    out = bytearray(N)
    buf.copy_to(out, stream=s)
    s.sync()
    mine.sendall(b"bye")  # the child drops its imports before this process frees the memory
    assert child.wait() == 0
    buf.close()
    pool.close()
    print("the parent read what the child wrote:", "OK" if out == PATTERN else "WRONG")
    return 0 if out == PATTERN else 1


def child(sock_fd):
    sock = socket.socket(fileno=sock_fd)
    cuabi.Device(0).set_current()
    fd = cuabi.recv_fd(sock)
    pool = cuabi.MemoryPool.import_fd(fd)
    os.close(fd)
    descriptor, handle = pickle.loads(recv_exactly(sock, int.from_bytes(recv_exactly(sock, 4), "little")))
    buf = pool.import_buffer(descriptor)  # the parent's memory, at this process's address
    written = cuabi.Event.from_ipc_handle(handle)
    s = cuabi.Stream()
    buf.copy_from(PATTERN, stream=s)
    s.record(written)
    sock.sendall(b"recorded")
    recv_exactly(sock, 3)
    buf.close()  # unmaps this process's import; the memory stays the parent's
    written.close()
    pool.close()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child(int(sys.argv[2])))
    sys.exit(parent())
