/* SPDX-License-Identifier: Apache-2.0 */
/*
 * family_wrapped.c - the families' functions that cuabi does not forward as they
 * are: each one's code-to-text function (tools/gen_driver_api.py: a family's
 * error_string), nvrtcGetErrorString, nvvmGetErrorString and nvmlErrorString.
 * Their generated forwarder is internal, cuabi__forward_<name>; the exported
 * function here answers, as cuGetErrorName does for the driver (wrapped.c):
 *
 *   - cuabi's own codes (which a family's functions return when its library
 *     cannot be used, docs/families.md) from cuabi's table: their name where the
 *     function gives names (NVRTC, NVVM), their description where it gives texts
 *     (NVML);
 *   - any other code from the library when it is loaded and answers;
 *   - else, without the library, the code's enumerator name from the family's
 *     header (cuabi does not carry NVIDIA's texts), or "unknown <type> <n>".
 */
#include "internal.h"
#include "family_table.h"
#include "trace.h"

#include <stdio.h>

CUABI_INTERNAL const char *cuabi__forward_nvrtcGetErrorString(nvrtcResult result);
CUABI_INTERNAL const char *cuabi__forward_nvvmGetErrorString(nvvmResult result);
CUABI_INTERNAL const char *cuabi__forward_nvmlErrorString(nvmlReturn_t result);

static const char *from_table(int library, int code, const char *type, char *unknown, size_t cap)
{
    const char *name = cuabi__trace_enum_name(cuabi__trace_library(library), 0, code);
    if (name != NULL)
        return name;
    snprintf(unknown, cap, "unknown %s %d", type, code);
    return unknown;
}

static const char *describe(int library, const char *type, int code,
                            const char *(*forward)(int), int gives_text, char *unknown, size_t cap)
{
    if (code > CUABI_ERROR_BASE && code < CUABI_ERROR_BASE + 1000) {
        const cuabi_code_info *own = cuabi__code_info((CUresult)code);
        if (own != NULL)
            return gives_text ? own->text : own->name;
    }
    if (cuabi__library_ensure(library) == CUDA_SUCCESS) {
        const char *text = forward(code);
        if (text != NULL)
            return text;
    }
    return from_table(library, code, type, unknown, cap);
}

static const char *forward_nvrtc(int code)
{
    return cuabi__forward_nvrtcGetErrorString((nvrtcResult)code);
}

static const char *forward_nvvm(int code)
{
    return cuabi__forward_nvvmGetErrorString((nvvmResult)code);
}

static const char *forward_nvml(int code)
{
    return cuabi__forward_nvmlErrorString((nvmlReturn_t)code);
}

/* An unknown code's text, per thread: it names only the number. */
static _Thread_local char unknown[48];

CUABI_API const char *cuabi_nvrtcGetErrorString(nvrtcResult result)
{
    return describe(CUABI_LIBRARY_NVRTC, "nvrtcResult", (int)result, forward_nvrtc, 0, unknown,
                    sizeof unknown);
}

CUABI_API const char *cuabi_nvvmGetErrorString(nvvmResult result)
{
    return describe(CUABI_LIBRARY_NVVM, "nvvmResult", (int)result, forward_nvvm, 0, unknown,
                    sizeof unknown);
}

CUABI_API const char *cuabi_nvmlErrorString(nvmlReturn_t result)
{
    return describe(CUABI_LIBRARY_NVML, "nvmlReturn_t", (int)result, forward_nvml, 1, unknown,
                    sizeof unknown);
}
