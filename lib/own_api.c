/* SPDX-License-Identifier: Apache-2.0 */
/*
 * own_api.c - the own API about loading and lookup: version, load, status,
 * report, driver path and version, default stream mode, get_proc.  Thin:
 * the work is in load.c and resolve.c.
 */
#include "internal.h"

CUABI_API uint32_t CUABI_CALL cuabi_version(void)
{
    return CUABI_VERSION;
}

CUABI_API CUresult CUABI_CALL cuabi_load(const char *path)
{
    /* A relative path would depend on the current folder; refuse it
     * without using up the one load. */
    if (path != NULL && path[0] != '/')
        return CUDA_ERROR_INVALID_VALUE;
    return cuabi__load(path);
}

CUABI_API CUresult CUABI_CALL cuabi_driver_status(void)
{
    return cuabi__ensure_loaded();
}

CUABI_API const char *CUABI_CALL cuabi_driver_report(void)
{
    return cuabi__report();
}

CUABI_API const char *CUABI_CALL cuabi_driver_path(void)
{
    return cuabi__driver_path();
}

CUABI_API CUresult CUABI_CALL cuabi_driver_version(int32_t *version)
{
    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    int v = 0;
    CUresult rc = cuabi__driver_version(&v);
    if (rc == CUDA_SUCCESS)
        *version = v;
    return rc;
}

CUABI_API CUresult CUABI_CALL cuabi_set_default_stream_mode(int32_t per_thread)
{
    if (per_thread != 0 && per_thread != 1)
        return CUDA_ERROR_INVALID_VALUE;
    return cuabi__request_stream_mode(per_thread);
}

CUABI_API int32_t CUABI_CALL cuabi_default_stream_mode(void)
{
    return cuabi__stream_mode();
}

CUABI_API CUresult CUABI_CALL cuabi_get_proc(const char *name, int32_t cuda_version,
                                             uint64_t flags, void **fn)
{
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *fn = NULL;
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return cuabi__get_proc(name, cuda_version, flags, fn);
}

/* ---- the libraries (release 1.1) ---------------------------------------- */

static int known_library(int32_t library)
{
    return library >= CUABI_LIBRARY_DRIVER && library < CUABI__LIBRARY_COUNT;
}

CUABI_API CUresult CUABI_CALL cuabi_load_library(int32_t library, const char *path)
{
    /* As cuabi_load: a relative path is refused without using up the one load. */
    if (!known_library(library) || (path != NULL && path[0] != '/'))
        return CUDA_ERROR_INVALID_VALUE;
    return cuabi__library_load(library, path);
}

CUABI_API CUresult CUABI_CALL cuabi_library_status(int32_t library)
{
    if (!known_library(library))
        return CUDA_ERROR_INVALID_VALUE;
    return cuabi__library_ensure(library);
}

CUABI_API const char *CUABI_CALL cuabi_library_report(int32_t library)
{
    if (!known_library(library))
        return "unknown library: cuabi_library_report() takes CUABI_LIBRARY_DRIVER (0) to "
               "CUABI_LIBRARY_NVML (4)\n";
    return cuabi__library_report(library);
}

CUABI_API const char *CUABI_CALL cuabi_library_path(int32_t library)
{
    if (!known_library(library))
        return NULL;
    return cuabi__library_path(library);
}
