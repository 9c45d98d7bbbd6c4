/*
 * loader.h - finding and opening the CUDA driver (libcuda.so.1).
 *
 * The loader knows nothing about lib/: it walks the candidates, rejects the
 * toolkit stub and libraries without cuGetProcAddress_v2, writes one report
 * line per candidate, and hands back the chosen library.  It holds no state
 * of its own; the caller (lib/load.c) decides when to load (once) and
 * where the results live.
 */
#ifndef CUABI_LOADER_H
#define CUABI_LOADER_H

#include <stddef.h>

#include "../include/cuabi.h"
#include "text.h"

/* cuGetProcAddress_v2 as CUDA 12.0 and later declare it. */
typedef CUresult (*cuabi_get_proc_address_fn)(const char *symbol, void **pfn, int cuda_version,
                                              cuuint64_t flags,
                                              CUdriverProcAddressQueryResult *symbol_status);

#define CUABI_LOADER_PATH_MAX 4096

/* What a successful open hands back. */
typedef struct cuabi_driver_lib {
    void *handle;                       /* dlopen handle, never closed */
    cuabi_get_proc_address_fn get_proc; /* the driver's cuGetProcAddress_v2 */
    char path[CUABI_LOADER_PATH_MAX];   /* resolved file path of the library */
} cuabi_driver_lib;

/*
 * Finds and opens the driver.  explicit_path non-NULL: only that path (it
 * must be absolute).  Otherwise CUABI_LIBCUDA (secure_getenv; absolute
 * only) when set, else the search order of docs/abi.md.  Appends one line
 * per candidate to report.  Returns CUDA_SUCCESS and fills *out, or one of
 * CUABI_ERROR_DRIVER_NOT_FOUND, _DRIVER_STUB, _DRIVER_UNUSABLE,
 * _BAD_ENVIRONMENT (and leaves *out zeroed).
 * Not thread-safe by itself (dlerror is read right after each dl call):
 * the caller serialises it.
 */
CUresult cuabi_loader_open(const char *explicit_path, cuabi_driver_lib *out, cuabi_text *report);

#endif /* CUABI_LOADER_H */
