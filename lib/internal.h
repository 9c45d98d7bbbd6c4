/* SPDX-License-Identifier: Apache-2.0 */
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
 *   family_table.c (generated) each family's functions, slots and facts (data);
 *   trace_*.c (generated) per library, the trace wrappers and how to decode
 *                each call (they call through the targets below);
 *   trace.c      tracing: the switch, the environment, the lines;
 *   load.c       the one lock, every library's load and its report (the
 *                driver's default stream mode and version; uses loader/);
 *   families.c   what a family's load adds (its search, its report), and the
 *                lookup of its functions;
 *   resolve.c    the driver's slots and the lookup of its entry points;
 *   forwarders.c, forwarders_<family>.c: the exported forwarders (generated);
 *   wrapped.c, family_wrapped.c: the functions exported around their forwarder;
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

/* ---- the libraries: the driver and the four families ---- */
#define CUABI__LIBRARY_COUNT 5 /* CUABI_LIBRARY_DRIVER .. CUABI_LIBRARY_NVML */
#define CUABI__FAMILY_COUNT 4  /* family f is library f + 1 */

/* What a family's functions answer for each condition (docs/families.md). */
enum {
    CUABI__ANSWER_LIBRARY_MISSING,
    CUABI__ANSWER_LIBRARY_TOO_OLD,
    CUABI__ANSWER_FUNCTION_MISSING,
    CUABI__ANSWER_BAD_ENVIRONMENT,
};

/* One function of a family (lib/family_table.c, generated). */
typedef struct cuabi_family_function {
    const char *name;   /* as user code writes it: "nvJitLinkCreate" */
    const char *symbol; /* what the library is asked for: "__nvJitLinkCreate_13_0" */
    int cuda_version;   /* of the header whose declaration it has */
} cuabi_family_function;

/* A family, as lib/family_table.c (generated from tools/gen_driver_api.py's FAMILIES)
 * describes it. */
typedef struct cuabi_family_spec {
    int32_t id;                       /* CUABI_LIBRARY_* */
    const char *key, *title, *header, *env;
    const char *const *sonames;
    unsigned soname_count;
    const char *const *folders;       /* after the system's search ("$CUDA_HOME/lib64") */
    unsigned folder_count;
    int driver_folders;               /* the driver's folders (NVML) */
    const char *version_function;     /* NAME(int *major, int *minor), or NULL */
    int minimum_major, minimum_minor; /* the oldest version accepted */
    int version_is_cuda;              /* that version is a CUDA version */
    int cuda_version;                 /* of the newest header its functions come from */
    const unsigned *required;         /* functions an acceptable library must have */
    unsigned required_count;
    const char *install;              /* what to install: the advice of its report */
    int answers[4];                   /* by CUABI__ANSWER_*, in its result type */
    unsigned count;                   /* its functions */
    _Atomic(void *) *slots;           /* what its forwarders call */
    _Atomic(void *) *targets;         /* the library's functions, once looked up */
    _Atomic(int) *failures;           /* per function: 0, or its answer "not found" */
    const cuabi_family_function *functions;
} cuabi_family_spec;
extern CUABI_INTERNAL const cuabi_family_spec cuabi__family_specs[CUABI__FAMILY_COUNT];

/* ---- trace.c (and the generated trace_*.c) ---- */
/* Slot `index` of `lib` gets `target`, the library's function, which it has looked up:
 * the slot then holds the target, or its trace wrapper while tracing is on.  Returns
 * what the slot holds, which the caller calls (another thread may have filled it
 * first).  Lock-free; see trace.c for how it and the switch agree. */
struct cuabi_trace_library;
CUABI_INTERNAL void *cuabi__trace_install(const struct cuabi_trace_library *lib, unsigned index,
                                          void *target);
/* Under the library lock, during every library's load: applies CUABI_TRACE the first
 * time (unless the program switched tracing itself before), appends its line to the
 * report, and returns CUDA_SUCCESS or CUABI_ERROR_BAD_ENVIRONMENT. */
CUABI_INTERNAL CUresult cuabi__trace_environment(cuabi_text *report);
/* While tracing is on, the line of a call of slot `index` of library `library` that
 * did not reach the library (it, or the function, is missing): its result only. */
CUABI_INTERNAL void cuabi__trace_not_called(int library, unsigned index, int result);
/* The trace tables of library `id` (CUABI_LIBRARY_*). */
CUABI_INTERNAL const struct cuabi_trace_library *cuabi__trace_library(int id);

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

/* Every library's load, once, as cuabi__ensure_loaded and cuabi__load do the
 * driver's: library is CUABI_LIBRARY_* (the caller checks it). */
CUABI_INTERNAL CUresult cuabi__library_ensure(int library);
CUABI_INTERNAL CUresult cuabi__library_load(int library, const char *path);
CUABI_INTERNAL int cuabi__library_load_finished(int library);
CUABI_INTERNAL const char *cuabi__library_report(int library);
CUABI_INTERNAL const char *cuabi__library_path(int library);
/* The dlopen handle of a library loaded successfully (NULL otherwise). */
CUABI_INTERNAL void *cuabi__library_handle(int library);

/* ---- families.c ---- */
/* What a family's load takes from families.c, under the lock: its first report
 * line; its search; after an accepted library, the report lines of what it is and
 * lacks; after a failure, what to do. */
CUABI_INTERNAL void cuabi__family_begin(int library, cuabi_text *report);
CUABI_INTERNAL const cuabi_search *cuabi__family_search(int library);
CUABI_INTERNAL void cuabi__family_loaded(int library, const cuabi_opened *opened, cuabi_text *report);
CUABI_INTERNAL void cuabi__family_advice(int library, CUresult status, int named_path,
                                         cuabi_text *report);
/* Slow path of a family's forwarder: loads the family's library if needed, looks
 * function `index` up, fills its slot and *fn.  Returns 0, or what the function
 * answers in the family's result type (its answer for the load's status, or for a
 * function the library lacks, which is remembered). */
CUABI_INTERNAL int cuabi__family_resolve(int library, unsigned index, void **fn);
/* The answer of a family (library >= 1) for a load status or lookup failure. */
CUABI_INTERNAL int cuabi__family_answer(int library, CUresult status);

/* ---- resolve.c ---- */
/* One row of the generated entry-point table (lib/forwarders.c). */
typedef struct cuabi_entry_point {
    const char *name;        /* as user code writes it: "cuMemAlloc" */
    const char *driver_name; /* as cuGetProcAddress_v2 knows it */
    int version;             /* CUDA version whose signature the forwarder has */
    int ptds_version;        /* the same in per-thread default stream mode */
} cuabi_entry_point;

/* The resolved entry points, indexed like the table; sized
 * CUABI__ENTRY_POINT_COUNT.  NULL until first use; while tracing is on, the trace
 * wrapper of a resolved entry point (lib/trace_driver.c), else the driver's
 * function, which cuabi__targets holds in any case. */
extern CUABI_INTERNAL _Atomic(void *) cuabi__slots[];
extern CUABI_INTERNAL _Atomic(void *) cuabi__targets[];

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
