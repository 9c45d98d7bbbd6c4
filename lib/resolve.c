/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve.c - entry-point lookup: the slot array the forwarders read and the
 * slow path that fills it.  Below it: load.c (the driver, its version and
 * the default stream mode, which decides the variant asked for) and trace.c
 * (which decides what a slot holds: the function, or its trace wrapper).
 */
#include "internal.h"
#include "entry_table.h" /* the entry-point table (generated) */

/* Resolved entry points, one per row of cuabi__entry_points.  Filled
 * lazily; a race between two first calls stores the same address twice.
 * cuabi__slots is what the forwarders call (the driver's function, or its
 * trace wrapper while tracing is on: trace.c), cuabi__targets the function. */
_Atomic(void *) cuabi__slots[CUABI__ENTRY_POINT_COUNT];
_Atomic(void *) cuabi__targets[CUABI__ENTRY_POINT_COUNT];

/* Per slot: 0 while unknown or resolved, else the answer "this driver lacks
 * it" (ENTRY_POINT_NOT_FOUND or DRIVER_TOO_OLD), which cannot change while
 * the process runs, so the driver is asked only once.  Other failures are
 * not remembered: the next call asks again. */
static _Atomic(int) slot_failure[CUABI__ENTRY_POINT_COUNT];

CUresult cuabi__get_proc(const char *name, int cuda_version, uint64_t flags, void **fn)
{
    *fn = NULL;
    CUresult rc = cuabi__ensure_loaded();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (cuda_version < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (cuda_version == 0) {
        rc = cuabi__driver_version(&cuda_version);
        if (rc != CUDA_SUCCESS)
            return rc;
    }

    void *found = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    rc = cuabi__driver_get_proc()(name, &found, cuda_version, flags, &status);
    if (status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        return CUABI_ERROR_ENTRY_POINT_NOT_FOUND;
    if (status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
        return CUABI_ERROR_DRIVER_TOO_OLD;
    if (rc == CUDA_ERROR_NOT_FOUND)
        return CUABI_ERROR_ENTRY_POINT_NOT_FOUND;
    /* The driver refuses a version newer than its own with
     * CUDA_ERROR_INVALID_VALUE, without necessarily setting the status: a
     * pinned entry point from a newer CUDA on an older driver. */
    int own = 0;
    if (rc == CUDA_ERROR_INVALID_VALUE && cuabi__driver_version(&own) == CUDA_SUCCESS &&
        cuda_version > own)
        return CUABI_ERROR_DRIVER_TOO_OLD;
    if (rc != CUDA_SUCCESS)
        return rc;
    if (found == NULL)
        return CUABI_ERROR_ENTRY_POINT_NOT_FOUND;
    *fn = found;
    return CUDA_SUCCESS;
}

static CUresult lookup(unsigned index, void **fn);

CUresult cuabi__resolve(unsigned index, void **fn)
{
    CUresult rc = lookup(index, fn);
    if (rc != CUDA_SUCCESS)
        cuabi__trace_not_called(CUABI_LIBRARY_DRIVER, index, (int)rc);
    return rc;
}

/* The slow path itself. */
static CUresult lookup(unsigned index, void **fn)
{
    if (index >= CUABI__ENTRY_POINT_COUNT)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = cuabi__ensure_loaded();
    if (rc != CUDA_SUCCESS)
        return rc;
    int failed = atomic_load_explicit(&slot_failure[index], memory_order_relaxed);
    if (failed != 0)
        return (CUresult)failed;

    /* In per-thread mode the driver hands out the _ptds/_ptsz variant for
     * the flags below; its version is the one of that variant's typedef. */
    const cuabi_entry_point *ep = &cuabi__entry_points[index];
    int per_thread = cuabi__stream_mode() == 1;
    int version = per_thread && ep->ptds_version != 0 ? ep->ptds_version : ep->version;

    void *found;
    rc = cuabi__get_proc(ep->driver_name, version, cuabi__stream_flags(), &found);
    if (rc != CUDA_SUCCESS) {
        if (rc == CUABI_ERROR_ENTRY_POINT_NOT_FOUND || rc == CUABI_ERROR_DRIVER_TOO_OLD)
            atomic_store_explicit(&slot_failure[index], (int)rc, memory_order_relaxed);
        return rc;
    }
    *fn = cuabi__trace_install(cuabi__trace_library(CUABI_LIBRARY_DRIVER), index, found);
    return CUDA_SUCCESS;
}
