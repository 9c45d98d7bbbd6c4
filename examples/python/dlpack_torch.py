# SPDX-License-Identifier: Apache-2.0
"""DLPack with PyTorch, both ways, on the tensors' streams.

1. a cuabi kernel works on a PyTorch tensor (torch -> cuabi via DLPack);
2. PyTorch computes on memory cuabi allocated (cuabi -> torch via DLPack);
3. a torch tensor passed directly as a kernel argument (data_ptr()).

    python examples/python/dlpack_torch.py      (needs torch with CUDA)
"""

import sys

import cuabi

SOURCE = r"""
extern "C" __global__ void square(float *p, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = p[i] * p[i];
}
"""


def main():
    try:
        import torch
    except ImportError:
        print("this example needs PyTorch (pip install torch)")
        return 2
    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA device")
        return 2

    torch.zeros(1, device="cuda")  # let torch make the primary context current
    cuabi.Device(torch.cuda.current_device()).set_current()
    kernel = cuabi.Program(SOURCE).compile().load().get_kernel("square", "ptr, int64")
    n = 1 << 20
    config = cuabi.LaunchConfig(grid=(n + 255) // 256, block=256)
    torch_stream = cuabi.Stream.from_handle(torch.cuda.current_stream().cuda_stream)

    # 1. torch -> cuabi: import the tensor, launch on torch's current stream
    t = torch.arange(n, dtype=torch.float32, device="cuda")
    view = cuabi.from_dlpack(t, stream=torch_stream)
    cuabi.launch(torch_stream, config, kernel, view, n)
    ok1 = torch.equal(t[:4].cpu(), torch.tensor([0.0, 1.0, 4.0, 9.0]))
    view.close()
    print("torch tensor squared by a cuabi kernel:", "OK" if ok1 else "WRONG")

    # 2. cuabi -> torch: torch computes on a cuabi buffer, no copy
    buf = cuabi.DeviceBuffer(4 * n)
    buf.fill(0x40000000, width=4)  # 2.0f
    shared = torch.from_dlpack(buf.view("float32"))
    shared.add_(1.0)  # now 3.0 everywhere, in cuabi's memory
    cuabi.launch(torch_stream, config, kernel, buf, n)  # 9.0
    torch.cuda.current_stream().synchronize()
    ok2 = bool((shared == 9.0).all())
    print("cuabi buffer updated by torch and by cuabi:", "OK" if ok2 else "WRONG")

    # 3. a tensor straight as a kernel argument
    u = torch.full((n,), 4.0, device="cuda")
    cuabi.launch(torch_stream, config, kernel, u, n)
    ok3 = float(u[0]) == 16.0
    print("tensor passed directly:", "OK" if ok3 else "WRONG")

    del shared
    buf.close()
    return 0 if ok1 and ok2 and ok3 else 1


if __name__ == "__main__":
    sys.exit(main())
