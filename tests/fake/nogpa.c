/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libfakecuda_nogpa.so: a library that looks like a driver from before CUDA 12.0
 * (cuInit and cuDriverGetVersion, no cuGetProcAddress_v2), for the loading test
 * "a library without cuGetProcAddress_v2". cuabi must refuse it as unusable.
 */
#define NOGPA_EXPORT __attribute__((visibility("default")))

NOGPA_EXPORT int cuInit(unsigned int flags)
{
    return flags == 0 ? 0 : 1;
}

NOGPA_EXPORT int cuDriverGetVersion(int *version)
{
    if (version == 0)
        return 1;
    *version = 11020;
    return 0;
}
