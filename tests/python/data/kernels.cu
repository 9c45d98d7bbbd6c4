/* SPDX-License-Identifier: Apache-2.0 */
// Source of kernels.ptx (regenerate with cuabi.Program(src).compile(arch="sm_75")).
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void empty() {}

extern "C" __global__ void launch_info(unsigned *out)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = gridDim.x; out[1] = gridDim.y; out[2] = gridDim.z;
        out[3] = blockDim.x; out[4] = blockDim.y; out[5] = blockDim.z;
        unsigned s;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(s));
        out[6] = s;
    }
}

extern "C" __global__ void store_mixed(unsigned char a, double b, unsigned short c, int d,
                                       unsigned long long *out)
{
    out[0] = a;
    out[1] = __double_as_longlong(b);
    out[2] = c;
    out[3] = (unsigned long long)(long long)d;
}
