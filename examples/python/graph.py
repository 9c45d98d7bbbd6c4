# SPDX-License-Identifier: Apache-2.0
"""A CUDA graph: capture a chain of kernel launches once, replay it many times,
then update the instantiated graph with new parameters without re-instantiating.

    python examples/python/graph.py
"""

import array
import sys

import cuabi

SOURCE = r"""
extern "C" __global__ void axpb(float *p, float a, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = a * p[i] + b;
}
"""


def capture(stream, kernel, buf, n, a, b, steps):
    config = cuabi.LaunchConfig(grid=(n + 255) // 256, block=256)
    with cuabi.Graph.capture(stream) as cap:
        for _ in range(steps):
            cuabi.launch(stream, config, kernel, buf, a, b, n)
    return cap.graph


def main(n=1 << 16, steps=10, replays=100):
    cuabi.Device(0).set_current()
    module = cuabi.Program(SOURCE).compile().load()
    kernel = module.get_kernel("axpb", "ptr, float32, float32, int32")
    stream = cuabi.Stream()
    buf = cuabi.DeviceBuffer(4 * n)

    graph = capture(stream, kernel, buf, n, 1.0, 1.0, steps)  # p += 1, `steps` times
    print("captured %d nodes" % graph.node_count)
    exe = graph.instantiate()

    buf.fill(0, width=4)
    start = stream.record(cuabi.Event(timing=True))
    for _ in range(replays):
        exe.launch(stream)
    end = stream.record(cuabi.Event(timing=True))
    out = array.array("f", buf.to_bytes(stream=stream))
    expected = float(steps * replays)
    print("%d replays in %.3f ms; p[0] = %g (expected %g)" % (replays, end - start, out[0], expected))
    ok = out[0] == expected and out[-1] == expected

    # same topology, new parameters (p += 2): update the executable graph in place
    exe.update(capture(stream, kernel, buf, n, 1.0, 2.0, steps))
    buf.fill(0, width=4)
    exe.launch(stream)
    out = array.array("f", buf.to_bytes(stream=stream))
    print("after update: p[0] = %g (expected %g)" % (out[0], 2.0 * steps))
    ok = ok and out[0] == 2.0 * steps

    exe.close()
    graph.close()
    module.close()
    print("OK" if ok else "WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
