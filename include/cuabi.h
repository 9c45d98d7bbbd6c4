/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuabi.h - the public header of libcuabi.so.1.
 *
 * cuabi exports the whole CUDA driver API as a frozen, flat C ABI: every
 * driver entry point cuXxx is available as cuabi_cuXxx with the signature
 * of CUDA 13.0's cuda.h.  libcuda.so.1 is not linked: it is opened on the
 * first call (or by cuabi_load()) and every entry point is looked up on its
 * own first call.  A program built against cuabi therefore starts on a
 * machine without a GPU or driver, and finds out through the result codes
 * below (and cuabi_driver_report()) why the driver is not available.
 *
 * The ABI rules (what may change between releases, the result codes, the
 * loader's search order, threads and fork) are in docs/abi.md.
 */
#ifndef CUABI_H
#define CUABI_H

/* cuabi declares every driver type under CUDA's own names, so the toolkit's
 * cuda.h must not come before it in a translation unit (the rest of this file
 * is then skipped, so that this error is the only one).  Code written for
 * cuda.h can use include/cuabi/compat/cuda.h instead. */
#if defined(__cuda_cuda_h__)
#error "the CUDA toolkit's cuda.h was included before cuabi.h; include <cuabi.h> first (or alone), or put include/cuabi/compat on the include path so that <cuda.h> is cuabi's"
#else

/* The other order: the toolkit's cuda.h and cudaProfiler.h, included after this
 * file (directly, or by a header such as cudaTypedefs.h), add nothing, since
 * every type and constant they declare is declared here under the same name. */
#ifndef __cuda_cuda_h__
#define __cuda_cuda_h__
#endif
#ifndef cuda_profiler_H
#define cuda_profiler_H
#endif

#include <stddef.h>
#include <stdint.h>

/* Marks the symbols libcuabi exports (the library is built with
 * -fvisibility=hidden; abi.map decides the final list). */
#ifndef CUABI_API
#if defined(__GNUC__) || defined(__clang__)
#define CUABI_API __attribute__((visibility("default")))
#else
#define CUABI_API
#endif
#endif

/* Calling convention of the exported functions: the platform's default. */
#ifndef CUABI_CALL
#define CUABI_CALL
#endif

#ifdef __cplusplus
extern "C" {
#endif

#include "cuabi/result_codes.h"
#include "cuabi/driver_types.h"
#include "cuabi/driver_functions.h"

/* Version of this header.  cuabi_version() returns the library's. */
#define CUABI_VERSION_MAJOR 1
#define CUABI_VERSION_MINOR 1
#define CUABI_VERSION_PATCH 0
#define CUABI_MAKE_VERSION(major, minor, patch) \
    ((uint32_t)(((uint32_t)(major) << 16) | ((uint32_t)(minor) << 8) | (uint32_t)(patch)))
#define CUABI_VERSION \
    CUABI_MAKE_VERSION(CUABI_VERSION_MAJOR, CUABI_VERSION_MINOR, CUABI_VERSION_PATCH)

/*
 * cuabi's own result codes are enumerators of CUresult (CUABI_ERROR_DRIVER_NOT_FOUND,
 * CUABI_ERROR_ENTRY_POINT_NOT_FOUND, ...), in the range 100001..100999 that CUDA does not
 * use, so they can come back from any cuabi_cuXxx call as well as from the own API.
 * cuabi/result_codes.h lists them, each with what it means and what to do about it.
 */

/* Default stream modes for cuabi_set_default_stream_mode(). */
#define CUABI_DEFAULT_STREAM_LEGACY     0
#define CUABI_DEFAULT_STREAM_PER_THREAD 1

/* The most parameters cuabi_call() accepts, and the most members the structs
 * one signature passes by value may have in all (a [N] counts N). */
#define CUABI_CALL_MAX_PARAMS 32
#define CUABI_CALL_MAX_STRUCT_MEMBERS 1024

/*
 * The packet of cuabi_launch_packed(): this 32-byte header, followed at
 * byte offset 32 by the kernel's parameter buffer, laid out as the kernel
 * expects it (each parameter at its natural alignment, measured from the
 * start of the parameter buffer).  The struct is only a description of the
 * bytes: it never crosses the ABI by value.
 */
typedef struct cuabi_launch_header {
    uint32_t grid[3];          /* grid dimensions x, y, z (blocks) */
    uint32_t block[3];         /* block dimensions x, y, z (threads) */
    uint32_t shared_mem_bytes; /* dynamic shared memory per block */
    uint32_t reserved;         /* must be 0 */
} cuabi_launch_header;
#define CUABI_LAUNCH_HEADER_SIZE 32

/* (major << 16) | (minor << 8) | patch of the library actually loaded. */
CUABI_API uint32_t CUABI_CALL cuabi_version(void);

/*
 * Opens the driver now instead of on the first call.  path NULL: search
 * (CUABI_LIBCUDA if set, else the usual places, docs/abi.md).  path given:
 * that absolute path is the only candidate (a relative path returns
 * CUDA_ERROR_INVALID_VALUE and loads nothing).  The driver is loaded once per
 * process: later calls return the first load's status, except that a
 * different explicit path after a successful load returns
 * CUABI_ERROR_ALREADY_LOADED.
 */
CUABI_API CUresult CUABI_CALL cuabi_load(const char *path);

/* Loads if not yet loaded; returns the load's status (CUDA_SUCCESS or one
 * of the CUABI_ERROR_* codes above). */
CUABI_API CUresult CUABI_CALL cuabi_driver_status(void);

/* Loads if not yet loaded; returns a multi-line text naming every candidate
 * tried and its outcome, the driver chosen, the default stream mode and, on
 * failure, what to do.  Never NULL; valid for the life of the process. */
CUABI_API const char *CUABI_CALL cuabi_driver_report(void);

/* Loads if not yet loaded; the resolved file path of the driver in use, or
 * NULL when no driver could be loaded.  Valid for the life of the process. */
CUABI_API const char *CUABI_CALL cuabi_driver_path(void);

/* The driver's CUDA version (e.g. 13000), from cuDriverGetVersion. */
CUABI_API CUresult CUABI_CALL cuabi_driver_version(int32_t *version);

/*
 * Chooses the default stream semantics for the whole process: 0 legacy,
 * 1 per-thread.  Must come before the driver is loaded; afterwards it
 * returns CUDA_SUCCESS if the mode asked for is the one in effect and
 * CUABI_ERROR_ALREADY_LOADED otherwise.  Takes precedence over the
 * environment variable CUABI_PER_THREAD_DEFAULT_STREAM.
 */
CUABI_API CUresult CUABI_CALL cuabi_set_default_stream_mode(int32_t per_thread);

/* Loads if not yet loaded; the default stream mode in effect (0 legacy,
 * 1 per-thread), or -1 when CUABI_PER_THREAD_DEFAULT_STREAM is invalid. */
CUABI_API int32_t CUABI_CALL cuabi_default_stream_mode(void);

/*
 * Looks up any driver entry point through the driver's cuGetProcAddress_v2.
 * name is the driver's base name ("cuMemAlloc"), cuda_version the CUDA
 * version whose signature the caller expects (0: the driver's own version),
 * flags the CU_GET_PROC_ADDRESS_* flags.  Returns
 * CUABI_ERROR_ENTRY_POINT_NOT_FOUND or CUABI_ERROR_DRIVER_TOO_OLD when the
 * driver cannot provide it.
 */
CUABI_API CUresult CUABI_CALL cuabi_get_proc(const char *name, int32_t cuda_version,
                                             uint64_t flags, void **fn);

/*
 * Calls any driver entry point by name.  signature has one letter per
 * parameter: B uint8, H uint16, i int32, I uint32 (and enums), q int64,
 * Q uint64 (and CUdeviceptr), z size_t, p any pointer or handle, f float,
 * d double, or {...} for a struct passed by value, with its members inside:
 * letters, [N] for an array of N bytes (char, unsigned char), or a nested
 * {...} ("{Ii}" is CUmemLocation, "{[64]}" CUipcMemHandle); "" for none.  At
 * most CUABI_CALL_MAX_PARAMS parameters and CUABI_CALL_MAX_STRUCT_MEMBERS
 * struct members.  driver_api.json gives every entry point's signature.
 * args[k] points at the value of parameter k (for a struct, at the struct).
 * The entry point is looked up as by cuabi_get_proc with the process's
 * default stream mode.  Returns the entry point's result, or
 * CUABI_ERROR_BAD_SIGNATURE, or a load or lookup error.
 */
CUABI_API CUresult CUABI_CALL cuabi_call(const char *name, int32_t cuda_version,
                                         const char *signature, void *const *args);

/* Name ("CUDA_ERROR_INVALID_VALUE", "CUABI_ERROR_DRIVER_NOT_FOUND") and
 * description of a result code.  Never NULL, never load the driver. */
CUABI_API const char *CUABI_CALL cuabi_error_name(CUresult code);
CUABI_API const char *CUABI_CALL cuabi_error_string(CUresult code);

/*
 * Launches kernel f on stream with one packed buffer: packet points at a
 * cuabi_launch_header followed by the kernel's parameter buffer, and
 * packet_size counts both.  Equivalent to cuabi_cuLaunchKernel with
 * CU_LAUNCH_PARAM_BUFFER_POINTER/CU_LAUNCH_PARAM_BUFFER_SIZE.
 */
CUABI_API CUresult CUABI_CALL cuabi_launch_packed(CUfunction f, CUstream stream,
                                                  const void *packet, size_t packet_size);

/*
 * The library families (release 1.1, docs/families.md): besides the driver, cuabi
 * forwards NVRTC, nvJitLink, NVVM and NVML, each loaded on the first call of one of
 * its functions (cuabi_nvrtcCompileProgram, ...; declared in <cuabi/nvrtc.h>,
 * <cuabi/nvjitlink.h>, <cuabi/nvvm.h>, <cuabi/nvml.h>).  The functions below name a
 * library by one of these numbers; CUABI_LIBRARY_DRIVER is the driver itself.
 */
#define CUABI_LIBRARY_DRIVER    0
#define CUABI_LIBRARY_NVRTC     1
#define CUABI_LIBRARY_NVJITLINK 2
#define CUABI_LIBRARY_NVVM      3
#define CUABI_LIBRARY_NVML      4

/*
 * Opens a library now, as cuabi_load() does the driver.  path NULL: search (its
 * environment variable, CUABI_LIBNVRTC, CUABI_LIBNVJITLINK, CUABI_LIBNVVM or
 * CUABI_LIBNVML, if set; else the library already in the process, the system's
 * search and the usual folders).  path given: that absolute path is the only
 * candidate (the Python layer passes what cuda.pathfinder finds in NVIDIA's
 * wheels).  Each library is loaded once per process: later calls return the first
 * load's status, except that another path after a successful load returns
 * CUABI_ERROR_ALREADY_LOADED.  A relative path or an unknown library returns
 * CUDA_ERROR_INVALID_VALUE and loads nothing.
 */
CUABI_API CUresult CUABI_CALL cuabi_load_library(int32_t library, const char *path);

/* Loads the library if not yet loaded; the load's status: CUDA_SUCCESS,
 * CUABI_ERROR_LIBRARY_MISSING, CUABI_ERROR_LIBRARY_TOO_OLD or
 * CUABI_ERROR_BAD_ENVIRONMENT (the driver: as cuabi_driver_status()).  The
 * library's own functions return the same condition in their own result type
 * (docs/families.md, "Result codes"). */
CUABI_API CUresult CUABI_CALL cuabi_library_status(int32_t library);

/* Loads the library if not yet loaded; a multi-line text naming every candidate
 * tried and its outcome, the library chosen and its version, the functions it
 * lacks and, on failure, what to do.  Never NULL; valid for the life of the
 * process ("unknown library" for a number that names none). */
CUABI_API const char *CUABI_CALL cuabi_library_report(int32_t library);

/* Loads the library if not yet loaded; the resolved file path of the library in
 * use, or NULL when none could be loaded. */
CUABI_API const char *CUABI_CALL cuabi_library_path(int32_t library);

/*
 * Tracing (docs/tracing.md): while it is on, every call of every forwarder
 * (cuabi_cuXxx and the families' functions) writes one line: the library, the
 * function, its arguments decoded (enumerators by name, handles and pointers in
 * hex, strings quoted, outputs after the call), its result by name and how long
 * it took.  Off, the forwarders cost what they cost without it.
 *
 * cuabi_trace_start(NULL) writes to the standard error, cuabi_trace_start(path)
 * appends to the file at that absolute path (a relative path returns
 * CUDA_ERROR_INVALID_VALUE; a file that cannot be opened, CUDA_ERROR_OPERATING_SYSTEM).
 * CUABI_TRACE=1 (or =/abs/path) in the environment does the same at the first
 * load of any library, unless cuabi_trace_start or cuabi_trace_stop came first.
 * Both may be called at any time, from any thread.
 */
CUABI_API CUresult CUABI_CALL cuabi_trace_start(const char *path);
CUABI_API CUresult CUABI_CALL cuabi_trace_stop(void);
/* 1 while tracing is on, else 0. */
CUABI_API int32_t CUABI_CALL cuabi_trace_enabled(void);

#ifdef __cplusplus
}
#endif

#endif /* the toolkit's cuda.h came first */
#endif /* CUABI_H */
