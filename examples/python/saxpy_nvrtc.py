# SPDX-License-Identifier: Apache-2.0
"""SAXPY: compile CUDA C++ with NVRTC at run time, launch it, check the result.

    python examples/python/saxpy_nvrtc.py [n]

Needs a GPU, its driver and NVRTC (the CUDA toolkit, or `pip install
nvidia-cuda-nvrtc`); `python -m cuabi` says what is missing.
"""

import array
import sys

import cuabi

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""


def main(n=1 << 20):
    dev = cuabi.Device(0)
    dev.set_current()
    print("device:", dev.name, "sm_%d%d" % dev.compute_capability)

    # compile for this device's architecture and load the result
    code = cuabi.Program(SOURCE, name="saxpy.cu").compile(["-use_fast_math"])
    module = code.load()
    saxpy = module.get_kernel("saxpy", "float32, ptr, ptr, int32")

    x_host = array.array("f", (float(i) for i in range(n)))
    y_host = array.array("f", [1.0]) * n
    a = 2.0

    with cuabi.Stream() as stream:
        x = cuabi.DeviceBuffer(len(x_host) * 4, stream=stream)
        y = cuabi.DeviceBuffer(len(y_host) * 4, stream=stream)
        x.copy_from(x_host, stream=stream)
        y.copy_from(y_host, stream=stream)

        block = 256
        config = cuabi.LaunchConfig(grid=(n + block - 1) // block, block=block)
        start = stream.record(cuabi.Event(timing=True))
        cuabi.launch(stream, config, saxpy, a, x, y, n)
        end = stream.record(cuabi.Event(timing=True))

        result = array.array("f", bytes(4 * n))
        y.copy_to(result, stream=stream)
        stream.sync()
        print("kernel time: %.3f ms" % (end - start))

    bad = sum(1 for i in range(n) if result[i] != a * x_host[i] + y_host[i])
    print("checked %d elements: %s" % (n, "OK" if bad == 0 else "%d wrong" % bad))
    module.close()
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20))
