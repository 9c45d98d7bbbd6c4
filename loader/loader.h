/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader.h - finding and opening a library: the CUDA driver (libcuda.so.1) and
 * the libraries of the families (NVRTC, nvJitLink, NVVM, NVML).
 *
 * One mechanism for all of them (docs/families.md, "Loading"): a path the
 * program names, else the library's environment variable, else each of its
 * sonames already in the process, each through the system's own search, then in
 * known folders.  Each candidate tried leaves one line in the report.  What
 * makes an opened library acceptable is the library's own: `examine` decides
 * (the driver: cuGetProcAddress_v2 and not the toolkit's stub; a family: its
 * required symbols and its version).
 *
 * The loader knows nothing about lib/: it holds no state of its own; the caller
 * (lib/load.c) decides when to load (once) and where the results live.
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
typedef struct cuabi_opened {
    void *handle;                     /* dlopen handle, never closed */
    void *entry;                      /* the driver: its cuGetProcAddress_v2; else NULL */
    int version_major, version_minor; /* as the library says it (families); -1 unknown */
    char path[CUABI_LOADER_PATH_MAX]; /* resolved file path of the library */
} cuabi_opened;

/* Outcome of one candidate, in increasing order of how much it tells the user
 * when nothing better is found (the final status is that of the highest). */
typedef enum cuabi_outcome {
    CUABI_OUTCOME_NOT_FOUND = 0, /* could not be opened */
    CUABI_OUTCOME_STUB,          /* the toolkit's stub (the driver) */
    CUABI_OUTCOME_UNUSABLE,      /* opened, but not usable: too old, or not this library */
    CUABI_OUTCOME_ACCEPTED,
} cuabi_outcome;

/* How to find one library. */
typedef struct cuabi_search {
    const char *env;         /* its environment variable ("CUABI_LIBCUDA") */
    const char *load_call;   /* how the report names a path the program gave ("cuabi_load") */
    const char *const *sonames;
    size_t soname_count;
    /* folders searched after the system's own search: absolute, or "$VAR/sub" for the
     * folder an environment variable names (searched only when it is absolute) */
    const char *const *folders;
    size_t folder_count;
    int driver_folders; /* also (first) the driver's folders (docs/abi.md) */
    /* Decides on an opened library (`file` is what dlopen was given): writes the rest of
     * the candidate's report line, with its newline, and fills out->path and what else it
     * knows; may leave out->handle alone (the loader sets it). */
    cuabi_outcome (*examine)(void *handle, const char *file, cuabi_opened *out,
                             cuabi_text *report, const void *context);
    const void *context;
    CUresult status_of[4]; /* the search's status for each outcome, by cuabi_outcome */
} cuabi_search;

/*
 * Finds and opens a library.  explicit_path non-NULL: only that path (it must
 * be absolute).  Otherwise the environment variable (secure_getenv; absolute
 * only) when set, else the search.  Appends one line per candidate to report.
 * Returns CUDA_SUCCESS and fills *out, or the status_of the best outcome, or
 * CUABI_ERROR_BAD_ENVIRONMENT (and leaves *out zeroed).
 * Not thread-safe by itself (dlerror is read right after each dl call): the
 * caller serialises it.
 */
CUresult cuabi_loader_search(const cuabi_search *search, const char *explicit_path,
                             cuabi_opened *out, cuabi_text *report);

/* The driver's search: libcuda.so.1, CUABI_LIBCUDA, the stub and
 * cuGetProcAddress_v2 checks (docs/abi.md, "Loading the driver"). */
extern const cuabi_search cuabi_loader_driver;

/* What makes a family's library acceptable (lib/family_table.c has each one's). */
typedef struct cuabi_family_check {
    const char *title;                /* "NVRTC" */
    const char *const *required;      /* symbols it must export */
    size_t required_count;
    const char *version_symbol;       /* NAME(int *major, int *minor), or NULL */
    int minimum_major, minimum_minor; /* the oldest version accepted */
} cuabi_family_check;

/* The examine function of the families: the required symbols, then the version. */
cuabi_outcome cuabi_loader_examine_family(void *handle, const char *file, cuabi_opened *out,
                                          cuabi_text *report, const void *check);

#endif /* CUABI_LOADER_H */
