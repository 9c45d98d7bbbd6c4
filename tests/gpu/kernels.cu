/* SPDX-License-Identifier: Apache-2.0 */
// Kernels for the GPU tests and benchmarks of cuabi. Compiled to kernels.ptx with
//   nvcc -ptx -arch=compute_80 -o kernels.ptx kernels.cu
// (the PTX is committed so that the GPU tests need no compiler).
extern "C" __global__ void add_one(unsigned int *data, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] += 1u;
}

extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void empty0() {}

extern "C" __global__ void empty3(void *a, int b, float c) { (void)a; (void)b; (void)c; }

extern "C" __global__ void empty16(void *a0, void *a1, void *a2, void *a3, int a4, int a5, int a6,
                                   int a7, float a8, float a9, float a10, float a11,
                                   unsigned long long a12, unsigned long long a13, double a14,
                                   double a15)
{
    (void)a0; (void)a1; (void)a2; (void)a3; (void)a4; (void)a5; (void)a6; (void)a7;
    (void)a8; (void)a9; (void)a10; (void)a11; (void)a12; (void)a13; (void)a14; (void)a15;
}
