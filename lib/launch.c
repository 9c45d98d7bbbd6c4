/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch.c - cuabi_launch_packed(): a kernel launch from one buffer, so a
 * caller in another language packs the launch once and crosses into C once.
 */
#include "internal.h"

#include <string.h>

_Static_assert(sizeof(cuabi_launch_header) == CUABI_LAUNCH_HEADER_SIZE,
               "the launch header is 32 bytes by contract");

CUABI_API CUresult CUABI_CALL cuabi_launch_packed(CUfunction f, CUstream stream,
                                                  const void *packet, size_t packet_size)
{
    if (packet == NULL || packet_size < CUABI_LAUNCH_HEADER_SIZE)
        return CUDA_ERROR_INVALID_VALUE;

    /* The packet may sit at any address; copy the header out rather than
     * read it in place. */
    cuabi_launch_header h;
    memcpy(&h, packet, sizeof h);
    if (h.reserved != 0)
        return CUDA_ERROR_INVALID_VALUE;

    /* The driver takes the parameter buffer as is: pointer plus size (0 for
     * a kernel without parameters).  It only reads it; the cast drops const
     * to fit the extra array's type. */
    size_t param_size = packet_size - CUABI_LAUNCH_HEADER_SIZE;
    void *params = (void *)((const unsigned char *)packet + CUABI_LAUNCH_HEADER_SIZE);
    void *extra[] = {
        CU_LAUNCH_PARAM_BUFFER_POINTER, params,
        CU_LAUNCH_PARAM_BUFFER_SIZE,    &param_size,
        CU_LAUNCH_PARAM_END,
    };
    return cuabi_cuLaunchKernel(f, h.grid[0], h.grid[1], h.grid[2], h.block[0], h.block[1],
                                h.block[2], h.shared_mem_bytes, stream, NULL, extra);
}
