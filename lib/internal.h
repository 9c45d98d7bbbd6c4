/*
 * internal.h - what the files of lib/ share; never installed.
 *
 * Shared state and who guards it:
 *   - the load state (lib/load.c): written once under the library lock,
 *     published with a release store, read lock-free after an acquire load;
 *   - the slots (lib/resolve.c): one atomic pointer per entry point, filled
 *     on first use; two threads may fill the same slot at once, harmlessly,
 *     because both store the same address;
 *   - the cuabi_call cache (lib/call.c): lock-free readers, inserts under
 *     the library lock.
 */
#ifndef CUABI_INTERNAL_H
#define CUABI_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdatomic.h>
#include <stdint.h>

#include "../include/cuabi.h"
#include "../loader/loader.h"

#define CUABI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CUABI_LIKELY(x) __builtin_expect(!!(x), 1)
/* A forwarder's first call: kept out of line and out of the hot text, so that the forwarder
 * itself needs no stack frame. */
#define CUABI_COLD __attribute__((noinline, cold))

/* Marks what only lib/ and loader/ share.  -fvisibility=hidden already keeps
 * it unexported, but only this attribute on the declaration tells the
 * compiler the symbol is in this library, so the forwarders reach their
 * slot with one PC-relative load instead of going through the GOT. */
#define CUABI_INTERNAL __attribute__((visibility("hidden")))

/*
 * The layers of lib/, each using only those above it in this list:
 *   codes.c      names, texts and advice of every result code (data);
 *   load.c       the one lock, the default stream mode, the load and its
 *                report, the driver's version (uses loader/);
 *   resolve.c    the slots and the lookup of entry points;
 *   forwarders.c the exported cuabi_cuXxx (generated);
 *   wrapped.c    the three entry points exported around their forwarder;
 *   own_api.c, errors.c, call.c, launch.c: the rest of the exported API.
 */

/* ---- codes.c ---- */
typedef struct cuabi_code_info {
    CUresult code;
    const char *name;   /* "CUDA_ERROR_INVALID_VALUE" */
    const char *text;   /* what happened, in cuabi's words */
    const char *advice; /* what to do: cuabi's own codes only, else NULL */
} cuabi_code_info;

/* The entry for code, or NULL when neither CUDA 13.5 nor cuabi has it. */
CUABI_INTERNAL const cuabi_code_info *cuabi__code_info(CUresult code);

/* ---- load.c ---- */
/* The library's one lock (load, stream mode, cuabi_call cache inserts).
 * Safe across fork(): see docs/abi.md. */
CUABI_INTERNAL void cuabi__lock(void);
CUABI_INTERNAL void cuabi__unlock(void);
/* Loads the driver once; returns the load's status. */
CUABI_INTERNAL CUresult cuabi__ensure_loaded(void);
/* cuabi_load(): loads with path as the only candidate (NULL: search); a
 * different path after a successful load gives CUABI_ERROR_ALREADY_LOADED. */
CUABI_INTERNAL CUresult cuabi__load(const char *path);
/* Nonzero once a load has finished, without loading. */
CUABI_INTERNAL int cuabi__load_finished(void);
/* Load if needed; the report, and the driver's path (NULL without one). */
CUABI_INTERNAL const char *cuabi__report(void);
CUABI_INTERNAL const char *cuabi__driver_path(void);
/* The driver's cuGetProcAddress_v2; only after a successful load. */
CUABI_INTERNAL cuabi_get_proc_address_fn cuabi__driver_get_proc(void);
/* Before the load: remember the mode asked for; after: CUDA_SUCCESS if it is
 * the mode in effect, else CUABI_ERROR_ALREADY_LOADED. */
CUABI_INTERNAL CUresult cuabi__request_stream_mode(int per_thread);
/* Load if needed; 0 legacy, 1 per-thread, -1 if the environment was invalid. */
CUABI_INTERNAL int cuabi__stream_mode(void);
/* The cuGetProcAddress flags of the mode in effect; only after the load. */
CUABI_INTERNAL uint64_t cuabi__stream_flags(void);
/* The driver's CUDA version (cuDriverGetVersion), read once. */
CUABI_INTERNAL CUresult cuabi__driver_version(int *version);

/* ---- resolve.c ---- */
/* One row of the generated entry-point table (lib/forwarders.c). */
typedef struct cuabi_entry_point {
    const char *name;        /* as user code writes it: "cuMemAlloc" */
    const char *driver_name; /* as cuGetProcAddress_v2 knows it */
    int version;             /* CUDA version whose signature the forwarder has */
    int ptds_version;        /* the same in per-thread default stream mode */
} cuabi_entry_point;

/* The resolved entry points, indexed like the table; sized
 * CUABI__ENTRY_POINT_COUNT.  NULL until first use. */
extern CUABI_INTERNAL _Atomic(void *) cuabi__slots[];

/* Slow path of a forwarder: loads the driver if needed, looks entry point
 * `index` up, fills its slot and *fn.  "This driver lacks it" is remembered
 * per slot and returned again without asking the driver. */
CUABI_INTERNAL CUresult cuabi__resolve(unsigned index, void **fn);

/* Any entry point by driver name.  Loads the driver if needed; cuda_version
 * 0 means the driver's own version.  Maps the driver's lookup status to
 * CUABI_ERROR_ENTRY_POINT_NOT_FOUND / _DRIVER_TOO_OLD. */
CUABI_INTERNAL CUresult cuabi__get_proc(const char *name, int cuda_version, uint64_t flags, void **fn);

/* ---- forwarders.c: the forwarders lib/wrapped.c exports its own function around ---- */
CUABI_INTERNAL CUresult cuabi__forward_cuGetErrorName(CUresult error, const char **pStr);
CUABI_INTERNAL CUresult cuabi__forward_cuGetErrorString(CUresult error, const char **pStr);
CUABI_INTERNAL CUresult cuabi__forward_cuGetProcAddress(const char *symbol, void **pfn,
                                                        int cudaVersion, cuuint64_t flags,
                                                        CUdriverProcAddressQueryResult *symbolStatus);

#endif /* CUABI_INTERNAL_H */
