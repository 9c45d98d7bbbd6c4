/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuabi from C: y = a*x + y with a PTX kernel (the fake driver runs its host kernel saxpy).
 * usage: saxpy PTX_FILE. Without a driver it prints the reason and exits with 3.
 */
#include <cuabi.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        CUresult rc_ = (call);                                                             \
        if (rc_ != CUDA_SUCCESS) {                                                         \
            fprintf(stderr, "%s: %s: %s\n", #call, cuabi_error_name(rc_), cuabi_error_string(rc_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

int main(int argc, char **argv)
{
    enum { N = 1000 };
    static float x[N], y[N];
    if (argc != 2) {
        fprintf(stderr, "usage: %s PTX_FILE\n", argv[0]);
        return 2;
    }
    const char *ptx = read_file(argv[1]);

    CUresult rc = cuabi_cuInit(0);
    if (rc != CUDA_SUCCESS) {
        printf("cuInit: %s: %s\n", cuabi_error_name(rc), cuabi_error_string(rc));
        return 3;
    }
    CUdevice device;
    CUcontext context;
    CUmodule module;
    CUfunction saxpy;
    CUdeviceptr dx, dy;
    CHECK(cuabi_cuDeviceGet(&device, 0));
    CHECK(cuabi_cuCtxCreate(&context, NULL, 0, device));
    CHECK(cuabi_cuModuleLoadData(&module, ptx));
    CHECK(cuabi_cuModuleGetFunction(&saxpy, module, "saxpy"));
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 2.0f;
    }
    CHECK(cuabi_cuMemAlloc(&dx, sizeof x));
    CHECK(cuabi_cuMemAlloc(&dy, sizeof y));
    CHECK(cuabi_cuMemcpyHtoD(dx, x, sizeof x));
    CHECK(cuabi_cuMemcpyHtoD(dy, y, sizeof y));
    float a = 0.5f;
    int n = N;
    void *params[] = { &a, &dx, &dy, &n };
    CHECK(cuabi_cuLaunchKernel(saxpy, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
    CHECK(cuabi_cuCtxSynchronize());
    CHECK(cuabi_cuMemcpyDtoH(y, dy, sizeof y));
    CHECK(cuabi_cuMemFree(dx));
    CHECK(cuabi_cuMemFree(dy));
    CHECK(cuabi_cuModuleUnload(module));
    CHECK(cuabi_cuCtxDestroy(context));
    for (int i = 0; i < N; i++) {
        if (y[i] != 0.5f * (float)i + 2.0f) {
            printf("saxpy: y[%d] is %g, want %g\n", i, (double)y[i], 0.5 * i + 2.0);
            return 1;
        }
    }
    printf("saxpy on %d elements: correct\n", N);
    return 0;
}
