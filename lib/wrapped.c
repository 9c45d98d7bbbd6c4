/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wrapped.c - the three driver entry points cuabi does not forward as they
 * are (tools/gen_driver_api.py: WRAPPED).  The generated forwarder of each is
 * internal, cuabi__forward_<name>, and the exported function here adds:
 *
 *   cuGetErrorName, cuGetErrorString: an answer for every code cuabi knows
 *     (its own codes, and CUDA 13.5's) where the driver cannot give one:
 *     no driver, or a driver that does not know the code.  CUDA's codes
 *     still come from the driver when it knows them.
 *   cuGetProcAddress: in per-thread default stream mode, a call that names
 *     neither stream mode gets the per-thread one, as code built with
 *     CUDA_API_PER_THREAD_DEFAULT_STREAM gets from cuda.h's inline
 *     cuGetProcAddress_v2_ptsz.
 */
#include "internal.h"

/* One of cuabi's own codes (cuabi/result_codes.h). */
static int is_own_code(CUresult code)
{
    return (unsigned)code > (unsigned)CUABI_ERROR_BASE &&
           (unsigned)code < (unsigned)CUABI_ERROR_BASE + 1000u;
}

/* The common part: answer own codes from the table, ask the driver for the
 * rest, and fall back on the table where it cannot answer. */
static CUresult describe(CUresult error, const char **text, int want_name,
                         CUresult (*ask)(CUresult, const char **))
{
    const cuabi_code_info *info = cuabi__code_info(error);
    if (text != NULL && info != NULL && is_own_code(error)) {
        *text = want_name ? info->name : info->text;
        return CUDA_SUCCESS;
    }
    CUresult rc = ask(error, text);
    if (rc == CUDA_SUCCESS)
        return rc;
    if (text != NULL && info != NULL) {
        *text = want_name ? info->name : info->text;
        return CUDA_SUCCESS;
    }
    if (is_own_code(rc)) {
        /* No driver, or no such entry point in it: answer what the driver
         * itself answers for a code it does not know, or for no pointer. */
        if (text != NULL)
            *text = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
    return rc;
}

CUABI_API CUresult cuabi_cuGetErrorName(CUresult error, const char **pStr)
{
    return describe(error, pStr, 1, cuabi__forward_cuGetErrorName);
}

CUABI_API CUresult cuabi_cuGetErrorString(CUresult error, const char **pStr)
{
    return describe(error, pStr, 0, cuabi__forward_cuGetErrorString);
}

CUABI_API CUresult cuabi_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    const cuuint64_t stream_bits =
        CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if ((flags & stream_bits) == 0 && cuabi__stream_mode() == 1)
        flags |= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    return cuabi__forward_cuGetProcAddress(symbol, pfn, cudaVersion, flags, symbolStatus);
}
