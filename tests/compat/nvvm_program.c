/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program written for NVIDIA's nvvm.h, unchanged: built against cuabi's compat
 * nvvm.h and linked with libcuabi alone (no libnvvm), it asks NVVM for its versions
 * and runs a program through it with whatever NVVM cuabi loads.
 */
#include <nvvm.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        nvvmResult rc_ = (call);                                                           \
        if (rc_ != NVVM_SUCCESS) {                                                         \
            fprintf(stderr, "%s failed: %s\n", #call, nvvmGetErrorString(rc_));            \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

static const char module[] = "; a module (the fake NVVM does not read it)\n";

int main(void)
{
    int major, minor, ir_major, ir_minor, dbg_major, dbg_minor;
    CHECK(nvvmVersion(&major, &minor));
    CHECK(nvvmIRVersion(&ir_major, &ir_minor, &dbg_major, &dbg_minor));
    printf("NVVM %d.%d, IR %d.%d\n", major, minor, ir_major, ir_minor);
    nvvmProgram prog;
    CHECK(nvvmCreateProgram(&prog));
    CHECK(nvvmAddModuleToProgram(prog, module, sizeof module, "module.ll"));
    const char *options[] = { "-arch=compute_80" };
    CHECK(nvvmCompileProgram(prog, 1, options));
    size_t size = 0;
    CHECK(nvvmGetCompiledResultSize(prog, &size));
    char *result = malloc(size);
    CHECK(nvvmGetCompiledResult(prog, result));
    printf("%zu bytes compiled\n", size);
    free(result);
    CHECK(nvvmDestroyProgram(&prog));
    return 0;
}
