/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program written for NVIDIA's nvJitLink.h, unchanged: built against cuabi's compat
 * nvJitLink.h and linked with libcuabi alone (no libnvJitLink), it links a PTX module
 * into a cubin with whatever nvJitLink cuabi loads.
 */
#include <nvJitLink.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                        \
    do {                                                                   \
        nvJitLinkResult rc_ = (call);                                     \
        if (rc_ != NVJITLINK_SUCCESS) {                                   \
            fprintf(stderr, "%s failed: %d\n", #call, (int)rc_);          \
            return 1;                                                     \
        }                                                                 \
    } while (0)

static const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                          ".visible .entry nothing()\n{\n\tret;\n}\n";

int main(void)
{
    unsigned major = 0, minor = 0;
    CHECK(nvJitLinkVersion(&major, &minor));
    nvJitLinkHandle link;
    const char *options[] = { "-arch=sm_80" };
    CHECK(nvJitLinkCreate(&link, 1, options));
    CHECK(nvJitLinkAddData(link, NVJITLINK_INPUT_PTX, ptx, sizeof ptx, "nothing.ptx"));
    CHECK(nvJitLinkComplete(link));
    size_t size = 0;
    CHECK(nvJitLinkGetLinkedCubinSize(link, &size));
    void *cubin = malloc(size);
    CHECK(nvJitLinkGetLinkedCubin(link, cubin));
    printf("nvJitLink %u.%u: %zu bytes of cubin\n", major, minor, size);
    free(cubin);
    CHECK(nvJitLinkDestroy(&link));
    return size > 0 && link == NULL ? 0 : 1;
}
