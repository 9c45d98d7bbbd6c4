/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program written for NVIDIA's nvml.h, unchanged: built against cuabi's compat
 * nvml.h and linked with libcuabi alone (no libnvidia-ml), it lists the devices of
 * whatever NVML cuabi loads.
 */
#include <nvml.h>
#include <stdio.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        nvmlReturn_t rc_ = (call);                                                         \
        if (rc_ != NVML_SUCCESS) {                                                         \
            fprintf(stderr, "%s failed: %s\n", #call, nvmlErrorString(rc_));               \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void)
{
    CHECK(nvmlInit());
    unsigned int count = 0;
    CHECK(nvmlDeviceGetCount(&count));
    for (unsigned int i = 0; i < count; i++) {
        nvmlDevice_t device;
        char name[NVML_DEVICE_NAME_BUFFER_SIZE];
        CHECK(nvmlDeviceGetHandleByIndex(i, &device));
        CHECK(nvmlDeviceGetName(device, name, sizeof name));
        printf("device %u: %s\n", i, name);
    }
    CHECK(nvmlShutdown());
    return count > 0 ? 0 : 1;
}
