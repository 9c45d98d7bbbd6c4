/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errors.c - cuabi_error_name() and cuabi_error_string().
 *
 * cuabi's own codes are answered from codes.c.  CUDA's codes are answered by
 * the driver when it is already loaded (its texts match its version exactly);
 * before that, or without a driver, from codes.c's table of CUDA 13.5's
 * codes.  These functions never load the driver: a program asking why the
 * load failed must not trigger another load.
 */
#include "internal.h"

static const char unknown_name[] = "CUABI_UNKNOWN_RESULT_CODE";
static const char unknown_text[] =
    "unrecognised result code (neither a CUDA 13.5 driver code nor a cuabi code)";

/* Asks the loaded driver; NULL when it is not loaded, not usable, or does
 * not know the code. */
static const char *ask_driver(CUresult code, int want_name)
{
    if ((unsigned)code >= (unsigned)CUABI_ERROR_BASE || !cuabi__load_finished() ||
        cuabi__ensure_loaded() != CUDA_SUCCESS)
        return NULL;
    const char *text = NULL;
    CUresult rc = want_name ? cuabi_cuGetErrorName(code, &text)
                            : cuabi_cuGetErrorString(code, &text);
    return rc == CUDA_SUCCESS ? text : NULL;
}

CUABI_API const char *CUABI_CALL cuabi_error_name(CUresult code)
{
    const char *text = ask_driver(code, 1);
    if (text != NULL)
        return text;
    const cuabi_code_info *info = cuabi__code_info(code);
    return info != NULL ? info->name : unknown_name;
}

CUABI_API const char *CUABI_CALL cuabi_error_string(CUresult code)
{
    const char *text = ask_driver(code, 0);
    if (text != NULL)
        return text;
    const cuabi_code_info *info = cuabi__code_info(code);
    return info != NULL ? info->text : unknown_text;
}
