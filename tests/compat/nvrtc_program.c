/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program written for NVIDIA's nvrtc.h, unchanged: built against cuabi's compat
 * nvrtc.h and linked with libcuabi alone (no libnvrtc), it compiles a kernel with
 * whatever NVRTC cuabi loads (the fake, here: tests/CMakeLists.txt).
 */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        nvrtcResult rc_ = (call);                                                          \
        if (rc_ != NVRTC_SUCCESS) {                                                        \
            fprintf(stderr, "%s failed: %s (%d)\n", #call, nvrtcGetErrorString(rc_), (int)rc_); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void)
{
    int major = 0, minor = 0;
    CHECK(nvrtcVersion(&major, &minor));
    printf("NVRTC %d.%d\n", major, minor);

    const char *source = "extern \"C\" __global__ void scale(float *x, float a)\n"
                         "{ x[threadIdx.x] *= a; }\n";
    nvrtcProgram prog;
    CHECK(nvrtcCreateProgram(&prog, source, "scale.cu", 0, NULL, NULL));
    const char *options[] = { "-default-device" };
    nvrtcResult compiled = nvrtcCompileProgram(prog, 1, options);
    size_t log_size = 0;
    CHECK(nvrtcGetProgramLogSize(prog, &log_size));
    char *log = malloc(log_size);
    CHECK(nvrtcGetProgramLog(prog, log));
    if (compiled != NVRTC_SUCCESS) {
        fprintf(stderr, "compilation failed: %s\n%s\n", nvrtcGetErrorString(compiled), log);
        return 1;
    }
    free(log);
    size_t ptx_size = 0;
    CHECK(nvrtcGetPTXSize(prog, &ptx_size));
    char *ptx = malloc(ptx_size);
    CHECK(nvrtcGetPTX(prog, ptx));
    if (strstr(ptx, ".entry") == NULL) {
        fprintf(stderr, "no kernel in the PTX:\n%s\n", ptx);
        return 1;
    }
    printf("%zu bytes of PTX\n", ptx_size);
    free(ptx);
    CHECK(nvrtcDestroyProgram(&prog));
    return prog == NULL ? 0 : 1;
}
