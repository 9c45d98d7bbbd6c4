/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A plain CUDA driver-API program, written as such programs are: it includes
 * <cuda.h> and calls cuXxx. Built against include/cuabi/compat (no CUDA
 * toolkit on the include path) and linked with -lcuabi only, it runs on the
 * fake driver in the tests and, unchanged, on a GPU.
 *
 * It computes y = a*x + y with a PTX kernel. On the fake driver the PTX's
 * .entry saxpy is carried out by the fake's host kernel of the same name.
 */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                     \
    do {                                                                                \
        CUresult status_ = (call);                                                      \
        if (status_ != CUDA_SUCCESS) {                                                  \
            const char *name_ = NULL;                                                   \
            cuGetErrorName(status_, &name_);                                            \
            fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call,   \
                    name_ ? name_ : "unknown error", (int)status_);                     \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static const char saxpy_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry saxpy(\n"
    "    .param .f32 saxpy_a,\n"
    "    .param .u64 saxpy_x,\n"
    "    .param .u64 saxpy_y,\n"
    "    .param .u32 saxpy_n\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .f32 %f<5>;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .b64 %rd<8>;\n"
    "\n"
    "    ld.param.f32 %f1, [saxpy_a];\n"
    "    ld.param.u64 %rd1, [saxpy_x];\n"
    "    ld.param.u64 %rd2, [saxpy_y];\n"
    "    ld.param.u32 %r1, [saxpy_n];\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    mov.u32 %r3, %ntid.x;\n"
    "    mov.u32 %r4, %tid.x;\n"
    "    mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "    setp.ge.s32 %p1, %r5, %r1;\n"
    "    @%p1 bra DONE;\n"
    "    cvta.to.global.u64 %rd3, %rd1;\n"
    "    cvta.to.global.u64 %rd4, %rd2;\n"
    "    mul.wide.s32 %rd5, %r5, 4;\n"
    "    add.s64 %rd6, %rd3, %rd5;\n"
    "    add.s64 %rd7, %rd4, %rd5;\n"
    "    ld.global.f32 %f2, [%rd6];\n"
    "    ld.global.f32 %f3, [%rd7];\n"
    "    fma.rn.f32 %f4, %f1, %f2, %f3;\n"
    "    st.global.f32 [%rd7], %f4;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

int main(void)
{
    enum { N = 1000 };
    static float x[N], y[N];
    CUdevice device;
    CUcontext context;
    CUmodule module;
    CUfunction saxpy;
    CUdeviceptr dx, dy;
    char name[128];
    int driver_version = 0;

    CHECK(cuInit(0));
    CHECK(cuDriverGetVersion(&driver_version));
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDeviceGetName(name, sizeof name, device));
    printf("device 0: %s, driver %d.%d\n", name, driver_version / 1000, driver_version % 1000 / 10);

    CHECK(cuCtxCreate(&context, NULL, 0, device));
    CHECK(cuModuleLoadData(&module, saxpy_ptx));
    CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));

    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 2.0f;
    }
    CHECK(cuMemAlloc(&dx, sizeof x));
    CHECK(cuMemAlloc(&dy, sizeof y));
    CHECK(cuMemcpyHtoD(dx, x, sizeof x));
    CHECK(cuMemcpyHtoD(dy, y, sizeof y));

    float a = 0.5f;
    int n = N;
    void *params[] = { &a, &dx, &dy, &n };
    unsigned block = 128, grid = (N + block - 1) / block;
    CHECK(cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(y, dy, sizeof y));

    int wrong = 0;
    for (int i = 0; i < N; i++)
        if (y[i] != 0.5f * (float)i + 2.0f)
            wrong++;

    CHECK(cuMemFree(dx));
    CHECK(cuMemFree(dy));
    CHECK(cuModuleUnload(module));
    CHECK(cuCtxDestroy(context));

    if (wrong != 0) {
        fprintf(stderr, "saxpy: %d of %d results wrong\n", wrong, N);
        return 1;
    }
    printf("saxpy on %d elements: correct\n", N);
    return 0;
}
