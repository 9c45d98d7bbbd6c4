/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A driver-API source built with -DCUDA_API_PER_THREAD_DEFAULT_STREAM against
 * the compat cuda.h: the toolkit's header would give this file the per-thread
 * default stream, and cuabi (which chooses for the whole process) gives it to
 * the process before main() runs.  Exits 0 and says so when that holds.
 */
#include <cuda.h>

#include <stdio.h>

int main(void)
{
#ifndef __CUDA_API_PER_THREAD_DEFAULT_STREAM
    fprintf(stderr, "built without CUDA_API_PER_THREAD_DEFAULT_STREAM\n");
    return 2;
#else
    CUresult rc = cuInit(0);
    if (rc != CUDA_SUCCESS) {
        const char *name = NULL;
        cuGetErrorName(rc, &name);
        fprintf(stderr, "cuInit: %s\n", name);
        return 1;
    }
    if (cuabi_default_stream_mode() != 1) {
        fprintf(stderr, "the process runs with the legacy default stream\n");
        return 1;
    }
    printf("per-thread default stream in effect\n");
    return 0;
#endif
}
